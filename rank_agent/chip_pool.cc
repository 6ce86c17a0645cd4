#include "rank_agent/chip_pool.h"

#include <fmt/format.h>

#include <condition_variable>
#include <thread>
#include <utility>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/heap.h"
#include "common/log.h"
#include "rank_agent/run_dispatch.h"
#include "rank_agent/spool_sum.h"

namespace dfx::rank_agent {

namespace fs = std::filesystem;

std::string ProgramOrigin(const protocol::Dispatch& d) {
  return d.program_name.empty() ? "<program>" : d.program_name;
}

std::string Truncate(std::string s, size_t limit) {
  if (s.size() > limit) {
    s.resize(limit - 16);
    s += " ...[truncated]";
  }
  return s;
}

struct ChipPool::Worker {
  int32_t rank = 0;
  std::unique_ptr<device::Chip> chip;
  std::shared_ptr<device::ChipProgress> progress;  // kept up to date by the chip
  std::optional<uint32_t> running_k;               // the dispatch on the chip (under mu)
  std::pair<uint32_t, uint64_t> last_reported{0, UINT64_MAX};  // (k, done); event loop only
  std::thread thread;
  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<QueuedDispatch> queue;
  bool reset_pending = false;  // the session ended: clear the chip before the next dispatch
  bool stop = false;
};

ChipPool::ChipPool(ChipPoolOptions options, ProgramCache& programs, SpoolDirs& spool,
                   std::function<void()> on_done)
    : options_(std::move(options)),
      programs_(programs),
      spool_(spool),
      on_done_(std::move(on_done)) {}

ChipPool::~ChipPool() { Stop(); }

Status ChipPool::Start() {
  for (int i = 0; i < options_.chips; ++i) {
    auto worker = std::make_unique<Worker>();
    worker->rank = options_.first_rank + i;
    worker->progress = std::make_shared<device::ChipProgress>();
    device::ChipOptions chip_options = options_.chip;
    chip_options.progress = worker->progress;
    auto chip = options_.make_chip(chip_options);
    if (!chip.ok()) {
      return Status(chip.status().code(),
                    fmt::format("rank {}: {}", worker->rank, chip.status().message()));
    }
    worker->chip = std::move(*chip);
    Worker* w = worker.get();
    worker->thread = std::thread([this, w] { WorkerLoop(w); });
    workers_.push_back(std::move(worker));
  }
  return Status::Ok();
}

void ChipPool::Stop() {
  for (auto& w : workers_) {
    {
      std::lock_guard<std::mutex> lock(w->mu);
      w->stop = true;
    }
    w->cv.notify_all();
  }
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
  workers_.clear();
}

ChipPool::Worker* ChipPool::WorkerFor(int32_t rank) const {
  for (const auto& w : workers_) {
    if (w->rank == rank) return w.get();
  }
  return nullptr;
}

bool ChipPool::Has(int32_t rank) const { return WorkerFor(rank) != nullptr; }

void ChipPool::WorkerLoop(Worker* w) {
  for (;;) {
    QueuedDispatch d;
    {
      std::unique_lock<std::mutex> lock(w->mu);
      w->cv.wait(lock, [w] { return w->stop || w->reset_pending || !w->queue.empty(); });
      if (w->stop) return;
      if (w->reset_pending) {
        w->reset_pending = false;
        ClearChip(*w);
        continue;
      }
      d = std::move(w->queue.front());
      w->queue.pop_front();
      BeginRunLocked(*w, d.dispatch.k);
    }
    EndRun(*w, RunOne(*w, std::move(d)));
    if (on_done_) on_done_();
  }
}

// Between dispatches (under w.mu), nothing runs on the chip: the device
// memory of the session that ended goes with it.
void ChipPool::ClearChip(Worker& w) {
  const size_t tensors = w.chip->resident_state().size();
  w.chip->resident_state().clear();
  w.chip->ReleaseShared();  // the kept lowering, with the session's programs
  // What the session allocated goes back to the kernel (with the heap's
  // reserve on huge pages, glibc would keep up to 256 MiB of a freed top).
  ReleaseFreeHeap();
  if (tensors > 0) {
    DFX_LOG_INFO("rank {}: session ended; cleared {} device-resident tensor(s)", w.rank, tensors);
  }
}

// The chip starts running dispatch k (under w.mu).
void ChipPool::BeginRunLocked(Worker& w, uint32_t k) {
  w.running_k = k;
  w.progress->tasks_done.store(0, std::memory_order_relaxed);
  w.progress->tasks_total.store(0, std::memory_order_relaxed);
}

// The chip is done with a dispatch: the event loop sends what it did.
void ChipPool::EndRun(Worker& w, Completion c) {
  {
    std::lock_guard<std::mutex> lock(w.mu);
    w.running_k.reset();
  }
  std::lock_guard<std::mutex> lock(done_mu_);
  done_.push_back(std::move(c));
}

// The chip is then the caller's until the run ends (w.mu orders it with
// the worker thread, which waits for work). A worker that has work queued
// or running keeps this one behind it. Returns false (nothing done) then.
bool ChipPool::TryRunInline(Worker& w, QueuedDispatch& queued) {
  if (!queued.program || !RunsInline(*queued.program, queued.dispatch.config)) return false;
  {
    std::lock_guard<std::mutex> lock(w.mu);
    if (w.stop || w.reset_pending || w.running_k || !w.queue.empty()) return false;
    BeginRunLocked(w, queued.dispatch.k);
  }
  EndRun(w, RunOne(w, std::move(queued)));
  return true;
}

void ChipPool::Submit(QueuedDispatch queued) {
  Worker* w = WorkerFor(queued.dispatch.rank);
  if (w == nullptr || TryRunInline(*w, queued)) return;
  {
    std::lock_guard<std::mutex> lock(w->mu);
    w->queue.push_back(std::move(queued));
  }
  w->cv.notify_one();
}

bool ChipPool::CancelQueued(int32_t rank, uint32_t k) {
  Worker* w = WorkerFor(rank);
  if (w == nullptr) return false;
  std::lock_guard<std::mutex> lock(w->mu);
  for (auto it = w->queue.begin(); it != w->queue.end(); ++it) {
    if (it->dispatch.k == k) {
      w->queue.erase(it);
      return true;
    }
  }
  return false;
}

Completion ChipPool::RunOne(Worker& w, QueuedDispatch queued) {
  protocol::Dispatch& d = queued.dispatch;
  Completion c;
  // Hashed here, not taken from the coordinator: what is kept is what ran.
  const uint64_t json_bytes = d.program_json.size();
  const ProgramKey key{queued.program ? 0 : protocol::ProgramHash(d.program_json), d.program_name,
                       d.program_file};
  c.dir = collectors::SessionSpoolDir(options_.spool_root, d.session_id) /
          collectors::DispatchDirPath(d.rank, d.k);
  DispatchRequest request;
  request.program_json = std::move(d.program_json);
  request.program = std::move(queued.program);
  request.program_kept = true;
  request.program_origin = ProgramOrigin(d);
  request.program_file = d.program_file;
  request.config = d.config;
  request.pass = d.pass;
  request.output_dir = c.dir;
  request.name_map_file = collectors::kDispatchNameMapFile;
  request.faults = options_.faults;
  request.on_accepted = [&] {
    return spool_.Claim(c.dir, [&] {
      DFX_LOG_INFO("rank {} d{}: running program {} ({} pass{})", d.rank, d.k, d.program_name,
                   protocol::PassKindName(d.pass),
                   request.program_json.empty() ? ", kept: sent by hash" : "");
      return d.config.AnyDfx() ? MakeDirs(c.dir) : Status::Ok();
    });
  };
  DispatchOutcome r = RunDispatch(*w.chip, request);
  if (r.program && !request.program) programs_.Put(key, r.program, json_bytes);
  spool_.Release(c.dir);
  c.tasks = r.tasks_executed;
  c.wall_ns = r.wall_ns;
  c.makespan_ns = r.makespan_ns;
  if (!r.status.ok()) {
    c.status = r.failure == DispatchFailure::kRefused ? protocol::DispatchStatus::kRejected
                                                      : protocol::DispatchStatus::kFailed;
    // The coordinator's record names the dispatch: the reason alone.
    c.error = Truncate(r.status.message(), protocol::kMaxErrorBytes);
  }
  // Whatever the chip managed to write is streamed back, even on failure
  // (the reference exports what it has when a run fails).
  c.files = std::move(r.artifacts);
  for (const std::string& rel : c.files) {
    // Here, on the chip's thread, not while streaming (hash once, at write).
    if (Status s = WriteSum(c.dir, rel); !s.ok()) {
      DFX_LOG_WARN("cannot keep the checksum of {}: {}; it is hashed while sent",
                   (c.dir / rel).string(), s.message());
    }
  }
  c.dispatch = std::move(d);
  return c;
}

std::deque<Completion> ChipPool::TakeCompletions() {
  std::deque<Completion> done;
  std::lock_guard<std::mutex> lock(done_mu_);
  done.swap(done_);
  return done;
}

bool ChipPool::AnyBusy() const {
  for (const auto& w : workers_) {
    std::lock_guard<std::mutex> lock(w->mu);
    if (w->running_k || !w->queue.empty()) return true;
  }
  return false;
}

std::vector<ChipProgressReport> ChipPool::ProgressChanges() {
  std::vector<ChipProgressReport> changes;
  for (auto& w : workers_) {
    std::optional<uint32_t> k;
    {
      std::lock_guard<std::mutex> lock(w->mu);
      k = w->running_k;
    }
    if (!k) continue;
    const uint64_t total = w->progress->tasks_total.load(std::memory_order_relaxed);
    const uint64_t done = w->progress->tasks_done.load(std::memory_order_relaxed);
    if (total == 0 || std::make_pair(*k, done) == w->last_reported) continue;
    w->last_reported = {*k, done};
    changes.push_back(ChipProgressReport{w->rank, *k, done, total});
  }
  return changes;
}

void ChipPool::EndSession() {
  for (auto& w : workers_) {
    {
      std::lock_guard<std::mutex> lock(w->mu);
      w->queue.clear();
      w->reset_pending = true;
    }
    w->cv.notify_one();
  }
}

std::vector<std::string> ChipPool::Describe() const {
  std::vector<std::string> descriptions;
  for (const auto& w : workers_) descriptions.push_back(w->chip->Describe());
  return descriptions;
}

}  // namespace dfx::rank_agent
