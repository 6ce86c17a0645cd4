#include "coordinator/session_outcome.h"

#include <fmt/format.h>

#include <algorithm>

#include "collectors/artifact_layout.h"
#include "coordinator/post_run.h"
#include "coordinator/report.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;
using collectors::ArtifactState;
using collectors::DispatchState;
using collectors::RankState;

namespace {

void AddOnce(std::vector<std::string>& list, const std::string& path) {
  if (std::find(list.begin(), list.end(), path) == list.end()) list.push_back(path);
}

}  // namespace

std::string FormatBytes(uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", b / double(1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.1f} MiB", b / double(1ull << 20));
  if (b >= 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

std::string ProgressLine(const DispatchScheduler& scheduler, uint64_t bytes_gathered) {
  // "12/16 ranks done, 40/48 dispatches, slowest r3 54%, 1.2 GiB gathered":
  // one short line whatever the number of ranks (the sink cuts it to the
  // terminal's width).
  int ranks_done = 0;
  uint64_t dispatches_done = 0, dispatches_total = 0;
  int slowest = -1;
  double slowest_fraction = 2.0;
  for (int r = 0; r < scheduler.num_ranks(); ++r) {
    const DispatchScheduler::RankProgress p = scheduler.Progress(r);
    dispatches_done += p.done;
    dispatches_total += p.total;
    double fraction = p.total == 0 ? 1.0 : static_cast<double>(p.done) / p.total;
    if (p.in_flight && p.tasks_total > 0 && p.total > 0) {
      fraction += static_cast<double>(p.tasks_done) / p.tasks_total / p.total;
    }
    if (p.done >= p.total || p.failed) {
      ++ranks_done;
    } else if (fraction < slowest_fraction) {
      slowest_fraction = fraction;
      slowest = r;
    }
  }
  std::string line = fmt::format("{}/{} ranks done, {}/{} dispatches", ranks_done,
                                 scheduler.num_ranks(), dispatches_done, dispatches_total);
  if (slowest >= 0) {
    // What the slowest rank is doing when it is not running tasks: its
    // agent loading (parsing, lowering) the program, or streaming artifacts.
    const DispatchScheduler::RankProgress p = scheduler.Progress(slowest);
    const char* doing = !p.in_flight             ? ""
                        : p.stage == "streaming" ? " streaming"
                        : p.tasks_total == 0     ? " loading"
                                                 : "";
    line += fmt::format(", slowest r{} {:.0f}%{}", slowest, 100 * slowest_fraction, doing);
  }
  line += fmt::format(", {} gathered", FormatBytes(bytes_gathered));
  return line;
}

SessionOutcome SummarizeSession(const DispatchScheduler& scheduler, const fs::path& outputs_dir,
                                const fs::path& record_dir, bool any_dfx, std::FILE* out) {
  SessionOutcome outcome;
  bool ok = true;
  for (const collectors::RankEntry& r : scheduler.ranks()) {
    if (r.status != RankState::kOk) {
      ok = false;
      outcome.summary += fmt::format("rank {} failed: {}\n", r.rank, r.error);
    }
  }
  for (const collectors::DispatchEntry& d : scheduler.dispatches()) {
    if (d.status == DispatchState::kFailed && d.pass == config::PassKind::kGraph) {
      // Best effort (docs/run-config.md): the timing pass still ran; the lanes
      // of this dispatch fall back to anonymous task(rXtY).
      std::fprintf(
          out, "%s\n",
          GraphPassWarning(
              fmt::format("rank {} d{} ({})", d.rank, d.k, d.program), d.error,
              outputs_dir / collectors::DispatchDirPath(d.rank, d.k) / collectors::kDepsFile)
              .c_str());
    } else if (d.status != DispatchState::kOk) {
      ok = false;
      if (d.status == DispatchState::kFailed) {
        outcome.summary +=
            fmt::format("rank {} d{} ({}) failed: {}\n", d.rank, d.k, d.program, d.error);
      }
    }
    for (const collectors::ArtifactEntry& a : d.artifacts) {
      if (a.status == ArtifactState::kOk) {
        AddOnce(outcome.artifacts, a.path);
      } else {
        ok = false;
        outcome.summary += fmt::format("artifact {} missing: {}\n", a.path, a.error);
      }
    }
  }
  outcome.success = ok;
  outcome.makespan = MakespanSummary(scheduler.dispatches());
  if (any_dfx) {
    for (const collectors::DispatchEntry& d : scheduler.dispatches()) {
      // A dispatch never sent has no program file of this run (one there is
      // an earlier run's).
      if (d.status == DispatchState::kNotRun) continue;
      const std::string rel =
          collectors::DispatchDirPath(d.rank, d.k) + "/" + collectors::kDispatchProgramFile;
      if (fs::exists(record_dir / rel)) AddOnce(outcome.artifacts, rel);
    }
  }
  return outcome;
}

}  // namespace dfx::coordinator
