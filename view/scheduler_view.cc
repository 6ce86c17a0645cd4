// Scheduler View (pid 3, §4.4): the AICPU's view of each execution, dispatch
// to finish, stacked in lanes per core so overlapping dispatches stay visible.
#include "view/dispatch_converter.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>

#include "view/task_label.h"

namespace dfx::view {

using collectors::TaskRow;

// Scheduler View bars in (core, dispatch) order. The rows are sorted into
// that order in place and permuted back afterwards, so no per-row index is
// allocated: TaskRow::slot carries the original row index while sorted and
// the bar's event offset (1-based, 0 = no bar) afterwards; the lane lives in
// the row's scratch flag bits.
void DispatchConverter::EmitSchedulerView() {
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
  first_sched_ev_ = trace_.next_event_id();
  std::vector<double> lane_end;
  std::vector<uint16_t> named_lanes;  // per core: bit `lane` once its thread is named
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
    // Each lane is named once (not a name built and looked up per row).
    if (r.core_id >= named_lanes.size()) named_lanes.resize(r.core_id + 1u, 0);
    if (!(named_lanes[r.core_id] & (1u << lane))) {
      named_lanes[r.core_id] |= static_cast<uint16_t>(1u << lane);
      trace_.ThreadName(3, tid, CoreName(r.core_id));
    }
    uint64_t id = trace_.TakeEventId();
    ++bars;
    uint64_t task_id = d_.TaskId(r);
    int func_id = FuncOf(r);
    const LabelText& head = LabelHead(func_id, (r.flags & kSpmdFlag) != 0);
    trace_.Event('X', "event", [&](auto& e) {
      TaskSlice(e, id, head, task_id, Pid(3), tid, T(ts), fin - ts, func_id, r.core_id)
          .Num("dispatch-time-us", ts)
          .Num("finish-time-us", fin)
          .Num("aicpu-duration-us", fin - ts)
          .Int("taskId", task_id);
    });
    trace_.CountSlice();
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

}  // namespace dfx::view
