#include "view/pmu_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>

#include "collectors/pmu/pmu_columns.h"
#include "collectors/pmu/pmu_reader.h"
#include "view/run_inputs.h"

namespace dfx::view {
namespace {

// Busy-cycle counters per pipe, a2a3 then a5 names.
namespace columns = collectors::pmu_columns;
const std::pair<const char*, const char*> kPipes[] = {
    {"vec", columns::kVecBusy.c_str()},           {"cube", columns::kCubeBusy.c_str()},
    {"scalar", columns::kScalarBusy.c_str()},     {"mte1", columns::kMte1Busy.c_str()},
    {"mte2", columns::kMte2Busy.c_str()},         {"mte3", columns::kMte3Busy.c_str()},
    {"vec", columns::kA5VecBusy.c_str()},         {"cube", columns::kA5CubeBusy.c_str()},
    {"scalar", columns::kA5ScalarBusy.c_str()},   {"mte1", columns::kA5Mte1Busy.c_str()},
    {"mte2", columns::kA5Mte2Busy.c_str()},       {"mte3", columns::kA5Mte3Busy.c_str()},
    {"fixpipe", columns::kA5FixpipeBusy.c_str()},
};

}  // namespace

Result<PmuSummary> SummarizePmuCsv(const std::filesystem::path& path) {
  PmuSummary s;
  collectors::PmuCsvHeader header;
  DFX_RETURN_IF_ERROR(collectors::ReadPmuCsv(path, &header, [&](const collectors::PmuCsvRow& row) {
    auto& g = s.groups[{row.func_id, row.core_type}];
    g.sums.resize(header.counters.size(), 0.0);
    ++g.count;
    for (size_t k = 0; k < row.counters.size(); ++k) g.sums[k] += row.counters[k];
    if (std::find(s.event_types.begin(), s.event_types.end(), row.event_type) ==
        s.event_types.end()) {
      s.event_types.push_back(row.event_type);
    }
    ++s.rows;
  }));
  s.counters = header.counters;
  for (const auto& [pipe, col] : kPipes) {
    if (std::find(s.counters.begin(), s.counters.end(), col) != s.counters.end())
      s.pipes.emplace_back(pipe, col);
  }
  return s;
}

Status RunPmuSummary(const std::filesystem::path& path, std::ostream& out, std::ostream& err) {
  DFX_ASSIGN_OR_RETURN(PmuSummary s, SummarizePmuCsv(path));
  // Kernel names from the name map beside the CSV, as every viewer finds it.
  DFX_ASSIGN_OR_RETURN(collectors::NameMap names,
                       LoadNameMapFor(path.parent_path(), std::nullopt, path.string(), err));
  std::string types;
  for (int t : s.event_types) {
    if (!types.empty()) types += ',';
    types += std::to_string(t);
  }
  out << "PMU summary: " << path.string() << " (" << s.rows << " row(s), event_type "
      << (types.empty() ? "-" : types) << ")\n";
  for (const auto& [key, g] : s.groups) {
    const std::string* name = names.Find(static_cast<int>(key.first));
    out << fmt::format("\nfunc_id {}{} on {}: {} row(s)\n", key.first,
                       name ? " (" + *name + ")" : std::string(), key.second == 0 ? "AIC" : "AIV",
                       g.count);
    out << fmt::format("  {:<36} {:>16} {:>16}\n", "counter", "sum", "mean");
    for (size_t k = 0; k < s.counters.size(); ++k) {
      out << fmt::format("  {:<36} {:>16.0f} {:>16.2f}\n", s.counters[k], g.sums[k],
                         g.sums[k] / static_cast<double>(g.count));
    }
    bool type2 = std::find(s.event_types.begin(), s.event_types.end(), 2) != s.event_types.end();
    if (type2 && !s.pipes.empty() && g.sums[0] > 0) {
      out << "  pipe utilisation (busy / total cycles):";
      for (const auto& [pipe, col] : s.pipes) {
        size_t k = static_cast<size_t>(std::find(s.counters.begin(), s.counters.end(), col) -
                                       s.counters.begin());
        out << fmt::format(" {} {:.1f}%", pipe, 100.0 * g.sums[k] / g.sums[0]);
      }
      out << "\n";
    }
  }
  return Status::Ok();
}

}  // namespace dfx::view
