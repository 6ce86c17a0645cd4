// `dfx-view summary`: a run in one screen — per rank and per dispatch the
// span, busy, idle and scheduler time on the chip, the slowest rank of every
// dispatch step against the median of the ranks that ran it (the straggler
// rule below), the top kernels by time, ring-fill peaks from the scope stats
// and PMU totals where they exist. Read from the artifacts of a finished run
// (W/dfx_outputs, one rank<N>/d<K>, or an L2 dfx_outputs), never from the
// coordinator's memory, so it works on any run directory, later, anywhere.
//
// Definitions (µs on the chip clock of each dispatch):
//   span  = latest finish (end at level 1) − earliest dispatch (start at level 1)
//   busy  = Σ over task rows of (end − start): core-µs spent in kernels
//   idle  = cores used × span − busy
//   sched = Σ over task rows of (start − dispatch) + (finish − end): the
//           scheduler's head and tail overhead (level ≥ 2; 0 below)
// Straggler rule: in dispatch step d<K>, the rank with the longest span is a
// straggler when its span exceeds the median span of the ranks that ran d<K>
// by more than `straggler_threshold_pct` percent (default 5%) of that median.
//
// Functions; called from one thread (SummarizeRun starts its own threads and
// joins them before it returns).
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "view/artifact_check.h"

namespace dfx::view {

struct KernelTime {
  std::string name;
  uint64_t rows = 0;
  double exec_us = 0;
};

struct DispatchSummary {
  int32_t rank = 0;
  uint32_t k = 0;
  std::string program;
  bool has_records = false;  // false: the rest is empty (no chip_swimlane_records.json)
  int level = 0;
  uint64_t rows = 0;
  int cores = 0;
  double span_us = 0, busy_us = 0, idle_us = 0, sched_us = 0;
  std::vector<KernelTime> kernels;  // by exec time, longest first
  // Scope stats: the highest use of a ring resource (scope high water / capacity).
  std::optional<double> ring_peak_pct;
  std::string ring_peak_what;  // e.g. "task_window ring 1"
  // PMU: column -> total over every row of pmu.csv.
  std::map<std::string, double> pmu_totals;
  // PMU: kernel name -> pmu_total_cycles over its rows (names as in `kernels`).
  std::map<std::string, double> pmu_cycles_by_kernel;
};

struct StepSummary {  // one dispatch index d<K> across ranks
  uint32_t k = 0;
  int ranks = 0;
  int32_t slowest_rank = -1;
  std::string slowest_program;
  double slowest_span_us = 0, median_span_us = 0, lag_us = 0, skew_pct = 0;
  bool straggler = false;
};

struct RankSummary {
  int32_t rank = 0;
  int dispatches = 0;
  uint64_t rows = 0;
  double span_us = 0, busy_us = 0, idle_us = 0, sched_us = 0;
  std::optional<double> ring_peak_pct;
  std::string ring_peak_what;
  std::optional<double> pmu_total_cycles;
  int straggler_steps = 0;  // steps in which this rank was the straggler
};

struct RunSummary {
  std::filesystem::path input;
  double straggler_threshold_pct = 5;
  std::vector<DispatchSummary> dispatches;  // by (rank, k)
  std::vector<RankSummary> ranks;           // by rank
  std::vector<StepSummary> steps;           // by k
  std::vector<KernelTime> top_kernels;      // whole run, longest first
  std::vector<int32_t> stragglers;          // ranks with straggler_steps > 0, most first
  std::string verdict;                      // one line
  // The run manifest's word (artifact_check.h): the run's status and every
  // rank and dispatch that is not ok, with its error; unset without a
  // manifest. Printed first, marked, whatever the status text is.
  std::optional<RunHealth> health;
};

// Builds the summary of `input`; warnings (unreadable side files) go to `err`,
// in dispatch order. The dispatches are read up to `jobs` at a time (0: one
// per core), each from its own files; the result does not depend on `jobs`.
Result<RunSummary> SummarizeRun(const std::filesystem::path& input, double straggler_threshold_pct,
                                std::ostream& err, unsigned jobs = 0);

// Parses a --straggler-threshold value: "5", "5%" or "0.5%" (0 < x <= 1000).
Result<double> ParseThresholdPercent(const std::string& text);

struct SummaryPrintOptions {
  std::string format = "table";  // table | csv | json
  // table: "brief" = the rank table, the steps with a straggler, the top
  // kernels and the verdict (what the coordinator prints after a run);
  // otherwise every dispatch too. Above 8 ranks the rank table shrinks to
  // aggregates plus the outliers either way.
  bool brief = false;
  int top = 5;
  std::string view = "dfx-view";  // how the "dig further" commands name dfx-view
};

void PrintSummary(const RunSummary& s, const SummaryPrintOptions& options, std::ostream& out);

}  // namespace dfx::view
