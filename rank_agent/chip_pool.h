// The rank agent's chips (docs/design.md §7, §8): one worker thread per
// chip runs its dispatches one at a time, in the order they came, and hands
// each result back as a Completion for the event loop to report. A dispatch
// small enough to take microseconds (run_dispatch.h RunsInline) on an idle
// chip runs on the caller's thread instead, sparing two thread wake-ups.
//
// Chips are made only through the ChipMaker (device/chip_factory.h), so a
// test or another backend brings its own device::Chip.
//
// Artifacts go to <spool>/<session>/rank<N>/d<K>/ (collectors/
// artifact_layout.h); each file's checksum is kept beside it at write
// (spool_sum.h), on the chip's thread.
//
// Threads: every method but the constructor's callback belongs to one
// thread (the event loop); `on_done` is called from a worker thread.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "device/chip.h"
#include "device/chip_factory.h"
#include "device/program.h"
#include "protocol/messages.h"
#include "rank_agent/fault_injection.h"
#include "rank_agent/program_cache.h"
#include "rank_agent/spool_dirs.h"

namespace dfx::rank_agent {

// What a chip did with one dispatch.
struct Completion {
  protocol::Dispatch dispatch;
  protocol::DispatchStatus status = protocol::DispatchStatus::kOk;
  std::string error;
  uint64_t tasks = 0;
  uint64_t wall_ns = 0;
  uint64_t makespan_ns = 0;
  std::filesystem::path dir;       // the dispatch dir in the spool
  std::vector<std::string> files;  // relative to dir, written by the chip
};

// A dispatch waiting for its chip, with the program the agent kept for it
// when it came without one (ProgramCache).
struct QueuedDispatch {
  protocol::Dispatch dispatch;
  std::shared_ptr<const device::Program> program;
};

// Tasks done / total of a running dispatch.
struct ChipProgressReport {
  int32_t rank = 0;
  uint32_t k = 0;
  uint64_t done = 0;
  uint64_t total = 0;
};

struct ChipPoolOptions {
  int32_t first_rank = 0;  // chips get ranks first_rank .. first_rank+chips-1
  int chips = 1;
  std::filesystem::path spool_root;
  device::ChipOptions chip;
  device::ChipMaker make_chip = device::ChipMakerFor();
  FaultInjection faults;
};

// How errors name a dispatch's program: its plan name.
std::string ProgramOrigin(const protocol::Dispatch& d);

// Cuts `s` to `limit` bytes, saying so.
std::string Truncate(std::string s, size_t limit);

class ChipPool {
 public:
  // `programs` and `spool` must outlive the pool.
  ChipPool(ChipPoolOptions options, ProgramCache& programs, SpoolDirs& spool,
           std::function<void()> on_done);
  ~ChipPool();
  ChipPool(const ChipPool&) = delete;
  ChipPool& operator=(const ChipPool&) = delete;

  // Makes every chip and starts its worker.
  Status Start();
  // Stops the workers once their running dispatch is over; queued work is dropped.
  void Stop();

  bool Has(int32_t rank) const;
  // Runs `queued` on its chip (rank: Has): inline when small and the chip
  // is idle, else behind the chip's earlier work.
  void Submit(QueuedDispatch queued);
  // Takes dispatch (rank, k) off its chip's queue; false when it is
  // running, done or unknown.
  bool CancelQueued(int32_t rank, uint32_t k);
  // The completions since the last call, in the order they finished.
  std::deque<Completion> TakeCompletions();
  // A chip runs or has queued work.
  bool AnyBusy() const;
  // Running dispatches whose progress changed since they were last reported.
  std::vector<ChipProgressReport> ProgressChanges();
  // The session ended: forget queued work and clear each chip's
  // device-resident tensors once nothing runs on it.
  void EndSession();
  // Each chip's Describe(), in rank order.
  std::vector<std::string> Describe() const;

 private:
  struct Worker;

  void WorkerLoop(Worker* w);
  static void ClearChip(Worker& w);
  static void BeginRunLocked(Worker& w, uint32_t k);
  void EndRun(Worker& w, Completion c);
  bool TryRunInline(Worker& w, QueuedDispatch& queued);
  Completion RunOne(Worker& w, QueuedDispatch queued);
  Worker* WorkerFor(int32_t rank) const;

  ChipPoolOptions options_;
  ProgramCache& programs_;
  SpoolDirs& spool_;
  std::function<void()> on_done_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::mutex done_mu_;
  std::deque<Completion> done_;
};

}  // namespace dfx::rank_agent
