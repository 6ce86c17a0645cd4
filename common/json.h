// The one JSON library (nlohmann::json, ordered so keys keep write order) and
// helpers that turn a malformed document into an error naming the file, the
// JSON path and what was expected.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace dfx {

using Json = nlohmann::ordered_json;

// Parses `path`; a syntax error names the file, line and column.
Result<Json> ReadJsonFile(const std::filesystem::path& path);
// Parses text; `origin` names the source in errors.
Result<Json> ParseJson(const std::string& text, const std::string& origin);

// "file: at $.a.b[2]: expected X, got Y"
Status JsonError(const std::string& file, const std::string& json_path,
                 const std::string& expected, const Json& got);
// A short description of a JSON value for error messages: `string "abc"`, `number 3`, ...
std::string DescribeJson(const Json& value);

// Writes `value` with `indent` (-1 = compact) through AtomicFileWriter.
Status WriteJsonFileAtomic(const std::filesystem::path& path, const Json& value, int indent = -1,
                           bool trailing_newline = true);

}  // namespace dfx
