// The chip swimlane records reader (artifacts.md §2.6): the one way every
// viewer reads `chip_swimlane_records.json`. It streams the file (no DOM),
// joins `aicore_tasks` with `aicpu_tasks` on (core_id, reg_task_id), sorts the
// joined tasks by task_id and keeps timestamps as raw cycles; `Us()` turns a
// cycle count into µs relative to `base_cycles` the way the reference does.
//
// A PerfData is a plain value owned by the caller; immutable after ReadPerfData.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"

namespace dfx::view {

// One joined task row (one logical task may have several rows: SPMD, MIX).
struct TaskRow {
  uint64_t task_id = 0;               // task_token_raw = (ring << 32) | local
  uint64_t start = 0, end = 0;        // AICore cycles
  uint64_t dispatch = 0, finish = 0;  // AICPU cycles (0 at level 1)
  uint32_t reg_task_id = 0;
  uint32_t receive_to_start = 0;
  int32_t core_id = 0;
  int32_t func_id = -1;  // resolved from deps.json by the caller; -1 = unknown
};

// Scheduler phase kinds, §2.4 (legacy names mapped: fanout→resolve, prestage→early_dispatch).
enum class PhaseKind : uint8_t {
  kComplete,
  kDispatch,
  kRelease,
  kDummy,
  kEarlyDispatch,
  kResolve,
  kDummyTask,
  kDrain,
  kDrainPrepare,
  kDrainPublish,
  kAsyncPoll,
  kPredicatedSkip,
  kGraphPrepare,
  kScan,
  kPoll,
  kIdle,
  kOther,
};
const char* PhaseName(PhaseKind kind);
PhaseKind ParsePhaseKind(const std::string& name);

struct SchedPhase {
  PhaseKind kind = PhaseKind::kOther;
  bool has_depths = false;
  int16_t shared_at_start[3] = {0, 0, 0};
  int16_t shared_at_end[3] = {0, 0, 0};
  uint32_t loop_iter = 0;
  uint32_t tasks_processed = 0;
  uint32_t pop_hit = 0, pop_miss = 0;
  int64_t task_id = -1;         // dummy_task / predicated_skip / graph_prepare only
  uint64_t start = 0, end = 0;  // cycles
};

struct OrchPhase {
  int64_t submit_idx = 0;
  int64_t task_id = -1;
  uint64_t start = 0, end = 0;  // cycles (device) or host ns (host mode)
};

struct HostUpload {
  std::string phase;
  uint64_t start_ns = 0, end_ns = 0;
  int64_t detail = 0;
};

struct PerfData {
  std::filesystem::path path;
  int level = 0;
  uint64_t clock_freq_hz = 0;
  std::vector<std::string> core_types;  // index = core_id
  std::vector<int> core_to_thread;      // empty below level 3
  Json metadata;                        // the raw metadata object
  uint64_t base_cycles = 0;
  std::vector<TaskRow> tasks;  // sorted by task_id (stable: file order within a task)
  bool has_sched_phases = false;
  // Deques: no reallocation spikes while streaming large files.
  std::vector<std::deque<SchedPhase>> sched_phases;  // outer = sched thread
  std::vector<std::vector<OrchPhase>> orch_phases;   // outer = orch pool
  // Host-orchestrated (HBG) runs: orch_phases hold host ns; see HostUs().
  bool host_mode = false;
  std::vector<HostUpload> host_uploads;
  uint64_t host_origin_ns = 0;
  double device_offset_us = 0.0;  // causal composite: device timeline placed after host
  Json timeline_metadata;         // set in host mode
  uint64_t unmatched_aicpu_rows = 0;
  std::vector<std::pair<int, uint64_t>> unmatched_by_core;  // (core, count), most first

  // Cycles → µs relative to base (cycles ≤ 0 map to 0.0, §2.6 step 2).
  double Us(uint64_t cycles) const {
    if (cycles == 0) return 0.0;
    return device_offset_us + (static_cast<double>(cycles) - static_cast<double>(base_cycles)) *
                                  1e6 / static_cast<double>(clock_freq_hz);
  }
  double HostUs(uint64_t ns) const {
    return ns <= host_origin_ns ? 0.0 : static_cast<double>(ns - host_origin_ns) / 1000.0;
  }
  bool IsAic(const TaskRow& t) const {
    return t.core_id >= 0 && static_cast<size_t>(t.core_id) < core_types.size() &&
           core_types[static_cast<size_t>(t.core_id)] == "aic";
  }
  // Derived per-row times in µs.
  double StartUs(const TaskRow& t) const { return Us(t.start); }
  double EndUs(const TaskRow& t) const { return Us(t.end); }
  double ReceiveUs(const TaskRow& t) const {
    return t.receive_to_start == 0 ? Us(t.start) : Us(t.start - t.receive_to_start);
  }
  double DispatchUs(const TaskRow& t) const { return Us(t.dispatch); }
  double FinishUs(const TaskRow& t) const { return Us(t.finish); }
  int SchedThreadOfCore(int core) const {
    if (core < 0 || static_cast<size_t>(core) >= core_to_thread.size()) return -1;
    return core_to_thread[static_cast<size_t>(core)];
  }
};

// Reads and joins a records file. Errors name the file and what was wrong,
// e.g. "Unsupported chip_swimlane_level: 7 (expected 1, 2, 3, or 4)".
Result<PerfData> ReadPerfData(const std::filesystem::path& path);

// "Warning: N aicpu_task(s) had no matching AICore record (...)" or "" when all joined.
std::string UnmatchedWarning(const PerfData& data);

// "t<local>" for ring 0, else "r<ring>t<local>" (ring = bits 32..39).
std::string FormatTaskDisplay(uint64_t task_id);
inline int RingOf(uint64_t task_id) { return static_cast<int>((task_id >> 32) & 0xFF); }
inline uint32_t LocalOf(uint64_t task_id) { return static_cast<uint32_t>(task_id); }

}  // namespace dfx::view
