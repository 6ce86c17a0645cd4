// `dfx-view pmu`: per-function summary of pmu.csv (docs/formats.md §10): count,
// sum and mean of every counter column grouped by (func_id, core_type), plus
// derived pipe utilisations (busy / total cycles) for event type 2 with the
// a2a3 and a5 column names. The file is read by collectors/pmu/pmu_reader.
// Called from one thread.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dfx::view {

struct PmuGroup {
  uint64_t count = 0;
  std::vector<double> sums;  // parallel to PmuSummary::counters
};

struct PmuSummary {
  std::vector<std::string> counters;  // pmu_total_cycles first, then the event columns
  std::map<std::pair<long, int>, PmuGroup> groups;  // (func_id, core_type 0=AIC 1=AIV)
  std::vector<int> event_types;
  uint64_t rows = 0;
  // Derived: (pipe name, counter column) for busy-cycle counters present in the file.
  std::vector<std::pair<std::string, std::string>> pipes;
};

Result<PmuSummary> SummarizePmuCsv(const std::filesystem::path& path);
// Prints the summary; kernel names come from the sibling name map (a
// warning on `err` when it cannot be read).
Status RunPmuSummary(const std::filesystem::path& path, std::ostream& out, std::ostream& err);

}  // namespace dfx::view
