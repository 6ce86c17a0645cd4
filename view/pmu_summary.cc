#include "view/pmu_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <ostream>
#include <sstream>

namespace dfx::view {
namespace {

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::stringstream ss(line);
  while (std::getline(ss, cell, ',')) {
    while (!cell.empty() && (cell.back() == '\r' || cell.back() == ' ')) cell.pop_back();
    out.push_back(cell);
  }
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// Busy-cycle counters per pipe, a2a3 then a5 names.
const std::pair<const char*, const char*> kPipes[] = {
    {"vec", "vec_busy_cycles"},        {"cube", "cube_busy_cycles"},
    {"scalar", "scalar_busy_cycles"},  {"mte1", "mte1_busy_cycles"},
    {"mte2", "mte2_busy_cycles"},      {"mte3", "mte3_busy_cycles"},
    {"vec", "pmu_idc_aic_vec_busy_o"}, {"cube", "cube_instr_busy"},
    {"scalar", "scalar_instr_busy"},   {"mte1", "mte1_instr_busy"},
    {"mte2", "mte2_instr_busy"},       {"mte3", "mte3_instr_busy"},
    {"fixpipe", "pmu_fix_instr_busy"},
};

}  // namespace

Result<PmuSummary> ReadPmuCsv(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return NotFound("PMU CSV not found: " + path.string());
  std::string line;
  if (!std::getline(in, line))
    return InvalidArgument(path.string() + ": empty file (expected a header line)");
  auto header = SplitCsv(line);
  const std::vector<std::string> fixed = {"thread_id", "core_id",   "task_id",
                                          "func_id",   "core_type", "pmu_total_cycles"};
  if (header.size() < fixed.size() + 1 || !std::equal(fixed.begin(), fixed.end(), header.begin()) ||
      header.back() != "event_type") {
    return InvalidArgument(path.string() +
                           ": line 1: expected header thread_id,core_id,task_id,func_id,core_type,"
                           "pmu_total_cycles,<counters...>,event_type; got \"" +
                           line + "\"");
  }
  PmuSummary s;
  for (size_t i = 5; i + 1 < header.size(); ++i) s.counters.push_back(header[i]);
  size_t lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line == "\r") continue;
    auto cells = SplitCsv(line);
    if (cells.size() != header.size()) {
      return InvalidArgument(fmt::format("{}: line {}: {} columns, expected {}", path.string(),
                                         lineno, cells.size(), header.size()));
    }
    auto num = [&](size_t col, double* v) -> Status {
      char* end = nullptr;
      *v = std::strtod(cells[col].c_str(), &end);
      if (cells[col].empty() || *end != '\0') {
        return InvalidArgument(fmt::format("{}: line {}: column {}: expected a number, got \"{}\"",
                                           path.string(), lineno, header[col], cells[col]));
      }
      return Status::Ok();
    };
    double func, type, ev;
    DFX_RETURN_IF_ERROR(num(3, &func));
    DFX_RETURN_IF_ERROR(num(4, &type));
    DFX_RETURN_IF_ERROR(num(header.size() - 1, &ev));
    auto& g = s.groups[{static_cast<long>(func), static_cast<int>(type)}];
    g.sums.resize(s.counters.size(), 0.0);
    ++g.count;
    for (size_t k = 0; k < s.counters.size(); ++k) {
      double v;
      DFX_RETURN_IF_ERROR(num(5 + k, &v));
      g.sums[k] += v;
    }
    if (std::find(s.event_types.begin(), s.event_types.end(), static_cast<int>(ev)) ==
        s.event_types.end()) {
      s.event_types.push_back(static_cast<int>(ev));
    }
    ++s.rows;
  }
  for (const auto& [pipe, col] : kPipes) {
    if (std::find(s.counters.begin(), s.counters.end(), col) != s.counters.end())
      s.pipes.emplace_back(pipe, col);
  }
  return s;
}

Status RunPmuSummary(const std::filesystem::path& path, std::ostream& out) {
  DFX_ASSIGN_OR_RETURN(PmuSummary s, ReadPmuCsv(path));
  std::string types;
  for (int t : s.event_types) types += (types.empty() ? "" : ",") + std::to_string(t);
  out << "PMU summary: " << path.string() << " (" << s.rows << " row(s), event_type "
      << (types.empty() ? "-" : types) << ")\n";
  for (const auto& [key, g] : s.groups) {
    out << fmt::format("\nfunc_id {} on {}: {} row(s)\n", key.first,
                       key.second == 0 ? "AIC" : "AIV", g.count);
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
