// File utilities: every artifact is written under a temporary name and renamed
// into place only when complete, so no half-written file ever sits under its
// final name (docs/design.md §9).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace dfx {

// Reads a whole file. Errors name the path.
Result<std::string> ReadFile(const std::filesystem::path& path);

// Creates `dir` and its parents. Errors name the path.
Status MakeDirs(const std::filesystem::path& dir);

// Trust no path (docs/design.md §11.13): every existing component of `rel` below
// `root` must be a real directory or file, never a symbolic link (`root`
// itself is what the user named and may be one). The error names the link
// and says that nothing is written through links.
Status CheckNoLinks(const std::filesystem::path& root, const std::filesystem::path& rel);
// Creates `root`/`rel_dir` component by component under CheckNoLinks's rule:
// an existing link anywhere on the way is an error, nothing is created
// through it.
Status MakeDirsNoLinks(const std::filesystem::path& root, const std::filesystem::path& rel_dir);

// The temporary-name rule (the one owner; docs/design.md §9): a file is written as
// "<final>.tmp.<pid>" and renamed to <final> once complete, so a name that
// contains ".tmp." is never a finished artifact. Every listing of artifacts
// skips such names; a gather after a crash deletes them.
std::filesystem::path TemporaryPathFor(const std::filesystem::path& final_path);
bool IsTemporaryPath(std::string_view path_or_name);

// Writes `data` to `path` via TemporaryPathFor(path) + rename. Creates
// parents. `mode` is the new file's permission bits (0600 for secrets).
Status WriteFileAtomic(const std::filesystem::path& path, std::string_view data,
                       mode_t mode = 0644);

// Streams a file under a temporary name; Commit() flushes, closes and renames
// it to the final path. Destroying an uncommitted writer removes the temporary
// file. Move-only; one thread at a time.
class AtomicFileWriter {
 public:
  AtomicFileWriter() = default;
  ~AtomicFileWriter();
  AtomicFileWriter(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Opens "<final_path>.tmp.<pid>" for writing, creating parent
  // directories. The temporary name is never followed if it is a link
  // (O_NOFOLLOW), and the file gets exactly `mode` (0600 for secrets).
  Status Open(const std::filesystem::path& final_path, mode_t mode = 0644);
  Status Write(std::string_view data);
  // For a large file written once and not read back soon (a trace): each
  // Write from now on starts the writeback of what it wrote, and drops from
  // the page cache what is on disk and more than kDropBehindLag bytes back.
  // The file then holds a few MiB of page cache instead of all its bytes,
  // and its pages are reused while still warm: on a VM whose balloon takes
  // free pages back, a first touch of a page traps to the host (writing a
  // 1.1 GB file: 3.1-3.6 s of system time buffered, 0.4-0.5 s this way).
  // Stops by itself, leaving the rest to the page cache, when the device
  // falls behind: when a start of writeback blocks for more than
  // `max_stall_ms` (the device's queue is full).
  static constexpr uint64_t kDropBehindLag = 8 << 20;
  static constexpr int kDropBehindMaxStallMs = 50;
  void SetDropBehind(bool on, int max_stall_ms = kDropBehindMaxStallMs) {
    drop_behind_ = on;
    max_stall_ms_ = max_stall_ms;
  }
  // For the same files, right after Open: writes go past the page cache
  // (O_DIRECT) in whole blocks of align() bytes (statx STATX_DIOALIGN and
  // the file system's block size, at least 512): straight from the caller's
  // bytes where they sit at the file's alignment in memory (ChunkedWriter
  // cuts its chunks so that they do), through a small aligned staging block
  // where not; the last partial block goes through the page cache at
  // Commit. The same bytes reach the file. Writing a 3.7 GB trace: 0.6-1.3 s
  // of system time instead of 1.1-2.6 s (the page cache's copy) on this
  // project's VMs. A direct write waits for the device, so this stays off
  // where the file system refuses O_DIRECT, and turns itself off, leaving
  // the rest to the page cache (which a slow disk's writer fills at memory
  // speed), when one write takes longer than the drop-behind's
  // `max_stall_ms`, or when the device takes a window of kDirectWindow
  // bytes at under `min_bytes_per_sec`.
  static constexpr uint64_t kDirectWindow = 16 << 20;
  static constexpr uint64_t kDirectMinBytesPerSec = 256ull << 20;
  void SetDirect(uint64_t min_bytes_per_sec = kDirectMinBytesPerSec);
  bool direct() const { return direct_; }
  size_t align() const { return align_; }
  Status Commit();
  // Removes the temporary file without renaming.
  void Abort();
  bool is_open() const { return file_ != nullptr; }
  uint64_t bytes_written() const { return bytes_written_; }
  const std::filesystem::path& final_path() const { return final_path_; }
  const std::filesystem::path& temp_path() const { return temp_path_; }

 private:
  // Starts the writeback of [from, bytes_written_) and drops what is behind.
  void DropBehind(uint64_t from);

  Status WriteDirect(std::string_view data);
  // write(2) of all of [p, p + n) at the file's offset, past stdio.
  Status WriteAll(const char* p, size_t n);
  // Writes [p, p + n) at the file's offset past the page cache; notes a
  // write slower than max_stall_ms (Write then ends direct writes).
  Status DirectWrite(const char* p, size_t n);
  // Ends direct writes: the staged bytes through the page cache.
  Status EndDirect();
  struct FreeStage {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, FreeStage> stage_;  // aligned, kStageBytes
  size_t staged_ = 0;                       // bytes in stage_, from an aligned offset on
  size_t align_ = 0;
  bool direct_ = false;
  bool stalled_ = false;
  uint64_t min_rate_ = kDirectMinBytesPerSec;
  uint64_t window_bytes_ = 0;  // direct bytes and their write time in this window
  uint64_t window_ns_ = 0;

  std::FILE* file_ = nullptr;
  std::filesystem::path final_path_;
  std::filesystem::path temp_path_;
  uint64_t bytes_written_ = 0;
  bool drop_behind_ = false;
  int max_stall_ms_ = kDropBehindMaxStallMs;
  uint64_t dropped_to_ = 0;  // DropBehind advised the page cache up to here
};

// Streaming 64-bit checksum (XXH64, seed 0) of a byte stream.
class Checksum64 {
 public:
  Checksum64();
  ~Checksum64();
  Checksum64(const Checksum64&) = delete;
  Checksum64& operator=(const Checksum64&) = delete;
  void Update(const void* data, size_t size);
  uint64_t Digest() const;

 private:
  void* state_;
};

// Checksum of a whole file, streamed in blocks.
Result<uint64_t> ChecksumFile(const std::filesystem::path& path);

// 16 lower-case hex digits.
std::string Hex64(uint64_t v);

// An exclusive advisory lock (flock(2)) on a directory itself (no lock file
// is created in it), held while the object lives and released by the kernel
// when the process dies, so a crashed owner never leaves a stale lock. A
// second Acquire while it is held fails with FailedPrecondition naming the
// holder's pid and command line (found in /proc/locks). A filesystem without
// flock on directories (e.g. NFS) yields an unheld lock and a warning().
// Move-only.
class DirectoryLock {
 public:
  // Locks `dir` (which must exist) without waiting. `what` names the
  // directory's role in errors, e.g. "work dir".
  static Result<DirectoryLock> Acquire(const std::filesystem::path& dir, const std::string& what);
  DirectoryLock() = default;
  ~DirectoryLock();
  DirectoryLock(DirectoryLock&& other) noexcept;
  DirectoryLock& operator=(DirectoryLock&& other) noexcept;
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  bool held() const { return fd_ >= 0; }
  // Why the lock is not held although Acquire succeeded ("" when it is held).
  const std::string& warning() const { return warning_; }

 private:
  int fd_ = -1;
  std::string warning_;
};

}  // namespace dfx
