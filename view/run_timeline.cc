// `dfx-view swimlane --run`: every rank<N>/d<K>/ records file of an L3 run
// in one trace. Each rank gets its own pid range (100 * (rank + 1) + pid) and
// process names prefixed "Rank N · "; dispatches without a manifest start
// are laid 1 µs apart.
//
// The run manifest (W/dfx_outputs/run_manifest.json, read with the one
// reader, collectors/run_manifest.h) gives each dispatch's start on the
// coordinator clock; the records on disk come from the timing (or single)
// pass, so graph-pass entries are skipped. Without a manifest every dispatch
// is aligned at its own base time and the dispatches of a rank are laid end
// to end. The earliest start over the whole run is time zero of the trace.
#include "view/run_timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <ostream>

#include "collectors/artifact_layout.h"
#include "collectors/dep_gen/deps_reader.h"
#include "collectors/name_map.h"
#include "collectors/run_manifest.h"
#include "collectors/swimlane/swimlane_reader.h"
#include "common/json.h"
#include "view/dispatch_converter.h"
#include "view/trace_writer.h"

namespace dfx::view {

using collectors::ReadSwimlaneRecords;
using collectors::ReadTaskGraph;
using collectors::SwimlaneReadOptions;
using collectors::SwimlaneRecords;
using collectors::TaskGraph;
using collectors::UnmatchedWarning;

namespace {

// What the run manifest says about placement: dispatch start times, (rank,
// dispatch) -> start on the coordinator clock (ns), and each rank's clock
// offset with its round-trip bound. Empty without a manifest; a warning
// when it cannot be read.
struct ManifestPlacement {
  std::map<std::pair<int, int>, int64_t> starts;
  Json clock_ranks = Json::array();
  double max_uncertainty_us = 0;  // half the worst rank's best round trip
};

ManifestPlacement ReadManifestPlacement(const std::filesystem::path& path, std::ostream& err) {
  ManifestPlacement p;
  auto manifest = collectors::ReadRunManifest(path);
  if (!manifest.ok()) {
    if (manifest.status().code() != Code::kNotFound) {
      err << "Warning: couldn't read " << path.string() << ": " << manifest.status().message()
          << "\n";
    }
    return p;
  }
  for (const collectors::DispatchEntry& d : manifest->dispatches) {
    if (d.pass == config::PassKind::kGraph) continue;
    p.starts[{d.rank, static_cast<int>(d.k)}] = static_cast<int64_t>(d.start_ns);
  }
  for (const collectors::RankEntry& r : manifest->ranks) {
    if (!r.clock_offset_ns || !r.clock_offset_rtt_ns) continue;
    Json e;
    e["rank"] = r.rank;
    e["host"] = r.host ? Json(*r.host) : Json();
    e["clock_offset_ns"] = *r.clock_offset_ns;
    e["round_trip_ns"] = *r.clock_offset_rtt_ns;
    e["uncertainty_ns"] = *r.clock_offset_rtt_ns / 2;
    p.clock_ranks.push_back(std::move(e));
    p.max_uncertainty_us = std::max(p.max_uncertainty_us, *r.clock_offset_rtt_ns / 2000.0);
  }
  return p;
}

}  // namespace

Status RunSwimlaneForRun(const std::filesystem::path& run_dir,
                         const std::optional<std::filesystem::path>& output, bool verbose,
                         std::ostream& out, std::ostream& err) {
  std::error_code ec;
  if (!std::filesystem::is_directory(run_dir, ec)) {
    return NotFound("--run: " + run_dir.string() + " is not a directory (expected W/dfx_outputs)");
  }
  // rank<N>/d<K>/chip_swimlane_records.json, by rank then dispatch.
  std::map<int, std::map<int, std::filesystem::path>> files;
  for (const collectors::DispatchDir& d : collectors::ListDispatchDirs(run_dir)) {
    auto rec = run_dir / collectors::DispatchDirPath(d) / collectors::kSwimlaneRecordsFile;
    if (std::filesystem::is_regular_file(rec, ec)) files[d.rank][static_cast<int>(d.k)] = rec;
  }
  if (files.empty()) {
    return NotFound(
        fmt::format("no rank<N>/d<K>/{} under {}; run with --enable-chip-swimlane first",
                    collectors::kSwimlaneRecordsFile, run_dir.string()));
  }
  const ManifestPlacement placement =
      ReadManifestPlacement(run_dir / collectors::kRunManifestFile, err);
  const auto& starts = placement.starts;
  int64_t t0 = std::numeric_limits<int64_t>::max();
  for (const auto& [k, v] : starts) t0 = std::min(t0, v);
  std::filesystem::path out_path = output ? *output : run_dir / collectors::kRunSwimlaneFile;
  TraceWriter trace;
  DFX_RETURN_IF_ERROR(trace.Open(out_path));
  size_t dispatches = 0;
  for (const auto& [rank, disps] : files) {
    trace.PlaceProcesses(100 * (rank + 1), fmt::format("Rank {} · ", rank));
    double rank_cursor = 0.0;
    for (const auto& [k, path] : disps) {
      SwimlaneReadOptions read_options;
      read_options.stream_sched_phases = true;
      DFX_ASSIGN_OR_RETURN(SwimlaneRecords data, ReadSwimlaneRecords(path, read_options));
      std::string warn = UnmatchedWarning(data);
      if (!warn.empty()) err << path.string() << ": " << warn << "\n";
      auto it = starts.find({rank, k});
      const double ts_offset =
          it != starts.end() ? static_cast<double>(it->second - t0) / 1000.0 : rank_cursor;
      std::optional<TaskGraph> deps;
      auto deps_path = path.parent_path() / collectors::kDepsFile;
      if (std::filesystem::exists(deps_path, ec)) {
        auto loaded = ReadTaskGraph(deps_path);
        if (loaded.ok())
          deps = std::move(loaded).value();
        else
          err << "Warning: couldn't read " << deps_path.string() << ": "
              << loaded.status().message() << "\n";
      }
      collectors::NameMap names;
      auto maps = collectors::SiblingNameMaps(path.parent_path());
      if (maps.size() == 1) {
        auto loaded = collectors::ReadNameMap(maps[0]);
        if (loaded.ok()) names = std::move(loaded).value();
      }
      trace.PlaceDispatchAt(ts_offset);
      DispatchConverter conv(data, deps ? &*deps : nullptr, names, false, verbose, trace, err);
      DFX_RETURN_IF_ERROR(conv.Run());
      rank_cursor = std::max(rank_cursor, trace.max_ts() + 1.0);  // 1 µs gap between dispatches
      ++dispatches;
      if (verbose) out << "Merged " << path.string() << " at +" << trace.ts_offset() << " us\n";
    }
  }
  // How well the ranks line up: each dispatch is placed at its start on the
  // coordinator clock, and what one rank's clock says is known to within
  // half the best heartbeat round trip measured with it.
  Json metadata;
  metadata["clock_alignment"]["method"] =
      "dispatches placed at their start on the coordinator clock; each rank's agent clock offset "
      "from the heartbeat with the shortest round trip (good to +- half of it)";
  metadata["clock_alignment"]["ranks"] = placement.clock_ranks;
  metadata["clock_alignment"]["max_uncertainty_us"] = placement.max_uncertainty_us;
  const double shortest = trace.shortest_task_us();
  if (!placement.clock_ranks.empty() && shortest < placement.max_uncertainty_us) {
    err << fmt::format(
        "Warning: ranks are aligned only to within +- {:.1f} us (half the best heartbeat round "
        "trip, run_manifest.json ranks[].clock_offset_rtt_ns), longer than the shortest task "
        "drawn ({:.1f} us): do not read cross-rank order of tasks shorter than that\n",
        placement.max_uncertainty_us, shortest);
  }
  DFX_RETURN_IF_ERROR(trace.Finish(metadata));
  out << "Wrote " << out_path.string() << " (" << files.size() << " rank(s), " << dispatches
      << " dispatch(es), " << trace.slice_events() << " slices, " << trace.flow_events()
      << " flow events"
      << (starts.empty()
              ? fmt::format(", no {}: dispatches laid end to end", collectors::kRunManifestFile)
              : "")
      << ")\n";
  return Status::Ok();
}

}  // namespace dfx::view
