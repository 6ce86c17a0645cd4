// dfx-view: the viewers and converters for the Runtime DFX artifacts
// (artifacts.md §4–§12) in one tool. Thin: parse flags, call the library.
// Exit codes: 0 ok, 1 error ("Error: <message>" on stderr), 2 usage error.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

#include "collectors/artifact_layout.h"
#include "common/version.h"
#include "view/deps_viewer.h"
#include "view/discovery.h"
#include "view/dump_viewer.h"
#include "view/pmu_summary.h"
#include "view/run_timeline.h"
#include "view/sched_overhead.h"
#include "view/scope_stats.h"
#include "view/swimlane.h"

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
      fmt::format("output trace (default: <input dir>/{})", layout::kMergedSwimlaneFile));
  sw->add_option("--deps-json", sw_deps,
                 fmt::format("{} (default: <input dir>/{})", layout::kDepsFile, layout::kDepsFile));
  sw->add_option("--func-names", sw_names,
                 "name map JSON (default: unique sibling name_map*.json)");
  sw->add_option("--run", sw_run,
                 "merge every rank<N>/d<K>/ records under W/dfx_outputs into one trace");
  sw->add_flag("--overhead", sw_overhead,
               fmt::format("add the overhead counter tracks (needs {})", layout::kDepsFile));
  sw->add_flag("-v,--verbose", sw_verbose, "progress and counts");

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
  ss->add_option("jsonl", ss_input, BaseName(layout::kScopeStatsFile))->required();
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
  pm->add_option("csv", pm_input, layout::kPmuFile)->required();

  for (CLI::App* a : {&app, sw, dp, du, ss, so, pm}) {
    a->set_version_flag("--version", dfx::VersionLine("dfx-view"));
  }
  app.footer(
      "Exit status: 0 ok, 1 error, 2 usage error. Without an input, each viewer looks for the "
      "newest artifact under ./outputs/.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }

  if (sw->parsed()) {
    if (!sw_run.empty()) {
      std::optional<std::filesystem::path> out;
      if (!sw_out.empty()) out = sw_out;
      return Report(dfx::view::RunSwimlaneForRun(sw_run, out, sw_verbose, std::cout, std::cerr));
    }
    dfx::view::SwimlaneOptions o;
    if (sw_input.empty()) {
      auto found = dfx::view::NewestUnder(kDefaultOutputsRoot, layout::kSwimlaneRecordsFile, false);
      if (!found) {
        std::cerr
            << fmt::format("Error: No {}/*/{} found under ", kDefaultOutputsRoot,
                           layout::kSwimlaneRecordsFile)
            << std::filesystem::current_path().string() << "\n"
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
      auto found = dfx::view::NewestUnder(kDefaultOutputsRoot, layout::kDepsFile, true);
      if (!found) {
        std::cerr << fmt::format("Error: No {} given and no candidate found under ./{}/.\n",
                                 layout::kDepsFile, kDefaultOutputsRoot);
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
    return Report(dfx::view::RunDepsViewer(o, std::cout, std::cerr));
  }
  if (du->parsed()) {
    dfx::view::DumpViewerOptions o;
    if (du_dir.empty()) {
      auto found = dfx::view::NewestUnder(kDefaultOutputsRoot, layout::kArgsDumpDir, false);
      if (!found) {
        std::cerr << fmt::format("Error: no {}/*/{} directory found\n", kDefaultOutputsRoot,
                                 layout::kArgsDumpDir);
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
  if (ss->parsed()) {
    std::optional<std::filesystem::path> out;
    if (o_ssdir->count()) out = ss_out;
    return Report(dfx::view::RunScopeStats(ss_input, out, std::cout, std::cerr));
  }
  if (so->parsed()) {
    if (so_rec.empty()) {
      auto found = dfx::view::NewestUnder(kDefaultOutputsRoot, layout::kSwimlaneRecordsFile, false);
      if (!found) {
        std::cerr << fmt::format("Error: No {}/*/{} found under ", kDefaultOutputsRoot,
                                 layout::kSwimlaneRecordsFile)
                  << std::filesystem::current_path().string() << "\n";
        return 1;
      }
      so_rec = found->string();
    }
    dfx::view::SchedOverheadOptions o;
    o.records = so_rec;
    o.deps = so_deps;
    return Report(dfx::view::RunSchedOverhead(o, std::cout));
  }
  if (pm->parsed()) return Report(dfx::view::RunPmuSummary(pm_input, std::cout));
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
