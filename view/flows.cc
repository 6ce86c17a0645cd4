// Flow arrows (§4.7): dependencies from deps.json (Worker and Scheduler
// View), complete (execution → its complete bar), complete→ready,
// submit→dispatch and dispatch (scheduler lane → execution). An arrow whose
// producer ends after its consumer starts is an "hb_violation".
#include "view/dispatch_converter.h"

#include <algorithm>
#include <map>
#include <optional>

#include "view/task_label.h"

namespace dfx::view {

using collectors::TaskInfo;
using collectors::TaskRow;

namespace {
constexpr double kFlowEps = 0.01;  // a flow leaves just before its source's end
}  // namespace

// Anchor rows (§4.7): non-SPMD → every row; SPMD → per func_id the earliest
// row, in func_id order. Fills `out` (reused by the per-edge callers: no
// allocation per edge).
void DispatchConverter::AnchorRows(const Group& g, bool worker_view,
                                   std::vector<uint32_t>* out) const {
  out->clear();
  if (!g.spmd) {
    for (uint32_t i = g.begin; i < g.end; ++i) out->push_back(i);
    return;
  }
  // (func_id, row), a handful per task: a linear search beats a map.
  std::vector<std::pair<int, uint32_t>>& best = anchor_scratch_;
  best.clear();
  for (uint32_t i = g.begin; i < g.end; ++i) {
    const TaskRow& r = d_.tasks[i];
    int func_id = FuncOf(r);
    auto it = std::find_if(best.begin(), best.end(),
                           [func_id](const auto& e) { return e.first == func_id; });
    if (it == best.end()) {
      best.emplace_back(func_id, i);
      continue;
    }
    const TaskRow& b = d_.tasks[it->second];
    double kr = worker_view ? d_.ReceiveUs(r) : d_.DispatchUs(r);
    double kb = worker_view ? d_.ReceiveUs(b) : d_.DispatchUs(b);
    if (kr < kb || (kr == kb && r.core_id < b.core_id)) it->second = i;
  }
  std::sort(best.begin(), best.end());
  for (const auto& [f, i] : best) out->push_back(i);
}

std::vector<uint32_t> DispatchConverter::AnchorRows(const Group& g, bool worker_view) const {
  std::vector<uint32_t> out;
  AnchorRows(g, worker_view, &out);
  return out;
}

void DispatchConverter::WorkerAnchors(uint64_t id, const std::optional<Group>& g,
                                      std::vector<Anchor>* out) const {
  out->clear();
  if (g) {
    AnchorRows(*g, true, &row_scratch_);
    for (uint32_t i : row_scratch_) {
      const TaskRow& r = d_.tasks[i];
      out->push_back({4, CoreTid(r.core_id), d_.ReceiveUs(r), d_.EndUs(r), WorkerEv(i)});
    }
    return;
  }
  auto range = markers_.equal_range(id);
  for (auto it = range.first; it != range.second; ++it) out->push_back(it->second);
}

int DispatchConverter::FanCount(uint64_t id, const std::optional<Group>& g) const {
  if (g) return g->spmd ? g->block_num : 1;
  if (const TaskInfo* t = DepTaskOf(id)) return std::max(1, t->block_num);
  return 1;
}

// Edges are sorted by (pred, succ): what depends on the predecessor alone
// (its group, anchors, fan count) is computed once per predecessor.
void DispatchConverter::EmitDependencyFlows() {
  uint64_t missing = 0;
  std::vector<Anchor> from, to;
  std::vector<uint32_t> from_rows, to_rows;
  std::optional<Group> gp;
  int out_count = 1;
  bool have_pred = false;
  uint64_t current_pred = 0;
  for (const auto& [pred, succ] : deps_->Edges()) {
    if (!have_pred || pred != current_pred) {
      have_pred = true;
      current_pred = pred;
      gp = FindGroup(pred);
      WorkerAnchors(pred, gp, &from);
      out_count = FanCount(pred, gp);
      if (gp && has_sched_view_) AnchorRows(*gp, false, &from_rows);
    }
    const std::optional<Group> gs = FindGroup(succ);
    WorkerAnchors(succ, gs, &to);
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
    int in_count = FanCount(succ, gs);
    for (const auto& a : from) {
      for (const auto& b : to) {
        trace_.Flow(a.end > b.ts ? "hb_violation" : "dependency", a, a.ts, b, b.ts, in_count,
                    out_count);
      }
    }
    // Scheduler View.
    if (!has_sched_view_) continue;
    if (!gp || !gs) continue;
    AnchorRows(*gs, false, &to_rows);
    for (uint32_t i : from_rows) {
      if (d_.tasks[i].slot == 0) continue;
      const TaskRow& rp = d_.tasks[i];
      for (uint32_t j : to_rows) {
        if (d_.tasks[j].slot == 0) continue;
        const TaskRow& rs = d_.tasks[j];
        Anchor a{3, SchedTidOf(i), d_.DispatchUs(rp), d_.FinishUs(rp), SchedEv(i)};
        Anchor b{3, SchedTidOf(j), d_.DispatchUs(rs), d_.FinishUs(rs), SchedEv(j)};
        trace_.Flow(a.end > b.ts ? "hb_violation" : "dependency", a, a.ts, b, b.ts, in_count,
                    out_count);
      }
    }
  }
  if (verbose_ && missing > 10) {
    err_ << "Warning: " << missing << " edge(s) reference tasks absent from the trace\n";
  }
}

// Computed again for each predecessor of the complete→ready flows rather
// than kept per row (4 bytes per task at level 4).
size_t DispatchConverter::CompleteBarOf(const Group& g, uint32_t* last_row) const {
  uint32_t last = g.begin;
  for (uint32_t i = g.begin; i < g.end; ++i) {
    if (d_.Finish(d_.tasks[i]) > d_.Finish(d_.tasks[last])) last = i;
  }
  *last_row = last;
  const TaskRow& r = d_.tasks[last];
  if (d_.Finish(r) == 0) return kNoBar;
  return FindCompleteBar(d_.SchedThreadOfCore(r.core_id), d_.FinishUs(r));
}

Status DispatchConverter::EmitCompleteAndDispatchFlows() {
  if (!d_.has_sched_phases || d_.num_sched_threads == 0) return Status::Ok();
  std::stable_sort(orch_end_.begin(), orch_end_.end(),
                   [](const OrchEnd& a, const OrchEnd& b) { return a.task_id < b.task_id; });
  EmitCompleteFlows();
  const Status submits = EmitReadyAndSubmitFlows();  // reported after the dispatch arrows
  EmitDispatchFlows();
  return submits;
}

// complete (§4.7): from the task's anchor rows in each view (an SPMD task:
// its earliest block, by receive in the Worker View and by dispatch in the
// Scheduler View; otherwise every row) to the complete bar that holds the
// task's last finish.
void DispatchConverter::EmitCompleteFlows() {
  for (uint32_t k = 0; k < NumRows();) {
    Group g = GroupFrom(k);
    k = g.end;
    uint32_t last = 0;
    const size_t bar_index = CompleteBarOf(g, &last);
    if (bar_index == kNoBar) continue;
    const Bar bar = complete_bars_.At(bar_index);
    const double fin = d_.FinishUs(d_.tasks[last]);
    Anchor to{2, BarTid(bar_index), bar.start, bar.end, CompleteEv(bar_index)};
    double to_ts = bar.start <= fin ? fin : bar.start;
    for (uint32_t i : AnchorRows(g, true)) {
      const TaskRow& a = d_.tasks[i];
      Anchor w{4, CoreTid(a.core_id), 0, 0, WorkerEv(i)};
      trace_.Flow("complete", w, d_.EndUs(a) - kFlowEps, to, to_ts);
    }
    if (has_sched_view_) {
      for (uint32_t i : AnchorRows(g, false)) {
        const TaskRow& a = d_.tasks[i];
        if (a.slot == 0 || d_.Finish(a) == 0) continue;
        Anchor s{3, SchedTidOf(i), 0, 0, SchedEv(i)};
        trace_.Flow("complete", s, d_.FinishUs(a) - kFlowEps, to, to_ts);
      }
    }
  }
}

// complete→ready (the complete bar that made a task ready → its dispatch)
// and submit→dispatch. A task's first submit: from orch_end_, or
// (orch_cursor_) the submits read again in file order, which is task order,
// beside the groups.
Status DispatchConverter::EmitReadyAndSubmitFlows() {
  std::optional<collectors::OrchPhaseStreamAhead> submits;
  size_t submit_pool = 0;
  collectors::OrchPhase submit;
  bool have_submit = false;
  if (orch_cursor_) {
    submits.emplace(d_);
    have_submit = submits->Next(&submit_pool, &submit);
  }
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
      size_t sat = kNoBar;
      Bar sat_bar{0, 0};
      for (const auto& [self, p] : deps_->Preds(g.task_id)) {
        auto pg = FindGroup(p);
        uint32_t unused = 0;
        const size_t c = pg ? CompleteBarOf(*pg, &unused) : kNoBar;
        if (c == kNoBar) continue;
        const Bar c_bar = complete_bars_.At(c);
        if (sat == kNoBar || c_bar.end > sat_bar.end) {
          sat = c;
          sat_bar = c_bar;
        }
      }
      if (sat != kNoBar && disp >= sat_bar.end) {
        Anchor from{2, BarTid(sat), sat_bar.start, sat_bar.end, CompleteEv(sat)};
        trace_.Flow("complete\u2192ready", from, sat_bar.end - kFlowEps, lane, disp);
      }
    }
    // submit→dispatch: one arrow per task row, as the reference draws them
    // (each SPMD block from the submit to its own dispatch).
    std::optional<OrchEnd> o;
    if (orch_cursor_) {
      while (have_submit &&
             (submit.task_id < 0 || static_cast<uint64_t>(submit.task_id) < g.task_id)) {
        have_submit = submits->Next(&submit_pool, &submit);
      }
      if (have_submit && static_cast<uint64_t>(submit.task_id) == g.task_id) {
        o = OrchEnd{g.task_id, 4000 + static_cast<int>(submit_pool),
                    d_.host_mode ? d_.HostUs(submit.end) : d_.Us(submit.end)};
      }
    } else {
      auto it = std::lower_bound(orch_end_.begin(), orch_end_.end(), g.task_id,
                                 [](const OrchEnd& e, uint64_t v) { return e.task_id < v; });
      if (it != orch_end_.end() && it->task_id == g.task_id) o = *it;
    }
    if (o && !d_.host_mode) {
      Anchor from{1, o->tid, 0, o->end, 0};
      for (uint32_t i = g.begin; i < g.end; ++i) {
        const TaskRow& r = d_.tasks[i];
        if (d_.Dispatch(r) == 0) continue;
        const int row_thread = ThreadOfCore(r.core_id);
        if (row_thread < 0) continue;
        const double row_disp = d_.DispatchUs(r);
        Anchor row_lane{2, SchedTid(row_thread), row_disp, row_disp, 0};
        trace_.Flow("submit\u2192dispatch", from, o->end, row_lane, row_disp);
      }
    }
  }
  return submits ? submits->status() : Status::Ok();
}

// dispatch: from the scheduler lane that dispatched each row to its
// execution (and to its Scheduler View bar).
void DispatchConverter::EmitDispatchFlows() {
  for (uint32_t i = 0; i < d_.tasks.size(); ++i) {
    const TaskRow& r = d_.tasks[i];
    if (d_.Dispatch(r) == 0) continue;
    int th = ThreadOfCore(r.core_id);
    if (th < 0) continue;
    double disp = d_.DispatchUs(r);
    Anchor from{2, SchedTid(th), disp, disp, 0};
    Anchor w{4, CoreTid(r.core_id), 0, 0, WorkerEv(i)};
    trace_.Flow("dispatch", from, disp, w, d_.StartUs(r));
    if (has_sched_view_ && r.slot != 0) {
      Anchor s{3, SchedTidOf(i), 0, 0, SchedEv(i)};
      trace_.Flow("dispatch", from, disp, s, disp);
    }
  }
}

}  // namespace dfx::view
