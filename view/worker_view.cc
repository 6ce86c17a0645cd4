// Worker View (pid 4, §4.4): one bar per AICore execution, from the moment
// the core received the task to its end; its event ids are consecutive in
// row order (WorkerEv), which the flows bind to.
#include "view/dispatch_converter.h"

#include "view/task_label.h"

namespace dfx::view {

using collectors::TaskRow;

void DispatchConverter::EmitWorkerView() {
  first_worker_ev_ = trace_.next_event_id();
  std::string fanout, fanin;  // reused: a task's hints, built once for its rows
  for (uint32_t k = 0; k < NumRows();) {
    Group g = GroupFrom(k);
    k = g.end;
    PeerHint(g.task_id, true, &fanout);
    PeerHint(g.task_id, false, &fanin);
    for (uint32_t i = g.begin; i < g.end; ++i) {
      const TaskRow& r = d_.tasks[i];
      double ts = d_.ReceiveUs(r), end = d_.EndUs(r), start = d_.StartUs(r);
      uint64_t id = trace_.TakeEventId();
      int func_id = FuncOf(r);
      // The hints are digits, 'r', 't' and ":, []": nothing to escape.
      const LabelText& head = LabelHead(func_id, g.spmd);
      trace_.Event('X', "event", [&](auto& e) {
        TaskSlice(e, id, head, g.task_id, Pid(4), CoreTid(r.core_id), T(ts), end - ts, func_id,
                  r.core_id)
            .PerTaskStr("fanout-hint", fanout)
            .PerTaskStr("fanin-hint", fanin)
            .Num("duration-us", end - ts)
            .Num("kernel-duration-us", end - start)
            .Num("local_setup_us", start - ts)
            .Int("taskId", g.task_id);
      });
      trace_.CountSlice();
      SeeEnd(end);
    }
  }
}

}  // namespace dfx::view
