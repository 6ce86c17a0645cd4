#include "collectors/pmu/pmu_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

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

namespace {

// The lines of a stream after its header, in blocks of kBlock bytes: no
// per-line istream call (getline and its locale sentry were a quarter of the
// post-run `dfx-view summary` of an L3 run). A line is what std::getline
// would give: without its '\n', the last one also without a final '\n'.
class LineReader {
 public:
  explicit LineReader(std::istream& in) : in_(in) {}
  bool Next(std::string_view* line) {
    for (;;) {
      const char* begin = buf_.data() + pos_;
      const size_t left = buf_.size() - pos_;
      if (const void* nl = std::memchr(begin, '\n', left)) {
        const size_t n = static_cast<size_t>(static_cast<const char*>(nl) - begin);
        *line = std::string_view(begin, n);
        pos_ += n + 1;
        return true;
      }
      if (eof_) {
        if (left == 0) return false;
        *line = std::string_view(begin, left);
        pos_ = buf_.size();
        return true;
      }
      buf_.erase(0, pos_);
      pos_ = 0;
      const size_t kept = buf_.size();
      buf_.resize(kept + kBlock);
      in_.read(buf_.data() + kept, static_cast<std::streamsize>(kBlock));
      buf_.resize(kept + static_cast<size_t>(in_.gcount()));
      if (!in_) eof_ = true;
    }
  }

 private:
  static constexpr size_t kBlock = 1 << 16;
  std::istream& in_;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false;
};

// SplitCsv's cells as views into `line`: split at every ',', trailing '\r'
// and ' ' trimmed from each cell.
void SplitCsvViews(std::string_view line, std::vector<std::string_view>* cells) {
  cells->clear();
  for (;;) {
    const size_t comma = line.find(',');
    std::string_view cell = line.substr(0, comma);
    while (!cell.empty() && (cell.back() == '\r' || cell.back() == ' ')) cell.remove_suffix(1);
    cells->push_back(cell);
    if (comma == std::string_view::npos) return;
    line.remove_prefix(comma + 1);
  }
}

// A number cell as strtod reads it (the whole cell, not empty): from_chars
// first (no copy, no locale), strtod on a copy for what from_chars does not
// take (leading blanks or '+', hex floats), so both accept the same cells.
bool ParseNumber(std::string_view cell, double* v) {
  if (cell.empty()) return false;
  const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), *v);
  if (ec == std::errc() && end == cell.data() + cell.size()) return true;
  const std::string copy(cell);
  char* stop = nullptr;
  *v = std::strtod(copy.c_str(), &stop);
  return *stop == '\0';
}

// The task_id cell: "0x" and hex digits, as strtoull(.., 16) reads it
// (from_chars first, strtoull on a copy for what from_chars does not take).
bool ParseTaskId(std::string_view cell, uint64_t* v) {
  if (cell.size() < 3 || cell.substr(0, 2) != "0x") return false;
  const char* end = cell.data() + cell.size();
  if (const auto r = std::from_chars(cell.data() + 2, end, *v, 16);
      r.ec == std::errc() && r.ptr == end) {
    return true;
  }
  const std::string copy(cell);
  char* stop = nullptr;
  *v = std::strtoull(copy.c_str(), &stop, 16);
  return *stop == '\0';
}

}  // namespace

Status ReadPmuCsv(const std::filesystem::path& path, PmuCsvHeader* header,
                  const std::function<void(const PmuCsvRow&)>& on_row) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("PMU CSV not found: " + path.string());
  DFX_RETURN_IF_ERROR(ReadHeader(in, path, header));
  const std::vector<std::string>& columns = header->columns;
  LineReader lines(in);
  std::string_view line;
  std::vector<std::string_view> cells;
  size_t lineno = 1;
  PmuCsvRow row;
  while (lines.Next(&line)) {
    ++lineno;
    if (line.empty() || line == "\r") continue;
    SplitCsvViews(line, &cells);
    if (cells.size() != columns.size()) {
      return InvalidArgument(fmt::format("{}: line {}: {} columns, expected {}", path.string(),
                                         lineno, cells.size(), columns.size()));
    }
    auto num = [&](size_t col, double* v) -> Status {
      if (!ParseNumber(cells[col], v)) {
        return InvalidArgument(fmt::format("{}: line {}: column {}: expected a number, got \"{}\"",
                                           path.string(), lineno, columns[col], cells[col]));
      }
      return Status::Ok();
    };
    double core, func, type, ev;
    DFX_RETURN_IF_ERROR(num(1, &core));
    if (!ParseTaskId(cells[2], &row.task_id)) {
      return InvalidArgument(
          fmt::format("{}: line {}: column {}: expected 0x<hex digits>, got \"{}\"", path.string(),
                      lineno, pmu_columns::kTaskId.view(), cells[2]));
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
