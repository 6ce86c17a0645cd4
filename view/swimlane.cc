// `dfx-view swimlane` for one records file: reads it, finds its deps.json and
// name map, converts it with DispatchConverter and prints the statistics.
#include "view/swimlane.h"

#include <future>
#include <optional>
#include <ostream>

#include "collectors/artifact_layout.h"
#include "collectors/dep_gen/deps_reader.h"
#include "collectors/name_map.h"
#include "collectors/swimlane/swimlane_reader.h"
#include "view/dispatch_converter.h"
#include "view/run_inputs.h"
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

// deps.json at `path` if there is one (nullopt when there is none).
std::optional<Result<TaskGraph>> LoadDeps(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  return ReadTaskGraph(path);
}

// The graph LoadDeps read; prints the "no usable deps.json" warning without one.
std::optional<TaskGraph> DepsOrWarn(std::optional<Result<TaskGraph>> loaded,
                                    const std::filesystem::path& path, bool verbose,
                                    std::ostream& err) {
  if (loaded) {
    if (loaded->ok()) return std::move(*loaded).value();
    if (verbose) {
      err << "Warning: couldn't read " << path.string() << ": " << loaded->status().message()
          << "\n";
    }
  }
  err << "Warning: no usable deps.json at " << path.string()
      << "; Perfetto trace will have no dependency arrows. Run a dep_gen capture "
         "(--enable-dep-gen) and pass --deps-json <path> to add them.\n";
  return std::nullopt;
}

// The run's own conversion of `records` (merged_swimlane_<ts>.json beside it,
// written after the records), if there is one.
std::optional<std::filesystem::path> ExistingConversion(const std::filesystem::path& records) {
  std::error_code ec;
  const auto records_time = std::filesystem::last_write_time(records, ec);
  if (ec) return std::nullopt;
  std::optional<std::filesystem::path> best;
  std::filesystem::file_time_type best_time;
  for (const auto& e : std::filesystem::directory_iterator(records.parent_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (!collectors::IsMergedSwimlaneFileName(name) || name == collectors::kMergedSwimlaneFile ||
        !e.is_regular_file(ec) || e.is_symlink(ec)) {
      continue;
    }
    const auto t = e.last_write_time(ec);
    if (!ec && t >= records_time && (!best || t > best_time)) {
      best = e.path();
      best_time = t;
    }
  }
  return best;
}

}  // namespace

Result<SwimlaneReport> RunSwimlane(const SwimlaneOptions& options, std::ostream& out,
                                   std::ostream& err) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(options.input, ec)) {
    return NotFound("Input file not found: " + options.input.string());
  }
  std::filesystem::path dir = options.input.parent_path();
  std::filesystem::path deps_path =
      options.deps_json ? *options.deps_json : dir / collectors::kDepsFile;
  // deps.json is read on a thread of its own while this one reads the
  // records (the two readers share nothing; deps.json's warnings are
  // printed below, after the records').
  auto deps_loaded = std::async(std::launch::async, LoadDeps, deps_path);
  if (options.verbose) out << "Reading " << options.input.string() << "\n";
  SwimlaneReadOptions read_options;
  read_options.stream_sched_phases = true;  // bounded memory: phases are re-read, not kept
  read_options.stream_orch_phases = true;
  SchedPhaseDigest digest;  // the converter's first look at the phases, in the first pass
  digest.Attach(&read_options);
  DFX_ASSIGN_OR_RETURN(SwimlaneRecords data, ReadSwimlaneRecords(options.input, read_options));
  std::string warn = UnmatchedWarning(data);
  if (!warn.empty()) err << warn << "\n";
  if (options.verbose) {
    out << "Level " << data.level << ": " << data.tasks.size() << " task row(s), "
        << data.num_sched_threads << " scheduler thread(s), " << data.NumOrchPools()
        << " orchestrator pool(s)\n";
  }
  DFX_ASSIGN_OR_RETURN(collectors::NameMap names,
                       LoadNameMapFor(dir, options.func_names, options.input.string(), err));
  // With every default, the trace would be the one the run already wrote
  // beside the records (merged_swimlane_<ts>.json): say where it is instead
  // of writing a second identical copy.
  const bool defaults = !options.output && !options.deps_json && !options.func_names &&
                        !options.overhead && options.filter.flows && !options.filter.windowed() &&
                        options.format == TraceFormat::kJson;
  const std::optional<std::filesystem::path> existing =
      defaults ? ExistingConversion(options.input) : std::nullopt;
  // The trace is opened before the wait for deps.json (the records are
  // usually read first), so its chunk buffers' pages are mapped in that
  // wait when the trace will fill them all. The records file's size stands
  // for the trace's floor: the trace comes out larger in either format
  // (2-14 times the records' bytes at 100k tasks, levels 2 and 4), but not
  // with a time window, which may leave most records out.
  TraceWriter trace;
  std::filesystem::path output;
  if (!existing) {
    output = options.output
                 ? *options.output
                 : DefaultTracePath(dir / collectors::kMergedSwimlaneFile, options.format);
    const uint64_t min_bytes =
        options.filter.windowed() ? 0 : std::filesystem::file_size(options.input, ec);
    DFX_RETURN_IF_ERROR(trace.Open(output, options.filter, options.format, ec ? 0 : min_bytes));
  }
  std::optional<TaskGraph> deps = DepsOrWarn(deps_loaded.get(), deps_path, options.verbose, err);
  if (options.overhead && !deps) {
    err << "Warning: --overhead needs deps.json for task readiness; no deps found, Overhead "
           "Analysis track skipped.\n";
  }
  if (existing) {
    if (options.print_statistics) PrintStatistics(data, deps ? &*deps : nullptr, names, out);
    out << "\nUp to date: " << existing->string()
        << " was converted from these records after they were written; not writing a second "
           "copy (-o PATH writes one).\n";
    return SwimlaneReport{*existing, true};
  }
  DispatchConverter conv(data, deps ? &*deps : nullptr, names, options.overhead, options.verbose,
                         trace, err, &digest);
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
  return SwimlaneReport{output, false};
}

}  // namespace dfx::view
