// Perfetto trace converter (artifacts.md §4) and the run-level timeline.
//
// Run-level manifest (`W/dfx_outputs/run_manifest.json`), keys read here — all
// optional; without a manifest every dispatch is aligned at its own base time
// and the dispatches of a rank are laid end to end. dfx-coordinator writes a
// top-level "dispatches": [{"rank", "k", "pass", "start_ns"}] (coordinator
// clock; graph-pass entries are skipped); the per-rank form below is also read:
//   {
//     "ranks": [                          // or an object keyed by rank number
//       { "rank": 0,                      // int
//         "clock_offset_ns": 1234,        // agent clock minus coordinator clock
//         "dispatches": [                 // or an object keyed by dispatch number
//           { "dispatch": 0,              // int K of d<K>
//             "start_ns": 5000000,        // dispatch start on the COORDINATOR clock
//             "agent_start_ns": 5001234   // (fallback) start on the agent clock;
//           } ] } ] }                     //  coordinator = agent_start_ns - clock_offset_ns
// The earliest start over the whole run is time zero of the merged trace.
#include "view/swimlane.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <set>

#include "collectors/artifact_layout.h"
#include "collectors/dep_gen/deps_reader.h"
#include "collectors/name_map.h"
#include "collectors/swimlane/swimlane_reader.h"
#include "common/json.h"
#include "common/json_stream.h"
#include "view/overhead.h"
#include "view/task_label.h"

namespace dfx::view {

using collectors::FuncIdForCore;
using collectors::PhaseKind;
using collectors::PhaseName;
using collectors::ReadSwimlaneRecords;
using collectors::ReadTaskGraph;
using collectors::SchedPhase;
using collectors::SwimlaneReadOptions;
using collectors::SwimlaneRecords;
using collectors::TaskGraph;
using collectors::TaskInfo;
using collectors::TaskRow;
using collectors::UnmatchedWarning;
namespace {

constexpr double kFlowEps = 0.01;
constexpr double kMinMarkerUs = 0.02;

// Shared state of one output trace (several dispatches in run mode).
struct TraceContext {
  ChunkedWriter* writer = nullptr;
  bool first_event = true;
  uint64_t next_event_id = 1;
  uint64_t next_flow_id = 1;
  int pid_base = 0;            // added to every pid (run mode: 100 * (rank + 1))
  std::string process_prefix;  // run mode: "Rank N · "
  double ts_offset = 0.0;      // added to every ts
  double max_ts = 0.0;         // latest ts + dur emitted (for end-to-end layout)
  std::set<std::pair<int, int>> named_threads;
  std::set<std::string> named_processes;
  uint64_t flow_events = 0;
  uint64_t slice_events = 0;

  std::string& Begin() {
    std::string& b = writer->buffer();
    if (!first_event) b.append(",\n");
    first_event = false;
    return b;
  }
  void End() { writer->MaybeFlush(); }
};

void Num(std::string& b, double v) { AppendDouble(&b, v); }

// fmt into a reusable memory_buffer, then one append: much cheaper than
// fmt::format_to(std::back_inserter(std::string)) on the hot path.
template <typename... Args>
void AppendF(std::string& b, fmt::format_string<Args...> format, Args&&... args) {
  static thread_local fmt::memory_buffer scratch;
  scratch.clear();
  fmt::format_to(fmt::appender(scratch), format, std::forward<Args>(args)...);
  b.append(scratch.data(), scratch.size());
}

const char* PhaseColor(PhaseKind k) {
  switch (k) {
    case PhaseKind::kComplete:
      return "good";
    case PhaseKind::kDispatch:
      return "terrible";
    case PhaseKind::kAsyncPoll:
      return "yellow";
    case PhaseKind::kRelease:
      return "olive";
    case PhaseKind::kDummy:
      return "grey";
    case PhaseKind::kEarlyDispatch:
      return "rail_animation";
    case PhaseKind::kDrain:
      return "cq_build_running";
    case PhaseKind::kDrainPrepare:
      return "cq_build_attempt_runnable";
    case PhaseKind::kDrainPublish:
      return "cq_build_attempt_passed";
    case PhaseKind::kGraphPrepare:
      return "rail_animation";
    case PhaseKind::kResolve:
      return "vsync_highlight_color";
    default:
      return "generic_work";
  }
}

bool IsDrawnPhase(PhaseKind k) {
  switch (k) {
    case PhaseKind::kComplete:
    case PhaseKind::kAsyncPoll:
    case PhaseKind::kDispatch:
    case PhaseKind::kRelease:
    case PhaseKind::kResolve:
    case PhaseKind::kEarlyDispatch:
    case PhaseKind::kDummy:
    case PhaseKind::kDrain:
    case PhaseKind::kDrainPrepare:
    case PhaseKind::kDrainPublish:
    case PhaseKind::kGraphPrepare:
      return true;
    default:
      return false;
  }
}

std::string LowerCopy(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

struct Group {
  uint64_t task_id;
  uint32_t begin, end;  // rows [begin, end)
  bool spmd;
  int block_num;
};

// A scheduler phase bar (complete / dispatch records) of one sched thread.
struct Bar {
  double start, end;
  uint32_t attributed = 0;
  uint32_t thread = 0;
};

// Scratch bits of TaskRow::flags used by the converter.
constexpr uint8_t kSpmdFlag = 0x02;
constexpr uint8_t kPlacedFlag = 0x04;
constexpr int kLaneShift = 4;  // Scheduler View lane in bits 4..7

// func_id of a row (§4.6): from deps.json kernel_ids by core type, else -1.
int RowFuncId(const SwimlaneRecords& d, const TaskGraph* deps, const TaskRow& r) {
  if (deps == nullptr) return -1;
  const TaskInfo* t = deps->FindTask(d.TaskId(r));
  if (t == nullptr) return -1;
  int f = FuncIdForCore(*t, d.IsAic(r) ? "aic" : "aiv");
  return f < 0 ? -1 : f;
}

// Slice anchor for flows.
struct Anchor {
  int pid, tid;
  double ts;   // visible start
  double end;  // visible end
  uint64_t event_id;
};

// Converts one dispatch (one records file) into events of `ctx`.
class DispatchConverter {
 public:
  DispatchConverter(SwimlaneRecords& data, const TaskGraph* deps, const collectors::NameMap& names,
                    bool overhead, bool verbose, TraceContext& ctx, std::ostream& out,
                    std::ostream& err)
      : d_(data),
        deps_(deps),
        names_(names),
        overhead_(overhead),
        verbose_(verbose),
        ctx_(ctx),
        out_(out),
        err_(err) {}

  // Returns an error only when the scheduler phases cannot be re-read.
  Status Run() {
    DFX_RETURN_IF_ERROR(ScanSchedPhases());
    EmitProcessMetadata();
    EmitWorkerView();
    EmitSchedulerView();
    DFX_RETURN_IF_ERROR(EmitSchedPhases());
    EmitMarkersAndOrch();
    EmitGraphExecution();
    if (deps_ != nullptr) EmitDependencyFlows();
    EmitCompleteAndDispatchFlows();
    if (overhead_ && deps_ != nullptr) EmitOverhead();
    return sched_status_;
  }

 private:
  int Pid(int p) const { return ctx_.pid_base + p; }
  double T(double ts) const { return ts + ctx_.ts_offset; }
  void SeeEnd(double ts) { ctx_.max_ts = std::max(ctx_.max_ts, T(ts)); }

  void Meta(const char* what, int pid, int tid, bool is_name, const std::string& name, int sort) {
    std::string& b = ctx_.Begin();
    b.append(R"({"ph":"M","cat":"__metadata","name":")");
    b.append(what);
    b.append(R"(","pid":)");
    b.append(std::to_string(Pid(pid)));
    if (tid >= 0) {
      b.append(R"(,"tid":)");
      b.append(std::to_string(tid));
    }
    b.append(R"(,"args":{)");
    if (is_name) {
      b.append(R"("name":)");
      AppendJsonString(&b, name);
    } else {
      b.append(R"("sort_index":)");
      b.append(std::to_string(sort));
    }
    b.append("}}");
    ctx_.End();
  }
  void ProcessName(int pid, const std::string& name, int sort) {
    if (!ctx_.named_processes.insert(fmt::format("{}/{}", Pid(pid), name)).second) return;
    Meta("process_name", pid, -1, true, ctx_.process_prefix + name, 0);
    Meta("process_sort_index", pid, -1, false, "", ctx_.pid_base + sort);
  }
  void ThreadName(int pid, int tid, const std::string& name, int sort = -1) {
    if (!ctx_.named_threads.insert({Pid(pid), tid}).second) return;
    Meta("thread_name", pid, tid, true, name, 0);
    if (sort >= 0) Meta("thread_sort_index", pid, tid, false, "", sort);
  }

  std::string CoreName(int core) const {
    bool aic = core >= 0 && static_cast<size_t>(core) < d_.core_types.size() &&
               d_.core_types[static_cast<size_t>(core)] == "aic";
    return fmt::format("{}_{}", aic ? "AIC" : "AIV", core);
  }
  static int CoreTid(int core) { return 10000 + 10 * core; }
  static int SchedTid(int thread) { return 30000 + 10 * thread; }

  int FuncOf(const TaskRow& r) const { return RowFuncId(d_, deps_, r); }
  uint64_t IdOf(uint32_t row) const { return d_.TaskId(d_.tasks[row]); }
  uint32_t NumRows() const { return static_cast<uint32_t>(d_.tasks.size()); }

  // Groups (logical tasks) are contiguous row ranges of the task_id-sorted
  // rows; nothing per group is stored, a group is derived from its first row.
  Group GroupFrom(uint32_t i) const {
    uint64_t id = IdOf(i);
    uint32_t j = i + 1;
    while (j < NumRows() && IdOf(j) == id) ++j;
    Group g{id, i, j, false, 1};
    if (const TaskInfo* dt = DepTaskOf(g.task_id)) {
      g.block_num = std::max(1, dt->block_num);
      g.spmd = dt->block_num > 1;
    } else if (j - i > 1) {
      bool first_aic = d_.IsAic(d_.tasks[i]);
      bool same_type = true;
      for (uint32_t r = i + 1; r < j; ++r)
        same_type = same_type && d_.IsAic(d_.tasks[r]) == first_aic;
      g.spmd = same_type;
      g.block_num = same_type ? static_cast<int>(j - i) : 1;
    }
    return g;
  }

  const TaskInfo* DepTaskOf(uint64_t id) const {
    if (deps_ == nullptr) return nullptr;
    return deps_->FindTask(id);
  }
  std::optional<Group> FindGroup(uint64_t id) const {
    uint32_t lo = 0, hi = NumRows();
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (IdOf(mid) < id)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo == NumRows() || IdOf(lo) != id) return std::nullopt;
    return GroupFrom(lo);
  }

  // One streamed pass over the scheduler phases collecting what the other
  // emitters need: resolve sub-lanes, complete bars, dependency-only markers
  // and graph_prepare envelopes. The phases themselves are emitted by a
  // second pass (EmitSchedPhases).
  Status ScanSchedPhases() {
    size_t nt = d_.num_sched_threads;
    has_resolve_.assign(nt, false);
    complete_begin_.assign(nt + 1, 0);
    if (!d_.has_sched_phases) return Status::Ok();
    DFX_RETURN_IF_ERROR(d_.ForEachSchedPhase([&](size_t t, const SchedPhase& p) {
      if (p.kind == PhaseKind::kResolve) has_resolve_[t] = true;
      if (p.kind == PhaseKind::kComplete) {
        complete_bars_.push_back({d_.Us(p.start), d_.Us(p.end), 0, static_cast<uint32_t>(t)});
      } else if ((p.kind == PhaseKind::kDummyTask || p.kind == PhaseKind::kPredicatedSkip) &&
                 p.task_id >= 0) {
        marker_phases_.emplace_back(t, p);
      } else if (p.kind == PhaseKind::kGraphPrepare && p.task_id >= 0) {
        Outer& o = outers_[static_cast<uint64_t>(p.task_id)];
        o.first_prepare = std::min(o.first_prepare, d_.Us(p.start));
        o.prepare_us += d_.Us(p.end) - d_.Us(p.start);
        ++o.slices;
      }
    }));
    // Bars arrive thread by thread: split into per-thread ranges sorted by start.
    for (const Bar& b : complete_bars_) ++complete_begin_[b.thread + 1];
    for (size_t t = 0; t < nt; ++t) complete_begin_[t + 1] += complete_begin_[t];
    for (size_t t = 0; t < nt; ++t) {
      std::sort(complete_bars_.begin() + static_cast<long>(complete_begin_[t]),
                complete_bars_.begin() + static_cast<long>(complete_begin_[t + 1]),
                [](const Bar& a, const Bar& b) { return a.start < b.start; });
    }
    return Status::Ok();
  }

  std::string BaseName(int func_id) const {
    if (func_id < 0) return "task";
    if (const std::string* n = names_.Find(func_id)) return *n;
    return fmt::format("func_{}_{}", func_id, FuncLetters(func_id));
  }
  std::string Label(uint64_t task_id, int func_id, bool spmd) const {
    std::string base = BaseName(func_id);
    if (spmd && LowerCopy(base).find("spmd") == std::string::npos) base += "_spmd";
    return base + "(" + FormatTaskDisplay(task_id) + ")";
  }
  std::string PeerHint(uint64_t id, bool fanout) const {
    std::string s;
    auto list = [&](const auto& peers) {
      s = fmt::format("{}: [", peers.size());
      for (size_t i = 0; i < peers.size(); ++i) {
        if (i) s += ", ";
        s += FormatTaskDisplay(peers[i].second);
      }
      s += "]";
    };
    if (deps_ == nullptr) {
      s = "0: []";
    } else if (fanout) {
      list(deps_->Succs(id));
    } else {
      list(deps_->Preds(id));
    }
    return s;
  }

  void EmitProcessMetadata() {
    bool has_orch = false;
    for (const auto& lane : d_.orch_phases) has_orch |= !lane.empty();
    if (!d_.host_uploads.empty()) {
      ProcessName(1, "Host Prepare", 1);
      ThreadName(1, 4100, "H2D");
    }
    if (has_orch) {
      std::string name = d_.host_mode               ? "Host Orchestrator"
                         : names_.orchestrator_name ? "AICPU " + *names_.orchestrator_name
                                                    : "AICPU Orchestrator";
      ProcessName(1, name, 1);
      for (size_t i = 0; i < d_.orch_phases.size(); ++i) {
        ThreadName(1, 4000 + static_cast<int>(i),
                   fmt::format("{}_{}", d_.host_mode ? "Host" : "Orch", i));
      }
    }
    if (d_.has_sched_phases && d_.num_sched_threads > 0) {
      ProcessName(2, "AICPU Scheduler", 2);
      for (size_t t = 0; t < d_.num_sched_threads; ++t) {
        int tt = static_cast<int>(t);
        ThreadName(2, SchedTid(tt), fmt::format("Sched_{}", t));
        if (has_resolve_[t]) ThreadName(2, SchedTid(tt) + 1, fmt::format("Sched_{}", t));
      }
      ThreadName(2, 3999, "shared_ready_queue (global)", 100);
    }
    for (const auto& r : d_.tasks) {
      if (d_.Finish(r) > 0) {
        has_sched_view_ = d_.level >= 2;
        break;
      }
    }
    if (has_sched_view_) ProcessName(3, "Scheduler View", 3);
    ProcessName(4, "Worker View", 4);
    std::set<int> cores;
    for (const auto& r : d_.tasks) cores.insert(r.core_id);
    for (int c : cores) ThreadName(4, CoreTid(c), CoreName(c));
    int aicpu_lanes = static_cast<int>(d_.num_sched_threads + d_.orch_phases.size());
    for (int k = 0; k < aicpu_lanes; ++k) ThreadName(4, 19000 + k, fmt::format("AICPU_{}", k));
  }

  void EmitWorkerView() {
    first_worker_ev_ = ctx_.next_event_id;
    for (uint32_t k = 0; k < NumRows();) {
      Group g = GroupFrom(k);
      k = g.end;
      std::string fanout = PeerHint(g.task_id, true);
      std::string fanin = PeerHint(g.task_id, false);
      std::string disp = FormatTaskDisplay(g.task_id);
      for (uint32_t i = g.begin; i < g.end; ++i) {
        const TaskRow& r = d_.tasks[i];
        double ts = d_.ReceiveUs(r), end = d_.EndUs(r), start = d_.StartUs(r);
        uint64_t id = ctx_.next_event_id++;
        std::string& b = ctx_.Begin();
        b.append(R"({"ph":"X","cat":"event","id":)");
        b.append(std::to_string(id));
        b.append(R"(,"name":)");
        int func_id = FuncOf(r);
        AppendJsonString(&b, Label(g.task_id, func_id, g.spmd));
        AppendF(b, R"(,"pid":{},"tid":{},"ts":)", Pid(4), CoreTid(r.core_id));
        Num(b, T(ts));
        b.append(R"(,"dur":)");
        Num(b, end - ts);
        AppendF(b, R"(,"args":{{"event-hint":"Task:{}, FuncId:{}, CoreId:{}","fanout-hint":)", disp,
                func_id, r.core_id);
        AppendJsonString(&b, fanout);
        b.append(R"(,"fanin-hint":)");
        AppendJsonString(&b, fanin);
        b.append(R"(,"duration-us":)");
        Num(b, end - ts);
        b.append(R"(,"kernel-duration-us":)");
        Num(b, end - start);
        b.append(R"(,"local_setup_us":)");
        Num(b, start - ts);
        AppendF(b, R"(,"taskId":{}}}}})", g.task_id);
        ctx_.End();
        ++ctx_.slice_events;
        SeeEnd(end);
      }
    }
  }

  // Scheduler View bars in (core, dispatch) order. The rows are sorted into
  // that order in place and permuted back afterwards, so no per-row index is
  // allocated: TaskRow::slot carries the original row index while sorted and
  // the bar's event offset (1-based, 0 = no bar) afterwards; the lane lives in
  // the row's scratch flag bits.
  void EmitSchedulerView() {
    auto& rows = d_.tasks;
    for (auto& r : rows) r.slot = 0;
    if (!has_sched_view_) return;
    // SPMD-ness is a property of the task_id group: record it before reordering.
    for (uint32_t k = 0; k < NumRows();) {
      Group g = GroupFrom(k);
      for (uint32_t i = g.begin; i < g.end; ++i) {
        rows[i].flags = static_cast<uint8_t>(rows[i].flags & ~(kSpmdFlag | kPlacedFlag | 0xF0));
        if (g.spmd) rows[i].flags |= kSpmdFlag;
      }
      k = g.end;
    }
    for (uint32_t i = 0; i < NumRows(); ++i) rows[i].slot = i;
    std::sort(rows.begin(), rows.end(), [&](const TaskRow& a, const TaskRow& b) {
      bool fa = d_.Finish(a) > 0, fb = d_.Finish(b) > 0;
      if (fa != fb) return fa;
      if (a.core_id != b.core_id) return a.core_id < b.core_id;
      uint64_t da = d_.Dispatch(a), db = d_.Dispatch(b);
      if (da != db) return da < db;
      return a.slot < b.slot;
    });
    first_sched_ev_ = ctx_.next_event_id;
    std::vector<double> lane_end;
    int cur_core = std::numeric_limits<int>::min();
    uint32_t bars = 0;
    for (const TaskRow& r : rows) {
      if (d_.Finish(r) == 0) break;
      if (r.core_id != cur_core) {
        cur_core = r.core_id;
        lane_end.clear();
      }
      double ts = d_.DispatchUs(r), fin = d_.FinishUs(r);
      size_t lane = 0;
      while (lane < lane_end.size() && lane_end[lane] > ts) ++lane;
      if (lane >= 10) lane = 9;
      if (lane >= lane_end.size()) lane_end.resize(lane + 1, 0.0);
      lane_end[lane] = std::max(lane_end[lane], fin);
      int tid = CoreTid(r.core_id) + static_cast<int>(lane);
      ThreadName(3, tid, CoreName(r.core_id));
      uint64_t id = ctx_.next_event_id++;
      ++bars;
      uint64_t task_id = d_.TaskId(r);
      int func_id = FuncOf(r);
      std::string& b = ctx_.Begin();
      b.append(R"({"ph":"X","cat":"event","id":)");
      b.append(std::to_string(id));
      b.append(R"(,"name":)");
      AppendJsonString(&b, Label(task_id, func_id, (r.flags & kSpmdFlag) != 0));
      AppendF(b, R"(,"pid":{},"tid":{},"ts":)", Pid(3), tid);
      Num(b, T(ts));
      b.append(R"(,"dur":)");
      Num(b, fin - ts);
      fmt::format_to(
          std::back_inserter(b),
          R"(,"args":{{"event-hint":"Task:{}, FuncId:{}, CoreId:{}","dispatch-time-us":)",
          FormatTaskDisplay(task_id), func_id, r.core_id);
      Num(b, ts);
      b.append(R"(,"finish-time-us":)");
      Num(b, fin);
      b.append(R"(,"aicpu-duration-us":)");
      Num(b, fin - ts);
      AppendF(b, R"(,"taskId":{}}}}})", task_id);
      ctx_.End();
      ++ctx_.slice_events;
      SeeEnd(fin);
      const_cast<TaskRow&>(r).flags |= static_cast<uint8_t>(lane << kLaneShift);
    }
    // Permute back (cycle walk): the row at sorted position p belongs at index
    // `slot`; once placed its slot becomes p + 1 (bars) or 0.
    for (uint32_t i = 0; i < NumRows(); ++i) {
      if (rows[i].flags & kPlacedFlag) continue;
      TaskRow carry = rows[i];
      uint32_t pos = i;
      for (;;) {
        uint32_t dest = carry.slot;
        carry.slot = pos < bars ? pos + 1 : 0;
        carry.flags |= kPlacedFlag;
        std::swap(carry, rows[dest]);
        pos = dest;
        if (dest == i) break;
      }
    }
    for (auto& r : rows) r.flags = static_cast<uint8_t>(r.flags & ~kPlacedFlag);
  }

  // Thread dispatching a core: core_to_thread, else vote by containment in dispatch bars.
  int ThreadOfCore(int core) {
    int t = d_.SchedThreadOfCore(core);
    if (t >= 0) return t;
    if (!voted_) {
      voted_ = true;
      // Dispatch bars are only needed here: read them on first use.
      dispatch_bars_.assign(d_.num_sched_threads, {});
      Status st = d_.ForEachSchedPhase([&](size_t th, const SchedPhase& p) {
        if (p.kind == PhaseKind::kDispatch) {
          dispatch_bars_[th].push_back(
              {d_.Us(p.start), d_.Us(p.end), 0, static_cast<uint32_t>(th)});
        }
      });
      if (!st.ok() && sched_status_.ok()) sched_status_ = st;
      for (auto& bars : dispatch_bars_) {
        std::sort(bars.begin(), bars.end(),
                  [](const Bar& a, const Bar& b) { return a.start < b.start; });
      }
      std::map<int, std::map<int, int>> votes;
      for (const auto& r : d_.tasks) {
        double ts = d_.DispatchUs(r);
        for (size_t th = 0; th < dispatch_bars_.size(); ++th) {
          const auto& bars = dispatch_bars_[th];
          auto it = std::lower_bound(bars.begin(), bars.end(), ts,
                                     [](const Bar& b, double v) { return b.end < v; });
          if (it != bars.end() && it->start <= ts) ++votes[r.core_id][static_cast<int>(th)];
        }
      }
      for (const auto& [c, v] : votes) {
        int best = -1, n = -1;
        for (const auto& [th, cnt] : v) {
          if (cnt > n) {
            best = th;
            n = cnt;
          }
        }
        voted_core_thread_[c] = best;
      }
    }
    auto it = voted_core_thread_.find(core);
    return it == voted_core_thread_.end() ? -1 : it->second;
  }

  Status EmitSchedPhases() {
    if (!d_.has_sched_phases) return Status::Ok();
    size_t nt = d_.num_sched_threads;
    // Complete bar ids, thread by thread in start order (flows bind to them).
    first_complete_ev_ = ctx_.next_event_id;
    ctx_.next_event_id += complete_bars_.size();
    // Attribution of finishes to complete bars.
    for (const auto& r : d_.tasks) {
      if (d_.Finish(r) == 0) continue;
      int th = d_.SchedThreadOfCore(r.core_id);
      if (th < 0 || static_cast<size_t>(th) >= nt) continue;
      Bar* bar = FindCompleteBar(th, d_.FinishUs(r));
      if (bar != nullptr && bar->start <= d_.FinishUs(r)) ++bar->attributed;
    }
    // Emit, streaming the phases again in file order.
    size_t cur_thread = std::numeric_limits<size_t>::max();
    size_t ci = 0;
    return d_.ForEachSchedPhase([&](size_t t, const SchedPhase& p) {
      if (t != cur_thread) {
        cur_thread = t;
        ci = 0;
      }
      if (!IsDrawnPhase(p.kind)) return;
      double ts = d_.Us(p.start), end = d_.Us(p.end);
      int tid = SchedTid(static_cast<int>(t)) + (p.kind == PhaseKind::kResolve ? 1 : 0);
      uint64_t id;
      uint32_t attributed = 0;
      if (p.kind == PhaseKind::kComplete) {
        // Find this record's bar (same start) among the sorted bars.
        Bar* first = complete_bars_.data() + complete_begin_[t];
        Bar* last = complete_bars_.data() + complete_begin_[t + 1];
        Bar* it =
            std::lower_bound(first, last, ts, [](const Bar& b, double v) { return b.start < v; });
        while (it != last && it->start == ts && it->end != end) ++it;
        if (it == last) it = first + std::min(ci, static_cast<size_t>(last - first) - 1);
        id = CompleteEv(it);
        attributed = it->attributed;
        ++ci;
      } else {
        id = ctx_.next_event_id++;
      }
      std::string& b = ctx_.Begin();
      b.append(R"({"ph":"X","cat":"scheduler","id":)");
      b.append(std::to_string(id));
      AppendF(b, R"J(,"cname":"{}","name":"{}({})","pid":{},"tid":{},"ts":)J", PhaseColor(p.kind),
              PhaseName(p.kind), p.tasks_processed, Pid(2), tid);
      Num(b, T(ts));
      b.append(R"(,"dur":)");
      Num(b, end - ts);
      fmt::format_to(
          std::back_inserter(b),
          R"(,"args":{{"phase":"{}","loop_iter":{},"tasks_processed":{},)"
          R"J("shared_at_start (aic,aiv,mix)":[{},{},{}],"shared_at_end (aic,aiv,mix)":[{},{},{}])J",
          PhaseName(p.kind), p.loop_iter, p.tasks_processed, p.shared_at_start[0],
          p.shared_at_start[1], p.shared_at_start[2], p.shared_at_end[0], p.shared_at_end[1],
          p.shared_at_end[2]);
      if (p.kind == PhaseKind::kComplete) {
        AppendF(b, R"(,"finishes_processed":{},"finish_rows_attributed":{})", p.tasks_processed,
                attributed);
      }
      if (p.kind == PhaseKind::kDispatch) {
        AppendF(b, R"(,"pop_hit":{},"pop_miss":{})", p.pop_hit, p.pop_miss);
      }
      b.append("}}");
      ctx_.End();
      ++ctx_.slice_events;
      SeeEnd(end);
      if ((p.kind == PhaseKind::kComplete || p.kind == PhaseKind::kDispatch) && p.has_depths) {
        std::string& c = ctx_.Begin();
        fmt::format_to(
            std::back_inserter(c),
            R"({{"ph":"C","cat":"queue","name":"shared_ready_queue","pid":{},"tid":3999,"ts":)",
            Pid(2));
        Num(c, T(end));
        AppendF(c, R"(,"args":{{"AIC":{},"AIV":{},"MIX":{}}}}})", p.shared_at_end[0],
                p.shared_at_end[1], p.shared_at_end[2]);
        ctx_.End();
      }
    });
  }

  Bar* FindCompleteBar(int thread, double finish) {
    if (thread < 0 || static_cast<size_t>(thread) >= d_.num_sched_threads) return nullptr;
    Bar* first = complete_bars_.data() + complete_begin_[static_cast<size_t>(thread)];
    Bar* last = complete_bars_.data() + complete_begin_[static_cast<size_t>(thread) + 1];
    Bar* it =
        std::lower_bound(first, last, finish, [](const Bar& b, double v) { return b.end < v; });
    return it == last ? nullptr : it;
  }
  uint64_t CompleteEv(const Bar* b) const {
    return first_complete_ev_ + static_cast<uint64_t>(b - complete_bars_.data());
  }
  static int BarTid(const Bar* b) { return SchedTid(static_cast<int>(b->thread)); }

  void Marker(uint64_t task_id, int tid, double ts, double dur, const std::string& name,
              const char* cname, const std::string& args_json) {
    dur = std::max(dur, kMinMarkerUs);
    uint64_t id = ctx_.next_event_id++;
    std::string& b = ctx_.Begin();
    b.append(R"({"ph":"X","cat":"event","id":)");
    b.append(std::to_string(id));
    if (cname != nullptr) AppendF(b, R"(,"cname":"{}")", cname);
    b.append(R"(,"name":)");
    AppendJsonString(&b, name);
    AppendF(b, R"(,"pid":{},"tid":{},"ts":)", Pid(4), tid);
    Num(b, T(ts));
    b.append(R"(,"dur":)");
    Num(b, dur);
    b.append(R"(,"args":)");
    b.append(args_json);
    b.append("}");
    ctx_.End();
    ++ctx_.slice_events;
    SeeEnd(ts + dur);
    markers_.emplace(task_id, Anchor{4, tid, ts, ts + dur, id});
  }

  std::string MarkerLabel(uint64_t task_id) const {
    int f = -1;
    if (const TaskInfo* t = DepTaskOf(task_id)) {
      for (int k : t->kernel_ids) {
        if (k >= 0) {
          f = k;
          break;
        }
      }
      return Label(task_id, f, t->block_num > 1);
    }
    return Label(task_id, f, false);
  }

  void EmitMarkersAndOrch() {
    std::set<uint64_t> dummy_records, skip_records;
    for (const auto& [t, p] : marker_phases_) {
      {
        uint64_t id = static_cast<uint64_t>(p.task_id);
        double ts = d_.Us(p.start), dur = d_.Us(p.end) - ts;
        std::string disp = FormatTaskDisplay(id);
        if (p.kind == PhaseKind::kDummyTask) {
          dummy_records.insert(id);
          Marker(
              id, 19000 + static_cast<int>(t), ts, dur, "dummy(" + disp + ")", nullptr,
              fmt::format(
                  R"({{"loop_iter":{},"task_id":{},"event-hint":"Task:{}","phase":"dummy_task"}})",
                  p.loop_iter, id, disp));
        } else {
          skip_records.insert(id);
          Marker(
              id, 19000 + static_cast<int>(t), ts, dur, MarkerLabel(id), nullptr,
              fmt::format(
                  R"({{"loop_iter":{},"task_id":{},"event-hint":"Task:{}","predicated_pass":false}})",
                  p.loop_iter, id, disp));
        }
      }
    }
    size_t nsched = d_.num_sched_threads;
    for (size_t o = 0; o < d_.orch_phases.size(); ++o) {
      for (const auto& p : d_.orch_phases[o]) {
        double ts = d_.host_mode ? d_.HostUs(p.start) : d_.Us(p.start);
        double end = d_.host_mode ? d_.HostUs(p.end) : d_.Us(p.end);
        std::string name =
            p.task_id < 0 ? fmt::format("submit({})", p.submit_idx)
                          : "submit(" + FormatTaskDisplay(static_cast<uint64_t>(p.task_id)) + ")";
        uint64_t id = ctx_.next_event_id++;
        std::string& b = ctx_.Begin();
        b.append(R"({"ph":"X","cat":"orchestrator","id":)");
        b.append(std::to_string(id));
        AppendF(b, R"(,"cname":"rail_animation","name":"{}","pid":{},"tid":{},"ts":)", name, Pid(1),
                4000 + static_cast<int>(o));
        Num(b, T(ts));
        b.append(R"(,"dur":)");
        Num(b, end - ts);
        AppendF(b, R"(,"args":{{"phase":"orch_submit","submit_idx":{},"task_id":{}}}}})",
                p.submit_idx, p.task_id);
        ctx_.End();
        ++ctx_.slice_events;
        SeeEnd(end);
        if (p.task_id < 0) continue;
        uint64_t tid = static_cast<uint64_t>(p.task_id);
        orch_end_.push_back({tid, 4000 + static_cast<int>(o), end});
        // Alloc bars: neither a regular, a dummy nor a predicated-skip task.
        const TaskInfo* dt = DepTaskOf(tid);
        bool regular = FindGroup(tid).has_value();
        bool dummy = dummy_records.count(tid) > 0 || (dt != nullptr && dt->IsDummy());
        bool skipped = skip_records.count(tid) > 0;
        if (dt != nullptr && dt->IsDummy() && dummy_records.count(tid) == 0) {
          err_ << "Warning: dummy(" << FormatTaskDisplay(tid)
               << ") has no dummy_task scheduler record; its Worker View bar cannot be rendered.\n";
        }
        if (!regular && !dummy && !skipped && (deps_ == nullptr || dt == nullptr)) {
          std::string disp = FormatTaskDisplay(tid);
          Marker(
              tid, 19000 + static_cast<int>(nsched + o), ts, end - ts, "alloc(" + disp + ")",
              "olive",
              fmt::format(R"({{"phase":"alloc","task_id":{},"event-hint":"Task:{}"}})", tid, disp));
        }
      }
    }
    for (const auto& u : d_.host_uploads) {
      double ts = d_.HostUs(u.start_ns), end = d_.HostUs(u.end_ns);
      std::string& b = ctx_.Begin();
      b.append(R"({"ph":"X","cat":"host_h2d","name":)");
      AppendJsonString(&b, u.phase);
      AppendF(b, R"(,"cname":"thread_state_iowait","pid":{},"tid":4100,"ts":)", Pid(1));
      Num(b, T(ts));
      b.append(R"(,"dur":)");
      Num(b, end - ts);
      AppendF(b, R"(,"args":{{"bytes":{}}}}})", u.detail);
      ctx_.End();
      SeeEnd(end);
    }
  }

  // Graph Execution (pid 5): an envelope per outer Graph task whose
  // graph_prepare slices join ring-1 node rows with local id
  // (outer_local << 10) | node_index.
  void EmitGraphExecution() {
    int lane = 0;
    for (const auto& [outer, o] : outers_) {
      uint64_t lo = (uint64_t{1} << 32) | (static_cast<uint64_t>(LocalOf(outer)) << 10);
      uint64_t hi = lo + 1024;
      auto first = std::lower_bound(d_.tasks.begin(), d_.tasks.end(), lo,
                                    [&](const TaskRow& r, uint64_t v) { return d_.TaskId(r) < v; });
      std::set<uint64_t> nodes;
      double exec_start = std::numeric_limits<double>::infinity(), last_finish = 0;
      for (auto it = first; it != d_.tasks.end() && d_.TaskId(*it) < hi; ++it) {
        nodes.insert(d_.TaskId(*it));
        exec_start = std::min(exec_start, d_.StartUs(*it));
        last_finish = std::max(last_finish, d_.Finish(*it) ? d_.FinishUs(*it) : d_.EndUs(*it));
      }
      if (nodes.empty()) continue;
      ProcessName(5, "Graph Execution", 1);
      int tid = 5000 + lane;
      ThreadName(5, tid, fmt::format("Graph_{}", lane));
      ++lane;
      double ts = std::min(o.first_prepare, exec_start);
      std::string& b = ctx_.Begin();
      b.append(R"({"ph":"X","cat":"graph_execution","name":)");
      AppendJsonString(&b, fmt::format("GraphExecution({}, {} visible nodes)",
                                       FormatTaskDisplay(outer), nodes.size()));
      AppendF(b, R"(,"pid":{},"tid":{},"ts":)", Pid(5), tid);
      Num(b, T(ts));
      b.append(R"(,"dur":)");
      Num(b, last_finish - ts);
      fmt::format_to(
          std::back_inserter(b),
          R"(,"args":{{"outer_task_id":{},"visible_node_count":{},"visible_node_min":{},)"
          R"("visible_node_max":{},"prepare_slice_count":{},"prepare_duration_us":)",
          outer, nodes.size(), LocalOf(*nodes.begin()) & 1023, LocalOf(*nodes.rbegin()) & 1023,
          o.slices);
      Num(b, o.prepare_us);
      b.append(R"(,"execution_start_us":)");
      Num(b, exec_start);
      b.append(R"(,"execution_duration_us":)");
      Num(b, last_finish - exec_start);
      b.append(R"J(,"synthetic_id_layout":"ring1:(outer_task_id << 10) | node_index"}})J");
      ctx_.End();
      ++ctx_.slice_events;
      SeeEnd(last_finish);
    }
  }

  void Flow(const char* name, const Anchor& from, double from_ts, const Anchor& to, double to_ts,
            int in_count = 0, int out_count = 0) {
    uint64_t id = ctx_.next_flow_id++;
    for (int k = 0; k < 2; ++k) {
      const Anchor& a = k == 0 ? from : to;
      std::string& b = ctx_.Begin();
      AppendF(b, R"({{"cat":"flow","id":{},"name":"{}","ph":"{}","pid":{},"tid":{},"ts":)", id,
              name, k == 0 ? "s" : "f", Pid(a.pid), a.tid);
      Num(b, T(k == 0 ? from_ts : to_ts));
      if (a.event_id != 0) AppendF(b, R"(,"bind_id":{})", a.event_id);
      if (k == 1) b.append(R"(,"bp":"e")");
      if (in_count > 0) {
        AppendF(b, R"(,"input_task_count":{},"output_task_count":{})", in_count, out_count);
      }
      b.append("}");
      ctx_.End();
    }
    ctx_.flow_events += 2;
  }

  // Anchor rows (§4.7): non-SPMD → every row; SPMD → per func_id the earliest row.
  std::vector<uint32_t> AnchorRows(const Group& g, bool worker_view) const {
    std::vector<uint32_t> out;
    if (!g.spmd) {
      for (uint32_t i = g.begin; i < g.end; ++i) out.push_back(i);
      return out;
    }
    std::map<int, uint32_t> best;
    for (uint32_t i = g.begin; i < g.end; ++i) {
      const TaskRow& r = d_.tasks[i];
      int func_id = FuncOf(r);
      auto it = best.find(func_id);
      if (it == best.end()) {
        best[func_id] = i;
        continue;
      }
      const TaskRow& b = d_.tasks[it->second];
      double kr = worker_view ? d_.ReceiveUs(r) : d_.DispatchUs(r);
      double kb = worker_view ? d_.ReceiveUs(b) : d_.DispatchUs(b);
      if (kr < kb || (kr == kb && r.core_id < b.core_id)) it->second = i;
    }
    for (const auto& [f, i] : best) out.push_back(i);
    return out;
  }

  std::vector<Anchor> WorkerAnchors(uint64_t id) const {
    std::vector<Anchor> out;
    if (auto g = FindGroup(id)) {
      for (uint32_t i : AnchorRows(*g, true)) {
        const TaskRow& r = d_.tasks[i];
        out.push_back({4, CoreTid(r.core_id), d_.ReceiveUs(r), d_.EndUs(r), WorkerEv(i)});
      }
      return out;
    }
    auto range = markers_.equal_range(id);
    for (auto it = range.first; it != range.second; ++it) out.push_back(it->second);
    return out;
  }

  int FanCount(uint64_t id) const {
    if (auto g = FindGroup(id)) return g->spmd ? g->block_num : 1;
    if (const TaskInfo* t = DepTaskOf(id)) return std::max(1, t->block_num);
    return 1;
  }

  void EmitDependencyFlows() {
    uint64_t missing = 0;
    for (const auto& [pred, succ] : deps_->edges) {
      auto from = WorkerAnchors(pred);
      auto to = WorkerAnchors(succ);
      if (from.empty() || to.empty()) {
        ++missing;
        if (verbose_ && missing <= 10) {
          err_ << "Warning: Task " << FormatTaskDisplay(pred) << " references non-existent "
               << (from.empty() ? "predecessor " + FormatTaskDisplay(pred)
                                : "successor " + FormatTaskDisplay(succ))
               << "\n";
        }
        continue;
      }
      int in_count = FanCount(succ), out_count = FanCount(pred);
      for (const auto& a : from) {
        for (const auto& b : to) {
          Flow(a.end > b.ts ? "hb_violation" : "dependency", a, a.ts, b, b.ts, in_count, out_count);
        }
      }
      // Scheduler View.
      if (!has_sched_view_) continue;
      auto gp = FindGroup(pred);
      auto gs = FindGroup(succ);
      if (!gp || !gs) continue;
      for (uint32_t i : AnchorRows(*gp, false)) {
        if (d_.tasks[i].slot == 0) continue;
        const TaskRow& rp = d_.tasks[i];
        for (uint32_t j : AnchorRows(*gs, false)) {
          if (d_.tasks[j].slot == 0) continue;
          const TaskRow& rs = d_.tasks[j];
          Anchor a{3, SchedTidOf(i), d_.DispatchUs(rp), d_.FinishUs(rp), SchedEv(i)};
          Anchor b{3, SchedTidOf(j), d_.DispatchUs(rs), d_.FinishUs(rs), SchedEv(j)};
          Flow(a.end > b.ts ? "hb_violation" : "dependency", a, a.ts, b, b.ts, in_count, out_count);
        }
      }
    }
    if (verbose_ && missing > 10) {
      err_ << "Warning: " << missing << " edge(s) reference tasks absent from the trace\n";
    }
  }

  void EmitCompleteAndDispatchFlows() {
    if (!d_.has_sched_phases || d_.num_sched_threads == 0) return;
    std::stable_sort(orch_end_.begin(), orch_end_.end(),
                     [](const OrchEnd& a, const OrchEnd& b) { return a.task_id < b.task_id; });
    // complete: last-finishing row of each task → its complete bar.
    // Complete bar of each task (by its first row; + 1, 0 = none): only the
    // complete→ready flows need it, and only with deps.
    std::vector<uint32_t> task_complete(deps_ != nullptr ? NumRows() : 0, 0);
    for (uint32_t k = 0; k < NumRows();) {
      Group g = GroupFrom(k);
      k = g.end;
      uint32_t last = g.begin;
      for (uint32_t i = g.begin; i < g.end; ++i) {
        if (d_.Finish(d_.tasks[i]) > d_.Finish(d_.tasks[last])) last = i;
      }
      const TaskRow& r = d_.tasks[last];
      if (d_.Finish(r) == 0) continue;
      int th = d_.SchedThreadOfCore(r.core_id);
      double fin = d_.FinishUs(r);
      Bar* bar = FindCompleteBar(th, fin);
      if (bar == nullptr) continue;
      if (!task_complete.empty())
        task_complete[g.begin] = static_cast<uint32_t>(bar - complete_bars_.data()) + 1;
      Anchor to{2, BarTid(bar), bar->start, bar->end, CompleteEv(bar)};
      double to_ts = bar->start <= fin ? fin : bar->start;
      Anchor w{4, CoreTid(r.core_id), 0, 0, WorkerEv(last)};
      Flow("complete", w, d_.EndUs(r) - kFlowEps, to, to_ts);
      if (has_sched_view_ && d_.tasks[last].slot != 0) {
        Anchor s{3, SchedTidOf(last), 0, 0, SchedEv(last)};
        Flow("complete", s, fin - kFlowEps, to, to_ts);
      }
    }
    // complete→ready and submit→dispatch, dispatch flows.
    for (uint32_t k = 0; k < NumRows();) {
      Group g = GroupFrom(k);
      k = g.end;
      uint32_t first = g.begin;
      for (uint32_t i = g.begin; i < g.end; ++i) {
        if (d_.Dispatch(d_.tasks[i]) < d_.Dispatch(d_.tasks[first])) first = i;
      }
      const TaskRow& fr = d_.tasks[first];
      if (d_.Dispatch(fr) == 0) continue;
      double disp = d_.DispatchUs(fr);
      int th = ThreadOfCore(fr.core_id);
      if (th < 0) continue;
      Anchor lane{2, SchedTid(th), disp, disp, 0};
      if (deps_ != nullptr) {
        const Bar* sat = nullptr;
        {
          for (const auto& [self, p] : deps_->Preds(g.task_id)) {
            auto pg = FindGroup(p);
            uint32_t ci = pg ? task_complete[pg->begin] : 0;
            const Bar* c = ci == 0 ? nullptr : &complete_bars_[ci - 1];
            if (c != nullptr && (sat == nullptr || c->end > sat->end)) sat = c;
          }
        }
        if (sat != nullptr && disp >= sat->end) {
          Anchor from{2, BarTid(sat), sat->start, sat->end, CompleteEv(sat)};
          Flow("complete\u2192ready", from, sat->end - kFlowEps, lane, disp);
        }
      }
      auto o = std::lower_bound(orch_end_.begin(), orch_end_.end(), g.task_id,
                                [](const OrchEnd& e, uint64_t v) { return e.task_id < v; });
      if (o != orch_end_.end() && o->task_id == g.task_id && !d_.host_mode) {
        Anchor from{1, o->tid, 0, o->end, 0};
        Flow("submit\u2192dispatch", from, o->end, lane, disp);
      }
    }
    for (uint32_t i = 0; i < d_.tasks.size(); ++i) {
      const TaskRow& r = d_.tasks[i];
      if (d_.Dispatch(r) == 0) continue;
      int th = ThreadOfCore(r.core_id);
      if (th < 0) continue;
      double disp = d_.DispatchUs(r);
      Anchor from{2, SchedTid(th), disp, disp, 0};
      Anchor w{4, CoreTid(r.core_id), 0, 0, WorkerEv(i)};
      Flow("dispatch", from, disp, w, d_.StartUs(r));
      if (has_sched_view_ && r.slot != 0) {
        Anchor s{3, SchedTidOf(i), 0, 0, SchedEv(i)};
        Flow("dispatch", from, disp, s, disp);
      }
    }
  }

  void EmitOverhead() {
    OverheadResult oh = ComputeOverhead(d_, *deps_);
    struct Track {
      const char* name;
      int tid;
    };
    const Track tracks[] = {{"oh_aic_idle", 9101},     {"oh_aic_ready", 9102},
                            {"oh_aic_overhead", 9103}, {"oh_aiv_idle", 9111},
                            {"oh_aiv_ready", 9112},    {"oh_aiv_overhead", 9113},
                            {"oh_all_overhead", 9121}, {"oh_has_overhead", 9122}};
    ProcessName(2, "AICPU Scheduler", 2);
    for (const auto& t : tracks) ThreadName(2, t.tid, t.name);
    long last[8];
    std::fill(std::begin(last), std::end(last), std::numeric_limits<long>::min());
    for (const auto& s : oh.timeline) {
      long v[8] = {s.idle[0],  s.ready[0],    s.overhead[0],  s.idle[1],
                   s.ready[1], s.overhead[1], s.all_overhead, s.has_overhead};
      for (int k = 0; k < 8; ++k) {
        if (v[k] == last[k]) continue;
        last[k] = v[k];
        std::string& b = ctx_.Begin();
        AppendF(b, R"({{"ph":"C","cat":"overhead","name":"{}","pid":{},"tid":{},"ts":)",
                tracks[k].name, Pid(2), tracks[k].tid);
        Num(b, std::round(T(s.ts) * 1000.0) / 1000.0);
        AppendF(b, R"(,"args":{{"{}":{}}}}})", tracks[k].name, v[k]);
        ctx_.End();
      }
    }
  }

  SwimlaneRecords& d_;
  const TaskGraph* deps_;
  const collectors::NameMap& names_;
  bool overhead_, verbose_;
  TraceContext& ctx_;
  std::ostream& out_;
  std::ostream& err_;
  uint64_t WorkerEv(uint32_t row) const { return first_worker_ev_ + row; }
  // Scheduler View bar of a row (TaskRow::slot = 1-based offset, 0 = none).
  uint64_t SchedEv(uint32_t row) const {
    uint32_t s = d_.tasks[row].slot;
    return s == 0 ? 0 : first_sched_ev_ + s - 1;
  }
  int SchedTidOf(uint32_t row) const {
    const TaskRow& r = d_.tasks[row];
    return CoreTid(r.core_id) + (r.flags >> kLaneShift);
  }

  struct Outer {
    double first_prepare = std::numeric_limits<double>::infinity();
    double prepare_us = 0;
    int slices = 0;
  };

  bool has_sched_view_ = false;
  uint64_t first_worker_ev_ = 0;  // Worker View bar of row i has id first_worker_ev_ + i
  uint64_t first_sched_ev_ = 0;   // first Scheduler View bar id
  uint64_t first_complete_ev_ = 0;
  std::vector<bool> has_resolve_;                // per sched thread
  std::vector<Bar> complete_bars_;               // per thread ranges, each sorted by start
  std::vector<size_t> complete_begin_;           // thread t: [begin[t], begin[t + 1])
  std::vector<std::vector<Bar>> dispatch_bars_;  // read on demand for core voting
  std::vector<std::pair<size_t, SchedPhase>> marker_phases_;  // dummy_task / predicated_skip
  std::map<uint64_t, Outer> outers_;                          // graph_prepare by outer task
  Status sched_status_;
  std::multimap<uint64_t, Anchor> markers_;
  struct OrchEnd {
    uint64_t task_id;
    int tid;
    double end;
  };
  std::vector<OrchEnd> orch_end_;
  bool voted_ = false;
  std::map<int, int> voted_core_thread_;
};

const char* LevelDescription(int level) {
  switch (level) {
    case 1:
      return "AICore timing only";
    case 2:
      return "AICore + AICPU timing";
    case 3:
      return "AICore + AICPU timing + scheduler phases";
    default:
      return "full collection with orchestrator phases";
  }
}

void PrintStatistics(const SwimlaneRecords& d, const TaskGraph* deps,
                     const collectors::NameMap& names, std::ostream& out) {
  struct Acc {
    uint64_t count = 0;
    double exec = 0, latency = 0, head = 0, tail = 0, prop = 0, local = 0;
  };
  std::map<int, Acc> per;
  Acc total;
  double first_dispatch = std::numeric_limits<double>::infinity(), last_finish = 0;
  double first_start = std::numeric_limits<double>::infinity(), last_end = 0;
  bool l1 = d.level == 1;
  for (const auto& r : d.tasks) {
    double s = d.StartUs(r), e = d.EndUs(r), recv = d.ReceiveUs(r);
    double disp = d.DispatchUs(r), fin = d.FinishUs(r);
    for (Acc* a : {&per[RowFuncId(d, deps, r)], &total}) {
      ++a->count;
      a->exec += e - s;
      a->local += s - recv;
      if (!l1) {
        a->latency += fin - disp;
        a->head += s - disp;
        a->tail += fin - e;
        a->prop += recv - disp;
      }
    }
    first_start = std::min(first_start, recv);
    last_end = std::max(last_end, e);
    if (!l1) {
      first_dispatch = std::min(first_dispatch, disp);
      last_finish = std::max(last_finish, fin);
    }
  }
  out << "\nTask Statistics by Function (source: chip_swimlane_level " << d.level << " — "
      << LevelDescription(d.level) << ")\n";
  std::string header =
      fmt::format("{:>8}  {:<24} {:>8} {:>13} {:>16} {:>7} {:>16} {:>16} {:>12} {:>13}", "Func_ID",
                  "Func_Name", "Count", "Avg Exec(us)", "Avg Latency(us)", "Exec%",
                  "Avg Head OH(us)", "Avg Tail OH(us)", "Avg Prop(us)", "Avg Local(us)");
  out << header << "\n" << std::string(header.size(), '-') << "\n";
  auto row = [&](const std::string& id, const std::string& name, const Acc& a) {
    double n = static_cast<double>(a.count);
    auto opt = [&](double v) { return l1 ? std::string("-") : fmt::format("{:.3f}", v / n); };
    std::string pct =
        l1 || a.latency <= 0 ? "-" : fmt::format("{:.1f}%", 100.0 * a.exec / a.latency);
    out << fmt::format(
        "{:>8}  {:<24} {:>8} {:>13.3f} {:>16} {:>7} {:>16} {:>16} {:>12} {:>13.3f}\n", id, name,
        a.count, a.exec / n, opt(a.latency), pct, opt(a.head), opt(a.tail), opt(a.prop),
        a.local / n);
  };
  for (const auto& [f, a] : per) {
    std::string name =
        f < 0 ? "unknown"
              : (names.Find(f) ? *names.Find(f) : fmt::format("func_{}_{}", f, FuncLetters(f)));
    row(std::to_string(f), name, a);
  }
  if (total.count == 0) {
    out << "(no tasks)\n";
    return;
  }
  out << std::string(header.size(), '-') << "\n";
  row("TOTAL", "", total);
  if (l1) {
    out << fmt::format("AICore Observed Span: {:.3f} us\n", last_end - first_start);
  } else {
    out << fmt::format("Total Test Time: {:.3f} us\n", last_finish - first_dispatch);
  }
  double n = static_cast<double>(total.count);
  out << "\nTask execution vs Scheduler overhead\n";
  out << fmt::format("  Avg Exec per task:    {:.3f} us\n", total.exec / n);
  if (!l1) {
    out << fmt::format("  Avg Latency per task: {:.3f} us\n", total.latency / n);
    out << fmt::format("  Exec / Latency:       {:.1f}%\n",
                       total.latency > 0 ? 100.0 * total.exec / total.latency : 0.0);
  }
}

Status WriteHeader(ChunkedWriter& w) {
  w.Append("{\"traceEvents\": [\n");
  return Status::Ok();
}

// Loads deps at `path`; prints the "no usable deps.json" warning on failure.
std::optional<TaskGraph> LoadDepsOrWarn(const std::filesystem::path& path, bool verbose,
                                        std::ostream& err) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    auto deps = ReadTaskGraph(path);
    if (deps.ok()) return std::move(deps).value();
    if (verbose)
      err << "Warning: couldn't read " << path.string() << ": " << deps.status().message() << "\n";
  }
  err << "Warning: no usable deps.json at " << path.string()
      << "; Perfetto trace will have no dependency arrows. Run a dep_gen capture "
         "(--enable-dep-gen) and pass --deps-json <path> to add them.\n";
  return std::nullopt;
}

}  // namespace

Status RunSwimlane(const SwimlaneOptions& options, std::ostream& out, std::ostream& err) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(options.input, ec)) {
    return NotFound("Input file not found: " + options.input.string());
  }
  std::filesystem::path dir = options.input.parent_path();
  if (options.verbose) out << "Reading " << options.input.string() << "\n";
  SwimlaneReadOptions read_options;
  read_options.stream_sched_phases = true;  // bounded memory: phases are re-read, not kept
  DFX_ASSIGN_OR_RETURN(SwimlaneRecords data, ReadSwimlaneRecords(options.input, read_options));
  std::string warn = UnmatchedWarning(data);
  if (!warn.empty()) err << warn << "\n";
  if (options.verbose) {
    out << "Level " << data.level << ": " << data.tasks.size() << " task row(s), "
        << data.num_sched_threads << " scheduler thread(s), " << data.orch_phases.size()
        << " orchestrator pool(s)\n";
  }
  // Name map.
  collectors::NameMap names;
  if (options.func_names) {
    DFX_ASSIGN_OR_RETURN(names, collectors::ReadNameMap(*options.func_names));
  } else {
    auto maps = collectors::SiblingNameMaps(dir);
    if (maps.size() == 1) {
      auto loaded = collectors::ReadNameMap(maps[0]);
      if (loaded.ok()) {
        names = std::move(loaded).value();
      } else {
        err << "Warning: couldn't read " << maps[0].string() << ": " << loaded.status().message()
            << "\n";
      }
    } else if (maps.size() > 1) {
      err << "Warning: multiple sibling name maps found next to " << options.input.string()
          << "; pass --func-names explicitly.\n";
    }
  }
  std::filesystem::path deps_path =
      options.deps_json ? *options.deps_json : dir / collectors::kDepsFile;
  std::optional<TaskGraph> deps = LoadDepsOrWarn(deps_path, options.verbose, err);
  if (options.overhead && !deps) {
    err << "Warning: --overhead needs deps.json for task readiness; no deps found, Overhead "
           "Analysis track skipped.\n";
  }
  std::filesystem::path output =
      options.output ? *options.output : dir / collectors::kMergedSwimlaneFile;
  ChunkedWriter w;
  DFX_RETURN_IF_ERROR(w.Open(output));
  DFX_RETURN_IF_ERROR(WriteHeader(w));
  TraceContext ctx;
  ctx.writer = &w;
  DispatchConverter conv(data, deps ? &*deps : nullptr, names, options.overhead, options.verbose,
                         ctx, out, err);
  DFX_RETURN_IF_ERROR(conv.Run());
  w.Append("\n]");
  if (!data.timeline_metadata.is_null()) {
    w.Append(",\n\"metadata\": ");
    w.Append(data.timeline_metadata.dump());
  }
  w.Append("}\n");
  DFX_RETURN_IF_ERROR(w.Commit());
  if (options.verbose) {
    if (deps) {
      out << "Flow events: " << ctx.flow_events << "\n";
    } else {
      out << "Flow events: 0 (no deps.json — re-run dep_gen and pass --deps-json to add arrows)\n";
    }
  }
  if (options.print_statistics) PrintStatistics(data, deps ? &*deps : nullptr, names, out);
  out << "\nWrote " << output.string() << " (" << data.tasks.size() << " task row(s), "
      << ctx.slice_events << " slices, " << ctx.flow_events << " flow events)\n";
  out << "Open it in https://ui.perfetto.dev. For the scheduler overhead analysis run:\n"
      << "  dfx-view sched-overhead --chip-swimlane-records-json " << options.input.string()
      << " --deps-json " << deps_path.string() << "\n";
  return Status::Ok();
}

namespace {

// Reads manifest start times: (rank, dispatch) → start on the coordinator clock (ns).
std::map<std::pair<int, int>, int64_t> ReadManifestStarts(const std::filesystem::path& path,
                                                          std::ostream& err) {
  std::map<std::pair<int, int>, int64_t> starts;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return starts;
  auto j = ReadJsonFile(path);
  if (!j.ok()) {
    err << "Warning: couldn't read " << path.string() << ": " << j.status().message() << "\n";
    return starts;
  }
  const Json& root = *j;
  if (!root.is_object()) return starts;
  // The form dfx-coordinator writes: a top-level "dispatches" array of
  // {rank, k, pass, start_ns} on the coordinator clock. The records on disk
  // come from the timing (or single) pass, so graph-pass entries are skipped.
  if (root.contains("dispatches") && root["dispatches"].is_array()) {
    for (const Json& dj : root["dispatches"]) {
      if (!dj.is_object() || !dj.contains("rank") || !dj.contains("k") ||
          !dj["rank"].is_number_integer() || !dj["k"].is_number_integer() ||
          !dj.contains("start_ns") || !dj["start_ns"].is_number()) {
        continue;
      }
      if (dj.value("pass", std::string()) == "graph") continue;
      starts[{dj["rank"].get<int>(), dj["k"].get<int>()}] = dj["start_ns"].get<int64_t>();
    }
  }
  if (!root.contains("ranks")) return starts;
  auto for_each = [](const Json& container, const char* id_key, auto&& fn) {
    if (container.is_array()) {
      for (size_t i = 0; i < container.size(); ++i) {
        const Json& e = container[i];
        int id = e.is_object() && e.contains(id_key) && e[id_key].is_number() ? e[id_key].get<int>()
                                                                              : static_cast<int>(i);
        fn(id, e);
      }
    } else if (container.is_object()) {
      for (const auto& [k, e] : container.items()) fn(std::atoi(k.c_str()), e);
    }
  };
  for_each(root["ranks"], "rank", [&](int rank, const Json& r) {
    if (!r.is_object()) return;
    int64_t offset = r.value("clock_offset_ns", int64_t{0});
    if (!r.contains("dispatches") || r["dispatches"].is_number()) return;
    for_each(r["dispatches"], "dispatch", [&](int disp, const Json& dj) {
      if (!dj.is_object()) return;
      if (dj.contains("start_ns") && dj["start_ns"].is_number()) {
        starts[{rank, disp}] = dj["start_ns"].get<int64_t>();
      } else if (dj.contains("agent_start_ns") && dj["agent_start_ns"].is_number()) {
        starts[{rank, disp}] = dj["agent_start_ns"].get<int64_t>() - offset;
      }
    });
  });
  return starts;
}

}  // namespace

Status RunSwimlaneForRun(const std::filesystem::path& run_dir,
                         const std::optional<std::filesystem::path>& output, bool verbose,
                         std::ostream& out, std::ostream& err) {
  std::error_code ec;
  if (!std::filesystem::is_directory(run_dir, ec)) {
    return NotFound("--run: " + run_dir.string() + " is not a directory (expected W/dfx_outputs)");
  }
  // rank<N>/d<K>/chip_swimlane_records.json, by rank then dispatch.
  std::map<int, std::map<int, std::filesystem::path>> files;
  for (const collectors::DispatchDir& d : collectors::ListDispatchDirs(run_dir)) {
    auto rec = run_dir / collectors::DispatchDirPath(d) / collectors::kSwimlaneRecordsFile;
    if (std::filesystem::is_regular_file(rec, ec)) files[d.rank][static_cast<int>(d.k)] = rec;
  }
  if (files.empty()) {
    return NotFound(
        fmt::format("no rank<N>/d<K>/{} under {}; run with --enable-chip-swimlane first",
                    collectors::kSwimlaneRecordsFile, run_dir.string()));
  }
  auto starts = ReadManifestStarts(run_dir / collectors::kRunManifestFile, err);
  int64_t t0 = std::numeric_limits<int64_t>::max();
  for (const auto& [k, v] : starts) t0 = std::min(t0, v);
  std::filesystem::path out_path = output ? *output : run_dir / collectors::kRunSwimlaneFile;
  ChunkedWriter w;
  DFX_RETURN_IF_ERROR(w.Open(out_path));
  DFX_RETURN_IF_ERROR(WriteHeader(w));
  TraceContext ctx;
  ctx.writer = &w;
  size_t dispatches = 0;
  for (const auto& [rank, disps] : files) {
    ctx.pid_base = 100 * (rank + 1);
    ctx.process_prefix = fmt::format("Rank {} · ", rank);
    double rank_cursor = 0.0;
    for (const auto& [k, path] : disps) {
      SwimlaneReadOptions read_options;
      read_options.stream_sched_phases = true;
      DFX_ASSIGN_OR_RETURN(SwimlaneRecords data, ReadSwimlaneRecords(path, read_options));
      std::string warn = UnmatchedWarning(data);
      if (!warn.empty()) err << path.string() << ": " << warn << "\n";
      auto it = starts.find({rank, k});
      if (it != starts.end()) {
        ctx.ts_offset = static_cast<double>(it->second - t0) / 1000.0;
      } else {
        ctx.ts_offset = rank_cursor;
      }
      std::optional<TaskGraph> deps;
      auto deps_path = path.parent_path() / collectors::kDepsFile;
      if (std::filesystem::exists(deps_path, ec)) {
        auto loaded = ReadTaskGraph(deps_path);
        if (loaded.ok())
          deps = std::move(loaded).value();
        else
          err << "Warning: couldn't read " << deps_path.string() << ": "
              << loaded.status().message() << "\n";
      }
      collectors::NameMap names;
      auto maps = collectors::SiblingNameMaps(path.parent_path());
      if (maps.size() == 1) {
        auto loaded = collectors::ReadNameMap(maps[0]);
        if (loaded.ok()) names = std::move(loaded).value();
      }
      ctx.max_ts = ctx.ts_offset;
      DispatchConverter conv(data, deps ? &*deps : nullptr, names, false, verbose, ctx, out, err);
      DFX_RETURN_IF_ERROR(conv.Run());
      rank_cursor = std::max(rank_cursor, ctx.max_ts + 1.0);  // 1 µs gap between dispatches
      ++dispatches;
      if (verbose) out << "Merged " << path.string() << " at +" << ctx.ts_offset << " us\n";
    }
  }
  w.Append("\n]}\n");
  DFX_RETURN_IF_ERROR(w.Commit());
  out << "Wrote " << out_path.string() << " (" << files.size() << " rank(s), " << dispatches
      << " dispatch(es), " << ctx.slice_events << " slices, " << ctx.flow_events << " flow events"
      << (starts.empty() ? ", no run_manifest.json: dispatches laid end to end" : "") << ")\n";
  return Status::Ok();
}

}  // namespace dfx::view
