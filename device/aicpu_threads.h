// The real-threads run (device/emulator.h): the orchestrator on the calling
// thread, and the chip's persistent pool of host threads (ChipThreads),
// fewer than the emulated cores when the host has fewer CPUs, that each do
// the AICPU scheduler's work and the AICores' work in turn. A pool thread
// takes the lock, does a pass of every AICPU scheduler thread (retires
// finished blocks, reclaims ring slots, dispatches ready blocks to idle
// emulated cores, recorded as that scheduler thread's phases), takes the
// oldest dispatched block, and runs its kernel without the lock, as the
// emulated core it was dispatched to. So while there is work a block costs
// no hand-off between host threads; a pool thread sleeps (spin, then futex)
// only when nothing is ready. All ring, task and core state
// (EngineScheduler) is under the run's one lock.
//
// One AicpuThreads per run; Run is called once, from the dispatching thread.
#pragma once

#include <cstdint>
#include <deque>

#include "device/chip.h"
#include "device/chip_model.h"
#include "device/chip_threads.h"
#include "device/engine_scheduler.h"
#include "device/lowering.h"
#include "device/recorder_hooks.h"

namespace dfx::device {

class AicpuThreads {
 public:
  // `pool`: the chip's host threads; `report` may be null.
  AicpuThreads(EngineScheduler& sched, RecorderHooks& hooks, const LoweredProgram& lp,
               const ChipOptions& opt, const ChipModel& model, ChipThreads* pool,
               RunReport* report);
  AicpuThreads(const AicpuThreads&) = delete;
  AicpuThreads& operator=(const AicpuThreads&) = delete;

  // Runs the whole stream to its end (or the run's failure); every block
  // was retired when it returns.
  void Run();

 private:
  // Lets the orchestrator go on without the lock every this many submits
  // and wakes sleeping pool threads for what it submitted.
  static constexpr int kSubmitBatch = 32;

  // Host threads that run blocks: ChipOptions::host_threads, else one per
  // host CPU; never more than the emulated cores.
  int PoolSize() const;
  void OrchestratorLoop();
  bool AllDone() const { return orch_done_ && !sched_.InFlight(); }
  // One pass of AICPU scheduler thread `thread` over its cores, with mu_
  // held: the complete, release and dispatch phases. Dispatched blocks wait
  // in started_ for a pool thread.
  void SchedulePass(int thread);
  void WorkerLoop();
  // Runs the block dispatched to `core` on this host thread, as that core,
  // without the lock (the core is busy: nobody else touches its state).
  void RunBlock(int core);

  EngineScheduler& sched_;
  RecorderHooks& hooks_;
  const LoweredProgram& lp_;
  const ChipOptions& opt_;
  const ChipModel& model_;
  ChipThreads* pool_;
  RunReport* report_;
  bool orch_done_ = false;
  std::deque<int> started_;        // cores dispatched, not yet picked by a pool thread
  bool reclaimed_notify_ = false;  // ring slots were reclaimed since the last wake-up
  RunMutex mu_;                    // the run's one lock
  Parker orch_wake_;               // the orchestrator waits here for ring space
  Parker work_wake_;               // pool threads wait here for work
};

}  // namespace dfx::device
