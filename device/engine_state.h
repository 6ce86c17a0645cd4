// The per-run state types of the emulator's engine (device/emulator.h): what
// the scheduler keeps per task, per emulated core and per ring while one
// program runs. Plain structs; the owner (EngineScheduler) says which thread
// may touch them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectors/recorders.h"
#include "common/status.h"
#include "device/program.h"

namespace dfx::device {

// One task of the lowered stream.
struct TaskState {
  int refs = 0;  // lifetime references still held (LoweredTask::hold_refs at the start)
  int remaining_preds = 0;
  int blocks_dispatched = 0;
  int blocks_done = 0;
  bool submitted = false;
  bool done = false;
  bool consumed = false;  // no reference left: its ring slot can be reclaimed
  std::vector<int> successors;
};

// One emulated AICore and the block it runs.
struct CoreState {
  CoreType type;
  int thread = 0;  // the AICPU scheduler thread that owns it
  bool busy = false;
  int task = -1;
  int block = 0;
  uint32_t reg_task_id = 0;
  uint64_t dispatch_cycles = 0, start_cycles = 0, end_cycles = 0;
  Status kernel_status;
  // The block's estimated work, kept when PMU is on: computed where the
  // block ran (outside the lock), recorded when it retires.
  collectors::PmuWork pmu_work;
  bool finished = false;  // threaded: its block ran and waits to be retired
  explicit CoreState(CoreType t) : type(t) {}
  CoreState(CoreState&& o) noexcept : type(o.type), thread(o.thread) {}
};

// One ring's occupancy: monotonic counters of what was allocated (head,
// heap_alloc, dep_top) and reclaimed (tail, heap_reclaimed, dep_tail).
struct RingState {
  uint64_t head = 0, tail = 0;                  // task window (local ids)
  uint64_t heap_alloc = 0, heap_reclaimed = 0;  // monotonic bytes
  uint64_t dep_top = 0, dep_tail = 0;           // monotonic entries
  std::vector<int> tasks;                       // task index by local id
};

// Virtual-clock costs of the runtime's own work, in device cycles.
constexpr uint64_t kVirtualStart = 1000000;
constexpr uint64_t kSubmitCycles = 40;
constexpr uint64_t kDispatchCycles = 12;
constexpr uint64_t kReceiveCycles = 8;
constexpr uint64_t kFinishCycles = 6;
constexpr uint64_t kCompleteCycles = 10;

// "t5", or "r1t5" for a task of ring 1: the task as error messages name it.
std::string TaskLabel(uint64_t task_id);

}  // namespace dfx::device
