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
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <set>

#include "collectors/artifact_layout.h"
#include "collectors/dep_gen/deps_reader.h"
#include "collectors/name_map.h"
#include "collectors/run_manifest.h"
#include "collectors/swimlane/swimlane_reader.h"
#include "view/dispatch_converter.h"
#include "view/run_inputs.h"
#include "view/trace_writer.h"

namespace dfx::view {

using collectors::ReadSwimlaneRecords;
using collectors::ReadTaskGraph;
using collectors::SwimlaneReadOptions;
using collectors::SwimlaneRecords;
using collectors::TaskGraph;
using collectors::UnmatchedWarning;

namespace {

// What the run manifest says about placement and the run itself.
struct ManifestInfo {
  // (rank, k) -> the timing (or single) pass's record, without its artifacts:
  // the program, and on the coordinator clock when it was sent (its place on
  // the timeline), accepted, streamed, done and verified (the host lane).
  std::map<std::pair<int, int>, collectors::DispatchEntry> dispatches;
  std::map<int, collectors::RankEntry> ranks;  // each rank's start-up (the host lane)
  std::optional<uint64_t> launch_ns;
  Json metadata;  // the trace's top-level "metadata"
  // Each rank's clock offset with its round-trip bound.
  Json clock_ranks = Json::array();
  double max_uncertainty_us = 0;  // half the worst rank's best round trip
};

// Reads the run manifest (empty without one; a warning when it cannot be read).
ManifestInfo ReadManifestInfo(const std::filesystem::path& path, std::ostream& err) {
  ManifestInfo info;
  auto manifest = collectors::ReadRunManifest(path);
  if (!manifest.ok()) {
    if (manifest.status().code() != Code::kNotFound) {
      err << "Warning: couldn't read " << path.string() << ": " << manifest.status().message()
          << "\n";
    }
    return info;
  }
  for (const collectors::DispatchEntry& d : manifest->dispatches) {
    if (d.pass == config::PassKind::kGraph) continue;
    collectors::DispatchEntry& entry = info.dispatches[{d.rank, static_cast<int>(d.k)}];
    entry = d;
    entry.artifacts.clear();
  }
  for (const collectors::RankEntry& r : manifest->ranks) info.ranks[r.rank] = r;
  info.launch_ns = manifest->launch_ns;
  const Json full = collectors::RunManifestToJson(*manifest);
  Json m = Json::object();
  m["session"] = full.value("session", Json());
  m["plan"] = manifest->plan;
  m["launcher"] = manifest->launcher;
  m["run_config"] = full.value("run_config", Json());
  Json ranks = Json::object();
  for (const collectors::RankEntry& r : manifest->ranks) {
    Json e = Json::object();
    e["host"] = r.host ? Json(*r.host) : Json(nullptr);
    e["clock_offset_ns"] = r.clock_offset_ns ? Json(*r.clock_offset_ns) : Json(nullptr);
    e["clock_offset_rtt_ns"] = r.clock_offset_rtt_ns ? Json(*r.clock_offset_rtt_ns) : Json(nullptr);
    ranks[std::to_string(r.rank)] = std::move(e);
    if (!r.clock_offset_ns || !r.clock_offset_rtt_ns) continue;
    Json c;
    c["rank"] = r.rank;
    c["host"] = r.host ? Json(*r.host) : Json();
    c["clock_offset_ns"] = *r.clock_offset_ns;
    c["round_trip_ns"] = *r.clock_offset_rtt_ns;
    c["uncertainty_ns"] = *r.clock_offset_rtt_ns / 2;
    info.clock_ranks.push_back(std::move(c));
    info.max_uncertainty_us = std::max(info.max_uncertainty_us, *r.clock_offset_rtt_ns / 2000.0);
  }
  m["ranks"] = std::move(ranks);
  m["time_zero"] = "the earliest dispatch sent, coordinator clock";
  info.metadata = std::move(m);
  return info;
}

std::string HumanBytes(uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", b / double(1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.1f} MiB", b / double(1ull << 20));
  return fmt::format("{:.1f} KiB", b / 1024.0);
}

// What a dispatch bar names in its args: the rank, and the dispatch and
// its program when it stands for one.
struct BarArgs {
  int rank;
  std::optional<int> dispatch;
  std::optional<std::string> program;
};

// A slice on the rank's "Dispatches" lane or the coordinator's host lane.
void DispatchBar(TraceWriter& trace, int pid, int tid, double ts, double dur,
                 const std::string& name, const BarArgs& args) {
  trace.Event('X', "dispatch", [&](auto& e) {
    e.At(trace.Pid(pid), tid, trace.T(ts)).Dur(std::max(dur, 0.02)).NameText(name);
    e.Int("rank", args.rank);
    if (args.dispatch) e.Int("dispatch", *args.dispatch);
    if (args.program) e.Text("program", *args.program);
  });
  trace.CountSlice();
}

}  // namespace

Status ParseWindow(const std::string& text, TraceFilter* filter) {
  const size_t colon = text.find(':');
  auto bad = [&] {
    return InvalidArgument(fmt::format(
        "--window {}: expected T0:T1 in µs from the start of the trace (e.g. 0:500, :500 or "
        "1000:), T0 < T1",
        text));
  };
  if (colon == std::string::npos || text.find(':', colon + 1) != std::string::npos) return bad();
  auto parse = [](const std::string& part, double fallback, double* v) {
    if (part.empty()) {
      *v = fallback;
      return true;
    }
    char* end = nullptr;
    *v = std::strtod(part.c_str(), &end);
    return *end == '\0' && std::isfinite(*v);
  };
  double t0 = 0, t1 = 0;
  if (!parse(text.substr(0, colon), -std::numeric_limits<double>::infinity(), &t0) ||
      !parse(text.substr(colon + 1), std::numeric_limits<double>::infinity(), &t1) || !(t0 < t1)) {
    return bad();
  }
  filter->window_start = t0;
  filter->window_end = t1;
  return Status::Ok();
}

Status ParseIndexList(const std::string& flag, const std::string& text, std::set<uint32_t>* out) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string part = text.substr(start, comma - start);
    char* end = nullptr;
    const unsigned long v = std::strtoul(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || part[0] == '-' || v > 1u << 24) {
      return InvalidArgument(fmt::format(
          "{} {}: expected a comma-separated list of numbers, e.g. 0,2 (bad item \"{}\")", flag,
          text, part));
    }
    out->insert(static_cast<uint32_t>(v));
    start = comma + 1;
  }
  return Status::Ok();
}

namespace {

// rank<N>/d<K>/chip_swimlane_records.json, by rank then dispatch.
using RecordsFiles = std::map<int, std::map<int, std::filesystem::path>>;

// The records files of the run that --ranks and --dispatch select; an
// error naming the directory when there are none.
Result<RecordsFiles> SelectRecords(const RunTimelineOptions& options) {
  const std::filesystem::path& run_dir = options.run_dir;
  std::error_code ec;
  if (!std::filesystem::is_directory(run_dir, ec)) {
    return NotFound("--run: " + run_dir.string() + " is not a directory (expected W/dfx_outputs)");
  }
  RecordsFiles files;
  size_t listed = 0;
  for (const collectors::DispatchDir& d : collectors::ListDispatchDirs(run_dir)) {
    auto rec = run_dir / collectors::DispatchDirPath(d) / collectors::kSwimlaneRecordsFile;
    if (!std::filesystem::is_regular_file(rec, ec)) continue;
    ++listed;
    if (!options.ranks.empty() && !options.ranks.count(d.rank)) continue;
    if (!options.dispatches.empty() && !options.dispatches.count(d.k)) continue;
    files[d.rank][static_cast<int>(d.k)] = rec;
  }
  if (listed == 0) {
    if (std::filesystem::is_regular_file(run_dir / collectors::kSwimlaneRecordsFile, ec)) {
      return InvalidArgument(fmt::format(
          "--run {}: this is one dispatch's directory (an L2 run or one rank<N>/d<K>), not a "
          "run with rank<N>/d<K>/ directories; convert it with `dfx-view swimlane {}`",
          run_dir.string(), (run_dir / collectors::kSwimlaneRecordsFile).string()));
    }
    return NotFound(
        fmt::format("no rank<N>/d<K>/{} under {}; run with --enable-chip-swimlane first",
                    collectors::kSwimlaneRecordsFile, run_dir.string()));
  }
  if (files.empty()) {
    return NotFound(
        fmt::format("--ranks / --dispatch select none of the {} dispatch(es) with records under {}",
                    listed, run_dir.string()));
  }
  return files;
}

// Time zero of the trace (ns, coordinator clock): the earliest dispatch
// sent; with the launch on record, the launch, so the host lane shows the
// start-up (launch, HELLO, READY) before the first dispatch.
int64_t TimeZero(const ManifestInfo& info) {
  int64_t t0 = std::numeric_limits<int64_t>::max();
  for (const auto& [key, d] : info.dispatches) {
    t0 = std::min(t0, static_cast<int64_t>(d.start_ns));
  }
  if (info.launch_ns && !info.dispatches.empty()) {
    t0 = std::min(t0, static_cast<int64_t>(*info.launch_ns));
  }
  return t0;
}

// Merges the dispatches of a run into one trace, in rank then dispatch order.
class RunMerger {
 public:
  RunMerger(const RunTimelineOptions& options, const ManifestInfo& info, int64_t t0,
            const std::filesystem::path& out_path, TraceWriter& trace, std::ostream& out,
            std::ostream& err)
      : options_(options),
        info_(info),
        t0_(t0),
        out_path_(out_path),
        trace_(trace),
        out_(out),
        err_(err) {}

  // Every dispatch of `files`, each rank in its own pid range.
  Status MergeAll(const RecordsFiles& files) {
    for (const auto& [rank, disps] : files) {
      trace_.PlaceProcesses(100 * (rank + 1), fmt::format("Rank {} · ", rank));
      double rank_cursor = 0.0;  // without a manifest start: after the rank's last dispatch
      for (const auto& [k, path] : disps) {
        DFX_RETURN_IF_ERROR(Merge(rank, k, path, &rank_cursor));
      }
    }
    return Status::Ok();
  }
  size_t dispatches() const { return dispatches_; }
  // The latest end drawn on any rank (µs from the trace's time zero).
  double run_end_us() const { return run_end_us_; }

 private:
  Status Merge(int rank, int k, const std::filesystem::path& path, double* rank_cursor);

  const RunTimelineOptions& options_;
  const ManifestInfo& info_;
  const int64_t t0_;
  const std::filesystem::path& out_path_;
  TraceWriter& trace_;
  std::ostream& out_;
  std::ostream& err_;
  size_t dispatches_ = 0;
  double run_end_us_ = 0.0;
  bool warned_ = false;
};

// One dispatch: its views at its start on the run's clock, then its bar on
// the rank's "Dispatches" lane.
Status RunMerger::Merge(int rank, int k, const std::filesystem::path& path, double* rank_cursor) {
  SwimlaneReadOptions read_options;
  read_options.stream_sched_phases = true;
  read_options.stream_orch_phases = true;
  SchedPhaseDigest digest;
  digest.Attach(&read_options);
  DFX_ASSIGN_OR_RETURN(SwimlaneRecords data, ReadSwimlaneRecords(path, read_options));
  std::string warn = UnmatchedWarning(data);
  if (!warn.empty()) err_ << path.string() << ": " << warn << "\n";
  auto it = info_.dispatches.find({rank, k});
  const bool placed = it != info_.dispatches.end();
  const double ts_offset =
      placed ? static_cast<double>(static_cast<int64_t>(it->second.start_ns) - t0_) / 1000.0
             : *rank_cursor;
  std::optional<TaskGraph> deps =
      LoadDepsIfPresent(path.parent_path() / collectors::kDepsFile, err_);
  DFX_ASSIGN_OR_RETURN(collectors::NameMap names,
                       LoadNameMapFor(path.parent_path(), std::nullopt, path.string(), err_));
  // The rank's processes are named for the rank, not for whichever
  // program's orchestrator came first; the program is on the dispatch bar.
  names.orchestrator_name.reset();
  trace_.PlaceDispatchAt(ts_offset);
  DispatchConverter conv(data, deps ? &*deps : nullptr, names, false, options_.verbose, trace_,
                         err_, &digest);
  DFX_RETURN_IF_ERROR(conv.Run());
  // The boundary of the dispatch on the rank's own lane: "d<K>: <program>".
  const double extent = trace_.max_ts() - ts_offset;
  run_end_us_ = std::max(run_end_us_, trace_.max_ts());
  const std::string program = placed ? it->second.program : "?";
  trace_.ProcessName(0, "Dispatches", 0);
  trace_.ThreadName(0, 1, "dispatches");
  DispatchBar(trace_, 0, 1, 0.0, extent, fmt::format("d{}: {}", k, program),
              BarArgs{rank, k, program});
  *rank_cursor = std::max(*rank_cursor, trace_.max_ts() + 1.0);  // 1 µs gap between dispatches
  ++dispatches_;
  if (options_.verbose) {
    out_ << "Merged " << path.string() << " at +" << trace_.ts_offset() << " us\n";
  }
  if (!warned_ && trace_.bytes_pending() > options_.warn_bytes) {
    warned_ = true;
    err_ << fmt::format(
        "Warning: the trace has passed {} (at rank {} d{}); a browser will struggle to open "
        "it. Cut it with --ranks R,.. / --dispatch K,.. / --window T0:T1 (µs) / --no-flows, "
        "or write it compressed with -o {}.gz{}\n",
        HumanBytes(trace_.bytes_pending()), rank, k, out_path_.filename().string(),
        options_.format == TraceFormat::kJson
            ? " or as a Perfetto protobuf trace (--format proto, about a third of the bytes)"
            : "");
  }
  return Status::Ok();
}

// Why a dispatch of the manifest has no records file: "not captured (by
// request: ...)" when its collectors were off because someone asked so,
// "captured without the swimlane" when its capture had no swimlane,
// "missing (no records)" when it should have some; "" when the manifest
// does not say (no capture entry) or the dispatch never ran.
std::string NoRecordsReason(const collectors::DispatchEntry& d) {
  if (!d.capture || d.start_ns == 0) return "";
  if (!d.capture->captured) return "not captured (by request: " + d.capture->by + ")";
  if (d.capture->collectors.enable_chip_swimlane == 0) return "captured without the swimlane";
  return fmt::format("missing (no records; dispatch {})", collectors::DispatchStateName(d.status));
}

// The coordinator's own lane, one thread per rank: its agent's start-up
// (launch → HELLO → READY) and each dispatch's orchestration (sent →
// accepted, run, stream, verify), so that cost shows beside the chips. A
// manifest without those times gives one "sent → done" slice.
void EmitHostLane(TraceWriter& trace, const ManifestInfo& info, const RecordsFiles& files,
                  int64_t t0) {
  trace.PlaceProcesses(0, "");
  trace.PlaceDispatchAt(0.0);
  trace.ProcessName(99, "Coordinator (host)", 0);
  auto us = [&](uint64_t ns) {
    return static_cast<double>(static_cast<int64_t>(ns) - t0) / 1000.0;
  };
  auto slice = [&](int tid, uint64_t from, uint64_t to, const std::string& name,
                   const BarArgs& args) {
    if (to < from) return;
    DispatchBar(trace, 99, tid, us(from), static_cast<double>(to - from) / 1000.0, name, args);
  };
  std::set<int> named;
  for (const auto& [key, d] : info.dispatches) {
    const auto [rank, k] = key;
    const bool has_records = files.count(rank) && files.at(rank).count(k);
    // Without records: "not captured (by request)" or "missing", one slice.
    const std::string no_records = has_records ? std::string() : NoRecordsReason(d);
    if (!has_records && no_records.empty()) continue;
    const int tid = 1 + rank;
    if (named.insert(rank).second) {
      trace.ThreadName(99, tid, fmt::format("rank {}", rank));
      auto r = info.ranks.find(rank);
      const BarArgs args{rank, std::nullopt, std::nullopt};
      if (r != info.ranks.end() && r->second.hello_ns) {
        if (info.launch_ns) {
          slice(tid, *info.launch_ns, *r->second.hello_ns,
                fmt::format("rank {}: launch → HELLO", rank), args);
        }
        if (r->second.ready_ns) {
          slice(tid, *r->second.hello_ns, *r->second.ready_ns,
                fmt::format("rank {}: HELLO → READY", rank), args);
        }
      }
    }
    const std::string what = fmt::format("d{} {}", k, d.program);
    const BarArgs args{rank, k, std::nullopt};
    const uint64_t sent = d.start_ns, end = d.end_ns;
    if (!no_records.empty()) {
      slice(tid, sent, std::max(sent, end), what + ": " + no_records, args);
      continue;
    }
    if (!d.accepted_ns) {
      slice(tid, sent, end, what + ": sent → done", args);
      continue;
    }
    const uint64_t accepted = *d.accepted_ns;
    const uint64_t streaming = d.stream_ns ? *d.stream_ns : end;
    slice(tid, sent, accepted, what + ": sent → accepted", args);
    slice(tid, accepted, streaming, what + ": run", args);
    if (d.stream_ns) slice(tid, *d.stream_ns, end, what + ": stream", args);
    if (d.verified_ns && *d.verified_ns > end)
      slice(tid, end, *d.verified_ns, what + ": verify", args);
  }
}

}  // namespace

Status RunSwimlaneForRun(const RunTimelineOptions& options, std::ostream& out, std::ostream& err) {
  DFX_ASSIGN_OR_RETURN(RecordsFiles files, SelectRecords(options));
  const std::filesystem::path& run_dir = options.run_dir;
  ManifestInfo info = ReadManifestInfo(run_dir / collectors::kRunManifestFile, err);
  const int64_t t0 = TimeZero(info);
  std::filesystem::path out_path =
      options.output ? *options.output
                     : DefaultTracePath(run_dir / collectors::kRunSwimlaneFile, options.format);
  TraceWriter trace;
  DFX_RETURN_IF_ERROR(trace.Open(out_path, options.filter, options.format));
  RunMerger merger(options, info, t0, out_path, trace, out, err);
  DFX_RETURN_IF_ERROR(merger.MergeAll(files));
  if (!info.dispatches.empty()) EmitHostLane(trace, info, files, t0);
  // How well the ranks line up: each dispatch is placed at its start on the
  // coordinator clock, and what one rank's clock says is known to within
  // half the best heartbeat round trip measured with it.
  Json metadata = info.metadata.is_null() ? Json::object() : info.metadata;
  metadata["clock_alignment"]["method"] =
      "dispatches placed at their start on the coordinator clock; each rank's agent clock offset "
      "from the heartbeat with the shortest round trip (good to +- half of it)";
  metadata["clock_alignment"]["ranks"] = info.clock_ranks;
  metadata["clock_alignment"]["max_uncertainty_us"] = info.max_uncertainty_us;
  // The rule (ClockBoundMatters; README "Reading a run trace across ranks"):
  // warned when the bound could move a rank against the others by a
  // visible share of the run drawn, not whenever a task is shorter than it
  // (1 µs kernels are normal; no loopback round trip orders them).
  const double span = merger.run_end_us();
  metadata["clock_alignment"]["trace_span_us"] = span;
  metadata["clock_alignment"]["warned_above_us"] = kClockBoundShareOfRun * span;
  if (!info.clock_ranks.empty() && ClockBoundMatters(info.max_uncertainty_us, span, files.size())) {
    err << fmt::format(
        "Warning: ranks are aligned only to within +- {:.1f} us (half the best heartbeat round "
        "trip, run_manifest.json ranks[].clock_offset_rtt_ns), more than {:.0f}% of the {:.1f} us "
        "the trace spans: where one rank runs against another may be off by that much; compare "
        "spans (dfx-view summary), not positions\n",
        info.max_uncertainty_us, kClockBoundShareOfRun * 100, span);
  }
  DFX_RETURN_IF_ERROR(trace.Finish(metadata));
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(out_path, ec);
  out << "Wrote " << out_path.string() << " (" << HumanBytes(size) << ", " << files.size()
      << " rank(s), " << merger.dispatches() << " dispatch(es), " << trace.slice_events()
      << " slices, " << trace.flow_events() << " flow events"
      << (info.dispatches.empty()
              ? fmt::format(", no {}: dispatches laid end to end", collectors::kRunManifestFile)
              : "")
      << ")\n";
  return Status::Ok();
}

}  // namespace dfx::view
