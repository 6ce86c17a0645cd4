// Chip swimlane recorder and writer (docs/formats.md §2).
//
// Storage: AICore and AICPU task rows go into one pool each, shared by all
// cores, claimed per core in blocks (collectors/internal/core_block_rows.h):
// one atomic operation per block of rows, not per row; Export writes them
// grouped by core in core order, each core's rows in its writer's order.
// Scheduler and orchestrator phases have one array per thread with a cursor
// only that thread moves. Nothing allocates after the constructor; a row
// that does not fit is dropped and counted.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "collectors/internal/compiled_format.h"
#include "collectors/internal/core_block_rows.h"
#include "collectors/internal/lazy_array.h"
#include "collectors/internal/record_text.h"
#include "collectors/recorders.h"
#include "collectors/swimlane/swimlane_keys.h"
#include "common/enum_text.h"
#include "common/json_stream.h"
#include "common/log.h"

namespace dfx::collectors {
namespace {

namespace keys = swimlane_keys;

// PLATFORM_PHASE_RECORDS_PER_THREAD x PLATFORM_PROF_SCHED_BUFFERS_PER_THREAD: the
// reference's per-thread scheduler phase pool, our floor too.
constexpr uint64_t kMinSchedPhasesPerThread = 16384ull * 6;
constexpr uint64_t kMinTaskRows = 1024;
constexpr uint64_t kMinOrchPhases = 1024;

struct AicoreRow {
  uint64_t task_token_raw;
  uint64_t start_cycles;
  uint64_t end_cycles;
  uint32_t core_id;
  uint32_t reg_task_id;
  uint32_t receive_to_start_cycles;
};

struct AicpuRow {
  uint64_t dispatch_cycles;
  uint64_t finish_cycles;
  uint32_t core_id;
  uint32_t reg_task_id;
};

struct OrchRow {
  uint64_t task_id;
  uint64_t start_cycles;
  uint64_t end_cycles;
  uint32_t submit_idx;
};

// A fixed-capacity append array with one writer at a time (a scheduler or
// orchestrator thread), alone on its cache lines: its cursor is a load and a
// store, not an atomic read-modify-write.
template <typename T>
struct alignas(64) Stream {
  internal::LazyArray<T> rows;                 // pages mapped as rows land in them
  alignas(64) std::atomic<uint64_t> count{0};  // read by PrefaultAhead meanwhile

  void Reserve(uint64_t capacity) { rows.Reset(capacity); }
  // Returns the slot or nullptr (full). One writer at a time.
  T* Claim() {
    const uint64_t i = count.load(std::memory_order_relaxed);
    if (i >= rows.size()) return nullptr;
    rows.MapAhead(i);
    count.store(i + 1, std::memory_order_relaxed);
    return &rows[i];
  }
  uint64_t size() const { return count.load(std::memory_order_relaxed); }
};

// After the reconcile line: which cores dropped rows of `pool`, at most 16
// of them ("core 3: 120, core 7: 4, ... (and 5 more cores)").
template <typename T>
void LogDropsByCore(const char* pool, const internal::CoreBlockRows<T>& rows) {
  if (rows.total_dropped() == 0) return;
  constexpr size_t kMaxListed = 16;
  std::string list;
  size_t listed = 0, more = 0;
  for (size_t c = 0; c < rows.num_cores(); ++c) {
    if (rows.dropped(c) == 0) continue;
    if (listed == kMaxListed) {
      ++more;
      continue;
    }
    list += fmt::format("{}core {}: {}", listed > 0 ? ", " : "", c, rows.dropped(c));
    ++listed;
  }
  if (more > 0) list += fmt::format(" (and {} more cores)", more);
  DFX_LOG_WARN("ChipSwimlane: {} rows dropped by core (pool full): {}", pool, list);
}

}  // namespace

namespace {
constexpr auto kSchedPhaseKindText = MakeEnumTable<SchedPhaseKind>(
    {
        {SchedPhaseKind::kComplete, keys::kPhaseComplete.c_str()},
        {SchedPhaseKind::kDispatch, keys::kPhaseDispatch.c_str()},
        {SchedPhaseKind::kRelease, keys::kPhaseRelease.c_str()},
        {SchedPhaseKind::kDummy, keys::kPhaseDummy.c_str()},
        {SchedPhaseKind::kEarlyDispatch, keys::kPhaseEarlyDispatch.c_str()},
        {SchedPhaseKind::kResolve, keys::kPhaseResolve.c_str()},
        {SchedPhaseKind::kDummyTask, keys::kPhaseDummyTask.c_str()},
        {SchedPhaseKind::kDrain, keys::kPhaseDrain.c_str()},
        {SchedPhaseKind::kDrainPrepare, keys::kPhaseDrainPrepare.c_str()},
        {SchedPhaseKind::kDrainPublish, keys::kPhaseDrainPublish.c_str()},
        {SchedPhaseKind::kAsyncPoll, keys::kPhaseAsyncPoll.c_str()},
        {SchedPhaseKind::kPredicatedSkip, keys::kPhasePredicatedSkip.c_str()},
        {SchedPhaseKind::kGraphPrepare, keys::kPhaseGraphPrepare.c_str()},
    },
    "unknown");
}  // namespace

const char* SchedPhaseName(SchedPhaseKind kind) { return kSchedPhaseKindText.Name(kind); }

struct SwimlaneRecorder::Impl {
  ChipLayout layout;
  CapacityHint hint;
  size_t num_cores = 0;
  internal::CoreBlockRows<AicoreRow> aicore;
  internal::CoreBlockRows<AicpuRow> aicpu;
  std::vector<Stream<SchedPhaseRecord>> sched;  // per sched thread
  std::vector<Stream<OrchRow>> orch;            // per orch thread
  std::vector<int> core_to_thread;
  std::atomic<uint64_t> dropped_aicore{0};  // rows of no such core (per-core drops: in the pools)
  std::atomic<uint64_t> dropped_aicpu{0};
  std::atomic<uint64_t> dropped_sched{0};
  std::atomic<uint64_t> dropped_orch{0};

  // The parts of chip_swimlane_records.json, in file order (Export).
  void WriteMetadata(ChunkedWriter& w, int level) const;
  void WriteAicoreRows(ChunkedWriter& w) const;
  void WriteAicpuRows(ChunkedWriter& w) const;
  void WriteSchedPhases(ChunkedWriter& w) const;
  void WriteOrchPhases(ChunkedWriter& w) const;
};

SwimlaneRecorder::SwimlaneRecorder(int level, const ChipLayout& layout, const CapacityHint& hint)
    : level_(std::clamp(level, 1, 4)), impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.layout = layout;
  m.hint = hint;
  m.num_cores = layout.core_types.size();
  uint64_t task_rows = std::max(kMinTaskRows, hint.core_executions);
  m.aicore.Reset(task_rows, m.num_cores);
  if (level_ >= 2) m.aicpu.Reset(task_rows, m.num_cores);
  if (level_ >= 3) {
    m.core_to_thread.assign(m.num_cores, -1);
    m.sched = std::vector<Stream<SchedPhaseRecord>>(std::max(1, layout.sched_threads));
    uint64_t per_thread =
        std::max(kMinSchedPhasesPerThread, 4 * (hint.core_executions + hint.tasks));
    for (auto& s : m.sched) s.Reserve(per_thread);
  }
  if (level_ >= 4) {
    m.orch = std::vector<Stream<OrchRow>>(std::max(1, layout.orch_threads));
    for (auto& s : m.orch) s.Reserve(std::max(kMinOrchPhases, 2 * hint.tasks + 64));
  }
}

SwimlaneRecorder::~SwimlaneRecorder() = default;

void SwimlaneRecorder::RecordAicoreTask(uint32_t core_id, uint64_t task_token_raw,
                                        uint32_t reg_task_id, uint64_t start_cycles,
                                        uint64_t end_cycles, uint32_t receive_to_start_cycles) {
  Impl& m = *impl_;
  if (core_id >= m.num_cores) {
    m.dropped_aicore.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  AicoreRow* row = m.aicore.Claim(core_id);  // counts its own drops
  if (row != nullptr)
    *row = AicoreRow{task_token_raw, start_cycles, end_cycles,
                     core_id,        reg_task_id,  receive_to_start_cycles};
}

void SwimlaneRecorder::RecordAicpuTask(uint32_t core_id, uint32_t reg_task_id,
                                       uint64_t dispatch_cycles, uint64_t finish_cycles) {
  if (level_ < 2) return;
  Impl& m = *impl_;
  if (core_id >= m.num_cores) {
    m.dropped_aicpu.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  AicpuRow* row = m.aicpu.Claim(core_id);  // counts its own drops
  if (row != nullptr) *row = AicpuRow{dispatch_cycles, finish_cycles, core_id, reg_task_id};
}

void SwimlaneRecorder::RecordSchedPhase(uint32_t thread, const SchedPhaseRecord& record) {
  if (level_ < 3) return;
  Impl& m = *impl_;
  SchedPhaseRecord* row = thread < m.sched.size() ? m.sched[thread].Claim() : nullptr;
  if (row == nullptr) {
    m.dropped_sched.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  *row = record;
}

void SwimlaneRecorder::SetCoreToThread(uint32_t core_id, int thread) {
  if (level_ < 3) return;
  if (core_id < impl_->core_to_thread.size()) impl_->core_to_thread[core_id] = thread;
}

void SwimlaneRecorder::RecordOrchPhase(uint32_t orch_idx, uint32_t submit_idx, uint64_t task_id,
                                       uint64_t start_cycles, uint64_t end_cycles) {
  if (level_ < 4) return;
  Impl& m = *impl_;
  OrchRow* row = orch_idx < m.orch.size() ? m.orch[orch_idx].Claim() : nullptr;
  if (row == nullptr) {
    m.dropped_orch.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  *row = OrchRow{task_id, start_cycles, end_cycles, submit_idx};
}

void SwimlaneRecorder::Prefault(int slice, int slices) const {
  // Rows whose count the program fixes; scheduler phases are left to fault.
  const Impl& m = *impl_;
  for (const auto& s : m.orch) s.rows.PopulateSlice(m.hint.tasks, slice, slices);
  m.aicore.rows().PopulateSlice(m.hint.core_executions, slice, slices);
  m.aicpu.rows().PopulateSlice(m.hint.core_executions, slice, slices);
}

void SwimlaneRecorder::PrefaultAhead() const {
  // Scheduler phases: their count depends on how the run goes.
  for (const auto& s : impl_->sched) s.rows.PopulateAhead(s.size());
}

uint64_t SwimlaneRecorder::dropped_records() const {
  const Impl& m = *impl_;
  return m.dropped_aicore.load(std::memory_order_relaxed) + m.aicore.total_dropped() +
         m.dropped_aicpu.load(std::memory_order_relaxed) + m.aicpu.total_dropped() +
         m.dropped_sched.load(std::memory_order_relaxed) +
         m.dropped_orch.load(std::memory_order_relaxed);
}

Status SwimlaneRecorder::Export(const fs::path& path) const {
  const Impl& m = *impl_;
  bool any = m.aicore.total_kept() > 0 || m.aicpu.total_kept() > 0;
  uint64_t orch_total = 0;
  for (const auto& s : m.sched) any = any || s.size() > 0;
  for (const auto& s : m.orch) orch_total += s.size();
  any = any || orch_total > 0;
  if (!any) {
    // Said once per run by the coordinator (a dispatch that ran no task), not
    // as a warning per dispatch.
    return NotFound("No performance data to export (" + path.string() + " not written)");
  }

  // Reconcile messages, as the reference host collector prints them.
  auto reconcile = [](const char* pool, uint64_t dropped) {
    if (dropped > 0) {
      DFX_LOG_WARN("ChipSwimlane reconcile: {} {} records dropped on device side.", pool, dropped);
    }
  };
  reconcile("AICORE_TASK", m.dropped_aicore.load() + m.aicore.total_dropped());
  reconcile("PERF", m.dropped_aicpu.load() + m.aicpu.total_dropped());
  LogDropsByCore("AICORE_TASK", m.aicore);
  LogDropsByCore("PERF", m.aicpu);
  reconcile("SCHED_PHASE", m.dropped_sched.load());
  reconcile("ORCH_PHASE", m.dropped_orch.load());

  ChunkedWriter w;
  DFX_RETURN_IF_ERROR(w.Open(path));
  m.WriteMetadata(w, level_);
  m.WriteAicoreRows(w);
  m.WriteAicpuRows(w);
  if (level_ >= 3) m.WriteSchedPhases(w);
  if (level_ >= 4 && orch_total > 0) m.WriteOrchPhases(w);
  w.Append("\n}\n");
  return w.Commit();
}

void SwimlaneRecorder::Impl::WriteMetadata(ChunkedWriter& w, int level) const {
  w.Append(JoinedText<"{\n  \"", keys::kLevel, "\": ">);
  internal::Put(w, FMT_COMPILE("{}"), level);
  w.Append(JoinedText<",\n  \"", keys::kMetadata, "\": {\"", keys::kClockFreqHz, "\": ">);
  internal::Put(w, FMT_COMPILE("{}"), layout.clock_freq_hz);
  w.Append(JoinedText<", \"", keys::kNumCores, "\": ">);
  internal::Put(w, FMT_COMPILE("{}"), num_cores);
  w.Append(JoinedText<", \"", keys::kCoreTypes, "\": [">);
  for (size_t c = 0; c < num_cores; ++c) {
    if (c > 0) w.Append(", ");
    w.Append(layout.core_types[c] == CoreKind::kAic ? JoinedText<"\"", keys::kCoreAic, "\"">
                                                    : JoinedText<"\"", keys::kCoreAiv, "\"">);
  }
  w.Append(']');
  if (level >= 3) {
    w.Append(JoinedText<", \"", keys::kCoreToThread, "\": [">);
    for (size_t c = 0; c < core_to_thread.size(); ++c) {
      if (c > 0) w.Append(", ");
      internal::Put(w, FMT_COMPILE("{}"), core_to_thread[c]);
    }
    w.Append(']');
  }
  w.Append('}');
}

void SwimlaneRecorder::Impl::WriteAicoreRows(ChunkedWriter& w) const {
  w.Append(JoinedText<",\n  \"", keys::kAicoreTasks, "\": [">);
  std::vector<uint32_t> order = aicore.CoreOrder();
  internal::RecordText x(w);
  for (size_t k = 0; k < order.size(); ++k) {
    const AicoreRow& r = aicore[order[k]];
    x.Lit(k > 0 ? ",\n    [" : "\n    [").Int(r.core_id).Lit(", ").Int(r.task_token_raw);
    x.Lit(", ").Int(r.reg_task_id).Lit(", ").Int(r.start_cycles).Lit(", ").Int(r.end_cycles);
    x.Lit(", ").Int(r.receive_to_start_cycles).Char(']');
  }
  x.Flush();
  w.Append(order.empty() ? "]" : "\n  ]");
}

void SwimlaneRecorder::Impl::WriteAicpuRows(ChunkedWriter& w) const {
  w.Append(JoinedText<",\n  \"", keys::kAicpuTasks, "\": [">);
  std::vector<uint32_t> order = aicpu.CoreOrder();
  internal::RecordText x(w);
  for (size_t k = 0; k < order.size(); ++k) {
    const AicpuRow& r = aicpu[order[k]];
    x.Lit(k > 0 ? ",\n    [" : "\n    [").Int(r.core_id).Lit(", ").Int(r.reg_task_id);
    x.Lit(", ").Int(r.dispatch_cycles).Lit(", ").Int(r.finish_cycles).Char(']');
  }
  x.Flush();
  w.Append(order.empty() ? "]" : "\n  ]");
}

void SwimlaneRecorder::Impl::WriteSchedPhases(ChunkedWriter& w) const {
  using internal::RecordText;
  constexpr std::string_view kFirst = JoinedText<"\n      {\"", keys::kKind, "\": \"">;
  constexpr std::string_view kNext = JoinedText<",\n      {\"", keys::kKind, "\": \"">;
  w.Append(JoinedText<",\n  \"", keys::kSchedPhases, "\": [">);
  for (size_t t = 0; t < sched.size(); ++t) {
    w.Append(t > 0 ? ",\n    [" : "\n    [");
    uint64_t n = sched[t].size();
    RecordText x(w);
    for (uint64_t i = 0; i < n; ++i) {
      const SchedPhaseRecord& p = sched[t].rows[i];
      x.Lit(i > 0 ? kNext : kFirst).Lit(SchedPhaseName(p.kind));
      x.Lit(JoinedText<"\", \"", keys::kStartCycles, "\": ">).Int(p.start_cycles);
      x.Lit(JoinedText<", \"", keys::kEndCycles, "\": ">).Int(p.end_cycles);
      x.Lit(JoinedText<", \"", keys::kLoopIter, "\": ">).Int(p.loop_iter);
      x.Lit(JoinedText<", \"", keys::kTasksProcessed, "\": ">).Int(p.tasks_processed);
      if (p.kind == SchedPhaseKind::kDispatch) {
        x.Lit(JoinedText<", \"", keys::kPopHit, "\": ">).Int(p.pop_hit);
        x.Lit(JoinedText<", \"", keys::kPopMiss, "\": ">).Int(p.pop_miss);
      }
      if (p.kind == SchedPhaseKind::kDummyTask || p.kind == SchedPhaseKind::kPredicatedSkip ||
          p.kind == SchedPhaseKind::kGraphPrepare) {
        x.Lit(JoinedText<", \"", keys::kTaskId, "\": ">).Int(p.task_id);
      }
      x.Lit(JoinedText<", \"", keys::kSharedAtStart, "\": [">).Int(p.shared_at_start[0]);
      x.Lit(", ").Int(p.shared_at_start[1]).Lit(", ").Int(p.shared_at_start[2]);
      x.Lit(JoinedText<"], \"", keys::kSharedAtEnd, "\": [">).Int(p.shared_at_end[0]);
      x.Lit(", ").Int(p.shared_at_end[1]).Lit(", ").Int(p.shared_at_end[2]).Lit("]}");
    }
    x.Flush();
    w.Append(n > 0 ? "\n    ]" : "]");
  }
  w.Append(sched.empty() ? "]" : "\n  ]");
}

void SwimlaneRecorder::Impl::WriteOrchPhases(ChunkedWriter& w) const {
  constexpr std::string_view kFirst = JoinedText<"\n      {\"", keys::kSubmitIdx, "\": ">;
  constexpr std::string_view kNext = JoinedText<",\n      {\"", keys::kSubmitIdx, "\": ">;
  w.Append(JoinedText<",\n  \"", keys::kOrchPhases, "\": [">);
  for (size_t t = 0; t < orch.size(); ++t) {
    w.Append(t > 0 ? ",\n    [" : "\n    [");
    uint64_t n = orch[t].size();
    internal::RecordText x(w);
    for (uint64_t i = 0; i < n; ++i) {
      const OrchRow& o = orch[t].rows[i];
      x.Lit(i > 0 ? kNext : kFirst).Int(o.submit_idx);
      x.Lit(JoinedText<", \"", keys::kTaskId, "\": ">).Int(o.task_id);
      x.Lit(JoinedText<", \"", keys::kStartCycles, "\": ">).Int(o.start_cycles);
      x.Lit(JoinedText<", \"", keys::kEndCycles, "\": ">).Int(o.end_cycles).Char('}');
    }
    x.Flush();
    w.Append(n > 0 ? "\n    ]" : "]");
  }
  w.Append("\n  ]");
}

}  // namespace dfx::collectors
