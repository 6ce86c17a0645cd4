#include "view/commands.h"

#include <fmt/format.h>

#include <chrono>
#include <ostream>
#include <set>
#include <tuple>

#include "collectors/artifact_layout.h"
#include "view/artifact_check.h"
#include "view/deps_viewer.h"
#include "view/discovery.h"
#include "view/dump_viewer.h"
#include "view/pmu_summary.h"
#include "view/run_inputs.h"
#include "view/run_report.h"
#include "view/run_timeline.h"
#include "view/sched_overhead.h"
#include "view/scope_stats.h"
#include "view/swimlane.h"

namespace dfx::view {

namespace layout = collectors;

namespace {

// A flag's value that does not parse: "Error: <message>", exit 2.
CommandError BadValue(const Status& status) {
  return CommandError::Usage("Error: " + status.message() + "\n");
}

// The newest `name` where a viewer looks by default, or the error that names
// those places.
Result<std::filesystem::path> DefaultInput(const std::string& name) {
  auto found = FindDefaultInput(name, false);
  if (!found) {
    return NotFound("no " + name + " given and none found (looked in " + DefaultInputPlaces(name) +
                    ")");
  }
  return *found;
}

// The newest records file, or the error that says how to make one (`hint`:
// the line after the places, if any).
Result<std::filesystem::path> DefaultRecords(const char* hint) {
  auto found = FindDefaultInput(layout::kSwimlaneRecordsFile, false);
  if (!found) {
    return NotFound(fmt::format("No {}/*/{} found under {} (looked in {}){}", kDefaultOutputsRoot,
                                layout::kSwimlaneRecordsFile,
                                std::filesystem::current_path().string(),
                                DefaultInputPlaces(layout::kSwimlaneRecordsFile), hint));
  }
  return *found;
}

// The run directory of summary and export: given once (positional or
// --run), else ./dfx_outputs or the current directory when it holds a run.
Result<std::filesystem::path> RunInput(const std::string& positional, const std::string& flag) {
  if (!positional.empty() && !flag.empty() && positional != flag) {
    return InvalidArgument("give the run directory once (positional or --run), not both");
  }
  const std::string& given = !flag.empty() ? flag : positional;
  if (!given.empty()) return std::filesystem::path(given);
  auto found = DefaultRunInput();
  if (!found) {
    return NotFound("no run directory given and neither ./dfx_outputs nor " +
                    std::filesystem::current_path().string() +
                    " holds one; pass W/dfx_outputs of a run");
  }
  return *found;
}

CommandResult<SwimlaneReport> RunTimelineCommand(const SwimlaneRequest& r,
                                                 const TraceFilter& filter, TraceFormat format,
                                                 std::ostream& out, std::ostream& err) {
  RunTimelineOptions o;
  o.run_dir = r.run;
  if (!r.output.empty()) o.output = r.output;
  o.filter = filter;
  o.format = format;
  o.verbose = r.verbose;
  o.warn_bytes = r.warn_bytes;
  std::set<uint32_t> ranks;
  for (auto [flag, text, set] : {std::tuple{"--ranks", &r.ranks, &ranks},
                                 std::tuple{"--dispatch", &r.dispatch, &o.dispatches}}) {
    if (!*text || (*text)->empty()) continue;
    if (Status s = ParseIndexList(flag, **text, set); !s.ok()) return BadValue(s);
  }
  for (uint32_t rank : ranks) o.ranks.insert(static_cast<int32_t>(rank));
  if (Status s = CheckAgainstManifest(o.run_dir, r.verify, err); !s.ok()) return s;
  if (Status s = RunSwimlaneForRun(o, out, err); !s.ok()) return s;
  return SwimlaneReport{
      o.output ? *o.output : DefaultTracePath(o.run_dir / layout::kRunSwimlaneFile, format), false};
}

}  // namespace

CommandResult<SwimlaneReport> RunSwimlaneCommand(const SwimlaneRequest& r, std::ostream& out,
                                                 std::ostream& err) {
  TraceFilter filter;
  filter.flows = !r.no_flows;
  TraceFormat format = TraceFormat::kJson;
  if (Status s = ParseTraceFormat(r.format, &format); !s.ok()) return BadValue(s);
  if (!r.window.empty()) {
    if (Status s = ParseWindow(r.window, &filter); !s.ok()) return BadValue(s);
  }
  if (!r.run.empty()) return RunTimelineCommand(r, filter, format, out, err);
  for (auto [flag, given] : {std::pair{"--ranks", r.ranks.has_value()},
                             std::pair{"--dispatch", r.dispatch.has_value()}}) {
    if (given) {
      return CommandError::Usage(
          fmt::format("error: {} selects within a run: it is only valid with --run "
                      "W/dfx_outputs\n",
                      flag));
    }
  }
  SwimlaneOptions o;
  o.filter = filter;
  if (r.input.empty()) {
    DFX_ASSIGN_OR_RETURN(
        o.input, DefaultRecords("\nRun a test with --enable-chip-swimlane first, or specify an "
                                "explicit input."));
  } else {
    o.input = r.input;
  }
  if (!r.output.empty()) o.output = r.output;
  if (!r.deps_json.empty()) o.deps_json = r.deps_json;
  if (!r.func_names.empty()) o.func_names = r.func_names;
  o.overhead = r.overhead;
  o.verbose = r.verbose;
  o.format = format;
  if (Status s = CheckAgainstManifest(o.input, r.verify, err); !s.ok()) return s;
  return RunSwimlane(o, out, err);
}

CommandResult<DepsReport> RunDepsCommand(const DepsRequest& r, std::ostream& out,
                                         std::ostream& err) {
  if (r.format != "html") {
    for (auto [flag, given] : {std::pair{"--engine", r.engine.has_value()},
                               std::pair{"--direction", r.direction.has_value()},
                               std::pair{"--show-tensor-info", r.show_tensor_info.has_value()},
                               std::pair{"--layout-timeout", r.layout_timeout_s.has_value()}}) {
      if (given) {
        return CommandError::Usage(
            fmt::format("error: {} is only valid with --format html\n", flag));
      }
    }
  }
  DepsViewerOptions o;
  if (r.input.empty()) {
    auto found = FindDefaultInput(layout::kDepsFile, true);
    if (!found) {
      return NotFound(fmt::format("No {} given and no candidate found under ./{}/ (looked in {}).",
                                  layout::kDepsFile, kDefaultOutputsRoot,
                                  DefaultInputPlaces(layout::kDepsFile)));
    }
    o.input = *found;
  } else {
    o.input = r.input;
  }
  if (!r.output.empty()) o.output = r.output;
  o.format = r.format;
  DFX_ASSIGN_OR_RETURN(o.edge_mode, ParseEdgeMode(r.edge_mode));
  o.engine = r.engine.value_or("dot");
  o.direction = r.direction.value_or("LR");
  o.show_tensor_info = r.show_tensor_info.value_or(false);
  if (!r.func_names.empty()) o.func_names = r.func_names;
  o.layout_timeout =
      std::chrono::milliseconds(static_cast<long>(r.layout_timeout_s.value_or(300) * 1000));
  if (r.depth && r.around.empty()) {
    return CommandError::Usage("error: --depth is only valid with --around TASK\n");
  }
  if (!r.around.empty()) o.around = r.around;
  o.depth = r.depth.value_or(2);
  o.critical_path = r.critical_path;
  o.collapse = r.collapse;
  if (Status s = CheckAgainstManifest(o.input, r.verify, err); !s.ok()) return s;
  if (Status s = RunDepsViewer(o, out, err); !s.ok()) return s;
  return DepsReport{o.input};
}

CommandResult<DumpReport> RunDumpCommand(const DumpRequest& r, std::ostream& out,
                                         std::ostream& err) {
  DumpViewerOptions o;
  if (r.dump_dir.empty()) {
    auto found = FindDefaultInput(layout::kArgsDumpDir, false);
    if (!found) {
      return NotFound(fmt::format("no {}/*/{} directory found (looked in {})", kDefaultOutputsRoot,
                                  layout::kArgsDumpDir, DefaultInputPlaces(layout::kArgsDumpDir)));
    }
    o.dump_dir = *found;
    out << "Using latest dump directory: " << o.dump_dir.string() << "\n";
  } else {
    o.dump_dir = r.dump_dir;
  }
  o.task = r.task;
  o.stage = r.stage;
  o.role = r.role;
  o.arg = r.arg;
  o.index = r.index;
  o.do_export = r.do_export;
  if (Status s = CheckAgainstManifest(o.dump_dir, r.verify, err, /*with_args_bin=*/true); !s.ok())
    return s;
  if (Status s = RunDumpViewer(o, out, err); !s.ok()) return s;
  return DumpReport{o.dump_dir};
}

CommandResult<ScopeStatsReport> RunScopeStatsCommand(const ScopeStatsRequest& r, std::ostream& out,
                                                     std::ostream& err) {
  std::filesystem::path input = r.input;
  if (input.empty()) {
    DFX_ASSIGN_OR_RETURN(input, DefaultInput(layout::kScopeStatsFile));
  }
  std::optional<std::filesystem::path> out_dir;
  if (r.out_dir) out_dir = *r.out_dir;
  if (Status s = CheckAgainstManifest(input, r.verify, err); !s.ok()) return s;
  if (Status s = RunScopeStats(input, out_dir, out, err); !s.ok()) return s;
  return ScopeStatsReport{input};
}

CommandResult<SchedOverheadReport> RunSchedOverheadCommand(const SchedOverheadRequest& r,
                                                           std::ostream& out, std::ostream& err) {
  SchedOverheadOptions o;
  if (r.records.empty()) {
    DFX_ASSIGN_OR_RETURN(o.records, DefaultRecords(""));
  } else {
    o.records = r.records;
  }
  o.deps = r.deps;
  if (Status s = CheckAgainstManifest(o.records, r.verify, err); !s.ok()) return s;
  if (Status s = RunSchedOverhead(o, out); !s.ok()) return s;
  return SchedOverheadReport{o.records};
}

CommandResult<PmuReport> RunPmuCommand(const PmuRequest& r, std::ostream& out, std::ostream& err) {
  std::filesystem::path input = r.input;
  if (input.empty()) {
    DFX_ASSIGN_OR_RETURN(input, DefaultInput(layout::kPmuFile));
  }
  if (Status s = CheckAgainstManifest(input, r.verify, err); !s.ok()) return s;
  if (Status s = RunPmuSummary(input, out, err); !s.ok()) return s;
  return PmuReport{input};
}

CommandResult<RunSummary> RunSummaryCommand(const SummaryRequest& r, std::ostream& out,
                                            std::ostream& err) {
  DFX_ASSIGN_OR_RETURN(std::filesystem::path input, RunInput(r.input, r.run));
  auto threshold = ParseThresholdPercent(r.straggler_threshold);
  if (!threshold.ok()) return BadValue(threshold.status());
  if (Status s = CheckAgainstManifest(input, r.verify, err); !s.ok()) return s;
  DFX_ASSIGN_OR_RETURN(RunSummary summary, SummarizeRun(input, *threshold, err));
  SummaryPrintOptions o;
  o.format = r.format;
  o.brief = r.brief;
  o.top = r.top;
  o.view = r.view_command;
  PrintSummary(summary, o, out);
  if (!r.report.empty()) {
    RunReportOptions ro;
    ro.output = r.report;
    ro.view = r.view_command;
    DFX_RETURN_IF_ERROR(WriteRunReport(summary, ro, err));
  }
  return summary;
}

CommandResult<ReportResult> RunReportCommand(const ReportRequest& r, std::ostream& out,
                                             std::ostream& err) {
  DFX_ASSIGN_OR_RETURN(std::filesystem::path input, RunInput(r.input, r.run));
  auto threshold = ParseThresholdPercent(r.straggler_threshold);
  if (!threshold.ok()) return BadValue(threshold.status());
  if (r.max_rows < 1) {
    return CommandError::Usage(
        fmt::format("--max-rows {}: expected a positive number of ranks\n", r.max_rows));
  }
  DFX_ASSIGN_OR_RETURN(RunSummary summary, SummarizeRun(input, *threshold, err));
  RunReportOptions o;
  o.output =
      r.output.empty() ? input / collectors::kRunReportFile : std::filesystem::path(r.output);
  o.view = r.view_command;
  o.max_rows = static_cast<size_t>(r.max_rows);
  DFX_RETURN_IF_ERROR(WriteRunReport(summary, o, err));
  std::error_code ec;
  const auto size = std::filesystem::file_size(o.output, ec);
  out << "Wrote " << o.output.string() << " (" << (ec ? 0 : size) / 1024 << " KiB; "
      << summary.ranks.size() << " rank(s), " << summary.steps.size() << " step(s)); "
      << summary.verdict << "\n";
  return ReportResult{o.output, std::move(summary)};
}

CommandResult<ExportResult> RunExportCommand(const ExportRequest& r, std::ostream& out,
                                             std::ostream& err) {
  ExportOptions o;
  DFX_ASSIGN_OR_RETURN(o.input, RunInput(r.input, r.run));
  o.format = r.format;
  if (!r.output.empty()) o.output = r.output;
  if (Status s = CheckAgainstManifest(o.input, r.verify, err); !s.ok()) return s;
  DFX_ASSIGN_OR_RETURN(ExportResult result, ExportTasks(o, err));
  out << "Wrote " << result.output.string() << " (" << result.rows << " task row(s) of "
      << result.dispatches << " dispatch(es), format=" << r.format << ")\n";
  return result;
}

}  // namespace dfx::view
