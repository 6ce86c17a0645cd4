#include "view/run_report_manifest.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>
#include <string>
#include <system_error>
#include <vector>

#include "collectors/artifact_layout.h"
#include "collectors/run_manifest.h"

namespace dfx::view {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxProblems = 200;

Json Us(double ns) { return std::round(ns / 100.0) / 10.0; }  // ns -> µs, 0.1 µs

bool IsRegularFile(const fs::path& p) {
  std::error_code ec;
  return fs::symlink_status(p, ec).type() == fs::file_type::regular;
}

// One bar of the host lane: a phase of one step, from the first rank's start
// to the last rank's end.
struct Bar {
  uint64_t from = UINT64_MAX, to = 0;
  int32_t last_rank = -1;
  void Add(uint64_t f, uint64_t t, int32_t rank) {
    if (t < f) return;
    from = std::min(from, f);
    if (t >= to) {
      to = t;
      last_rank = rank;
    }
  }
};

const std::vector<std::string> kPhases = {
    "launch → HELLO", "HELLO → READY", "sent → accepted", "run", "stream", "verify"};

Json HostLane(const collectors::RunManifest& m) {
  uint64_t t0 = m.launch_ns.value_or(UINT64_MAX);
  for (const auto& d : m.dispatches) t0 = std::min(t0, d.start_ns);
  std::map<std::string, std::map<int, Bar>> rows;  // label -> phase -> bar
  std::vector<std::string> order;
  auto row = [&](const std::string& label) -> std::map<int, Bar>& {
    if (!rows.count(label)) order.push_back(label);
    return rows[label];
  };
  for (const auto& r : m.ranks) {
    if (!r.hello_ns) continue;
    if (m.launch_ns) row("start-up")[0].Add(*m.launch_ns, *r.hello_ns, r.rank);
    if (r.ready_ns) row("start-up")[1].Add(*r.hello_ns, *r.ready_ns, r.rank);
  }
  std::map<uint32_t, std::vector<const collectors::DispatchEntry*>> steps;
  for (const auto& d : m.dispatches) {
    if (d.pass != config::PassKind::kGraph) steps[d.k].push_back(&d);
  }
  for (const auto& [k, ds] : steps) {
    auto& bars = row(fmt::format("d{}", k));
    for (const collectors::DispatchEntry* d : ds) {
      if (!d->accepted_ns) {
        bars[3].Add(d->start_ns, d->end_ns, d->rank);
        continue;
      }
      const uint64_t streaming = d->stream_ns.value_or(d->end_ns);
      bars[2].Add(d->start_ns, *d->accepted_ns, d->rank);
      bars[3].Add(*d->accepted_ns, streaming, d->rank);
      if (d->stream_ns) bars[4].Add(*d->stream_ns, d->end_ns, d->rank);
      if (d->verified_ns && *d->verified_ns > d->end_ns)
        bars[5].Add(d->end_ns, *d->verified_ns, d->rank);
    }
  }
  Json out = Json::object();
  out["phases"] = kPhases;
  Json rows_json = Json::array();
  for (const std::string& label : order) {
    Json bars = Json::array();
    for (const auto& [phase, b] : rows[label]) {
      if (b.last_rank < 0) continue;
      bars.push_back(Json{{"phase", phase},
                          {"from", Us(static_cast<double>(b.from - t0))},
                          {"to", Us(static_cast<double>(b.to - t0))},
                          {"rank", b.last_rank}});
    }
    rows_json.push_back(Json{{"label", label}, {"bars", std::move(bars)}});
  }
  out["rows"] = std::move(rows_json);
  out["note"] =
      "coordinator clock, µs from the launch; each bar runs from the first rank's start of the "
      "phase to the last rank's end (the rank named in the tooltip)";
  return out;
}

Json ClockJson(const collectors::RunManifest& m, size_t max_rows) {
  std::vector<const collectors::RankEntry*> ranks;
  for (const auto& r : m.ranks) {
    if (r.clock_offset_ns && r.clock_offset_rtt_ns) ranks.push_back(&r);
  }
  Json out = Json::object();
  out["measured"] = ranks.size();
  if (ranks.size() > max_rows) {
    std::stable_sort(ranks.begin(), ranks.end(), [](const auto* a, const auto* b) {
      return *a->clock_offset_rtt_ns > *b->clock_offset_rtt_ns;
    });
    ranks.resize(std::max<size_t>(8, max_rows / 4));
    std::sort(ranks.begin(), ranks.end(),
              [](const auto* a, const auto* b) { return a->rank < b->rank; });
    out["note"] = fmt::format("the {} ranks with the widest bounds of {} measured", ranks.size(),
                              out["measured"].get<size_t>());
  } else {
    out["note"] = fmt::format("every rank measured ({})", ranks.size());
  }
  Json list = Json::array();
  for (const auto* r : ranks) {
    list.push_back(Json{{"rank", r->rank},
                        {"host", r->host.value_or("")},
                        {"offset_us", Us(static_cast<double>(*r->clock_offset_ns))},
                        {"bound_us", Us(static_cast<double>(*r->clock_offset_rtt_ns) / 2.0)}});
  }
  out["ranks"] = std::move(list);
  return out;
}

Json CaptureJson(const collectors::RunManifest& m) {
  Json out = Json::object();
  out["run_status"] = collectors::RunStateName(m.status);
  std::map<std::string, int> dispatches, artifacts, files;
  Json problems = Json::array();
  size_t problem_count = 0;
  auto problem = [&](std::string what, const char* status, const std::string& why) {
    ++problem_count;
    if (problems.size() < kMaxProblems)
      problems.push_back(Json{{"what", std::move(what)}, {"status", status}, {"why", why}});
  };
  for (const auto& r : m.ranks) {
    if (r.status == collectors::RankState::kFailed || r.status == collectors::RankState::kWaiting)
      problem(fmt::format("rank {}", r.rank), collectors::RankStateName(r.status), r.error);
  }
  // Not captured by request: ran without collectors as asked, not missing.
  Json by_request = Json::array();
  size_t by_request_count = 0, captured_count = 0;
  for (const auto& d : m.dispatches) {
    if (!d.capture || d.pass == config::PassKind::kGraph) continue;
    if (d.capture->captured) {
      ++captured_count;
    } else if (++by_request_count <= kMaxProblems) {
      by_request.push_back(
          Json{{"what", fmt::format("rank {} d{}", d.rank, d.k)}, {"by", d.capture->by}});
    }
  }
  out["by_request"] = std::move(by_request);
  out["by_request_count"] = by_request_count;
  out["captured_count"] = captured_count;
  out["capture_changes"] = m.capture_changes.size();
  for (const auto& d : m.dispatches) {
    const std::string name =
        fmt::format("rank {} d{} ({} pass)", d.rank, d.k, config::PassKindName(d.pass));
    ++dispatches[collectors::DispatchStateName(d.status)];
    if (d.status != collectors::DispatchState::kOk)
      problem(name, collectors::DispatchStateName(d.status), d.error);
    for (const auto& a : d.artifacts) {
      ++artifacts[collectors::ArtifactStateName(a.status)];
      if (a.status == collectors::ArtifactState::kOk ||
          a.status == collectors::ArtifactState::kRecovered) {
        ++files[fs::path(a.path).filename().string()];
      } else {
        problem(a.path, collectors::ArtifactStateName(a.status), a.error);
      }
    }
  }
  out["dispatches"] = dispatches;
  out["artifacts"] = artifacts;
  out["files"] = files;
  out["problems"] = std::move(problems);
  out["problem_count"] = problem_count;
  out["run_config"] = collectors::RunManifestToJson(m).value("run_config", Json::object());
  return out;
}

}  // namespace

std::optional<fs::path> RunManifestFor(const fs::path& input) {
  const fs::path direct = input / collectors::kRunManifestFile;
  if (IsRegularFile(direct)) return direct;
  const fs::path abs = fs::absolute(input).lexically_normal();
  const fs::path dir = abs.has_filename() ? abs : abs.parent_path();
  if (collectors::ParseDispatchDirName(dir.filename().string()) &&
      dir.parent_path().filename().string().rfind("rank", 0) == 0) {
    const fs::path up = dir.parent_path().parent_path() / collectors::kRunManifestFile;
    if (IsRegularFile(up)) return up;
  }
  return std::nullopt;
}

fs::path ListedDispatchDir(const fs::path& input, int32_t rank, uint32_t k) {
  const fs::path dir = input / collectors::DispatchDirPath(rank, k);
  std::error_code ec;
  return fs::is_directory(dir, ec) ? dir : input;
}

void ManifestReportData(const RunSummary& s, size_t max_rows, std::ostream& err, Json& data) {
  Json capture = Json::object();
  Json no_records = Json::array();
  size_t without = 0;
  for (const DispatchSummary& d : s.dispatches) {
    if (d.has_records) continue;
    if (++without <= kMaxProblems) no_records.push_back(fmt::format("rank {} d{}", d.rank, d.k));
  }
  const auto path = RunManifestFor(s.input);
  std::optional<collectors::RunManifest> manifest;
  if (path) {
    auto read = collectors::ReadRunManifest(*path);
    if (read.ok()) {
      manifest = std::move(*read);
    } else {
      err << "Warning: couldn't read " << path->string() << ": " << read.status().message()
          << "; the report has no host lane, clock offsets or capture status\n";
    }
  }
  const std::string none =
      path ? fmt::format("{} could not be read", path->string())
           : fmt::format("no {} beside {} (an L2 run or a copied dispatch directory)",
                         collectors::kRunManifestFile, s.input.string());
  if (manifest) {
    data["host"] = HostLane(*manifest);
    data["clock"] = ClockJson(*manifest, max_rows);
    capture = CaptureJson(*manifest);
    data["manifest"] = path->string();
  } else {
    data["host"] = Json{{"rows", Json::array()}, {"phases", kPhases}, {"note", none}};
    data["clock"] = Json{{"ranks", Json::array()}, {"measured", 0}, {"note", none}};
    capture["note"] = none;
  }
  capture["no_records"] = std::move(no_records);
  capture["no_records_count"] = without;
  data["capture"] = std::move(capture);
}

}  // namespace dfx::view
