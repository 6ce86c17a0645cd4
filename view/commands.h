// dfx-view's subcommands as library calls. Each subcommand's flags are a
// request value (the flags as given: texts not yet parsed, and std::optional
// for the flags whose presence matters); its call checks the flags, finds
// the input when none is given (discovery.h, run_inputs.h), does what
// `dfx-view <subcommand>` does — writing its files and printing on `out` and
// `err` what the command prints — and returns a report of what it did, or
// the failure dfx-view exits with. dfx-view's main() only copies its flags
// into a request, calls, and prints the failure.
//
// Every command that reads artifacts of a run with a run_manifest.json
// first checks them against the manifest's checksums (artifact_check.h).
//
// Functions; called from one thread. Relative paths are relative to the
// current directory, where the defaults are looked for too.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "common/status.h"
#include "view/artifact_check.h"
#include "view/run_summary.h"
#include "view/swimlane.h"
#include "view/task_export.h"

namespace dfx::view {

// dfx-view's exit status (its --help footer says the same).
enum class ExitCode : int {
  kOk = 0,
  kError = 1,  // the command failed: an input missing or unreadable, a write that failed
  kUsage = 2,  // a flag's value, or flags that do not go together
};

// Why a command did not do its job, as dfx-view reports it.
struct CommandError {
  ExitCode exit_code = ExitCode::kError;
  std::string text;  // what dfx-view prints on stderr: whole lines, each ending in '\n'

  // A failed command (exit 1): "Error: <message>".
  static CommandError Failed(const Status& status) {
    return {ExitCode::kError, "Error: " + status.message() + "\n"};
  }
  // A usage error (exit 2): `text` as given.
  static CommandError Usage(std::string text) { return {ExitCode::kUsage, std::move(text)}; }
};

// A command's report, or why it has none. Reading the report of a failure
// (or the error of a success) is a bug and aborts, as Result::value() does.
template <typename Report>
class [[nodiscard]] CommandResult {
 public:
  CommandResult(Report report) : value_(std::move(report)) {}      // NOLINT: implicit by design
  CommandResult(CommandError error) : value_(std::move(error)) {}  // NOLINT
  // A failed command (exit 1, "Error: <message>"); `status` is not OK.
  CommandResult(const Status& status) : value_(CommandError::Failed(status)) {  // NOLINT
    DFX_CHECK(!status.ok());
  }

  // A Result's value, or its error as a failed command.
  CommandResult(Result<Report> result)  // NOLINT
      : value_(result.ok() ? Value(std::move(result).value())
                           : Value(CommandError::Failed(result.status()))) {}

  bool ok() const { return std::holds_alternative<Report>(value_); }
  ExitCode exit_code() const { return ok() ? ExitCode::kOk : error().exit_code; }
  const Report& report() const {
    DFX_CHECK(ok());
    return std::get<Report>(value_);
  }
  const CommandError& error() const {
    DFX_CHECK(!ok());
    return std::get<CommandError>(value_);
  }

 private:
  using Value = std::variant<Report, CommandError>;
  Value value_;
};

// --- swimlane: records -> merged trace (swimlane.h), or a run's timeline
// (run_timeline.h) -----------------------------------------------------------------
struct SwimlaneRequest {
  std::string input;            // records file; "" = the newest found (FindDefaultInput)
  std::string output;           // "" = beside the input (or the run), named by the format
  std::string format = "json";  // json | proto
  std::string deps_json;        // "" = <input dir>/deps.json
  std::string func_names;       // "" = the unique sibling name_map*.json
  std::string run;              // W/dfx_outputs: the run timeline instead of one file
  bool overhead = false;
  bool verbose = false;
  std::optional<std::string> ranks, dispatch;  // comma lists; only with `run`
  std::string window;                          // "T0:T1" µs; "" = the whole trace
  bool no_flows = false;
  uint64_t warn_bytes = uint64_t{1} << 30;  // run timeline: warn past this size
  // Check the artifacts read against the run manifest's checksums
  // (artifact_check.h); --no-verify: a mismatch only warns.
  Verify verify = Verify::kRefuse;
};
CommandResult<SwimlaneReport> RunSwimlaneCommand(const SwimlaneRequest& request, std::ostream& out,
                                                 std::ostream& err);

// --- deps: deps.json -> text report or HTML graph (deps_viewer.h) --------------------
struct DepsRequest {
  std::string input;  // deps.json; "" = the newest found under ./outputs/**/ and the others
  std::string output;
  std::string format = "text";  // text | html
  std::string edge_mode = "full";
  // HTML only: each is a usage error with another format.
  std::optional<std::string> engine, direction;
  std::optional<bool> show_tensor_info;
  std::optional<double> layout_timeout_s;
  std::string func_names;
  bool critical_path = false;
  std::string around;        // "" = the whole graph
  std::optional<int> depth;  // only with `around`; default 2
  std::string collapse;      // "" | kernel | ring
  // Check the artifacts read against the run manifest's checksums
  // (artifact_check.h); --no-verify: a mismatch only warns.
  Verify verify = Verify::kRefuse;
};
struct DepsReport {
  std::filesystem::path input;
};
CommandResult<DepsReport> RunDepsCommand(const DepsRequest& request, std::ostream& out,
                                         std::ostream& err);

// --- dump: the args dump viewer (dump_viewer.h) --------------------------------------
struct DumpRequest {
  std::string dump_dir;  // "" = the newest args_dump directory found (announced on `out`)
  std::optional<std::string> task, stage, role;
  std::optional<long> arg, index;
  bool do_export = false;
  // Check the artifacts read against the run manifest's checksums
  // (artifact_check.h); --no-verify: a mismatch only warns.
  Verify verify = Verify::kRefuse;
};
struct DumpReport {
  std::filesystem::path dump_dir;
};
CommandResult<DumpReport> RunDumpCommand(const DumpRequest& request, std::ostream& out,
                                         std::ostream& err);

// --- scope-stats: scope_stats.jsonl -> scope_stats.html (scope_stats.h) --------------
struct ScopeStatsRequest {
  std::string input;  // "" = the newest found
  std::optional<std::string> out_dir;
  // Check the artifacts read against the run manifest's checksums
  // (artifact_check.h); --no-verify: a mismatch only warns.
  Verify verify = Verify::kRefuse;
};
struct ScopeStatsReport {
  std::filesystem::path input;
};
CommandResult<ScopeStatsReport> RunScopeStatsCommand(const ScopeStatsRequest& request,
                                                     std::ostream& out, std::ostream& err);

// --- sched-overhead: the scheduler overhead report (sched_overhead.h) ----------------
struct SchedOverheadRequest {
  std::string records;  // "" = the newest records found
  std::string deps;     // "" = the sibling deps.json
  // Check the artifacts read against the run manifest's checksums
  // (artifact_check.h); --no-verify: a mismatch only warns.
  Verify verify = Verify::kRefuse;
};
struct SchedOverheadReport {
  std::filesystem::path records;
};
CommandResult<SchedOverheadReport> RunSchedOverheadCommand(const SchedOverheadRequest& request,
                                                           std::ostream& out, std::ostream& err);

// --- pmu: the per-function summary of pmu.csv (pmu_summary.h) ------------------------
struct PmuRequest {
  std::string input;  // "" = the newest found
  // Check the artifacts read against the run manifest's checksums
  // (artifact_check.h); --no-verify: a mismatch only warns.
  Verify verify = Verify::kRefuse;
};
struct PmuReport {
  std::filesystem::path input;
};
CommandResult<PmuReport> RunPmuCommand(const PmuRequest& request, std::ostream& out,
                                       std::ostream& err);

// --- summary: the run in one screen (run_summary.h) ----------------------------------
struct SummaryRequest {
  std::string input, run;        // the run directory, positional or --run (once); "" = found
  std::string format = "table";  // table | csv | json
  std::string straggler_threshold = "5%";
  bool brief = false;
  int top = 5;
  std::string view_command = "dfx-view";
  // Check the artifacts read against the run manifest's checksums
  // (artifact_check.h); --no-verify: a mismatch only warns.
  Verify verify = Verify::kRefuse;
  std::string report;  // --report FILE: the run report page too, from the same summary
};
CommandResult<RunSummary> RunSummaryCommand(const SummaryRequest& request, std::ostream& out,
                                            std::ostream& err);

// --- report: the run as a self-contained HTML page of charts (run_report.h) ---------
struct ReportRequest {
  std::string input, run;  // as SummaryRequest
  std::string output;      // "" = <input>/report.html
  std::string straggler_threshold = "5%";
  std::string view_command = "dfx-view";
  int max_rows = 200;  // more ranks than this: aggregates plus the outliers
};
struct ReportResult {
  std::filesystem::path output;
  RunSummary summary;
};
CommandResult<ReportResult> RunReportCommand(const ReportRequest& request, std::ostream& out,
                                             std::ostream& err);

// --- export: the task table as CSV or SQLite (task_export.h) -------------------------
struct ExportRequest {
  std::string input, run;      // as SummaryRequest
  std::string format = "csv";  // csv | sqlite
  std::string output;          // "" = <input>/tasks.csv | tasks.sqlite
  // Check the artifacts read against the run manifest's checksums
  // (artifact_check.h); --no-verify: a mismatch only warns.
  Verify verify = Verify::kRefuse;
};
CommandResult<ExportResult> RunExportCommand(const ExportRequest& request, std::ostream& out,
                                             std::ostream& err);

}  // namespace dfx::view
