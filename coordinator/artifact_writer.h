// The coordinator's disk writer (the I/O half of the gather): one thread
// that opens, writes, commits or aborts artifact files in the order the
// event loop queued the jobs, so receiving overlaps with writing. Chunk data
// is written straight from the received ZeroMQ frame (the job holds its
// FrameBytes) and checksummed in the same pass, while it is hot: nothing is
// copied. Memory stays bounded because the event loop returns an agent's
// credit for a chunk only once the chunk is written (ArtifactReceiver).
// No fsync: artifacts are renamed into place once complete (atomic against
// readers and against a coordinator crash, not against a power loss).
//
// Threads: Push / TakeResults / Idle from the event loop only; one worker
// thread runs the jobs and wakes the loop through wake_fd().
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

#include "common/file_util.h"
#include "protocol/channel.h"

namespace dfx::coordinator {

class ArtifactWriter {
 public:
  // One artifact file. Touched only by the worker thread once queued.
  struct Sink {
    AtomicFileWriter file;
    Checksum64 sum;
    std::string error;  // the first failure; later writes are skipped
  };
  enum class Kind { kOpen, kWrite, kCommit, kAbort };
  struct Job {
    Kind kind = Kind::kWrite;
    std::shared_ptr<Sink> sink;
    std::filesystem::path path;  // kOpen
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

  // `write_delay` is test-only fault injection: each chunk write takes at
  // least that long (a slow disk), so unwritten chunks pile up.
  explicit ArtifactWriter(std::chrono::milliseconds write_delay = {});
  ~ArtifactWriter();  // joins; queued jobs are dropped and their temporary files removed
  ArtifactWriter(const ArtifactWriter&) = delete;
  ArtifactWriter& operator=(const ArtifactWriter&) = delete;

  int wake_fd() const { return wake_.read_fd(); }
  void Push(Job job);
  // `woken`: the caller's wait saw wake_fd() readable. The wake-up pipe is
  // read (a system call) then, or when results are waiting, before they
  // are taken: a result queued meanwhile writes it again.
  std::deque<Done> TakeResults(bool woken = true);
  // Every queued job ran and its result was taken.
  bool Idle();
  // Drops the queued (not yet started) kWrite jobs of `streams`, freeing
  // their frames; returns how many were dropped per stream. Their results
  // never come.
  std::map<uint64_t, uint32_t> DiscardWrites(const std::set<uint64_t>& streams);

 private:
  void Loop();
  bool Run(Job& job, Done* done);

  protocol::WakePipe wake_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::deque<Done> results_;
  size_t outstanding_ = 0;  // pushed and not yet taken back by the loop
  size_t taken_ = 0;        // finished by the worker since the last TakeResults
  bool stop_ = false;
  const std::chrono::milliseconds write_delay_;
  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace dfx::coordinator
