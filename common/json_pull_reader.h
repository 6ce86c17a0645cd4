// JsonPullReader: a pull reader that walks a JSON file token by token
// without building a DOM, the one reader under every artifact reader
// (docs/design.md §11.7, §11.11), so a records file of a million rows never exists as one
// JSON DOM while a viewer converts it.
//
// Thread-compatible: one thread uses one instance.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"

namespace dfx {

// A JSON number as read: integral values keep full 64-bit precision.
struct JsonNumber {
  bool is_integer = true;
  bool negative = false;
  uint64_t magnitude = 0;  // |value| when is_integer
  double value = 0.0;      // always set
  // Wraps modulo 2^64 beyond int64's range (no overflow for -2^63).
  int64_t AsInt64() const {
    return static_cast<int64_t>(negative ? uint64_t{0} - magnitude : magnitude);
  }
  uint64_t AsUint64() const { return negative ? 0 : magnitude; }
  // As an integer row reads it: a negative integer wraps modulo 2^64, a
  // fraction or exponent form truncates, clamped to [0, 2^64 - 1] (a cast
  // of a double outside that range would be undefined).
  uint64_t AsRowUint64() const;
};

// Pull reader over a file. Errors latch: after the first failure every call
// returns false and status() names the file, byte offset and what was expected.
// Arrays and objects nested deeper than kMaxJsonDepth (common/json.h) are an
// error, so Skip / ReadJson never recurse without bound.
class JsonPullReader {
 public:
  enum class Kind { kObject, kArray, kString, kNumber, kBool, kNull, kEnd, kError };

  JsonPullReader() = default;
  ~JsonPullReader();
  JsonPullReader(const JsonPullReader&) = delete;
  JsonPullReader& operator=(const JsonPullReader&) = delete;

  Status Open(const std::filesystem::path& path);
  // Opens `path` positioned at byte `offset`, which must be the start of a
  // value (an offset taken from bytes_read() right after Peek()).
  Status OpenAt(const std::filesystem::path& path, uint64_t offset);

  // Kind of the next value (skips whitespace; does not consume).
  Kind Peek();
  // Objects: BeginObject() then `while (NextKey(&k)) { read value }`.
  bool BeginObject();
  bool NextKey(std::string* key);
  // Arrays: BeginArray() then `while (NextElement()) { read value }`.
  bool BeginArray();
  bool NextElement();

  bool ReadNumber(JsonNumber* out);
  // Reads an array of numbers into `values` as u64: a negative one as its
  // two's complement, a fraction or exponent as its truncated double. The
  // same as BeginArray and ReadNumber per element (results and errors); an
  // array of plain integers within the buffer is parsed in place.
  bool ReadUint64Array(std::vector<uint64_t>* values);
  bool ReadString(std::string* out);
  bool ReadBool(bool* out);
  bool ReadNull();
  // Skips one value of any kind.
  bool Skip();
  // Goes on reading at byte `offset` (not before bytes_read()) inside the
  // same container: for a caller that read the value up to there by other
  // means (offset: right after it). The value counts as read.
  bool SkipTo(uint64_t offset);
  // Reads one value into a DOM (use for small subtrees such as `metadata`).
  bool ReadJson(Json* out);

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  uint64_t bytes_read() const { return consumed_ + pos_; }
  // Records an error at the current position ("file: at byte N: msg").
  bool Fail(const std::string& message);

 private:
  int PeekChar();  // -1 at EOF
  int GetChar();
  void SkipSpace();
  bool Expect(char c);
  // Consumes `open` ('{' or '[') and starts a container.
  bool BeginContainer(char open);
  // Consumes the separator before the next member, or `close` ('}' or ']')
  // and the container (then false).
  bool NextMember(char close);
  bool Refill();
  bool EnterContainer();
  bool AppendValueText(std::string* text, int depth);

  std::FILE* file_ = nullptr;
  std::string path_;
  std::vector<char> buf_;
  size_t pos_ = 0, len_ = 0;
  uint64_t consumed_ = 0;
  std::vector<uint8_t> first_;  // per open container: 1 until the first member
  std::string scratch_;         // what Skip reads and drops, reused
  Status status_;
};

}  // namespace dfx
