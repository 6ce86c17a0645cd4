// `dfx-view sched-overhead`: the scheduler overhead deep-dive (docs/formats.md §5):
// overhead verdict, AICore switch, head/tail overhead distributions, scheduler
// loop budget and the critical path, over the joined task list plus deps.json.
// Called from one thread.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <vector>

#include "common/status.h"

namespace dfx::view {

struct SchedOverheadOptions {
  std::filesystem::path records;
  std::filesystem::path deps;  // empty → sibling deps.json
};

// Writes the six-part report to `out`. Errors are the §5 messages without the "Error: " prefix.
Status RunSchedOverhead(const SchedOverheadOptions& options, std::ostream& out);

// The head/tail overhead percentiles as the reference computes them: the
// sorted values' element at index floor(N * p / 100), capped at N - 1
// (`vals[min(int(n*p/100), n-1)]`), no interpolation; one above the
// nearest rank when N * p / 100 is whole. 0 for no values.
double ReferencePercentile(std::vector<double> values, double p);

// The verdict line for a has_overhead percentage (≥25% / ≥8% thresholds).
const char* OverheadVerdict(double has_overhead_pct);

}  // namespace dfx::view
