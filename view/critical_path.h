// The critical path of one dispatch (docs/formats.md §5 part 6), the one
// computation `sched-overhead` prints and `deps --critical-path` draws: start
// at the task that finished last, repeatedly step to the producer (deps.json)
// whose execution ended last. Per hop: its execution and the scheduler-
// injected gap before it (consumer start − producer end; at the root, start −
// dispatch). Pure function of its inputs; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "collectors/dep_gen/deps_reader.h"
#include "collectors/swimlane/swimlane_reader.h"

namespace dfx::view {

struct CriticalHop {
  uint64_t task_id = 0;
  double dispatch = 0, start = 0, end = 0, finish = 0;  // µs; over the task's rows
  double gap_before = 0;                                // scheduler-injected µs before it starts
};

struct CriticalPath {
  std::vector<CriticalHop> hops;  // root first, the last-finishing task last
  double span = 0;                // root dispatch → last finish
  double exec = 0;                // Σ end − start
  double sched = 0;               // Σ gap_before
};

// Empty `hops` when there are no task rows.
CriticalPath ComputeCriticalPath(const collectors::SwimlaneRecords& records,
                                 const collectors::TaskGraph& deps);

}  // namespace dfx::view
