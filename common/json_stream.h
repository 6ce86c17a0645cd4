// Streaming JSON, the one implementation for every writer and reader of an
// artifact (docs/design.md §11.7, §11.11): JsonPullReader (common/json_pull_reader.h),
// ChunkedWriter (common/chunked_writer.h) and the text helpers below that
// both and the collectors' writers share.
//
// The free functions are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/chunked_writer.h"
#include "common/json_pull_reader.h"

namespace dfx {

// Appends `s` as a JSON string literal (quotes included).
void AppendJsonString(std::string* out, std::string_view s);
// What a one-letter JSON escape stands for (`n` of "\n": '\n'; also " \ / b f
// r t); '\0' for any other letter, `u` included (the caller reads its digits).
char JsonEscapedChar(char letter);
// Appends code point `cp` as UTF-8 (1 to 4 bytes).
void AppendUtf8(std::string* out, uint32_t cp);
// Shortest round-trip decimal for a double ("1.5", "0", "1e-05").
void AppendDouble(std::string* out, double v);
std::string FormatDouble(double v);

}  // namespace dfx
