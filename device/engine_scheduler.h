// The emulator's scheduling state machine for one run (device/emulator.h):
// the orchestrator's side (walk the lowered event stream, allocate from the
// rings, block while a ring is full) and the AICPU scheduler's (resolve
// dependencies, ready queues per core type [AIC, AIV, MIX], dispatch ready
// blocks to idle cores in core order, retire completions, reclaim ring
// slots). It decides what happens in which order; the runners
// (RunVirtualClock, AicpuThreads) decide when and on which thread, and
// RecorderHooks records it.
//
// Not thread-safe: a threaded run calls it with its one lock held, a
// virtual-clock run on one thread. The exception is a busy core's state
// (core(i) while busy), which the thread running that core's block owns.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "device/chip.h"
#include "device/chip_model.h"
#include "device/device_memory.h"
#include "device/emulator.h"
#include "device/engine_state.h"
#include "device/kernels.h"
#include "device/lowering.h"
#include "device/recorder_hooks.h"

namespace dfx::device {

class EngineScheduler {
 public:
  // `aic` AIC cores then `aiv` AIV cores, assigned round-robin to
  // `sched_threads` AICPU scheduler threads. `report` may be null.
  EngineScheduler(const ChipOptions& opt, const ChipModel& model, const LoweredProgram& lp, int aic,
                  int aiv, int sched_threads, RecorderHooks* hooks, DeviceMemory* memory,
                  RunReport* report);

  // Called by Fail once the run failed (the threaded runner wakes its
  // waiting threads).
  void set_on_fail(std::function<void()> on_fail) { on_fail_ = std::move(on_fail); }

  // ---- orchestrator ----

  // Processes orchestrator events until one submit went through (or the
  // stream ended) at `now` (the submit's start; read at swimlane level 4
  // only). Returns false when blocked on a ring; `*why` says which.
  bool OrchestratorStep(uint64_t now, std::string* why);
  // Why the next submit cannot proceed, or "" when it can.
  std::string NextSubmitBlocked() const {
    return RingFull(lp_.tasks[lp_.events[next_event_].index]);
  }
  // Whether every event of the stream was processed.
  bool StreamDone() const { return next_event_ >= lp_.events.size(); }
  // The ring deadlock of the next submit, blocked on `why`.
  Status DeadlockError(const std::string& why) const;
  // The end of the last submit (swimlane level 4).
  uint64_t last_submit_end() const { return orch_end_; }
  void CountStall() { ++stalls_; }

  // ---- AICPU scheduler ----

  // Work that will still make progress: ready tasks (unless the run failed,
  // when nothing new is dispatched) and blocks on cores.
  bool InFlight() const;
  // Whether scheduler thread `thread` has anything to do: a finished block
  // to retire, or an idle core and a ready block of its type.
  bool SchedHasWork(int thread) const;
  // Scheduler side of a block completion on `core` at `finish`.
  void RetireBlock(int core, uint64_t finish);

  // The dispatch phase of scheduler `thread`: in core order, each of its idle
  // cores gets the next ready block of its core type, until the run fails.
  // The runner says what time it is: `dispatch_time()` stamps one dispatch
  // (the virtual clock advances per dispatch), `phase_end()` ends the phase;
  // `start_block(core)` hands the block to the core (a worker thread, or the
  // virtual run of the kernel). Records the phase when it dispatched
  // anything; returns how many blocks it dispatched.
  template <typename DispatchTime, typename PhaseEnd, typename StartBlock>
  uint32_t DispatchPhase(int thread, uint64_t start, DispatchTime dispatch_time, PhaseEnd phase_end,
                         StartBlock start_block) {
    int16_t at_start[3];
    Depths(at_start);
    uint32_t hit = 0, miss = 0;
    for (size_t ci = 0; ci < cores_.size() && !failed_; ++ci) {
      CoreState& c = cores_[ci];
      if (c.thread != thread || c.busy) continue;
      int block = 0;
      int index = PopBlock(c.type == CoreType::kAic ? 0 : 1, &block);
      if (index < 0) {
        ++miss;
        continue;
      }
      ++hit;
      c.busy = true;
      c.task = index;
      c.block = block;
      c.reg_task_id++;
      c.dispatch_cycles = dispatch_time();
      start_block(static_cast<int>(ci));
    }
    if (hit > 0)
      RecordPhase(thread, collectors::SchedPhaseKind::kDispatch, start, phase_end(), hit, at_start,
                  hit, miss);
    return hit;
  }
  // After retirements that reclaimed ring slots since `reclaimed_before`: a
  // release phase from `start` to `end`. Returns whether there was one.
  bool ReleasePhase(int thread, uint64_t reclaimed_before, uint64_t start, uint64_t end);
  // Records (swimlane level 3) one phase of scheduler `thread`; `at_start`
  // holds the ready queues' depths when it began.
  void RecordPhase(int thread, collectors::SchedPhaseKind kind, uint64_t start, uint64_t end,
                   uint32_t processed, const int16_t at_start[3], uint32_t hit = 0,
                   uint32_t miss = 0);
  // The ready queues' depths [AIC, AIV, MIX].
  void Depths(int16_t out[3]) const {
    for (int i = 0; i < 3; ++i)
      out[i] = static_cast<int16_t>(std::min<size_t>(ready_[i].size(), 32767));
  }
  // Counts one pass of scheduler `thread`'s loop.
  void CountLoop(int thread) { ++loop_iter_[thread]; }

  // ---- cores and kernels ----

  // The kernel call of block `block` of task `index`.
  KernelCall MakeCall(int index, int block);
  CoreState& core(int i) { return cores_[i]; }
  const std::vector<CoreState>& cores() const { return cores_; }
  int core_count() const { return static_cast<int>(cores_.size()); }
  int sched_threads() const { return sched_threads_; }
  uint64_t task_id(int index) const { return lp_.tasks[index].task_id; }

  // The chip's counter now (host monotonic time in the model's cycles).
  uint64_t NowCycles() const {
    return NsToCycles(MonotonicClock::Instance().NowNs(), model_.clock_freq_hz);
  }

  // ---- outcome ----

  // Records the run's first error; nothing new is submitted or dispatched
  // afterwards, blocks already on cores finish.
  void Fail(Status s);
  bool failed() const { return failed_; }
  const Status& status() const { return status_; }
  uint64_t reclaimed() const { return reclaimed_; }
  uint64_t submitted() const { return submitted_; }
  uint64_t completed() const { return completed_; }
  uint64_t stalls() const { return stalls_; }
  // First block dispatched to last block retired (chip cycles; 0: none ran).
  uint64_t makespan_cycles() const {
    return last_retire_cycles_ > first_dispatch_cycles_
               ? last_retire_cycles_ - first_dispatch_cycles_
               : 0;
  }

 private:
  int QueueOf(int task) const {
    return prog_.kernels[lp_.tasks[task].kernel].core_type == CoreType::kAic ? 0 : 1;
  }
  std::string RingFull(const LoweredTask& t) const;
  void ScopeSampleAt(const LoweredEvent& ev);
  void SubmitTask(int index, uint64_t start);
  void Unref(int index);
  void TaskDone(int index);
  void CaptureStage(int index, collectors::DumpStage stage);
  Status KernelError(int index, int block, const Status& s);
  // Pops the next block of queue `q`, or -1.
  int PopBlock(int q, int* block);

  const ChipOptions& opt_;
  const ChipModel& model_;
  const LoweredProgram& lp_;
  const Program& prog_;
  RecorderHooks* hooks_;
  DeviceMemory* memory_;
  RunReport* report_;
  std::function<void()> on_fail_;

  std::vector<CoreState> cores_;
  int sched_threads_ = 1;
  std::vector<TaskState> tasks_;
  RingState rings_[4];
  uint64_t tensormap_live_ = 0;
  std::deque<int> ready_[3];
  size_t next_event_ = 0;
  uint64_t submit_idx_ = 0;
  uint64_t orch_end_ = 0;  // the last submit's end (swimlane level 4, real threads)
  uint64_t submitted_ = 0, completed_ = 0, stalls_ = 0;
  uint64_t first_dispatch_cycles_ = UINT64_MAX, last_retire_cycles_ = 0;
  uint64_t reclaimed_ = 0;  // task slots reclaimed (all rings)
  uint32_t loop_iter_[8] = {};
  Status status_;
  bool failed_ = false;
};

}  // namespace dfx::device
