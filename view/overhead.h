// The scheduler-overhead sweep shared by `swimlane --overhead` (docs/formats.md
// §4.8) and `sched-overhead` part 1 (§5): per engine (AIC/AIV), overhead is
// time during which a core of that engine is idle while a task of that engine
// is ready but not yet dispatched. Readiness = max `end` over the task's
// producers present in the perf set, else its own dispatch. MIX tasks count for
// both engines. Pure function of its inputs.
#pragma once

#include <vector>

#include "collectors/dep_gen/deps_reader.h"
#include "collectors/swimlane/swimlane_reader.h"

namespace dfx::view {

struct OverheadState {
  double ts = 0.0;
  int idle[2] = {0, 0};  // [aic, aiv]
  int ready[2] = {0, 0};
  bool overhead[2] = {false, false};
  bool all_overhead = false;
  bool has_overhead = false;
};

struct OverheadResult {
  std::vector<OverheadState> timeline;          // state from ts until the next entry
  double window_start = 0.0, window_end = 0.0;  // [min start, max end]
  bool engine_present[2] = {false, false};
  int cores[2] = {0, 0};
  double overhead_us[2] = {0.0, 0.0};
  double all_overhead_us = 0.0, has_overhead_us = 0.0;
  double Makespan() const { return window_end - window_start; }
  double Pct(double us) const { return Makespan() > 0 ? 100.0 * us / Makespan() : 0.0; }
};

OverheadResult ComputeOverhead(const collectors::SwimlaneRecords& data,
                               const collectors::TaskGraph& deps);

}  // namespace dfx::view
