// `dfx-view swimlane --run W/dfx_outputs`: the run-level timeline of an L3
// run, every rank<N>/d<K>/chip_swimlane_records.json merged into one trace,
// each rank in its own pid range, each dispatch at its start from the run
// manifest (keys documented in run_timeline.cc). Called from one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <set>

#include "common/status.h"
#include "view/trace_writer.h"

namespace dfx::view {

struct RunTimelineOptions {
  std::filesystem::path run_dir;                // W/dfx_outputs
  std::optional<std::filesystem::path> output;  // default <run_dir>/merged_run_swimlane.json
                                                // (.pftrace with kProto)
  TraceFormat format = TraceFormat::kJson;      // --format
  std::set<int32_t> ranks;                      // empty = every rank
  std::set<uint32_t> dispatches;                // empty = every d<K>
  TraceFilter filter;                           // --window, --no-flows
  bool verbose = false;
  // Warn (once) with the size and the filters to use when the trace passes this.
  uint64_t warn_bytes = 1ull << 30;
};

// Progress and the summary go to `out`, warnings to `err`.
Status RunSwimlaneForRun(const RunTimelineOptions& options, std::ostream& out, std::ostream& err);

// When the clock bound is worth a warning (README "Reading a run trace
// across ranks"). Ranks are drawn side by side on the coordinator's clock,
// each good to +- half the best heartbeat round trip measured with its
// agent (the bound). The bound matters when, in a trace of two or more
// ranks, it exceeds this share of the time the trace spans (time zero to the
// last end drawn): then it moves a rank against the others visibly at the
// zoom the trace opens at. A quarter, not less: a loaded 2-core host
// measured best round trips of 50 ms on a 0.3 s run. Below that, cross-rank
// order finer than the bound (e.g. of 1 µs tasks) is not to be read, and
// the trace's metadata.clock_alignment says so without a warning on every
// run.
inline constexpr double kClockBoundShareOfRun = 0.25;
inline bool ClockBoundMatters(double uncertainty_us, double trace_span_us, size_t ranks) {
  return ranks >= 2 && uncertainty_us > kClockBoundShareOfRun * trace_span_us;
}

// Parses "--window T0:T1" (µs; either side may be empty: ":500", "100:").
Status ParseWindow(const std::string& text, TraceFilter* filter);
// Parses a comma list of non-negative integers ("0,2,3") into `out`.
Status ParseIndexList(const std::string& flag, const std::string& text, std::set<uint32_t>* out);

}  // namespace dfx::view
