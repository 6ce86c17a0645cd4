// `dfx-view swimlane` for one records file: reads it, finds its deps.json and
// name map, converts it with DispatchConverter and prints the statistics.
#include "view/swimlane.h"

#include <optional>
#include <ostream>

#include "collectors/artifact_layout.h"
#include "collectors/dep_gen/deps_reader.h"
#include "collectors/name_map.h"
#include "collectors/swimlane/swimlane_reader.h"
#include "view/dispatch_converter.h"
#include "view/statistics.h"
#include "view/trace_writer.h"

namespace dfx::view {

using collectors::ReadSwimlaneRecords;
using collectors::ReadTaskGraph;
using collectors::SwimlaneReadOptions;
using collectors::SwimlaneRecords;
using collectors::TaskGraph;
using collectors::UnmatchedWarning;

namespace {

// Loads deps at `path`; prints the "no usable deps.json" warning on failure.
std::optional<TaskGraph> LoadDepsOrWarn(const std::filesystem::path& path, bool verbose,
                                        std::ostream& err) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    auto deps = ReadTaskGraph(path);
    if (deps.ok()) return std::move(deps).value();
    if (verbose)
      err << "Warning: couldn't read " << path.string() << ": " << deps.status().message() << "\n";
  }
  err << "Warning: no usable deps.json at " << path.string()
      << "; Perfetto trace will have no dependency arrows. Run a dep_gen capture "
         "(--enable-dep-gen) and pass --deps-json <path> to add them.\n";
  return std::nullopt;
}

}  // namespace

Status RunSwimlane(const SwimlaneOptions& options, std::ostream& out, std::ostream& err) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(options.input, ec)) {
    return NotFound("Input file not found: " + options.input.string());
  }
  std::filesystem::path dir = options.input.parent_path();
  if (options.verbose) out << "Reading " << options.input.string() << "\n";
  SwimlaneReadOptions read_options;
  read_options.stream_sched_phases = true;  // bounded memory: phases are re-read, not kept
  DFX_ASSIGN_OR_RETURN(SwimlaneRecords data, ReadSwimlaneRecords(options.input, read_options));
  std::string warn = UnmatchedWarning(data);
  if (!warn.empty()) err << warn << "\n";
  if (options.verbose) {
    out << "Level " << data.level << ": " << data.tasks.size() << " task row(s), "
        << data.num_sched_threads << " scheduler thread(s), " << data.orch_phases.size()
        << " orchestrator pool(s)\n";
  }
  // Name map.
  collectors::NameMap names;
  if (options.func_names) {
    DFX_ASSIGN_OR_RETURN(names, collectors::ReadNameMap(*options.func_names));
  } else {
    auto maps = collectors::SiblingNameMaps(dir);
    if (maps.size() == 1) {
      auto loaded = collectors::ReadNameMap(maps[0]);
      if (loaded.ok()) {
        names = std::move(loaded).value();
      } else {
        err << "Warning: couldn't read " << maps[0].string() << ": " << loaded.status().message()
            << "\n";
      }
    } else if (maps.size() > 1) {
      err << "Warning: multiple sibling name maps found next to " << options.input.string()
          << "; pass --func-names explicitly.\n";
    }
  }
  std::filesystem::path deps_path =
      options.deps_json ? *options.deps_json : dir / collectors::kDepsFile;
  std::optional<TaskGraph> deps = LoadDepsOrWarn(deps_path, options.verbose, err);
  if (options.overhead && !deps) {
    err << "Warning: --overhead needs deps.json for task readiness; no deps found, Overhead "
           "Analysis track skipped.\n";
  }
  std::filesystem::path output =
      options.output ? *options.output : dir / collectors::kMergedSwimlaneFile;
  TraceWriter trace;
  DFX_RETURN_IF_ERROR(trace.Open(output));
  DispatchConverter conv(data, deps ? &*deps : nullptr, names, options.overhead, options.verbose,
                         trace, err);
  DFX_RETURN_IF_ERROR(conv.Run());
  DFX_RETURN_IF_ERROR(trace.Finish(data.timeline_metadata));
  if (options.verbose) {
    if (deps) {
      out << "Flow events: " << trace.flow_events() << "\n";
    } else {
      out << "Flow events: 0 (no deps.json — re-run dep_gen and pass --deps-json to add arrows)\n";
    }
  }
  if (options.print_statistics) PrintStatistics(data, deps ? &*deps : nullptr, names, out);
  out << "\nWrote " << output.string() << " (" << data.tasks.size() << " task row(s), "
      << trace.slice_events() << " slices, " << trace.flow_events() << " flow events)\n";
  out << "Open it in https://ui.perfetto.dev. For the scheduler overhead analysis run:\n"
      << "  dfx-view sched-overhead --chip-swimlane-records-json " << options.input.string()
      << " --deps-json " << deps_path.string() << "\n";
  return Status::Ok();
}

}  // namespace dfx::view
