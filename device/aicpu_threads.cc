#include "device/aicpu_threads.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "device/kernels.h"

namespace dfx::device {

AicpuThreads::AicpuThreads(EngineScheduler& sched, RecorderHooks& hooks, const LoweredProgram& lp,
                           const ChipOptions& opt, const ChipModel& model, ChipThreads* pool,
                           RunReport* report)
    : sched_(sched),
      hooks_(hooks),
      lp_(lp),
      opt_(opt),
      model_(model),
      pool_(pool),
      report_(report) {
  // A failed run wakes everyone who waits: nothing new is submitted or
  // dispatched, and the waiters must see it.
  sched_.set_on_fail([this] {
    orch_wake_.Notify();
    work_wake_.Notify();
  });
}

void AicpuThreads::Run() {
  if (lp_.tasks.size() <= 1 && lp_.core_executions <= 1) {
    // One block at most: nothing could run beside anything else, and
    // waking the pool (futex wake-ups and context switches there and
    // back) would cost more than the block. The calling thread submits
    // it, then does the scheduler's and the core's work itself. With one
    // task the orchestrator never waits for the pool: its only submit
    // either goes through or fails as a ring deadlock (nothing in flight).
    OrchestratorLoop();
    WorkerLoop();
    return;
  }
  const int pool = PoolSize();
  std::vector<std::function<void()>> jobs;
  for (int w = 0; w < pool; ++w) jobs.emplace_back([this] { WorkerLoop(); });
  pool_->Run(jobs, [this] { OrchestratorLoop(); });
  // Every block was retired before the pool's jobs returned.
}

int AicpuThreads::PoolSize() const {
  int n = opt_.host_threads;
  if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(n, 1, sched_.core_count());
}

void AicpuThreads::OrchestratorLoop() {
  std::unique_lock<RunMutex> lock(mu_);
  hooks_.ReserveDeferred(kSubmitBatch);
  std::string why;
  int batch = 0;
  // Whether the last step submitted and the lock was kept since: the next
  // submit then starts when that one ended (one clock read, not two).
  bool chained = false;
  while (!sched_.failed() && !sched_.StreamDone()) {
    // A submit's start is recorded at swimlane level 4 only.
    uint64_t start = 0;
    if (hooks_.swimlane_level() >= 4)
      start = chained ? sched_.last_submit_end() : sched_.NowCycles();
    if (sched_.OrchestratorStep(start, &why)) {
      chained = true;
      if (++batch >= kSubmitBatch) {
        batch = 0;
        chained = false;
        lock.unlock();
        work_wake_.Notify();
        hooks_.FlushDepGen();
        lock.lock();
      }
      continue;
    }
    batch = 0;
    chained = false;
    sched_.CountStall();
    // Blocked on a ring: wait for the pool to retire something.
    while (!sched_.failed()) {
      const uint32_t seen = orch_wake_.Seq();
      if (sched_.NextSubmitBlocked().empty()) break;
      if (!sched_.InFlight()) {
        sched_.Fail(sched_.DeadlockError(why));
        break;
      }
      lock.unlock();
      work_wake_.Notify();
      hooks_.FlushDepGen();
      orch_wake_.Wait(seen);
      lock.lock();
    }
  }
  orch_done_ = true;
  lock.unlock();
  work_wake_.Notify();
  hooks_.FlushDepGen();
}

void AicpuThreads::SchedulePass(int thread) {
  if (!sched_.SchedHasWork(thread)) return;
  int16_t at_start[3];
  sched_.Depths(at_start);
  // The phases' own times are recorded at swimlane level 3 and up only; a
  // clock read is a good part of a small block's cost. Dispatch and
  // retire times are always read (the makespan).
  const bool phases = hooks_.swimlane_level() >= 3;
  auto phase_time = [this, phases] { return phases ? sched_.NowCycles() : 0; };
  uint64_t start = phase_time();
  uint32_t retired = 0;
  uint64_t reclaimed_before = sched_.reclaimed();
  for (int ci = 0; ci < sched_.core_count(); ++ci) {
    CoreState& c = sched_.core(ci);
    if (c.thread != thread || !c.busy || !c.finished) continue;
    sched_.RetireBlock(ci, sched_.NowCycles());
    c.finished = false;
    ++retired;
  }
  // Phases that follow one another share the clock read between them: the
  // complete phase's end is the release's instant and the dispatch phase's
  // start, and the dispatch phase ends at its last dispatch (as on the
  // virtual clock). Each read costs the run's one lock that much longer.
  uint64_t now = start;
  if (retired) {
    now = phase_time();
    sched_.RecordPhase(thread, collectors::SchedPhaseKind::kComplete, start, now, retired,
                       at_start);
  }
  if (sched_.reclaimed() > reclaimed_before) {
    sched_.ReleasePhase(thread, reclaimed_before, now, now);
    reclaimed_notify_ = true;
  }
  uint64_t last_dispatch = now;
  sched_.DispatchPhase(
      thread, now, [this, &last_dispatch] { return last_dispatch = sched_.NowCycles(); },
      [&last_dispatch] { return last_dispatch; }, [this](int core) { started_.push_back(core); });
  sched_.CountLoop(thread);
}

void AicpuThreads::WorkerLoop() {
  std::unique_lock<RunMutex> lock(mu_);
  for (;;) {
    for (int t = 0; t < sched_.sched_threads(); ++t) SchedulePass(t);
    // The orchestrator waits for ring space, or for nothing to be in
    // flight (then it reports a ring deadlock).
    const bool wake_orch = reclaimed_notify_ || !sched_.InFlight();
    reclaimed_notify_ = false;
    if (!started_.empty()) {
      const int core = started_.front();
      started_.pop_front();
      const bool more = !started_.empty();
      lock.unlock();
      if (wake_orch) orch_wake_.Notify();
      if (more) work_wake_.Notify();  // another pool thread may take it
      RunBlock(core);
      lock.lock();
      sched_.core(core).finished = true;
      continue;
    }
    const bool all_done = AllDone();
    const uint32_t seen = work_wake_.Seq();
    lock.unlock();
    if (wake_orch) orch_wake_.Notify();
    if (all_done) break;
    work_wake_.Wait(seen);
    lock.lock();
  }
  // Others may be waiting for the last retirement this thread made.
  work_wake_.Notify();
  orch_wake_.Notify();
}

void AicpuThreads::RunBlock(int core) {
  CoreState& c = sched_.core(core);
  // The block's times are recorded by the swimlane and the report only.
  const bool stamps = hooks_.records_blocks() || report_;
  uint64_t receive = stamps ? sched_.NowCycles() : 0;
  KernelCall call = sched_.MakeCall(c.task, c.block);
  const uint64_t task_id = sched_.task_id(c.task);
  uint64_t start = stamps ? sched_.NowCycles() : 0;
  Status s = RunKernelBlock(call, /*spin_busy=*/true);
  uint64_t end = stamps ? sched_.NowCycles() : 0;
  hooks_.RecordAicoreTask(core, task_id, c.reg_task_id, start, end,
                          static_cast<uint32_t>(start - std::min(start, receive)));
  if (hooks_.records_pmu()) c.pmu_work = EstimateWork(call, model_);
  c.kernel_status = std::move(s);
  c.start_cycles = start;
  c.end_cycles = end;
}

}  // namespace dfx::device
