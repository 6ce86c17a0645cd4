// dfx-view: the viewers and converters for the Runtime DFX artifacts
// (artifacts.md §4–§12) in one tool. Thin: parse flags, call the library.
// Exit codes: 0 ok, 1 error ("Error: <message>" on stderr), 2 usage error.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>
#include <set>
#include <tuple>

#include "collectors/artifact_layout.h"
#include "common/version.h"
#include "view/deps_viewer.h"
#include "view/discovery.h"
#include "view/dump_viewer.h"
#include "view/pmu_summary.h"
#include "view/run_inputs.h"
#include "view/run_summary.h"
#include "view/run_timeline.h"
#include "view/sched_overhead.h"
#include "view/scope_stats.h"
#include "view/swimlane.h"
#include "view/task_export.h"

namespace {

namespace layout = dfx::collectors;
using dfx::view::kDefaultOutputsRoot;

// The base name of an artifact path: "scope_stats.jsonl" of "scope_stats/scope_stats.jsonl".
std::string BaseName(const char* artifact) {
  return std::filesystem::path(artifact).filename().string();
}

int Report(const dfx::Status& s) {
  if (s.ok()) return 0;
  std::cerr << "Error: " << s.message() << "\n";
  return 1;
}

int Run(int argc, char** argv) {
  CLI::App app{"dfx-view: viewers and converters for Runtime DFX artifacts"};
  app.name("dfx-view");
  app.require_subcommand(1);

  // swimlane
  auto* sw = app.add_subcommand(
      "swimlane", fmt::format("{} -> merged Perfetto trace", layout::kSwimlaneRecordsFile));
  std::string sw_input, sw_out, sw_deps, sw_names, sw_run;
  bool sw_overhead = false, sw_verbose = false;
  sw->add_option("input", sw_input,
                 fmt::format("records file (default: newest ./{}/*/{})", kDefaultOutputsRoot,
                             layout::kSwimlaneRecordsFile));
  sw->add_option(
      "-o,--output", sw_out,
      fmt::format("output trace, written as given (default: <input dir>/{}; with --format proto "
                  "the same name ending in .pftrace)",
                  layout::kMergedSwimlaneFile));
  std::string sw_format = "json";
  sw->add_option("--format", sw_format,
                 "json: the Chrome/Perfetto JSON trace the reference tools read (default) | "
                 "proto: the same trace as a Perfetto protobuf trace (several times smaller, "
                 "opens faster in ui.perfetto.dev)")
      ->check(CLI::IsMember({"json", "proto"}));
  sw->add_option("--deps-json", sw_deps,
                 fmt::format("{} (default: <input dir>/{})", layout::kDepsFile, layout::kDepsFile));
  sw->add_option("--func-names", sw_names,
                 "name map JSON (default: unique sibling name_map*.json)");
  sw->add_option("--run", sw_run,
                 "merge every rank<N>/d<K>/ records under W/dfx_outputs into one trace");
  sw->add_flag("--overhead", sw_overhead,
               fmt::format("add the overhead counter tracks (needs {})", layout::kDepsFile));
  sw->add_flag("-v,--verbose", sw_verbose, "progress and counts");
  std::string sw_ranks, sw_dispatch, sw_window;
  bool sw_no_flows = false;
  auto* o_ranks = sw->add_option("--ranks", sw_ranks, "with --run: only these ranks, e.g. 0,2");
  auto* o_dispatch =
      sw->add_option("--dispatch", sw_dispatch, "with --run: only these dispatches d<K>, e.g. 0,1");
  sw->add_option("--window", sw_window,
                 "only events overlapping T0:T1 µs of the trace (e.g. 0:500, :500, 1000:)");
  sw->add_flag("--no-flows", sw_no_flows, "no flow arrows (dependencies, dispatch, complete)");
  uint64_t sw_warn_bytes = 1ull << 30;
  sw->add_option("--size-warning-bytes", sw_warn_bytes, "warn past this size (default 1 GiB)")
      ->group("");

  // deps
  auto* dp = app.add_subcommand(
      "deps", fmt::format("{} viewer (text report or HTML graph)", layout::kDepsFile));
  std::string dp_input, dp_out, dp_format = "text", dp_mode = "full", dp_engine = "dot",
                                dp_dir = "LR", dp_names;
  bool dp_tensor = false;
  double dp_timeout = 300;
  dp->add_option("input", dp_input,
                 fmt::format("{} (default: newest ./{}/**/{})", layout::kDepsFile,
                             kDefaultOutputsRoot, layout::kDepsFile));
  dp->add_option("-o,--output", dp_out, "output file");
  dp->add_option("--format", dp_format, "text | html")->check(CLI::IsMember({"text", "html"}));
  auto* o_mode = dp->add_option("--edge-mode", dp_mode,
                                "full | reduced | omitted | reduced_dataflow | omitted_dataflow")
                     ->check(CLI::IsMember(
                         {"full", "reduced", "omitted", "reduced_dataflow", "omitted_dataflow"}));
  (void)o_mode;
  auto* o_engine = dp->add_option("--engine", dp_engine, "Graphviz engine (HTML only)")
                       ->check(CLI::IsMember({"dot", "neato", "sfdp", "fdp", "circo", "twopi"}));
  auto* o_dir = dp->add_option("--direction", dp_dir, "LR | TB | BT | RL (HTML only)")
                    ->check(CLI::IsMember({"LR", "TB", "BT", "RL"}));
  auto* o_tensor =
      dp->add_flag("--show-tensor-info", dp_tensor, "tensor tables on nodes (HTML only)");
  dp->add_option("--func-names", dp_names,
                 "name map or flat {func_id: name} (default: newest sibling name_map*.json)");
  auto* o_timeout = dp->add_option("--layout-timeout", dp_timeout,
                                   "seconds to wait for the Graphviz engine (HTML only)");
  std::string dp_around;
  int dp_depth = 2;
  bool dp_critical = false;
  dp->add_flag("--critical-path", dp_critical,
               "the critical path from the chip_swimlane_records.json beside deps.json: hop by "
               "hop in the text, red in the HTML");
  dp->add_option("--around", dp_around,
                 "only the tasks near this one (t5, r1t4, (1, 4), 0x100000004) and their edges");
  auto* o_depth = dp->add_option("--depth", dp_depth, "with --around: edges away (default 2)")
                      ->check(CLI::Range(0, 1000000));
  std::string dp_collapse;
  dp->add_option("--collapse", dp_collapse,
                 "kernel | ring: one node per kernel (or per ring, the scope depth), edges "
                 "labelled with the task edges they stand for")
      ->check(CLI::IsMember({"kernel", "ring"}));

  // dump
  auto* du = app.add_subcommand("dump", "args dump viewer");
  std::string du_dir, du_task, du_stage, du_role;
  long du_arg = 0, du_index = 0;
  bool du_export = false;
  du->add_option("dump_dir", du_dir,
                 fmt::format("{} directory (default: newest ./{}/*/{})", layout::kArgsDumpDir,
                             kDefaultOutputsRoot, layout::kArgsDumpDir));
  auto* o_task = du->add_option("-t,--task", du_task, "task_id exactly as in the manifest");
  auto* o_stage = du->add_option("-s,--stage", du_stage, "before | after");
  auto* o_role = du->add_option("-r,--role", du_role, "input | output | inout");
  auto* o_arg = du->add_option("-a,--arg", du_arg, "arg index");
  auto* o_index = du->add_option("-i,--index", du_index, "manifest position (always exports)");
  du->add_flag("-e,--export", du_export, "export selected args as text files");

  // scope-stats
  auto* ss = app.add_subcommand(
      "scope-stats", fmt::format("{} -> scope_stats.html", BaseName(layout::kScopeStatsFile)));
  std::string ss_input, ss_out;
  ss->add_option("jsonl", ss_input,
                 fmt::format("{} (default: the newest under ./{}/*/, ./dfx_outputs/ or .)",
                             BaseName(layout::kScopeStatsFile), kDefaultOutputsRoot));
  auto* o_ssdir = ss->add_option("--out-dir", ss_out, "output directory (default: input dir)");

  // sched-overhead
  auto* so = app.add_subcommand("sched-overhead", "scheduler overhead deep-dive");
  std::string so_rec, so_deps;
  so->add_option("--chip-swimlane-records-json", so_rec,
                 fmt::format("records (default: newest ./{}/*/{})", kDefaultOutputsRoot,
                             layout::kSwimlaneRecordsFile));
  so->add_option("--deps-json", so_deps,
                 fmt::format("{} (default: sibling {})", layout::kDepsFile, layout::kDepsFile));

  // pmu
  auto* pm = app.add_subcommand("pmu", fmt::format("per-function summary of {}", layout::kPmuFile));
  std::string pm_input;
  pm->add_option("csv", pm_input,
                 fmt::format("{} (default: the newest under ./{}/*/, ./dfx_outputs/ or .)",
                             layout::kPmuFile, kDefaultOutputsRoot));

  // summary
  auto* su = app.add_subcommand(
      "summary", "the run in one screen: per rank and dispatch, stragglers, top kernels");
  std::string su_input, su_run, su_format = "table", su_threshold = "5%";
  bool su_brief = false;
  int su_top = 5;
  const char* kRunInputHelp =
      "W/dfx_outputs of a run, one rank<N>/d<K> directory, or an L2 dfx_outputs (default: "
      "./dfx_outputs, else . when it holds a run)";
  su->add_option("input", su_input, kRunInputHelp);
  su->add_option("--run", su_run, "the same as the positional input");
  su->add_option("--format", su_format, "table | csv | json")
      ->check(CLI::IsMember({"table", "csv", "json"}));
  su->add_option("--straggler-threshold", su_threshold,
                 "a rank is a straggler in a dispatch step when its span exceeds the step's "
                 "median span by more than this (default 5%)");
  su->add_flag("--brief", su_brief, "table: ranks, steps, top kernels and the verdict only");
  su->add_option("--top", su_top, "kernels listed (default 5)")->check(CLI::Range(1, 1000));
  std::string su_view = "dfx-view";
  su->add_option("--view-command", su_view, "how printed commands name dfx-view")->group("");

  // export
  auto* ex = app.add_subcommand("export", "the task table of a run as CSV or SQLite");
  std::string ex_input, ex_run, ex_format = "csv", ex_out;
  ex->add_option("input", ex_input, kRunInputHelp);
  ex->add_option("--run", ex_run, "the same as the positional input");
  ex->add_option("--format", ex_format, "csv | sqlite")->check(CLI::IsMember({"csv", "sqlite"}));
  ex->add_option("-o,--output", ex_out, "output file (default: <input>/tasks.csv | tasks.sqlite)");

  for (CLI::App* a : {&app, sw, dp, du, ss, so, pm, su, ex}) {
    a->set_version_flag("--version", dfx::VersionLine("dfx-view"));
  }
  app.footer(
      "Exit status: 0 ok, 1 error, 2 usage error. Without an input, each viewer takes the newest "
      "artifact under ./outputs/*/ (the reference's layout), ./dfx_outputs/ and its "
      "rank<N>/d<K>/, or the current directory and its rank<N>/d<K>/; summary and export take "
      "./dfx_outputs or the current directory.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }

  if (sw->parsed()) {
    dfx::view::TraceFilter filter;
    filter.flows = !sw_no_flows;
    dfx::view::TraceFormat format = dfx::view::TraceFormat::kJson;
    if (auto s = dfx::view::ParseTraceFormat(sw_format, &format); !s.ok()) {
      std::cerr << "Error: " << s.message() << "\n";
      return 2;
    }
    if (!sw_window.empty()) {
      if (auto s = dfx::view::ParseWindow(sw_window, &filter); !s.ok()) {
        std::cerr << "Error: " << s.message() << "\n";
        return 2;
      }
    }
    if (!sw_run.empty()) {
      dfx::view::RunTimelineOptions o;
      o.run_dir = sw_run;
      if (!sw_out.empty()) o.output = sw_out;
      o.filter = filter;
      o.format = format;
      o.verbose = sw_verbose;
      o.warn_bytes = sw_warn_bytes;
      std::set<uint32_t> ranks;
      for (auto [flag, text, set] : {std::tuple{"--ranks", &sw_ranks, &ranks},
                                     std::tuple{"--dispatch", &sw_dispatch, &o.dispatches}}) {
        if (text->empty()) continue;
        if (auto s = dfx::view::ParseIndexList(flag, *text, set); !s.ok()) {
          std::cerr << "Error: " << s.message() << "\n";
          return 2;
        }
      }
      for (uint32_t r : ranks) o.ranks.insert(static_cast<int32_t>(r));
      return Report(dfx::view::RunSwimlaneForRun(o, std::cout, std::cerr));
    }
    for (auto* opt : {o_ranks, o_dispatch}) {
      if (opt->count() > 0) {
        std::cerr << "error: " << opt->get_name()
                  << " selects within a run: it is only valid with --run W/dfx_outputs\n";
        return 2;
      }
    }
    dfx::view::SwimlaneOptions o;
    o.filter = filter;
    if (sw_input.empty()) {
      auto found = dfx::view::FindDefaultInput(layout::kSwimlaneRecordsFile, false);
      if (!found) {
        std::cerr
            << fmt::format("Error: No {}/*/{} found under ", kDefaultOutputsRoot,
                           layout::kSwimlaneRecordsFile)
            << std::filesystem::current_path().string() << " (looked in "
            << dfx::view::DefaultInputPlaces(layout::kSwimlaneRecordsFile) << ")\n"
            << "Run a test with --enable-chip-swimlane first, or specify an explicit input.\n";
        return 1;
      }
      sw_input = found->string();
    }
    o.input = sw_input;
    if (!sw_out.empty()) o.output = sw_out;
    if (!sw_deps.empty()) o.deps_json = sw_deps;
    if (!sw_names.empty()) o.func_names = sw_names;
    o.overhead = sw_overhead;
    o.verbose = sw_verbose;
    o.format = format;
    return Report(dfx::view::RunSwimlane(o, std::cout, std::cerr));
  }
  if (dp->parsed()) {
    if (dp_format != "html") {
      for (auto* opt : {o_engine, o_dir, o_tensor, o_timeout}) {
        if (opt->count() > 0) {
          std::cerr << "error: " << opt->get_name() << " is only valid with --format html\n";
          return 2;
        }
      }
    }
    dfx::view::DepsViewerOptions o;
    if (dp_input.empty()) {
      auto found = dfx::view::FindDefaultInput(layout::kDepsFile, true);
      if (!found) {
        std::cerr << fmt::format(
            "Error: No {} given and no candidate found under ./{}/ (looked in "
            "{}).\n",
            layout::kDepsFile, kDefaultOutputsRoot,
            dfx::view::DefaultInputPlaces(layout::kDepsFile));
        return 1;
      }
      dp_input = found->string();
    }
    o.input = dp_input;
    if (!dp_out.empty()) o.output = dp_out;
    o.format = dp_format;
    auto mode = dfx::view::ParseEdgeMode(dp_mode);
    if (!mode.ok()) return Report(mode.status());
    o.edge_mode = *mode;
    o.engine = dp_engine;
    o.direction = dp_dir;
    o.show_tensor_info = dp_tensor;
    if (!dp_names.empty()) o.func_names = dp_names;
    o.layout_timeout = std::chrono::milliseconds(static_cast<long>(dp_timeout * 1000));
    if (o_depth->count() > 0 && dp_around.empty()) {
      std::cerr << "error: --depth is only valid with --around TASK\n";
      return 2;
    }
    if (!dp_around.empty()) o.around = dp_around;
    o.depth = dp_depth;
    o.critical_path = dp_critical;
    o.collapse = dp_collapse;
    return Report(dfx::view::RunDepsViewer(o, std::cout, std::cerr));
  }
  if (du->parsed()) {
    dfx::view::DumpViewerOptions o;
    if (du_dir.empty()) {
      auto found = dfx::view::FindDefaultInput(layout::kArgsDumpDir, false);
      if (!found) {
        std::cerr << fmt::format("Error: no {}/*/{} directory found (looked in {})\n",
                                 kDefaultOutputsRoot, layout::kArgsDumpDir,
                                 dfx::view::DefaultInputPlaces(layout::kArgsDumpDir));
        return 1;
      }
      du_dir = found->string();
      std::cout << "Using latest dump directory: " << du_dir << "\n";
    }
    o.dump_dir = du_dir;
    if (o_task->count()) o.task = du_task;
    if (o_stage->count()) o.stage = du_stage;
    if (o_role->count()) o.role = du_role;
    if (o_arg->count()) o.arg = du_arg;
    if (o_index->count()) o.index = du_index;
    o.do_export = du_export;
    return Report(dfx::view::RunDumpViewer(o, std::cout, std::cerr));
  }
  // scope-stats and pmu: the newest artifact where the others look too.
  auto default_input = [](const std::string& name, std::string* input) {
    if (!input->empty()) return true;
    auto found = dfx::view::FindDefaultInput(name, false);
    if (!found) {
      std::cerr << "Error: no " << name << " given and none found (looked in "
                << dfx::view::DefaultInputPlaces(name) << ")\n";
      return false;
    }
    *input = found->string();
    return true;
  };
  if (ss->parsed()) {
    if (!default_input(layout::kScopeStatsFile, &ss_input)) return 1;
    std::optional<std::filesystem::path> out;
    if (o_ssdir->count()) out = ss_out;
    return Report(dfx::view::RunScopeStats(ss_input, out, std::cout, std::cerr));
  }
  if (so->parsed()) {
    if (so_rec.empty()) {
      auto found = dfx::view::FindDefaultInput(layout::kSwimlaneRecordsFile, false);
      if (!found) {
        std::cerr << fmt::format("Error: No {}/*/{} found under ", kDefaultOutputsRoot,
                                 layout::kSwimlaneRecordsFile)
                  << std::filesystem::current_path().string() << " (looked in "
                  << dfx::view::DefaultInputPlaces(layout::kSwimlaneRecordsFile) << ")\n";
        return 1;
      }
      so_rec = found->string();
    }
    dfx::view::SchedOverheadOptions o;
    o.records = so_rec;
    o.deps = so_deps;
    return Report(dfx::view::RunSchedOverhead(o, std::cout));
  }
  if (pm->parsed() && !default_input(layout::kPmuFile, &pm_input)) return 1;
  if (pm->parsed()) return Report(dfx::view::RunPmuSummary(pm_input, std::cout, std::cerr));
  // summary / export: a run directory, given or found.
  auto run_input = [](const std::string& positional, const std::string& flag,
                      std::string* input) -> bool {
    if (!positional.empty() && !flag.empty() && positional != flag) {
      std::cerr << "Error: give the run directory once (positional or --run), not both\n";
      return false;
    }
    *input = !flag.empty() ? flag : positional;
    if (!input->empty()) return true;
    auto found = dfx::view::DefaultRunInput();
    if (!found) {
      std::cerr << "Error: no run directory given and neither ./dfx_outputs nor "
                << std::filesystem::current_path().string()
                << " holds one; pass W/dfx_outputs of a run\n";
      return false;
    }
    *input = found->string();
    return true;
  };
  if (su->parsed()) {
    std::string input;
    if (!run_input(su_input, su_run, &input)) return 1;
    auto threshold = dfx::view::ParseThresholdPercent(su_threshold);
    if (!threshold.ok()) {
      std::cerr << "Error: " << threshold.status().message() << "\n";
      return 2;
    }
    auto summary = dfx::view::SummarizeRun(input, *threshold, std::cerr);
    if (!summary.ok()) return Report(summary.status());
    dfx::view::SummaryPrintOptions o;
    o.format = su_format;
    o.brief = su_brief;
    o.top = su_top;
    o.view = su_view;
    dfx::view::PrintSummary(*summary, o, std::cout);
    return 0;
  }
  if (ex->parsed()) {
    dfx::view::ExportOptions o;
    std::string input;
    if (!run_input(ex_input, ex_run, &input)) return 1;
    o.input = input;
    o.format = ex_format;
    if (!ex_out.empty()) o.output = ex_out;
    auto result = dfx::view::ExportTasks(o, std::cerr);
    if (!result.ok()) return Report(result.status());
    std::cout << "Wrote " << result->output.string() << " (" << result->rows << " task row(s) of "
              << result->dispatches << " dispatch(es), format=" << ex_format << ")\n";
    return 0;
  }
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
