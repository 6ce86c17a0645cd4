// Streaming JSON, the one implementation for every writer and reader of an
// artifact (style.md §7, §11): a pull reader that walks a file token by token
// without building a DOM, and ChunkedWriter, an append-only text writer that
// hands 1 MiB chunks to an AtomicFileWriter. Both exist so that a records file
// of a million rows never exists as one string or one JSON DOM, neither when
// a collector writes it nor when a viewer converts it.
//
// Thread-compatible: one thread uses one instance. The free functions are
// thread-safe.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_util.h"
#include "common/json.h"
#include "common/status.h"

namespace dfx {

// A JSON number as read: integral values keep full 64-bit precision.
struct JsonNumber {
  bool is_integer = true;
  bool negative = false;
  uint64_t magnitude = 0;  // |value| when is_integer
  double value = 0.0;      // always set
  int64_t AsInt64() const {
    return negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
  }
  uint64_t AsUint64() const { return negative ? 0 : magnitude; }
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

// Append-only text writer that streams to `path` through AtomicFileWriter:
// text is appended to a bounded in-memory chunk and every full chunk is
// written out, so memory stays at one chunk whatever the file's size. The
// file appears under its final name only on Commit().
//
// Errors latch: the first failed write is returned by Commit() and every
// later write is dropped. With `gzip`, the file is one gzip member (a
// `.json.gz` a browser-side trace viewer opens as is). Move-only.
//
// With `background`, full chunks are written (and compressed) by a thread of
// the writer's own while the caller fills the next one: the write system
// calls, which copy every byte into the page cache, overlap the formatting.
// At most kBackgroundChunks chunks exist at a time (the caller waits for
// the writer to take one; common/handoff.h), one more with direct writes
// (AtomicFileWriter::SetDirect: the next chunk, which each one is cut for),
// so memory stays bounded. With `map_chunks` Open makes all of them at
// once, their pages mapped (a first touch costs a page fault, ~11 us per 4
// KiB on this project's VMs): for output known to fill them all, opened
// before a wait that can pay for them. The caller's side is still one
// thread. A background writer's file is one written once and not read back
// soon (a trace): it keeps only its last few MiB in the page cache
// (AtomicFileWriter::SetDropBehind).
class ChunkedWriter {
 public:
  static constexpr size_t kChunkBytes = 1 << 20;
  static constexpr size_t kBackgroundChunks = 3;  // being filled, queued, being written

  ChunkedWriter();
  ~ChunkedWriter();
  ChunkedWriter(ChunkedWriter&&) noexcept;
  ChunkedWriter& operator=(ChunkedWriter&&) noexcept;

  // Opens "<path>.tmp.<pid>" (see AtomicFileWriter).
  Status Open(const std::filesystem::path& path, bool gzip = false, bool background = false,
              bool map_chunks = false);
  void Append(std::string_view s) {
    buffer_.append(s);
    MaybeFlush();
  }
  void Append(char c) {
    buffer_.push_back(c);
    MaybeFlush();
  }
  template <typename... Args>
  void Format(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(buffer_), format, std::forward<Args>(args)...);
    MaybeFlush();
  }
  // Appends `s` as a JSON string literal (quotes and escapes included).
  void String(std::string_view s);
  // The pending chunk, for callers that build an event in place; call
  // MaybeFlush() after appending to it.
  std::string& buffer() { return buffer_; }
  void MaybeFlush() {
    if (buffer_.size() >= kChunkBytes) Flush();
  }
  // Flushes, closes and renames into place.
  Status Commit();
  // Bytes in the file so far plus the pending chunk (gzip: compressed bytes
  // in the file only).
  uint64_t bytes_written() const;
  // Removes the temporary file.
  void Abort();

 private:
  // Hands the pending chunk over; with `cut` (and direct writes), less
  // the bytes that then begin the next chunk (see Flush).
  void Flush(bool cut = true);
  // Writes (or compresses) one chunk into the file; the status latches.
  void WriteChunk(std::string& chunk);
  struct Gzip;        // zlib state, only for gzip output
  struct Background;  // the writer thread and its queue, only with `background`
  // Writes what is queued (or with `discard`, drops it) and ends the thread.
  void StopBackground(bool discard = false);

  AtomicFileWriter file_;
  std::unique_ptr<Gzip> gzip_;
  std::unique_ptr<Background> background_;
  std::string buffer_;
  Status status_;
};

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
