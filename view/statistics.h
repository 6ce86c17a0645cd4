// The console task statistics of `dfx-view swimlane` (docs/formats.md §4.9): per
// function (func_id) the count and average execution, latency, head and tail
// overhead, propagation and local setup, then the totals and the test time.
// Level 1 has AICore timing only: the AICPU columns print "-". Pure function
// of its inputs; one thread.
#pragma once

#include <iosfwd>

#include "collectors/dep_gen/deps_reader.h"
#include "collectors/name_map.h"
#include "collectors/swimlane/swimlane_reader.h"

namespace dfx::view {

// `deps` (may be null) gives each row its func_id; `names` the kernel names.
void PrintStatistics(const collectors::SwimlaneRecords& records, const collectors::TaskGraph* deps,
                     const collectors::NameMap& names, std::ostream& out);

}  // namespace dfx::view
