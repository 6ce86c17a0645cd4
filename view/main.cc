// dfx-view: the viewers and converters for the Runtime DFX artifacts
// (docs/formats.md §4–§12) in one tool. Thin: each subcommand's flags are read
// into its request (view/commands.h), the library runs it, and a failure is
// printed. Exit codes: 0 ok, 1 error ("Error: <message>" on stderr), 2 usage
// error.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>
#include <string>

#include "collectors/artifact_layout.h"
#include "common/unknown_arguments.h"
#include "common/version.h"
#include "view/commands.h"
#include "view/discovery.h"
#include "view/edge_reduction.h"
#include "view/trace_writer.h"

namespace {

namespace layout = dfx::collectors;
namespace view = dfx::view;
using dfx::view::kDefaultOutputsRoot;

// The base name of an artifact path: "scope_stats.jsonl" of "scope_stats/scope_stats.jsonl".
std::string BaseName(const char* artifact) {
  return std::filesystem::path(artifact).filename().string();
}

// The choices of an enum table, as CLI::IsMember takes them.
template <typename Table>
std::vector<std::string> Choices(const Table& table) {
  std::vector<std::string> out;
  for (const auto& row : table.rows()) out.emplace_back(row.text);
  return out;
}

// Prints a command's failure; returns dfx-view's exit status for it.
template <typename Report>
int Exit(const view::CommandResult<Report>& result) {
  if (!result.ok()) std::cerr << result.error().text;
  return static_cast<int>(result.exit_code());
}

const char* const kRunInputHelp =
    "W/dfx_outputs of a run, one rank<N>/d<K> directory, or an L2 dfx_outputs (default: "
    "./dfx_outputs, else . when it holds a run)";

// Each subcommand's flags: Add defines them on the app (the order is the
// order --help lists them in), Request reads what was given after parsing.
struct SwimlaneFlags {
  CLI::App* command = nullptr;
  view::SwimlaneRequest request;
  std::string ranks, dispatch;
  CLI::Option* ranks_option = nullptr;
  CLI::Option* dispatch_option = nullptr;

  void Add(CLI::App& app) {
    view::SwimlaneRequest& r = request;
    command = app.add_subcommand(
        "swimlane", fmt::format("{} -> merged Perfetto trace", layout::kSwimlaneRecordsFile));
    CLI::App* sw = command;
    sw->add_option("input", r.input,
                   fmt::format("records file (default: newest ./{}/*/{})", kDefaultOutputsRoot,
                               layout::kSwimlaneRecordsFile));
    sw->add_option(
        "-o,--output", r.output,
        fmt::format("output trace, written as given (default: <input dir>/{}; with --format proto "
                    "the same name ending in .pftrace)",
                    layout::kMergedSwimlaneFile));
    sw->add_option("--format", r.format,
                   "json: the Chrome/Perfetto JSON trace the reference tools read (default) | "
                   "proto: the same trace as a Perfetto protobuf trace (several times smaller, "
                   "opens faster in ui.perfetto.dev)")
        ->check(CLI::IsMember(Choices(view::kTraceFormatText)));
    sw->add_option(
        "--deps-json", r.deps_json,
        fmt::format("{} (default: <input dir>/{})", layout::kDepsFile, layout::kDepsFile));
    sw->add_option("--func-names", r.func_names,
                   "name map JSON (default: unique sibling name_map*.json)");
    sw->add_option("--run", r.run,
                   "merge every rank<N>/d<K>/ records under W/dfx_outputs into one trace");
    sw->add_flag("--overhead", r.overhead,
                 fmt::format("add the overhead counter tracks (needs {})", layout::kDepsFile));
    sw->add_flag("-v,--verbose", r.verbose, "progress and counts");
    ranks_option = sw->add_option("--ranks", ranks, "with --run: only these ranks, e.g. 0,2");
    dispatch_option =
        sw->add_option("--dispatch", dispatch, "with --run: only these dispatches d<K>, e.g. 0,1");
    sw->add_option("--window", r.window,
                   "only events overlapping T0:T1 µs of the trace (e.g. 0:500, :500, 1000:)");
    sw->add_flag("--no-flows", r.no_flows, "no flow arrows (dependencies, dispatch, complete)");
    sw->add_option("--size-warning-bytes", r.warn_bytes, "warn past this size (default 1 GiB)")
        ->group("");
  }
  view::SwimlaneRequest Request() const {
    view::SwimlaneRequest r = request;
    if (ranks_option->count() > 0) r.ranks = ranks;
    if (dispatch_option->count() > 0) r.dispatch = dispatch;
    return r;
  }
};

struct DepsFlags {
  CLI::App* command = nullptr;
  view::DepsRequest request;
  std::string engine = "dot", direction = "LR";
  bool show_tensor_info = false;
  double layout_timeout_s = 300;
  int depth = 2;
  CLI::Option *engine_option = nullptr, *direction_option = nullptr, *tensor_option = nullptr,
              *timeout_option = nullptr, *depth_option = nullptr;

  void Add(CLI::App& app) {
    view::DepsRequest& r = request;
    command = app.add_subcommand(
        "deps", fmt::format("{} viewer (text report or HTML graph)", layout::kDepsFile));
    CLI::App* dp = command;
    dp->add_option("input", r.input,
                   fmt::format("{} (default: newest ./{}/**/{})", layout::kDepsFile,
                               kDefaultOutputsRoot, layout::kDepsFile));
    dp->add_option("-o,--output", r.output, "output file");
    dp->add_option("--format", r.format, "text | html")->check(CLI::IsMember({"text", "html"}));
    dp->add_option("--edge-mode", r.edge_mode, view::kEdgeModeText.Choices())
        ->check(CLI::IsMember(Choices(view::kEdgeModeText)));
    engine_option = dp->add_option("--engine", engine, "Graphviz engine (HTML only)")
                        ->check(CLI::IsMember({"dot", "neato", "sfdp", "fdp", "circo", "twopi"}));
    direction_option = dp->add_option("--direction", direction, "LR | TB | BT | RL (HTML only)")
                           ->check(CLI::IsMember({"LR", "TB", "BT", "RL"}));
    tensor_option =
        dp->add_flag("--show-tensor-info", show_tensor_info, "tensor tables on nodes (HTML only)");
    dp->add_option("--func-names", r.func_names,
                   "name map or flat {func_id: name} (default: newest sibling name_map*.json)");
    timeout_option = dp->add_option("--layout-timeout", layout_timeout_s,
                                    "seconds to wait for the Graphviz engine (HTML only)");
    dp->add_flag("--critical-path", r.critical_path,
                 "the critical path from the chip_swimlane_records.json beside deps.json: hop by "
                 "hop in the text, red in the HTML");
    dp->add_option("--around", r.around,
                   "only the tasks near this one (t5, r1t4, (1, 4), 0x100000004) and their edges");
    depth_option = dp->add_option("--depth", depth, "with --around: edges away (default 2)")
                       ->check(CLI::Range(0, 1000000));
    dp->add_option("--collapse", r.collapse,
                   "kernel | ring: one node per kernel (or per ring, the scope depth), edges "
                   "labelled with the task edges they stand for")
        ->check(CLI::IsMember({"kernel", "ring"}));
  }
  view::DepsRequest Request() const {
    view::DepsRequest r = request;
    if (engine_option->count() > 0) r.engine = engine;
    if (direction_option->count() > 0) r.direction = direction;
    if (tensor_option->count() > 0) r.show_tensor_info = show_tensor_info;
    if (timeout_option->count() > 0) r.layout_timeout_s = layout_timeout_s;
    if (depth_option->count() > 0) r.depth = depth;
    return r;
  }
};

struct DumpFlags {
  CLI::App* command = nullptr;
  view::DumpRequest request;
  std::string task, stage, role;
  long arg = 0, index = 0;
  CLI::Option *task_option = nullptr, *stage_option = nullptr, *role_option = nullptr,
              *arg_option = nullptr, *index_option = nullptr;

  void Add(CLI::App& app) {
    command = app.add_subcommand("dump", "args dump viewer");
    CLI::App* du = command;
    du->add_option("dump_dir", request.dump_dir,
                   fmt::format("{} directory (default: newest ./{}/*/{})", layout::kArgsDumpDir,
                               kDefaultOutputsRoot, layout::kArgsDumpDir));
    task_option = du->add_option("-t,--task", task, "task_id exactly as in the manifest");
    stage_option = du->add_option("-s,--stage", stage, "before | after");
    role_option = du->add_option("-r,--role", role, "input | output | inout");
    arg_option = du->add_option("-a,--arg", arg, "arg index");
    index_option = du->add_option("-i,--index", index, "manifest position (always exports)");
    du->add_flag("-e,--export", request.do_export, "export selected args as text files");
  }
  view::DumpRequest Request() const {
    view::DumpRequest r = request;
    if (task_option->count()) r.task = task;
    if (stage_option->count()) r.stage = stage;
    if (role_option->count()) r.role = role;
    if (arg_option->count()) r.arg = arg;
    if (index_option->count()) r.index = index;
    return r;
  }
};

struct ScopeStatsFlags {
  CLI::App* command = nullptr;
  view::ScopeStatsRequest request;
  std::string out_dir;
  CLI::Option* out_dir_option = nullptr;

  void Add(CLI::App& app) {
    command = app.add_subcommand(
        "scope-stats", fmt::format("{} -> scope_stats.html", BaseName(layout::kScopeStatsFile)));
    command->add_option("jsonl", request.input,
                        fmt::format("{} (default: the newest under ./{}/*/, ./dfx_outputs/ or .)",
                                    BaseName(layout::kScopeStatsFile), kDefaultOutputsRoot));
    out_dir_option =
        command->add_option("--out-dir", out_dir, "output directory (default: input dir)");
  }
  view::ScopeStatsRequest Request() const {
    view::ScopeStatsRequest r = request;
    if (out_dir_option->count()) r.out_dir = out_dir;
    return r;
  }
};

CLI::App* AddSchedOverhead(CLI::App& app, view::SchedOverheadRequest& r) {
  auto* so = app.add_subcommand("sched-overhead", "scheduler overhead deep-dive");
  so->add_option("--chip-swimlane-records-json", r.records,
                 fmt::format("records (default: newest ./{}/*/{})", kDefaultOutputsRoot,
                             layout::kSwimlaneRecordsFile));
  so->add_option("--deps-json", r.deps,
                 fmt::format("{} (default: sibling {})", layout::kDepsFile, layout::kDepsFile));
  return so;
}

CLI::App* AddPmu(CLI::App& app, view::PmuRequest& r) {
  auto* pm = app.add_subcommand("pmu", fmt::format("per-function summary of {}", layout::kPmuFile));
  pm->add_option("csv", r.input,
                 fmt::format("{} (default: the newest under ./{}/*/, ./dfx_outputs/ or .)",
                             layout::kPmuFile, kDefaultOutputsRoot));
  return pm;
}

CLI::App* AddSummary(CLI::App& app, view::SummaryRequest& r) {
  auto* su = app.add_subcommand(
      "summary", "the run in one screen: per rank and dispatch, stragglers, top kernels");
  su->add_option("input", r.input, kRunInputHelp);
  su->add_option("--run", r.run, "the same as the positional input");
  su->add_option("--format", r.format, "table | csv | json")
      ->check(CLI::IsMember({"table", "csv", "json"}));
  su->add_option("--straggler-threshold", r.straggler_threshold,
                 "a rank is a straggler in a dispatch step when its span exceeds the step's "
                 "median span by more than this (default 5%)");
  su->add_flag("--brief", r.brief, "table: ranks, steps, top kernels and the verdict only");
  su->add_option("--top", r.top, "kernels listed (default 5)")->check(CLI::Range(1, 1000));
  su->add_option("--view-command", r.view_command, "how printed commands name dfx-view")->group("");
  su->add_option("--report", r.report,
                 "also write the run report (an HTML page, as `dfx-view report`) to this file");
  return su;
}

CLI::App* AddReport(CLI::App& app, view::ReportRequest& r) {
  auto* re = app.add_subcommand(
      "report",
      "the run as one self-contained HTML page of charts (offline): skew heatmaps, stragglers, "
      "per-rank time and kernels, ring occupancy, host lane, clock offsets, trace commands");
  re->add_option("input", r.input, kRunInputHelp);
  re->add_option("--run", r.run, "the same as the positional input");
  re->add_option("-o,--output", r.output, "the page (default: <input>/report.html)");
  re->add_option("--straggler-threshold", r.straggler_threshold,
                 "as for summary: the skew over the step's median that marks a straggler "
                 "(default 5%)");
  re->add_option("--max-rows", r.max_rows,
                 "above this many ranks the per-rank charts show the min/median/p90/max rank "
                 "plus the outliers (default 200)");
  re->add_option("--view-command", r.view_command, "how the page's commands name dfx-view")
      ->group("");
  return re;
}

CLI::App* AddExport(CLI::App& app, view::ExportRequest& r) {
  auto* ex = app.add_subcommand("export", "the task table of a run as CSV or SQLite");
  ex->add_option("input", r.input, kRunInputHelp);
  ex->add_option("--run", r.run, "the same as the positional input");
  ex->add_option("--format", r.format, "csv | sqlite")->check(CLI::IsMember({"csv", "sqlite"}));
  ex->add_option("-o,--output", r.output,
                 "output file (default: <input>/tasks.csv | tasks.sqlite)");
  return ex;
}

int Run(int argc, char** argv) {
  CLI::App app{"dfx-view: viewers and converters for Runtime DFX artifacts"};
  app.name("dfx-view");
  app.require_subcommand(1);
  SwimlaneFlags sw;
  sw.Add(app);
  DepsFlags dp;
  dp.Add(app);
  DumpFlags du;
  du.Add(app);
  ScopeStatsFlags ss;
  ss.Add(app);
  view::SchedOverheadRequest so_request;
  CLI::App* so = AddSchedOverhead(app, so_request);
  view::PmuRequest pm_request;
  CLI::App* pm = AddPmu(app, pm_request);
  view::SummaryRequest su_request;
  CLI::App* su = AddSummary(app, su_request);
  view::ExportRequest ex_request;
  CLI::App* ex = AddExport(app, ex_request);
  view::ReportRequest re_request;
  CLI::App* re = AddReport(app, re_request);

  for (CLI::App* a : {&app, sw.command, dp.command, du.command, ss.command, so, pm, su, ex, re}) {
    a->set_version_flag("--version", dfx::VersionLine("dfx-view"));
  }
  bool no_verify = false, skip_verify = false;
  for (CLI::App* a : {sw.command, dp.command, du.command, ss.command, so, pm, su, ex}) {
    a->add_flag("--no-verify", no_verify,
                "read artifacts whose checksum differs from the run manifest's (with a warning) "
                "instead of refusing them");
    // The coordinator's own calls: it verified every file as it stored it.
    a->add_flag("--skip-verify", skip_verify, "check no checksum")->group("");
  }
  app.footer(
      "Exit status: 0 ok, 1 error, 2 usage error. Without an input, each viewer takes the newest "
      "artifact under ./outputs/*/ (the reference's layout), ./dfx_outputs/ and its "
      "rank<N>/d<K>/, or the current directory and its rank<N>/d<K>/; summary, report and export "
      "take "
      "./dfx_outputs or the current directory.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A mistyped flag, not the required one it displaced, is the error.
    if (auto unknown = dfx::UnknownArgumentsOf(app, "dfx-view")) {
      std::cerr << "dfx-view: " << *unknown << "\n";
      return 2;
    }
    app.exit(e);
    return 2;
  }

  std::ostream& out = std::cout;
  std::ostream& err = std::cerr;
  const view::Verify verify = skip_verify ? view::Verify::kSkip
                              : no_verify ? view::Verify::kWarn
                                          : view::Verify::kRefuse;
  sw.request.verify = dp.request.verify = du.request.verify = ss.request.verify = verify;
  so_request.verify = pm_request.verify = su_request.verify = ex_request.verify = verify;
  if (sw.command->parsed()) return Exit(view::RunSwimlaneCommand(sw.Request(), out, err));
  if (dp.command->parsed()) return Exit(view::RunDepsCommand(dp.Request(), out, err));
  if (du.command->parsed()) return Exit(view::RunDumpCommand(du.Request(), out, err));
  if (ss.command->parsed()) return Exit(view::RunScopeStatsCommand(ss.Request(), out, err));
  if (so->parsed()) return Exit(view::RunSchedOverheadCommand(so_request, out, err));
  if (pm->parsed()) return Exit(view::RunPmuCommand(pm_request, out, err));
  if (su->parsed()) return Exit(view::RunSummaryCommand(su_request, out, err));
  if (ex->parsed()) return Exit(view::RunExportCommand(ex_request, out, err));
  if (re->parsed()) return Exit(view::RunReportCommand(re_request, out, err));
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "Error: internal: " << e.what() << "\n";
    return 1;
  }
}
