// The chip swimlane records reader (docs/formats.md §2.6): the one reader of
// `chip_swimlane_records.json`, beside the writer (SwimlaneRecorder::Export),
// used by the collectors' tests and by every viewer. It streams the file (no
// DOM), joins `aicore_tasks` with `aicpu_tasks` on (core_id, reg_task_id),
// sorts the joined tasks by task_id and keeps timestamps as cycles (compactly,
// see TaskRow); `Us()` turns a cycle count into µs relative to `base_cycles`
// the way the reference does. Memory is bounded by the rows (28 B each): the
// file is read in two passes and scheduler phases can be streamed instead of
// kept. ForEachTaskRecord walks the raw rows in file order, unjoined.
//
// A SwimlaneRecords is a plain value owned by the caller; immutable after
// ReadSwimlaneRecords except for the TaskRow scratch bits/slot, which the one
// consumer may reuse. The functions are thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/json.h"
#include "common/json_stream.h"
#include "common/prefetch.h"
#include "common/status.h"

namespace dfx::collectors {

// One joined task row (one logical task may have several rows: SPMD, MIX).
// 28 bytes: a million rows cost 28 MB. Start/end/dispatch are stored relative
// to SwimlaneRecords::epoch in 32 bits, finish as a 16-bit delta from end, the
// receive→start delta in 16 bits; a row that does not fit (cycle span >= 2^32
// ticks from the earliest record, tail or receive delta >= 65535 cycles, a
// task id above 40 bits) is "wide": its full values live in
// SwimlaneRecords::wide_rows. Read the values through the SwimlaneRecords accessors
// (TaskId(), Start(), End(), Dispatch(), Finish(), ReceiveToStart()), never
// through the raw fields.
struct TaskRow {
  uint32_t id_lo = 0;  // task_id bits 0..31 (compact rows)
  uint8_t id_hi = 0;   // task_id bits 32..39 (compact rows)
  uint8_t flags = 0;   // kWide; bits 1..7 are scratch for the caller
  uint16_t core_id = 0;
  // Compact: cycles - SwimlaneRecords::epoch, 0 = a zero timestamp. Wide: `start` is
  // the index into SwimlaneRecords::wide_rows and the other fields are unused.
  uint32_t start = 0, end = 0, dispatch = 0;
  uint16_t tail = 0;  // compact finish: 0 = zero, else finish - end + 1
  uint16_t r2s = 0;   // compact AICore receive→start delta (cycles)
  // reg_task_id after ReadSwimlaneRecords; callers may reuse it as scratch afterwards.
  uint32_t slot = 0;
  static constexpr uint8_t kWide = 1;
  static constexpr uint8_t kScratchMask = 0xFE;
  bool wide() const { return (flags & kWide) != 0; }
};
static_assert(sizeof(TaskRow) == 28, "TaskRow must stay compact");

// Full values of a row that does not fit the compact encoding.
struct WideRow {
  uint64_t task_id = 0;
  uint64_t start = 0, end = 0, dispatch = 0, finish = 0;
  uint32_t receive_to_start = 0;
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
PhaseKind ParsePhaseKind(std::string_view name);

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

struct SwimlaneRecords {
  std::filesystem::path path;
  std::vector<std::string> top_level_keys;  // in file order
  // Compact TaskRow timestamps are cycles - epoch (epoch = base_cycles - 1).
  uint64_t epoch = 0;
  std::vector<WideRow> wide_rows;
  int level = 0;
  uint64_t clock_freq_hz = 0;
  std::vector<std::string> core_types;  // index = core_id
  std::vector<int> core_to_thread;      // empty below level 3
  Json metadata;                        // the raw metadata object
  uint64_t base_cycles = 0;
  std::vector<TaskRow> tasks;  // sorted by task_id (stable: file order within a task)
  bool has_sched_phases = false;
  size_t num_sched_threads = 0;   // inner arrays of aicpu_scheduler_phases
  uint64_t num_sched_phases = 0;  // phases in them, all threads
  // Deques: no reallocation spikes while streaming large files. Empty when the
  // file was read with SwimlaneReadOptions::stream_sched_phases: use ForEachSchedPhase.
  std::vector<std::deque<SchedPhase>> sched_phases;  // outer = sched thread
  bool sched_phases_streamed = false;
  // Streamed, and the first pass read every phase with the fast reader
  // (FastScanSchedPhases): a pass over them may use it too.
  bool sched_phases_fast = false;
  uint64_t sched_phases_offset = 0;  // byte offset of the aicpu_scheduler_phases value
  // Outer = orch pool. Empty when the device (AICPU) phases were read with
  // SwimlaneReadOptions::stream_orch_phases: use NumOrchPools, HasOrchPhases
  // and ForEachOrchPhase / OrchPhaseStream, which work either way.
  std::vector<std::vector<OrchPhase>> orch_phases;
  bool orch_phases_streamed = false;
  std::vector<uint64_t> orch_phases_offsets;  // each aicpu_orchestrator_phases value (streamed)
  size_t num_streamed_orch_pools = 0;
  uint64_t num_streamed_orch_phases = 0;
  // Streamed, and the first pass read every value with the fast reader
  // (FastScanOrchPhases): the streams read them with it too.
  bool orch_phases_fast = false;
  // The orchestrator phases' task ids (those >= 0) never decrease in file
  // order (pool after pool): the first phase of a task is found by one
  // forward scan beside the task-sorted rows.
  bool orch_phases_sorted_by_task = true;
  // Host-orchestrated (HBG) runs: orch_phases hold host ns; see HostUs().
  bool host_mode = false;
  std::vector<HostUpload> host_uploads;
  uint64_t host_origin_ns = 0;
  double device_offset_us = 0.0;  // causal composite: device timeline placed after host
  Json timeline_metadata;         // set in host mode
  uint64_t unmatched_aicpu_rows = 0;
  std::vector<std::pair<int, uint64_t>> unmatched_by_core;  // (core, count), most first

  // Row accessors (absolute cycles / full task id).
  uint64_t TaskId(const TaskRow& r) const {
    return r.wide() ? wide_rows[r.start].task_id : (uint64_t{r.id_hi} << 32) | r.id_lo;
  }
  uint64_t Start(const TaskRow& r) const {
    return r.wide() ? wide_rows[r.start].start : Abs(r.start);
  }
  uint64_t End(const TaskRow& r) const { return r.wide() ? wide_rows[r.start].end : Abs(r.end); }
  uint64_t Dispatch(const TaskRow& r) const {
    return r.wide() ? wide_rows[r.start].dispatch : Abs(r.dispatch);
  }
  uint64_t Finish(const TaskRow& r) const {
    return r.wide() ? wide_rows[r.start].finish : (r.tail == 0 ? 0 : End(r) + r.tail - 1);
  }
  uint32_t ReceiveToStart(const TaskRow& r) const {
    return r.wide() ? wide_rows[r.start].receive_to_start : r.r2s;
  }
  // Builds a row (compact when it fits, else wide). `epoch` must be final.
  TaskRow MakeRow(uint64_t task_id, int core, uint64_t start, uint64_t end, uint64_t dispatch,
                  uint64_t finish, uint32_t receive_to_start, uint32_t reg_task_id = 0);
  // Sets the AICPU timestamps of a row (turns it wide if they do not fit).
  void SetAicpuTimes(TaskRow& r, uint64_t dispatch, uint64_t finish);
  // Visits every scheduler phase in file order (thread, phase); works whether
  // the phases were kept in memory or are streamed again from `path`.
  Status ForEachSchedPhase(const std::function<void(size_t, const SchedPhase&)>& fn) const;
  // The same for the orchestrator phases (pool, phase).
  Status ForEachOrchPhase(const std::function<void(size_t, const OrchPhase&)>& fn) const;
  size_t NumOrchPools() const {
    return orch_phases_streamed ? num_streamed_orch_pools : orch_phases.size();
  }
  bool HasOrchPhases() const;

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
    return static_cast<size_t>(t.core_id) < core_types.size() &&
           core_types[static_cast<size_t>(t.core_id)] == "aic";
  }
  // Derived per-row times in µs.
  double StartUs(const TaskRow& t) const { return Us(Start(t)); }
  double EndUs(const TaskRow& t) const { return Us(End(t)); }
  double ReceiveUs(const TaskRow& t) const {
    uint32_t r2s = ReceiveToStart(t);
    return r2s == 0 ? Us(Start(t)) : Us(Start(t) - r2s);
  }
  double DispatchUs(const TaskRow& t) const { return Us(Dispatch(t)); }
  double FinishUs(const TaskRow& t) const { return Us(Finish(t)); }
  int SchedThreadOfCore(int core) const {
    if (core < 0 || static_cast<size_t>(core) >= core_to_thread.size()) return -1;
    return core_to_thread[static_cast<size_t>(core)];
  }

 private:
  uint64_t Abs(uint32_t rel) const { return rel == 0 ? 0 : epoch + rel; }
  // Compact encoding of `cycles`, or false when it does not fit.
  bool Rel(uint64_t cycles, uint32_t* rel) const;
};

struct SwimlaneReadOptions {
  // Do not keep aicpu_scheduler_phases in memory; ForEachSchedPhase re-reads
  // them from the file (the swimlane converter: bounded memory).
  bool stream_sched_phases = false;
  // Likewise for aicpu_orchestrator_phases (one per task at level 4): re-read
  // by ForEachOrchPhase / OrchPhaseStream. Host orchestrator phases (which
  // place the host timeline) are always kept.
  bool stream_orch_phases = false;
  // Sees every scheduler phase as the first pass reads it, (thread, phase)
  // in file order: a caller that needs the phases once (the converter's
  // complete bars) needs no pass of its own. When the first pass starts
  // over at the phases' first one (the fast reader met a phase outside its
  // subset), `restart_sched_phases` is called before it sees them again.
  std::function<void(size_t, const SchedPhase&)> see_sched_phase;
  std::function<void()> restart_sched_phases;
};

// Reads the orchestrator phases of `records` one at a time, in file order,
// from memory or (orch_phases_streamed) from the file: for a caller that
// walks them beside something else (a merge by task id). Holds one reader
// buffer; `records` must outlive it. One thread.
class OrchPhaseStream {
 public:
  explicit OrchPhaseStream(const SwimlaneRecords& records) : d_(records) {}
  // The next phase and its pool; false at the end or on an error (status()).
  bool Next(size_t* pool, OrchPhase* phase);
  const Status& status() const { return status_; }

 private:
  const SwimlaneRecords& d_;
  JsonPullReader r_;
  Status status_;
  size_t next_offset_ = 0;  // streamed: next of orch_phases_offsets to open
  bool in_value_ = false;   // streamed: inside an aicpu_orchestrator_phases array
  bool in_pool_ = false;    // inside a pool's array
  size_t pool_ = 0;         // pools begun so far (the current one is pool_ - 1)
  size_t index_ = 0;        // in memory: next phase of the current pool
};

// An OrchPhaseStream read on a thread of its own (common/prefetch.h): Next
// hands out phases the other core has parsed already. For a converter that
// draws each phase as it comes; stopping early (destroying it) stops the
// reading.
class OrchPhaseStreamAhead {
 public:
  explicit OrchPhaseStreamAhead(const SwimlaneRecords& records);
  bool Next(size_t* pool, OrchPhase* phase);
  Status status() const { return ahead_.status(); }

 private:
  Prefetch<std::pair<size_t, OrchPhase>> ahead_;
};

// Reads and joins a records file. Errors name the file and what was wrong,
// e.g. "Unsupported chip_swimlane_level: 7 (expected 1, 2, 3, or 4)".
// The file is read twice: a first pass finds the base time and the row counts,
// the second stores rows compactly relative to it.
Result<SwimlaneRecords> ReadSwimlaneRecords(const std::filesystem::path& path,
                                            const SwimlaneReadOptions& options = {});

// One row of `aicore_tasks` / `aicpu_tasks` exactly as written (§2.3).
struct SwimlaneAicoreRow {
  uint32_t core_id = 0;
  uint64_t task_token_raw = 0;
  uint32_t reg_task_id = 0;
  uint64_t start_cycles = 0;
  uint64_t end_cycles = 0;
  uint32_t receive_to_start_cycles = 0;  // 0 for legacy 5-column rows
};
struct SwimlaneAicpuRow {
  uint32_t core_id = 0;
  uint32_t reg_task_id = 0;
  uint64_t dispatch_cycles = 0;
  uint64_t finish_cycles = 0;
};

// Visits the rows of `aicore_tasks` and `aicpu_tasks` in file order, without
// joining them (what a writer wrote, row by row). Rows are checked as
// ReadSwimlaneRecords checks them; the rest of the file is skipped.
Status ForEachTaskRecord(const std::filesystem::path& path,
                         const std::function<void(const SwimlaneAicoreRow&)>& on_aicore,
                         const std::function<void(const SwimlaneAicpuRow&)>& on_aicpu);

// "Warning: N aicpu_task(s) had no matching AICore record (...)" or "" when all joined.
std::string UnmatchedWarning(const SwimlaneRecords& data);

}  // namespace dfx::collectors
