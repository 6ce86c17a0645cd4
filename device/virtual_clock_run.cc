#include "device/virtual_clock_run.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "device/kernels.h"

namespace dfx::device {

void RunVirtualClock(EngineScheduler& sched, RecorderHooks& hooks, const ChipModel& model) {
  uint64_t orch_time = kVirtualStart;
  bool orch_blocked = false;
  std::string why;
  using Event = std::pair<uint64_t, int>;  // (finish cycles, core)
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> completions;
  uint64_t sched_time = kVirtualStart;

  auto dispatch = [&](uint64_t now) {
    uint64_t t = std::max(now, sched_time);
    const uint32_t n = sched.DispatchPhase(
        0, t, [&] { return t += kDispatchCycles; }, [&] { return t; },
        [&](int core) {
          CoreState& c = sched.core(core);
          KernelCall call = sched.MakeCall(c.task, c.block);
          collectors::PmuWork w = EstimateWork(call, model);
          if (hooks.records_pmu()) c.pmu_work = w;
          c.kernel_status = RunKernelBlock(call, /*spin_busy=*/false);
          c.start_cycles = c.dispatch_cycles + kReceiveCycles;
          c.end_cycles = c.start_cycles + w.total_cycles;
          hooks.RecordAicoreTask(core, sched.task_id(c.task), c.reg_task_id, c.start_cycles,
                                 c.end_cycles, kReceiveCycles / 2);
          completions.push({c.end_cycles + kFinishCycles, core});
        });
    if (n > 0) sched.CountLoop(0);
    sched_time = t;
  };

  while (true) {
    uint64_t next_completion = completions.empty() ? UINT64_MAX : completions.top().first;
    bool orch_done = sched.StreamDone();
    if (!sched.failed() && !orch_done && !orch_blocked && orch_time <= next_completion) {
      if (sched.OrchestratorStep(orch_time, &why)) {
        orch_time += kSubmitCycles;
        dispatch(orch_time);
      } else {
        orch_blocked = true;
        sched.CountStall();
      }
      continue;
    }
    if (!completions.empty()) {
      auto [finish, core] = completions.top();
      completions.pop();
      int16_t at_start[3];
      sched.Depths(at_start);
      uint64_t t = std::max(finish, sched_time);
      uint64_t reclaimed_before = sched.reclaimed();
      sched.RetireBlock(core, t);
      sched.RecordPhase(0, collectors::SchedPhaseKind::kComplete, t, t + kCompleteCycles, 1,
                        at_start);
      sched_time = t + kCompleteCycles;
      if (sched.ReleasePhase(0, reclaimed_before, sched_time, sched_time + kCompleteCycles))
        sched_time += kCompleteCycles;
      sched.CountLoop(0);
      if (orch_blocked) {
        orch_blocked = false;
        orch_time = std::max(orch_time, sched_time);
      }
      dispatch(sched_time);
      continue;
    }
    if (orch_blocked && !sched.failed()) {
      sched.Fail(sched.DeadlockError(why));
    }
    break;
  }
}

}  // namespace dfx::device
