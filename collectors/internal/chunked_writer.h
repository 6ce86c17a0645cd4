// ChunkedWriter: the collectors' one streaming text writer. Appends into a
// bounded in-memory chunk and hands full chunks to an AtomicFileWriter, so a
// records file of a million rows never exists as one string or one JSON DOM
// (style.md §7). Also the small JSON-literal helpers the writers share.
//
// One thread at a time. Errors latch: the first failed write is returned by
// Commit() and every later Append is a no-op.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "common/file_util.h"
#include "common/status.h"

namespace dfx::collectors::internal {

class ChunkedWriter {
 public:
  static constexpr size_t kChunkBytes = 1 << 20;

  Status Open(const std::filesystem::path& path) {
    buffer_.reserve(kChunkBytes + 4096);
    status_ = file_.Open(path);
    return status_;
  }
  void Append(std::string_view s) {
    buffer_.append(s);
    MaybeFlush();
  }
  void Append(char c) {
    buffer_.push_back(c);
    MaybeFlush();
  }
  template <typename... Args>
  void Format(fmt::format_string<Args...> f, Args&&... args) {
    fmt::format_to(std::back_inserter(buffer_), f, std::forward<Args>(args)...);
    MaybeFlush();
  }
  // Appends `s` as a JSON string literal (quotes and escapes included).
  void String(std::string_view s);
  // Flushes, closes and renames into place.
  Status Commit() {
    Flush();
    if (!status_.ok()) {
      file_.Abort();
      return status_;
    }
    return file_.Commit();
  }
  void Abort() { file_.Abort(); }

 private:
  void MaybeFlush() {
    if (buffer_.size() >= kChunkBytes) Flush();
  }
  void Flush() {
    if (status_.ok() && !buffer_.empty()) status_ = file_.Write(buffer_);
    buffer_.clear();
  }

  AtomicFileWriter file_;
  std::string buffer_;
  Status status_;
};

inline void ChunkedWriter::String(std::string_view s) {
  buffer_.push_back('"');
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        buffer_ += "\\\"";
        break;
      case '\\':
        buffer_ += "\\\\";
        break;
      case '\n':
        buffer_ += "\\n";
        break;
      case '\r':
        buffer_ += "\\r";
        break;
      case '\t':
        buffer_ += "\\t";
        break;
      default:
        if (c < 0x20) {
          fmt::format_to(std::back_inserter(buffer_), "\\u{:04x}", c);
        } else {
          buffer_.push_back(ch);
        }
    }
  }
  buffer_.push_back('"');
  MaybeFlush();
}

// A NUL-terminated fixed char array as a string_view (no terminator -> whole array).
template <size_t N>
std::string_view FixedString(const char (&s)[N]) {
  size_t n = 0;
  while (n < N && s[n] != '\0') ++n;
  return std::string_view(s, n);
}

}  // namespace dfx::collectors::internal
