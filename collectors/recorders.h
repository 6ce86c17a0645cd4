// The five DFX recorders: the API the emulated AICPU / AICore code calls at
// the points a real runtime records (docs/design.md §5), and the writers that turn
// what was recorded into the on-disk formats of docs/formats.md.
//
// Rules every recorder follows:
//  * Level guards are real: a call whose data belongs to a higher level than
//    the recorder was created with records nothing (and costs one compare).
//  * Recording never allocates: buffers are preallocated from a CapacityHint.
//    A record that does not fit is dropped and counted, as the device does.
//  * Threading is stated per method; "per core" means one writer thread per
//    core id at a time, "per thread" one writer per scheduler thread index.
//  * Buffers are mapped lazily (collectors/internal/lazy_array.h); Prefault
//    maps the expected part ahead of the recording threads, and each writer
//    maps 256 KiB at a time ahead of its own cursor (LazyArray::MapAhead).
//  * Export* runs after the run, on one thread per recorder, and writes
//    through AtomicFileWriter (temporary name, renamed when complete).
//    Different recorders share nothing, so their exports may run at once
//    (DfxCollectors::ExportAll does).
//
// Collectors know nothing of the device or of ZeroMQ.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "collectors/chip_layout.h"
#include "common/status.h"

namespace dfx::collectors {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// 1. Chip swimlane (chip_swimlane_records.json, docs/formats.md §2)
// ---------------------------------------------------------------------------

enum class SchedPhaseKind : uint32_t {
  kComplete = 0,
  kDispatch = 1,
  kRelease = 2,
  kDummy = 4,
  kEarlyDispatch = 5,
  kResolve = 6,
  kDummyTask = 7,
  kDrain = 8,
  kDrainPrepare = 9,
  kDrainPublish = 10,
  kAsyncPoll = 11,
  kPredicatedSkip = 12,
  kGraphPrepare = 13,
};
const char* SchedPhaseName(SchedPhaseKind kind);

struct SchedPhaseRecord {
  SchedPhaseKind kind = SchedPhaseKind::kComplete;
  uint64_t start_cycles = 0;
  uint64_t end_cycles = 0;
  uint32_t loop_iter = 0;
  uint32_t tasks_processed = 0;
  uint32_t pop_hit = 0;                    // kDispatch only
  uint32_t pop_miss = 0;                   // kDispatch only
  uint64_t task_id = 0;                    // kDummyTask / kPredicatedSkip / kGraphPrepare only
  int16_t shared_at_start[3] = {0, 0, 0};  // ready-queue depths [AIC, AIV, MIX]
  int16_t shared_at_end[3] = {0, 0, 0};
};

class SwimlaneRecorder {
 public:
  // level 1..4. Buffers sized from `hint`.
  SwimlaneRecorder(int level, const ChipLayout& layout, const CapacityHint& hint);
  ~SwimlaneRecorder();
  int level() const { return level_; }

  // Level >= 1. AICore worker of `core_id` (per core).
  void RecordAicoreTask(uint32_t core_id, uint64_t task_token_raw, uint32_t reg_task_id,
                        uint64_t start_cycles, uint64_t end_cycles,
                        uint32_t receive_to_start_cycles);
  // Level >= 2. The AICPU scheduler thread owning `core_id` (per core).
  void RecordAicpuTask(uint32_t core_id, uint32_t reg_task_id, uint64_t dispatch_cycles,
                       uint64_t finish_cycles);
  // Level >= 3. Scheduler thread `thread` (per thread).
  void RecordSchedPhase(uint32_t thread, const SchedPhaseRecord& record);
  // Level >= 3. Any thread, before the run's cores start.
  void SetCoreToThread(uint32_t core_id, int thread);
  // Level 4. Orchestrator thread `orch_idx` (per thread).
  void RecordOrchPhase(uint32_t orch_idx, uint32_t submit_idx, uint64_t task_id,
                       uint64_t start_cycles, uint64_t end_cycles);

  // Any thread, while others record: has the kernel map now the pages of the
  // `slice`-th of `slices` equal parts of the rows the CapacityHint expects,
  // so the chip's threads take no page fault there. DfxCollectors runs the
  // slices in order on a background thread at idle priority.
  void Prefault(int slice, int slices) const;
  // One background thread, while others record: maps the next rows of the
  // streams whose length the program does not fix, ahead of their writers
  // (DfxCollectors calls it after the slices, until the run ends).
  void PrefaultAhead() const;
  uint64_t dropped_records() const;
  // Writes <path>. Returns NotFound (and writes nothing) if no record exists,
  // like the reference ("No performance data to export").
  Status Export(const fs::path& path) const;

 private:
  struct Impl;
  int level_;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------
// 2. dep_gen (deps.json, docs/formats.md §6)
// ---------------------------------------------------------------------------

enum class ArgType : uint8_t { kInput, kOutput, kInout, kOutputExisting, kUnknown };
const char* ArgTypeName(ArgType t);  // "INPUT", "OUTPUT", ...

constexpr int kMaxTensorArgs = 32;  // CORE_MAX_TENSOR_ARGS
constexpr int kMaxDims = 5;

// Geometry of one tensor view, in elements.
struct TensorView {
  uint64_t tensor_id = 0;  // FNV-1a 64 of (buffer_addr, version)
  char dtype[12] = {};     // upper-case enum name, NUL-terminated ("FLOAT32")
  uint8_t ndims = 0;
  uint32_t shape[kMaxDims] = {};
  uint32_t strides[kMaxDims] = {};
  uint64_t start_offset = 0;
};

struct DepGenArg {
  int32_t idx = 0;
  ArgType type = ArgType::kUnknown;
  bool has_tensor = false;  // tensor info known
  TensorView view;
};

// One submit, fixed size (no allocation).
struct DepGenTaskRecord {
  uint64_t task_id = 0;
  bool manual_scope = false;
  bool early_dispatch = false;
  int32_t kernel_ids[3] = {-1, -1, -1};  // [aic, aiv0, aiv1]
  int32_t block_num = 1;
  uint8_t arg_count = 0;
  DepGenArg args[kMaxTensorArgs];
};

enum class EdgeSource : uint8_t { kExplicit, kCreator, kTensormap };
enum class Overlap : uint8_t { kCovered, kOther, kNoOverlap };

struct DepGenEdgeRecord {
  uint64_t pred = 0;
  uint64_t succ = 0;
  int32_t arg = -1;  // consumer arg slot; -1 for explicit
  EdgeSource source = EdgeSource::kTensormap;
  bool flag_wait = true;
  bool flag_retain = false;
  Overlap overlap = Overlap::kCovered;  // tensormap only
  TensorView consumer;                  // not for explicit
  TensorView producer;                  // tensormap only
};

struct DepGenTensorRecord {
  uint64_t tensor_id = 0;
  uint64_t buffer_addr = 0;
  int32_t version = 0;
  char dtype[12] = {};
  uint64_t buffer_numel = 0;
};

class DepGenRecorder {
 public:
  explicit DepGenRecorder(const CapacityHint& hint);
  ~DepGenRecorder();
  // Orchestrator thread only. One call per submit, with that submit's
  // incoming edges (explicit, creator and tensormap).
  void RecordSubmit(const DepGenTaskRecord& task, std::span<const DepGenEdgeRecord> edges);
  // Orchestrator thread only. Once per tensor (buffer, version) referenced.
  void RecordTensor(const DepGenTensorRecord& tensor);
  // Any thread, while others record: has the kernel map now the pages of the
  // `slice`-th of `slices` equal parts of the rows the CapacityHint expects,
  // so the chip's threads take no page fault there. DfxCollectors runs the
  // slices in order on a background thread at idle priority.
  void Prefault(int slice, int slices) const;
  // One background thread, while others record: maps the next rows of the
  // streams whose length the program does not fix, ahead of their writers
  // (DfxCollectors calls it after the slices, until the run ends).
  void PrefaultAhead() const;
  uint64_t dropped_records() const;
  // Writes deps.json. Refuses (FailedPrecondition, nothing written) when any
  // record was dropped: an incomplete graph is never emitted.
  Status Export(const fs::path& path) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------
// 3. Args dump (args_dump/args_dump.json + args.bin, docs/formats.md §8)
// ---------------------------------------------------------------------------

enum class DumpStage : uint8_t { kBeforeDispatch, kAfterCompletion };
enum class DumpRole : uint8_t { kInput, kOutput, kInout };
enum class DumpKind : uint8_t { kTensor, kScalar };

struct DumpArgMeta {
  uint64_t task_id = 0;
  int32_t func_ids[3] = {-1, -1, -1};
  uint8_t func_count = 1;
  int32_t arg_index = 0;
  DumpRole role = DumpRole::kInput;
  DumpStage stage = DumpStage::kBeforeDispatch;
  DumpKind kind = DumpKind::kTensor;
  char dtype[12] = {};
  bool is_contiguous = true;
  uint8_t ndims = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
  int64_t start_offset = 0;
  uint64_t scalar_bits = 0;  // scalar value, raw bits of its dtype
  bool arg_index_ambiguous = false;
};

struct ArgsDumpOptions {
  int level = 1;                        // 1 partial, 2 full, 3 hybrid
  uint64_t arena_bytes = 128ull << 20;  // bounded dump buffer per run
  uint64_t max_records = 0;             // 0 = from hint
  double drain_bytes_per_sec = 0;       // host drain rate limit; 0 = disk speed
  uint64_t drain_timeout_ms = 30000;    // producer park backstop
};

class ArgsDumpRecorder {
 public:
  ArgsDumpRecorder(const ArgsDumpOptions& options, const CapacityHint& hint,
                   const fs::path& output_dir);  // output_dir = <dfx_outputs>
  ~ArgsDumpRecorder();
  int level() const;
  // Any worker/scheduler thread. Copies `payload` (logical contiguous bytes;
  // empty for scalars or metadata-only) into the bounded arena. Blocks while the
  // arena is full; returns DeadlineExceeded when it cannot drain within
  // drain_timeout_ms — the dispatch must then fail with that error, whose
  // message names enable_dump_args=2 and suggests level 1 with tags.
  Status Capture(const DumpArgMeta& meta, std::span<const uint8_t> payload);
  // Stops the drain thread and writes args_dump.json (+ args.bin). No records
  // -> no files and NotFound (like the swimlane). Safe to call after a failed
  // Capture (writes what was captured before it). Call once.
  Status Export();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------
// 4. PMU (pmu.csv, docs/formats.md §10)
// ---------------------------------------------------------------------------

// The work one task really did on one core, from which counters are derived.
struct PmuWork {
  uint64_t total_cycles = 0;   // counting window, device cycles
  uint64_t vec_cycles = 0;     // vector pipe busy
  uint64_t cube_cycles = 0;    // cube pipe busy
  uint64_t scalar_cycles = 0;  // scalar pipe busy
  uint64_t mte1_cycles = 0;    // L1 -> L0 moves
  uint64_t mte2_cycles = 0;    // GM -> UB/L1 moves
  uint64_t mte3_cycles = 0;    // UB -> GM moves
  uint64_t bytes_read_gm = 0;  // main memory
  uint64_t bytes_written_gm = 0;
  uint64_t bytes_read_ub = 0;
  uint64_t bytes_written_ub = 0;
  uint64_t bytes_read_l1 = 0;
  uint64_t bytes_written_l1 = 0;
  uint64_t bytes_read_l0 = 0;      // L0A/L0B operand reads (cube)
  uint64_t bytes_written_l0c = 0;  // cube accumulator writes
  uint64_t cube_fp_ops = 0;        // multiply-accumulates (fp)
  uint64_t cube_int_ops = 0;
  uint64_t vec_fp32_ops = 0;
  uint64_t vec_fp16_ops = 0;
  uint64_t vec_int_ops = 0;
  uint64_t vec_misc_ops = 0;
  uint64_t instructions = 0;  // approximate instruction count (icache requests)
};

class PmuRecorder {
 public:
  // event_type one of 1,2,4,5,6,7,8 (anything else warns and uses 2, as the
  // reference does); layout.backend "a2a3" | "a5" picks the columns. One
  // shard per layout.sched_threads. The derivation of every counter from
  // PmuWork is documented in collectors/pmu/pmu_recorder.cc.
  PmuRecorder(int event_type, const ChipLayout& layout, const CapacityHint& hint);
  ~PmuRecorder();
  // AICPU thread `thread` that retired the task on `core_id` (per core, and
  // one writer per `thread` at a time: a shard's cursor is not atomic).
  void Record(uint32_t thread, uint32_t core_id, uint64_t task_id, int32_t func_id,
              CoreKind core_type, const PmuWork& work);
  // One background thread, while others record: maps the next rows of each
  // shard ahead of its writer (see SwimlaneRecorder::PrefaultAhead).
  void PrefaultAhead() const;
  // Column names for the configured event type (without the fixed columns).
  std::vector<std::string> CounterColumns() const;
  // Writes pmu.csv. No rows -> no file (NotFound).
  Status Export(const fs::path& path) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------
// 5. Scope stats (scope_stats/scope_stats.jsonl, docs/formats.md §11)
// ---------------------------------------------------------------------------

struct ScopeSample {
  char site[32] = {};  // "<basename>:<line>", NUL-terminated, truncated to 31
  bool begin = true;
  int16_t depth = 0;
  int16_t ring = 0;  // min(depth, 3)
  int64_t task_window_start = 0, task_window_end = 0;
  uint64_t heap_start = 0, heap_end = 0;
  int64_t dep_pool_start = 0, dep_pool_end = 0;
  int64_t tensormap = 0;
};

class ScopeStatsRecorder {
 public:
  ScopeStatsRecorder(const ChipLayout& layout, const CapacityHint& hint);
  ~ScopeStatsRecorder();
  // Orchestrator thread only (single producer). Depth > 64 is ignored.
  void Record(const ScopeSample& sample);
  void SetFatal();
  // Writes the JSONL (metadata line first). Always written when enabled.
  Status Export(const fs::path& path) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------
// The set armed for one dispatch, from a RunConfig.
// ---------------------------------------------------------------------------

}  // namespace dfx::collectors
namespace dfx::config {
struct RunConfig;
}  // namespace dfx::config
namespace dfx::collectors {

// Owns the recorders a RunConfig enables (null pointers for disabled ones) and
// exports them all into `output_dir` (= <work_dir>/dfx_outputs or a
// rank<N>/d<K> directory). The exports run in parallel, one thread per
// collector; results are reported in the reference's order: swimlane, args
// dump, PMU, scope stats, then dep_gen (success path only).
class DfxCollectors {
 public:
  DfxCollectors(const config::RunConfig& config, const ChipLayout& layout, const CapacityHint& hint,
                const fs::path& output_dir, const ArgsDumpOptions& dump_options);
  ~DfxCollectors();
  SwimlaneRecorder* swimlane() { return swimlane_.get(); }
  DepGenRecorder* dep_gen() { return dep_gen_.get(); }
  ArgsDumpRecorder* args_dump() { return args_dump_.get(); }
  PmuRecorder* pmu() { return pmu_.get(); }
  ScopeStatsRecorder* scope_stats() { return scope_stats_.get(); }

  // Exports every enabled artifact. `run_succeeded` false skips dep_gen.
  // A collector with no data writes nothing (not an error); dep_gen refusing
  // an incomplete graph is logged as the reference's warning, not an error.
  // Returns the first real export error after trying all collectors.
  // Returns the paths written (relative to output_dir) in `written`.
  Status ExportAll(bool run_succeeded, std::vector<std::string>* written);

 private:
  fs::path output_dir_;
  std::unique_ptr<SwimlaneRecorder> swimlane_;
  std::unique_ptr<DepGenRecorder> dep_gen_;
  std::unique_ptr<ArgsDumpRecorder> args_dump_;
  std::unique_ptr<PmuRecorder> pmu_;
  std::unique_ptr<ScopeStatsRecorder> scope_stats_;
  // Maps the recorders' expected pages while the run starts (Prefault), at
  // idle priority; stopped and joined by ExportAll and the destructor.
  std::atomic<bool> prefault_stop_{false};
  std::thread prefault_;
  void StopPrefault();
};

}  // namespace dfx::collectors
