// Worker View (pid 4, §4.4): one bar per AICore execution, from the moment
// the core received the task to its end; its event ids are consecutive in
// row order (WorkerEv), which the flows bind to.
#include "view/dispatch_converter.h"

#include <fmt/format.h>

#include "view/task_label.h"

namespace dfx::view {

using collectors::TaskRow;

void DispatchConverter::EmitWorkerView() {
  first_worker_ev_ = trace_.next_event_id();
  for (uint32_t k = 0; k < NumRows();) {
    Group g = GroupFrom(k);
    k = g.end;
    std::string fanout = PeerHint(g.task_id, true);
    std::string fanin = PeerHint(g.task_id, false);
    std::string disp = FormatTaskDisplay(g.task_id);
    for (uint32_t i = g.begin; i < g.end; ++i) {
      const TaskRow& r = d_.tasks[i];
      double ts = d_.ReceiveUs(r), end = d_.EndUs(r), start = d_.StartUs(r);
      uint64_t id = trace_.TakeEventId();
      std::string& b = trace_.Begin();
      b.append(R"({"ph":"X","cat":"event","id":)");
      b.append(std::to_string(id));
      b.append(R"(,"name":)");
      int func_id = FuncOf(r);
      AppendJsonString(&b, Label(g.task_id, func_id, g.spmd));
      AppendF(b, FMT_COMPILE(R"(,"pid":{},"tid":{},"ts":)"), Pid(4), CoreTid(r.core_id));
      Num(b, T(ts));
      b.append(R"(,"dur":)");
      Num(b, end - ts);
      AppendF(
          b,
          FMT_COMPILE(R"(,"args":{{"event-hint":"Task:{}, FuncId:{}, CoreId:{}","fanout-hint":)"),
          disp, func_id, r.core_id);
      AppendJsonString(&b, fanout);
      b.append(R"(,"fanin-hint":)");
      AppendJsonString(&b, fanin);
      b.append(R"(,"duration-us":)");
      Num(b, end - ts);
      b.append(R"(,"kernel-duration-us":)");
      Num(b, end - start);
      b.append(R"(,"local_setup_us":)");
      Num(b, start - ts);
      AppendF(b, FMT_COMPILE(R"(,"taskId":{}}}}})"), g.task_id);
      trace_.End();
      trace_.CountSlice();
      trace_.NoteTaskDuration(end - ts);
      SeeEnd(end);
    }
  }
}

}  // namespace dfx::view
