// Fuzz target: chip_swimlane_records.json, whose scheduler and orchestrator
// phases have two readers (collectors/swimlane/): the generic pull reader
// (ReadSchedPhase / ReadOrchPhase) and the fast pointer scan
// (sched_phase_scan.h), which reads a subset of JSON and hands anything
// else to the generic one. The records are read with the phases kept (the
// generic reader only) and streamed (the fast scan first), and every pass
// over the streamed phases (the first pass's see_sched_phase, the generic
// re-read, the fast re-read, the orchestrator streams) must give the same
// phases as the kept ones; both readings must succeed or both fail.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "collectors/swimlane/sched_phase_scan.h"
#include "collectors/swimlane/swimlane_reader.h"

namespace {

namespace fs = std::filesystem;
using dfx::collectors::OrchPhase;
using dfx::collectors::SchedPhase;
using dfx::collectors::SwimlaneRecords;

const fs::path& Dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("fuzz_swimlane_" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::atexit([] { fs::remove_all(Dir()); });
    return d;
  }();
  return dir;
}

using SchedList = std::vector<std::pair<size_t, SchedPhase>>;
using OrchList = std::vector<std::pair<size_t, OrchPhase>>;

auto Fields(const SchedPhase& p) {
  return std::tuple(p.kind, p.has_depths, p.shared_at_start[0], p.shared_at_start[1],
                    p.shared_at_start[2], p.shared_at_end[0], p.shared_at_end[1],
                    p.shared_at_end[2], p.loop_iter, p.tasks_processed, p.pop_hit, p.pop_miss,
                    p.task_id, p.start, p.end);
}
auto Fields(const OrchPhase& p) { return std::tuple(p.submit_idx, p.task_id, p.start, p.end); }

template <typename Phase>
bool Same(const std::vector<std::pair<size_t, Phase>>& a,
          const std::vector<std::pair<size_t, Phase>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first || Fields(a[i].second) != Fields(b[i].second)) return false;
  }
  return true;
}

void Fail(const char* what) {
  std::fprintf(stderr, "fuzz_swimlane: %s\n", what);
  std::abort();
}

SchedList SchedPhases(const SwimlaneRecords& d) {
  SchedList out;
  const auto status = d.ForEachSchedPhase([&](size_t t, const SchedPhase& p) {
    out.push_back({t, p});
  });
  if (!status.ok()) Fail("the generic pass over the scheduler phases failed after a good read");
  return out;
}

OrchList OrchPhases(const SwimlaneRecords& d) {
  OrchList out;
  const auto status = d.ForEachOrchPhase([&](size_t t, const OrchPhase& p) {
    out.push_back({t, p});
  });
  if (!status.ok()) Fail("the pass over the orchestrator phases failed after a good read");
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path path = Dir() / "chip_swimlane_records.json";
  {
    // A plain write: an atomic, synced write would be most of each run.
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out.flush()) std::abort();
  }
  // Kept: the generic reader alone.
  auto kept = dfx::collectors::ReadSwimlaneRecords(path);
  // Streamed: the fast scan, the generic reader for what it does not take.
  SchedList seen;
  dfx::collectors::SwimlaneReadOptions options;
  options.stream_sched_phases = true;
  options.stream_orch_phases = true;
  options.see_sched_phase = [&seen](size_t t, const SchedPhase& p) { seen.push_back({t, p}); };
  options.restart_sched_phases = [&seen] { seen.clear(); };
  auto streamed = dfx::collectors::ReadSwimlaneRecords(path, options);
  if (kept.ok() != streamed.ok()) {
    std::fprintf(stderr, "kept: %s\nstreamed: %s\n",
                 kept.ok() ? "ok" : kept.status().ToString().c_str(),
                 streamed.ok() ? "ok" : streamed.status().ToString().c_str());
    Fail("one reading succeeded, the other failed");
  }
  if (!kept.ok()) return 0;
  const SwimlaneRecords& a = *kept;
  const SwimlaneRecords& b = *streamed;
  if (a.base_cycles != b.base_cycles) Fail("the base times differ");
  if (a.num_sched_threads != b.num_sched_threads || a.num_sched_phases != b.num_sched_phases)
    Fail("the scheduler phase counts differ");
  const SchedList reference = SchedPhases(a);
  if (!Same(reference, seen)) Fail("the first pass saw other scheduler phases");
  if (!Same(reference, SchedPhases(b))) Fail("the generic re-read gave other scheduler phases");
  if (b.has_sched_phases) {
    SchedList fast;
    auto whole = dfx::collectors::FastForEachSchedPhase(b, [&fast](size_t t, const SchedPhase& p) {
      fast.push_back({t, p});
    });
    if (!whole.ok()) Fail("the fast re-read could not read the file");
    // Whole: every phase; otherwise the phases before the first byte it
    // does not take.
    if (*whole ? !Same(reference, fast)
               : fast.size() > reference.size() ||
                     !Same(SchedList(reference.begin(), reference.begin() + fast.size()), fast)) {
      Fail("the fast re-read gave other scheduler phases");
    }
  }
  if (a.NumOrchPools() != b.NumOrchPools() || a.HasOrchPhases() != b.HasOrchPhases())
    Fail("the orchestrator pool counts differ");
  if (a.orch_phases_sorted_by_task != b.orch_phases_sorted_by_task)
    Fail("the orchestrator phases' order differs");
  if (!Same(OrchPhases(a), OrchPhases(b))) Fail("the orchestrator phases differ");
  return 0;
}
