// The orchestrator and what has no AICore bar (§4.3–§4.4): orchestrator
// submits and host uploads (pid 1), marker lanes on the Worker View for dummy,
// predicated-skip and alloc tasks (tid 19000+), and the Graph Execution
// envelopes of graph_prepare (pid 5).
#include "view/dispatch_converter.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>

#include "view/event_text.h"
#include "view/task_label.h"

namespace dfx::view {

using collectors::PhaseKind;
using collectors::TaskInfo;
using collectors::TaskRow;

namespace {
constexpr double kMinMarkerUs = 0.02;  // shortest marker drawn
}  // namespace

template <typename Args>
void DispatchConverter::Marker(uint64_t task_id, int tid, double ts, double dur,
                               const std::string& name, const char* cname, const Args& args) {
  dur = std::max(dur, kMinMarkerUs);
  uint64_t id = trace_.TakeEventId();
  trace_.Event('X', "event", [&](auto& e) {
    e.Id(id);
    if (cname != nullptr) e.Cname(cname);
    e.NameText(name).At(Pid(4), tid, T(ts)).Dur(dur);
    args(e);
  });
  trace_.CountSlice();
  SeeEnd(ts + dur);
  markers_.emplace(task_id, Anchor{4, tid, ts, ts + dur, id});
}

std::string DispatchConverter::MarkerLabel(uint64_t task_id) const {
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

Status DispatchConverter::EmitMarkersAndOrch() {
  std::set<uint64_t> dummy_records, skip_records;
  for (const auto& entry : marker_phases_) {
    // Named references, not a structured binding: the lambdas below capture
    // them, which clang 14 refuses for bindings.
    const auto& t = entry.first;
    const auto& p = entry.second;
    {
      uint64_t id = static_cast<uint64_t>(p.task_id);
      double ts = d_.Us(p.start), dur = d_.Us(p.end) - ts;
      std::string disp = FormatTaskDisplay(id);
      if (p.kind == PhaseKind::kDummyTask) {
        dummy_records.insert(id);
        Marker(id, 19000 + static_cast<int>(t), ts, dur, "dummy(" + disp + ")", nullptr,
               [&](auto& e) {
                 e.Int("loop_iter", p.loop_iter).Int("task_id", id);
                 e.Str("event-hint", "Task:" + disp).Str("phase", "dummy_task");
               });
      } else {
        skip_records.insert(id);
        Marker(id, 19000 + static_cast<int>(t), ts, dur, MarkerLabel(id), nullptr, [&](auto& e) {
          e.Int("loop_iter", p.loop_iter).Int("task_id", id);
          e.Str("event-hint", "Task:" + disp).Bool("predicated_pass", false);
        });
      }
    }
  }
  size_t nsched = d_.num_sched_threads;
  // Phases streamed in task order need no table of submit ends: the flows
  // find each task's first submit by reading them again beside the rows.
  orch_cursor_ = d_.orch_phases_streamed && d_.orch_phases_sorted_by_task;
  Status orch_status = d_.ForEachOrchPhase([&](size_t o, const collectors::OrchPhase& p) {
    {
      double ts = d_.host_mode ? d_.HostUs(p.start) : d_.Us(p.start);
      double end = d_.host_mode ? d_.HostUs(p.end) : d_.Us(p.end);
      EventText name;  // "submit(<submit_idx>)" or "submit(<task display>)"
      name.Lit("submit(");
      if (p.task_id < 0) {
        name.Int(p.submit_idx);
      } else {
        name.Put(kTaskDisplayChars,
                 [&p](char* at) { return TaskDisplayTo(at, static_cast<uint64_t>(p.task_id)); });
      }
      name.Lit(")");
      uint64_t id = trace_.TakeEventId();
      trace_.Event('X', "orchestrator", [&](auto& e) {
        e.Id(id)
            .Cname("rail_animation")
            .Name(name.view())
            .At(Pid(1), 4000 + static_cast<int>(o), T(ts))
            .Dur(end - ts)
            .Str("phase", "orch_submit")
            .Int("submit_idx", p.submit_idx)
            .Int("task_id", p.task_id);
      });
      trace_.CountSlice();
      SeeEnd(end);
      if (p.task_id < 0) return;
      uint64_t tid = static_cast<uint64_t>(p.task_id);
      if (!orch_cursor_) orch_end_.push_back({tid, 4000 + static_cast<int>(o), end});
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
        Marker(tid, 19000 + static_cast<int>(nsched + o), ts, end - ts, "alloc(" + disp + ")",
               "olive", [&](auto& e) {
                 e.Str("phase", "alloc").Int("task_id", tid).Str("event-hint", "Task:" + disp);
               });
      }
    }
  });
  DFX_RETURN_IF_ERROR(orch_status);
  for (const auto& u : d_.host_uploads) {
    double ts = d_.HostUs(u.start_ns), end = d_.HostUs(u.end_ns);
    trace_.Event('X', "host_h2d", [&](auto& e) {
      e.NameText(u.phase)
          .Cname("thread_state_iowait")
          .At(Pid(1), 4100, T(ts))
          .Dur(end - ts)
          .Int("bytes", u.detail);
    });
    SeeEnd(end);
  }
  return Status::Ok();
}

// Graph Execution (pid 5): an envelope per outer Graph task whose
// graph_prepare slices join ring-1 node rows with local id
// (outer_local << 10) | node_index.
void DispatchConverter::EmitGraphExecution() {
  int lane = 0;
  for (const auto& entry : outers_) {
    const auto& outer = entry.first;  // captured below: no structured binding
    const auto& o = entry.second;
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
    trace_.ProcessName(5, "Graph Execution", 1);
    int tid = 5000 + lane;
    trace_.ThreadName(5, tid, fmt::format("Graph_{}", lane));
    ++lane;
    double ts = std::min(o.first_prepare, exec_start);
    trace_.Event('X', "graph_execution", [&](auto& e) {
      e.NameText(fmt::format("GraphExecution({}, {} visible nodes)", FormatTaskDisplay(outer),
                             nodes.size()))
          .At(Pid(5), tid, T(ts))
          .Dur(last_finish - ts)
          .Int("outer_task_id", outer)
          .Int("visible_node_count", nodes.size())
          .Int("visible_node_min", LocalOf(*nodes.begin()) & 1023)
          .Int("visible_node_max", LocalOf(*nodes.rbegin()) & 1023)
          .Int("prepare_slice_count", o.slices)
          .Num("prepare_duration_us", o.prepare_us)
          .Num("execution_start_us", exec_start)
          .Num("execution_duration_us", last_finish - exec_start)
          .Str("synthetic_id_layout", "ring1:(outer_task_id << 10) | node_index");
    });
    trace_.CountSlice();
    SeeEnd(last_finish);
  }
}

}  // namespace dfx::view
