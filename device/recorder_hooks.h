// Where the emulator calls the collectors' recorders (device/emulator.h):
// one method per place the reference runtime records - AICore start/end,
// AICPU dispatch/finish, scheduler phases, orchestrator submits, dep_gen per
// submit, args-dump captures, PMU per block, scope samples - each a no-op
// when its collector is off. The engine decides when; this class turns the
// run's state into the recorders' records.
//
// Threads: called with the run's lock held (threaded) or on the run's one
// thread (virtual clock), except RecordAicoreTask, which a pool thread calls
// for the block it runs, and FlushDepGen, which the orchestrator calls
// without the lock (the records read only the lowered program).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "collectors/recorders.h"
#include "device/device_memory.h"
#include "device/engine_state.h"
#include "device/lowering.h"

namespace dfx::device {

class RecorderHooks {
 public:
  // `dfx` may be null (no collector is on). With `defer_dep_gen`, the
  // dep_gen record of a submit waits for FlushDepGen (threaded runs).
  RecorderHooks(collectors::DfxCollectors* dfx, const LoweredProgram& lp, bool defer_dep_gen);

  // The swimlane's level (0: off): 2 records AICPU tasks, 3 scheduler
  // phases, 4 orchestrator submits.
  int swimlane_level() const { return swimlane_level_; }
  // Whether block times are recorded (the swimlane is on at any level).
  bool records_blocks() const { return swimlane_ != nullptr; }
  bool records_pmu() const { return pmu_ != nullptr; }

  // Swimlane level 3: which AICPU scheduler thread owns each core.
  void MapCoresToThreads(const std::vector<CoreState>& cores);
  // A scope's begin or end, with the occupancy of its ring and the tensormap.
  void RecordScope(const LoweredScope& scope, bool begin, const RingState& ring,
                   uint64_t tensormap_live);
  // A submit went through: its dep_gen record, now or at FlushDepGen.
  void Submitted(int index) {
    if (!dep_gen_) return;
    if (defer_dep_gen_) {
      dep_pending_.push_back(index);
    } else {
      RecordDepGen(lp_.tasks[index]);
    }
  }
  // Reserves room for `n` deferred dep_gen records.
  void ReserveDeferred(size_t n) {
    if (dep_gen_) dep_pending_.reserve(n);
  }
  // Writes the deferred dep_gen records (orchestrator thread only).
  void FlushDepGen() {
    for (int index : dep_pending_) RecordDepGen(lp_.tasks[index]);
    dep_pending_.clear();
  }
  // Swimlane level 4: the orchestrator's submit number `submit_idx`.
  void RecordSubmitPhase(uint64_t submit_idx, uint64_t task_id, uint64_t start, uint64_t end) {
    swimlane_->RecordOrchPhase(0, static_cast<uint32_t>(submit_idx), task_id, start, end);
  }
  // The args dump of task `index` at `stage` (its inputs before dispatch,
  // its outputs after completion), reading the data from `memory`.
  Status CaptureStage(int index, collectors::DumpStage stage, DeviceMemory& memory);
  // An AICore ran a block (any swimlane level).
  void RecordAicoreTask(int core, uint64_t task_id, uint32_t reg_task_id, uint64_t start,
                        uint64_t end, uint32_t receive) {
    if (swimlane_)
      swimlane_->RecordAicoreTask(static_cast<uint32_t>(core), task_id, reg_task_id, start, end,
                                  receive);
  }
  // Swimlane level 2: the AICPU's dispatch-to-finish of the block on `core`.
  void RecordAicpuTask(int core, const CoreState& c, uint64_t finish) {
    if (swimlane_level_ >= 2)
      swimlane_->RecordAicpuTask(core, c.reg_task_id, c.dispatch_cycles, finish);
  }
  // The PMU record of the block that ran on `core` (its kernel succeeded).
  void RecordPmu(int core, const CoreState& c, const LoweredTask& t);
  // Swimlane level 3: one phase of AICPU scheduler thread `thread`.
  void RecordPhase(int thread, const collectors::SchedPhaseRecord& record) {
    swimlane_->RecordSchedPhase(static_cast<uint32_t>(thread), record);
  }

 private:
  void RecordDepGen(const LoweredTask& t);

  const LoweredProgram& lp_;
  const Program& prog_;
  collectors::SwimlaneRecorder* swimlane_ = nullptr;
  collectors::DepGenRecorder* dep_gen_ = nullptr;
  collectors::ArgsDumpRecorder* dump_ = nullptr;
  collectors::PmuRecorder* pmu_ = nullptr;
  collectors::ScopeStatsRecorder* scope_ = nullptr;
  int swimlane_level_ = 0;
  int dump_level_ = 0;
  bool defer_dep_gen_ = false;
  collectors::DepGenTaskRecord dep_rec_;  // RecordDepGen's, reused
  std::vector<collectors::DepGenEdgeRecord> edge_buf_;
  // Submits whose dep_gen records wait for FlushDepGen.
  std::vector<int> dep_pending_;
};

}  // namespace dfx::device
