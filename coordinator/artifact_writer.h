// The coordinator's disk writer (the I/O half of the gather): one thread
// that opens, writes, commits or aborts artifact files in the order the
// event loop queued the jobs, so receiving overlaps with writing. Memory
// stays bounded because the event loop returns an agent's credit for a
// chunk only once the writer is done with its frame (ArtifactReceiver).
//
// Two ways to the disk, chosen per file when it is opened:
//  * buffered (small artifacts, and filesystems that refuse O_DIRECT or keep
//    their pages in memory anyway, like tmpfs): chunk data is written
//    straight from the received ZeroMQ frame (the job holds its FrameBytes)
//    and checksummed in the same pass, nothing copied;
//  * direct (artifacts of at least kDirectMinBytes): the file is opened
//    O_DIRECT and its final size allocated up front; each chunk is hashed
//    and copied, piece by piece while it is hot, into one of kDirectBuffers
//    aligned staging buffers of kDirectBufferBytes (4 MiB in all, allocated
//    on first use), which up to kDirectBuffers I/O threads pwrite at their
//    offsets, so several writes are in flight (one direct write at a time
//    is bounded by the device's latency). The frame is released once
//    copied; the writer waits for a free buffer, so credits still follow
//    the disk. The unaligned last bytes of a file (< 4 KiB) are written
//    through the page cache at its commit, after every direct write of it
//    finished. On this VM a write into the page cache costs more CPU than
//    the rest of the transfer (bench/README.md, "Gather throughput"); a
//    direct write skips that copy and the allocation of fresh pages. A
//    direct write refused with EINVAL is done again through the page cache
//    (and so is the rest of that file).
// No fsync either way: artifacts are renamed into place once complete and
// verified (atomic against readers and against a coordinator crash, not
// against a power loss).
//
// Threads: Push / TakeResults / Idle / DiscardWrites from the event loop
// only; one worker thread runs the jobs and wakes the loop through
// wake_fd(); the I/O threads run only the direct writes the worker hands
// them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/file_util.h"
#include "protocol/channel.h"

namespace dfx::coordinator {

class ArtifactWriter {
 public:
  // Files of at least this many bytes are written direct (see above).
  static constexpr uint64_t kDirectMinBytes = 1 << 20;
  static constexpr size_t kDirectBuffers = 8;
  static constexpr size_t kDirectBufferBytes = 1 << 20;
  static constexpr size_t kDirectAlignment = 4096;

  // One artifact file. Touched only by the worker thread once queued, but
  // for `direct_pending` / `direct_errno`, which the I/O threads update
  // under the writer's lock.
  struct Sink {
    AtomicFileWriter file;
    Checksum64 sum;
    std::string error;       // the first failure; later writes are skipped
    uint64_t direct_at = 0;  // direct: the file offset of `carry`'s first byte
    std::string carry;       // direct: received bytes short of an aligned block
    int direct_pending = 0;  // direct writes of this file in flight
    int direct_errno = 0;    // the first failed direct write's errno
  };
  enum class Kind { kOpen, kWrite, kCommit, kAbort };
  struct Job {
    Kind kind = Kind::kWrite;
    std::shared_ptr<Sink> sink;
    std::filesystem::path path;  // kOpen
    uint64_t size = 0;           // kOpen: the file's announced size
    protocol::FrameBytes frame;  // kWrite: keeps `data` alive
    std::string_view data;       // kWrite
    uint64_t checksum = 0;       // kCommit: what the agent says the file hashes to
    uint64_t stream = 0;         // who asked, echoed in the result
  };
  // Results of kWrite (a credit goes back) and kCommit (an ack goes out).
  struct Done {
    Kind kind = Kind::kWrite;
    uint64_t stream = 0;
    std::string error;  // kCommit: empty = verified and renamed into place
  };

  struct Options {
    // false: every file through the page cache.
    bool direct = true;
    // Test-only fault injection: each chunk write takes at least this long
    // (a slow disk), so unwritten chunks pile up.
    std::chrono::milliseconds write_delay{0};
    // Test-only fault injection: every direct write fails with EINVAL, as
    // on a filesystem that takes O_DIRECT at open but not the writes.
    bool fault_refuse_direct_writes = false;
  };
  explicit ArtifactWriter(Options options);
  ArtifactWriter() : ArtifactWriter(Options{}) {}
  ~ArtifactWriter();  // joins; queued jobs are dropped and their temporary files removed
  ArtifactWriter(const ArtifactWriter&) = delete;
  ArtifactWriter& operator=(const ArtifactWriter&) = delete;

  int wake_fd() const { return wake_.read_fd(); }
  void Push(Job job);
  std::deque<Done> TakeResults();
  // Every queued job ran and its result was taken.
  bool Idle();
  // Drops the queued (not yet started) kWrite jobs of `streams`, freeing
  // their frames; returns how many were dropped per stream. Their results
  // never come.
  std::map<uint64_t, uint32_t> DiscardWrites(const std::set<uint64_t>& streams);
  // Bytes written by direct writes so far (any thread).
  uint64_t direct_bytes();

 private:
  // A direct write handed to an I/O thread: `size` bytes of staging buffer
  // `buffer` at `offset` of `sink`'s file (the task keeps the sink, and so
  // its descriptor, alive).
  struct DirectWrite {
    std::shared_ptr<Sink> sink;
    size_t buffer = 0;
    size_t size = 0;
    uint64_t offset = 0;
  };

  void Loop();
  bool Run(Job& job, Done* done);
  void Open(Sink& sink, const Job& job);
  // Hashes `data` and stages it for direct writes (the worker thread).
  void WriteDirect(const std::shared_ptr<Sink>& sink, std::string_view data);
  // Waits until none of `sink`'s direct writes is in flight; the first
  // failure, if any, becomes its error.
  void FinishDirect(Sink& sink);
  // Writes what is left of a direct file (its unaligned tail) through the page cache.
  Status WriteCarry(Sink& sink);
  size_t AcquireBuffer();
  void IoLoop();
  // One direct write (an I/O thread); 0 or the errno. `direct`: it went past the cache.
  int WriteOne(const DirectWrite& w, bool* direct);

  protocol::WakePipe wake_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::deque<Done> results_;
  size_t outstanding_ = 0;  // pushed and not yet taken back by the loop
  size_t taken_ = 0;        // finished by the worker since the last TakeResults
  bool stop_ = false;
  const Options options_;

  // The direct path, under mu_. Buffers and I/O threads are made on first use.
  char* staging_ = nullptr;  // kDirectBuffers * kDirectBufferBytes, aligned
  std::vector<size_t> free_buffers_;
  std::deque<DirectWrite> direct_queue_;
  std::condition_variable io_cv_;    // direct_queue_ has work, or io_stop_
  std::condition_variable done_cv_;  // a direct write finished
  bool io_stop_ = false;
  uint64_t direct_bytes_ = 0;
  std::vector<std::thread> io_threads_;

  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace dfx::coordinator
