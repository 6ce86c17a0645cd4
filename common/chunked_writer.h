// ChunkedWriter: an append-only text writer that hands 1 MiB chunks to an
// AtomicFileWriter, the one writer under every artifact and trace (docs/design.md §11
// §7, §11), so a records file of a million rows never exists as one string
// while a collector writes it.
//
// Thread-compatible: one thread uses one instance (a background writer's
// thread is its own).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>

#include "common/file_util.h"
#include "common/status.h"

namespace dfx {

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

}  // namespace dfx
