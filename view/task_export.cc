#include "view/task_export.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <ostream>
#include <system_error>
#include <utility>
#include <vector>

#include "collectors/artifact_layout.h"
#include "collectors/pmu/pmu_reader.h"
#include "common/file_util.h"
#include "common/json_stream.h"
#include "view/run_inputs.h"
#include "view/task_label.h"

namespace dfx::view {

namespace fs = std::filesystem;

namespace {

enum class Type { kInteger, kReal, kText };

struct Column {
  std::string name;
  Type type;
};

struct Cell {
  enum Kind { kNull, kInt, kReal, kText } kind = kNull;
  int64_t i = 0;
  double d = 0;
  std::string s;
};

Cell Int(int64_t v) { return Cell{Cell::kInt, v, 0, {}}; }
// Rounded to 3 decimals (ns): no 0.6399999999999864 in a table.
Cell Real(double v) { return Cell{Cell::kReal, 0, std::round(v * 1000.0) / 1000.0, {}}; }
Cell Text(std::string v) { return Cell{Cell::kText, 0, 0, std::move(v)}; }
Cell Null() { return Cell{}; }

// Where rows go: a CSV file or an SQLite database.
class TableSink {
 public:
  virtual ~TableSink() = default;
  virtual Status Begin(const std::vector<Column>& columns) = 0;
  virtual Status Row(const std::vector<Cell>& cells) = 0;
  virtual Status Dispatch(int32_t rank, uint32_t k, const std::string& program, uint64_t rows) = 0;
  virtual Status Commit() = 0;
};

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

class CsvSink final : public TableSink {
 public:
  explicit CsvSink(fs::path path) : path_(std::move(path)) {}
  Status Begin(const std::vector<Column>& columns) override {
    DFX_RETURN_IF_ERROR(writer_.Open(path_));
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c) writer_.Append(',');
      writer_.Append(CsvField(columns[c].name));
    }
    writer_.Append('\n');
    return Status::Ok();
  }
  Status Row(const std::vector<Cell>& cells) override {
    std::string& b = writer_.buffer();
    for (size_t c = 0; c < cells.size(); ++c) {
      if (c) b.push_back(',');
      const Cell& x = cells[c];
      if (x.kind == Cell::kText) {
        b += CsvField(x.s);
      } else if (x.kind == Cell::kReal) {
        fmt::format_to(std::back_inserter(b), "{}", x.d);
      } else if (x.kind == Cell::kInt) {
        fmt::format_to(std::back_inserter(b), "{}", x.i);
      }
    }
    b.push_back('\n');
    writer_.MaybeFlush();
    return Status::Ok();
  }
  Status Dispatch(int32_t, uint32_t, const std::string&, uint64_t) override { return Status::Ok(); }
  Status Commit() override { return writer_.Commit(); }

 private:
  fs::path path_;
  ChunkedWriter writer_;
};

class SqliteSink final : public TableSink {
 public:
  explicit SqliteSink(fs::path path) : path_(std::move(path)), temp_(TemporaryPathFor(path_)) {}
  ~SqliteSink() override {
    if (insert_ != nullptr) sqlite3_finalize(insert_);
    if (db_ != nullptr) sqlite3_close(db_);
    if (!committed_) {
      std::error_code ec;
      fs::remove(temp_, ec);
    }
  }
  Status Begin(const std::vector<Column>& columns) override {
    std::error_code ec;
    fs::remove(temp_, ec);
    if (!path_.parent_path().empty()) DFX_RETURN_IF_ERROR(MakeDirs(path_.parent_path()));
    if (sqlite3_open(temp_.c_str(), &db_) != SQLITE_OK) return Error("open");
    DFX_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;"));
    std::string create = "CREATE TABLE tasks (", insert = "INSERT INTO tasks VALUES (";
    for (size_t c = 0; c < columns.size(); ++c) {
      const char* type = columns[c].type == Type::kInteger ? "INTEGER"
                         : columns[c].type == Type::kReal  ? "REAL"
                                                           : "TEXT";
      create += fmt::format("{}{} {}", c ? ", " : "", Quote(columns[c].name), type);
      insert += c ? ", ?" : "?";
    }
    DFX_RETURN_IF_ERROR(Exec(create + ");"));
    DFX_RETURN_IF_ERROR(
        Exec("CREATE TABLE dispatches (rank INTEGER, dispatch INTEGER, program TEXT, rows "
             "INTEGER);"));
    if (sqlite3_prepare_v2(db_, (insert + ");").c_str(), -1, &insert_, nullptr) != SQLITE_OK) {
      return Error("prepare");
    }
    return Status::Ok();
  }
  Status Row(const std::vector<Cell>& cells) override {
    sqlite3_reset(insert_);
    for (size_t c = 0; c < cells.size(); ++c) {
      const int i = static_cast<int>(c) + 1;
      const Cell& x = cells[c];
      if (x.kind == Cell::kNull) {
        sqlite3_bind_null(insert_, i);
      } else if (x.kind == Cell::kText) {
        sqlite3_bind_text(insert_, i, x.s.c_str(), static_cast<int>(x.s.size()), SQLITE_TRANSIENT);
      } else if (x.kind == Cell::kReal) {
        sqlite3_bind_double(insert_, i, x.d);
      } else {
        sqlite3_bind_int64(insert_, i, x.i);
      }
    }
    if (sqlite3_step(insert_) != SQLITE_DONE) return Error("insert");
    return Status::Ok();
  }
  Status Dispatch(int32_t rank, uint32_t k, const std::string& program, uint64_t rows) override {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, "INSERT INTO dispatches VALUES (?, ?, ?, ?);", -1, &st, nullptr) !=
        SQLITE_OK) {
      return Error("prepare");
    }
    sqlite3_bind_int64(st, 1, rank);
    sqlite3_bind_int64(st, 2, k);
    sqlite3_bind_text(st, 3, program.c_str(), static_cast<int>(program.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, static_cast<int64_t>(rows));
    const int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? Status::Ok() : Error("insert");
  }
  Status Commit() override {
    DFX_RETURN_IF_ERROR(Exec("COMMIT;"));
    sqlite3_finalize(insert_);
    insert_ = nullptr;
    if (sqlite3_close(db_) != SQLITE_OK) return Error("close");
    db_ = nullptr;
    std::error_code ec;
    fs::rename(temp_, path_, ec);
    if (ec) return Internal(fmt::format("{}: rename failed: {}", path_.string(), ec.message()));
    committed_ = true;
    return Status::Ok();
  }

 private:
  static std::string Quote(const std::string& name) {
    std::string q = "\"";
    for (char c : name) {
      if (c == '"') q += '"';
      q += c;
    }
    return q + "\"";
  }
  Status Exec(const std::string& sql) {
    char* msg = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
      std::string m = msg ? msg : "unknown error";
      sqlite3_free(msg);
      return Internal(fmt::format("{}: SQLite: {}", path_.string(), m));
    }
    return Status::Ok();
  }
  Status Error(const char* what) {
    return Internal(fmt::format("{}: SQLite {} failed: {}", path_.string(), what,
                                db_ ? sqlite3_errmsg(db_) : "out of memory"));
  }

  fs::path path_, temp_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  bool committed_ = false;
};

// PMU rows of one dispatch by (task_id, core_id), in file order.
using PmuRows = std::map<std::pair<uint64_t, int>, std::vector<std::vector<double>>>;

}  // namespace

Result<ExportResult> ExportTasks(const ExportOptions& options, std::ostream& err) {
  if (options.format != "csv" && options.format != "sqlite") {
    return InvalidArgument("--format " + options.format + ": expected csv or sqlite");
  }
  DFX_ASSIGN_OR_RETURN(std::vector<RunDispatch> dispatches, ListRunDispatches(options.input));
  ExportResult result;
  result.output = options.output
                      ? *options.output
                      : options.input / (options.format == "csv" ? "tasks.csv" : "tasks.sqlite");
  // The PMU columns of the whole run, pmu_total_cycles first, in order met.
  std::vector<std::string> counters;
  std::error_code ec;
  for (const RunDispatch& d : dispatches) {
    const fs::path pmu = d.dir / collectors::kPmuFile;
    if (!fs::is_regular_file(pmu, ec)) continue;
    DFX_ASSIGN_OR_RETURN(collectors::PmuCsvHeader header, collectors::ReadPmuCsvHeader(pmu));
    for (const std::string& c : header.counters) {
      if (std::find(counters.begin(), counters.end(), c) == counters.end()) counters.push_back(c);
    }
  }
  std::vector<Column> columns = {
      {"rank", Type::kInteger},   {"dispatch", Type::kInteger}, {"program", Type::kText},
      {"task_id", Type::kText},   {"task", Type::kText},        {"func_id", Type::kInteger},
      {"kernel", Type::kText},    {"core_id", Type::kInteger},  {"core_type", Type::kText},
      {"start_us", Type::kReal},  {"end_us", Type::kReal},      {"dispatch_us", Type::kReal},
      {"finish_us", Type::kReal}, {"exec_us", Type::kReal}};
  const size_t fixed = columns.size();
  for (const std::string& c : counters) columns.push_back({c, Type::kReal});

  std::unique_ptr<TableSink> sink;
  if (options.format == "csv") {
    sink = std::make_unique<CsvSink>(result.output);
  } else {
    sink = std::make_unique<SqliteSink>(result.output);
  }
  DFX_RETURN_IF_ERROR(sink->Begin(columns));
  std::vector<Cell> cells(columns.size());
  for (const RunDispatch& d : dispatches) {
    auto loaded = LoadDispatch(d, err);
    if (!loaded.ok()) {
      if (loaded.status().code() != Code::kNotFound) return loaded.status();
      err << "Warning: " << loaded.status().message() << "; its tasks are not exported\n";
      continue;
    }
    const collectors::SwimlaneRecords& r = loaded->records;
    const collectors::TaskGraph* deps = loaded->deps ? &*loaded->deps : nullptr;
    // This dispatch's PMU rows, mapped onto the run's counter columns.
    PmuRows pmu_rows;
    const fs::path pmu = d.dir / collectors::kPmuFile;
    if (fs::is_regular_file(pmu, ec)) {
      collectors::PmuCsvHeader header;
      std::vector<size_t> to_column;
      DFX_RETURN_IF_ERROR(
          collectors::ReadPmuCsv(pmu, &header, [&](const collectors::PmuCsvRow& row) {
            if (to_column.empty()) {
              for (const std::string& c : header.counters) {
                to_column.push_back(static_cast<size_t>(
                    std::find(counters.begin(), counters.end(), c) - counters.begin()));
              }
            }
            std::vector<double> values(counters.size(), std::nan(""));
            for (size_t c = 0; c < row.counters.size() && c < to_column.size(); ++c) {
              values[to_column[c]] = row.counters[c];
            }
            pmu_rows[{row.task_id, row.core_id}].push_back(std::move(values));
          }));
    }
    std::map<std::pair<uint64_t, int>, size_t> pmu_used;
    const bool aicpu = r.level >= 2;
    for (const collectors::TaskRow& row : r.tasks) {
      const uint64_t id = r.TaskId(row);
      const int func = RowFuncId(r, deps, row);
      const double start = r.StartUs(row), end = r.EndUs(row);
      cells[0] = Int(d.rank);
      cells[1] = Int(d.k);
      cells[2] = Text(d.program);
      cells[3] = Text(fmt::format("0x{:016x}", id));
      cells[4] = Text(FormatTaskDisplay(id));
      cells[5] = Int(func);
      cells[6] = Text(func < 0 ? "task" : KernelName(loaded->names, func));
      cells[7] = Int(row.core_id);
      cells[8] = Text(r.IsAic(row) ? "aic" : "aiv");
      cells[9] = Real(start);
      cells[10] = Real(end);
      cells[11] = aicpu && r.Dispatch(row) > 0 ? Real(r.DispatchUs(row)) : Null();
      cells[12] = aicpu && r.Finish(row) > 0 ? Real(r.FinishUs(row)) : Null();
      cells[13] = Real(end - start);
      for (size_t c = fixed; c < cells.size(); ++c) cells[c] = Null();
      const std::pair<uint64_t, int> key{id, row.core_id};
      auto it = pmu_rows.find(key);
      if (it != pmu_rows.end()) {
        size_t& used = pmu_used[key];
        if (used < it->second.size()) {
          const std::vector<double>& values = it->second[used++];
          for (size_t c = 0; c < values.size(); ++c) {
            if (!std::isnan(values[c])) cells[fixed + c] = Real(values[c]);
          }
        }
      }
      DFX_RETURN_IF_ERROR(sink->Row(cells));
      ++result.rows;
    }
    DFX_RETURN_IF_ERROR(sink->Dispatch(d.rank, d.k, d.program, r.tasks.size()));
    ++result.dispatches;
  }
  DFX_RETURN_IF_ERROR(sink->Commit());
  return result;
}

}  // namespace dfx::view
