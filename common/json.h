// The one JSON library (nlohmann::json, ordered so keys keep write order) and
// helpers that turn a malformed document into an error naming the file, the
// JSON path and what was expected.
//
// Trust no input (docs/design.md §11.13): every document is bounded in size and in
// nesting depth before it is parsed, so a hostile file or frame is refused
// with an error instead of exhausting the stack or the memory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace dfx {

using Json = nlohmann::ordered_json;

// The deepest nesting of arrays and objects any reader accepts. Real
// documents (programs, plans, manifests, artifacts) nest a handful of levels.
inline constexpr int kMaxJsonDepth = 256;
// The largest JSON file ReadJsonFile reads (callers may ask for less).
inline constexpr uint64_t kMaxJsonFileBytes = 1ull << 30;

// Parses `path` (at most `max_bytes`, read once by ReadInputFile of
// common/input_file.h: a directory, named FIFO or device is refused by what
// it is); a syntax error names the file, line and column, nesting deeper
// than kMaxJsonDepth names the JSON path.
Result<Json> ReadJsonFile(const std::filesystem::path& path,
                          uint64_t max_bytes = kMaxJsonFileBytes);
// The text of `path`, unparsed, read and refused as ReadJsonFile reads and
// refuses it.
Result<std::string> ReadJsonText(const std::filesystem::path& path,
                                 uint64_t max_bytes = kMaxJsonFileBytes);
// Parses text; `origin` names the source in errors. Depth is checked first.
Result<Json> ParseJson(const std::string& text, const std::string& origin);

// Refuses `text` when its arrays/objects nest deeper than `max_depth`: the
// error names `origin` and the JSON path where the limit was crossed (e.g.
// "p.json: at $.orchestration[0][0][0]<249 more>[0][0][0][0] (depth 257):
// JSON nested deeper than 256 levels"). A linear scan without recursion;
// syntax is not checked.
Status CheckJsonDepth(std::string_view text, const std::string& origin,
                      int max_depth = kMaxJsonDepth);

// "file: at $.a.b[2]: expected X, got Y"
Status JsonError(const std::string& file, const std::string& json_path, const std::string& expected,
                 const Json& got);
// A short description of a JSON value for error messages: `string "abc"`,
// `number 3`, `array [1,2,3,...]`. Bounded: never more than ~60 characters,
// and never walks more of the value than it prints.
std::string DescribeJson(const Json& value);

// Writes `value` with `indent` (-1 = compact) through AtomicFileWriter.
Status WriteJsonFileAtomic(const std::filesystem::path& path, const Json& value, int indent = -1,
                           bool trailing_newline = true);

}  // namespace dfx
