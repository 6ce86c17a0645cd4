#include "collectors/pmu/pmu_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "collectors/pmu/pmu_columns.h"

namespace dfx::collectors {
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

using pmu_columns::kFixed;
constexpr size_t kFirstCounter = 5;  // pmu_total_cycles

// Reads and checks the header line of `in` into `header`.
Status ReadHeader(std::istream& in, const std::filesystem::path& path, PmuCsvHeader* header) {
  std::string line;
  if (!std::getline(in, line))
    return InvalidArgument(path.string() + ": empty file (expected a header line)");
  header->columns = SplitCsv(line);
  const std::vector<std::string>& columns = header->columns;
  const size_t fixed = std::size(kFixed);
  if (columns.size() < fixed + 1 ||
      !std::equal(std::begin(kFixed), std::end(kFixed), columns.begin()) ||
      columns.back() != pmu_columns::kEventType) {
    return InvalidArgument(fmt::format(
        "{}: line 1: expected header {}; got \"{}\"", path.string(),
        JoinedText<pmu_columns::kFixedHeader, ",<counters...>,", pmu_columns::kEventType>, line));
  }
  header->counters.assign(columns.begin() + kFirstCounter, columns.end() - 1);
  return Status::Ok();
}

}  // namespace

Result<PmuCsvHeader> ReadPmuCsvHeader(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return NotFound("PMU CSV not found: " + path.string());
  PmuCsvHeader header;
  DFX_RETURN_IF_ERROR(ReadHeader(in, path, &header));
  return header;
}

Status ReadPmuCsv(const std::filesystem::path& path, PmuCsvHeader* header,
                  const std::function<void(const PmuCsvRow&)>& on_row) {
  std::ifstream in(path);
  if (!in) return NotFound("PMU CSV not found: " + path.string());
  DFX_RETURN_IF_ERROR(ReadHeader(in, path, header));
  const std::vector<std::string>& columns = header->columns;
  std::string line;
  size_t lineno = 1;
  PmuCsvRow row;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line == "\r") continue;
    auto cells = SplitCsv(line);
    if (cells.size() != columns.size()) {
      return InvalidArgument(fmt::format("{}: line {}: {} columns, expected {}", path.string(),
                                         lineno, cells.size(), columns.size()));
    }
    auto num = [&](size_t col, double* v) -> Status {
      char* end = nullptr;
      *v = std::strtod(cells[col].c_str(), &end);
      if (cells[col].empty() || *end != '\0') {
        return InvalidArgument(fmt::format("{}: line {}: column {}: expected a number, got \"{}\"",
                                           path.string(), lineno, columns[col], cells[col]));
      }
      return Status::Ok();
    };
    double core, func, type, ev;
    DFX_RETURN_IF_ERROR(num(1, &core));
    {
      const std::string& cell = cells[2];
      char* end = nullptr;
      row.task_id = std::strtoull(cell.c_str(), &end, 16);
      if (cell.size() < 3 || cell.compare(0, 2, "0x") != 0 || *end != '\0') {
        return InvalidArgument(
            fmt::format("{}: line {}: column {}: expected 0x<hex digits>, got \"{}\"",
                        path.string(), lineno, pmu_columns::kTaskId.view(), cell));
      }
    }
    DFX_RETURN_IF_ERROR(num(3, &func));
    DFX_RETURN_IF_ERROR(num(4, &type));
    DFX_RETURN_IF_ERROR(num(columns.size() - 1, &ev));
    row.core_id = static_cast<int>(core);
    row.func_id = static_cast<long>(func);
    row.core_type = static_cast<int>(type);
    row.event_type = static_cast<int>(ev);
    row.counters.resize(header->counters.size());
    for (size_t k = 0; k < header->counters.size(); ++k) {
      DFX_RETURN_IF_ERROR(num(kFirstCounter + k, &row.counters[k]));
    }
    on_row(row);
  }
  return Status::Ok();
}

}  // namespace dfx::collectors
