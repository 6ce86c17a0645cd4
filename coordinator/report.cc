#include "coordinator/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/subprocess.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;

std::string ViewCommand() {
  auto view = FindProjectBinary("dfx-view", "DFX_VIEW", {"../view"});
  if (!view.ok()) return "dfx-view";
  std::error_code ec;
  auto on_path = FindExecutable("dfx-view");
  if (on_path && fs::equivalent(*on_path, *view, ec)) return "dfx-view";
  return ShellQuote(view->string());
}

void PrintArtifacts(std::FILE* out, const fs::path& dfx_dir, std::vector<std::string> files,
                    const config::RunConfig& requested, const std::string& view) {
  const std::string text = FormatArtifacts(dfx_dir, std::move(files), requested, view);
  std::fputs(text.c_str(), out);
}

Status WriteArtifactsReadme(const fs::path& dfx_dir, std::vector<std::string> files,
                            const config::RunConfig& requested, const std::string& view) {
  std::string head;
  // The run report heads the listing: the one file to open.
  const auto report = std::find(files.begin(), files.end(), collectors::kRunReportFile);
  if (report != files.end()) {
    files.erase(report);
    head = fmt::format(
        "The run report, to open in a browser: {}\n  (written again by: {} "
        "report {})\n",
        ShellQuote((dfx_dir / collectors::kRunReportFile).string()), view,
        ShellQuote(dfx_dir.string()));
  }
  const size_t n = files.size();
  std::string text =
      head +
      fmt::format(
          "The artifacts of this run ({} file{}), by directory, each with the command that renders "
          "it.\nThe run summary: {} summary {}\n\n",
          n, n == 1 ? "" : "s", view, ShellQuote(dfx_dir.string()));
  // At L3 the run-level trace is written on demand (post_run.h SwimlaneTraces).
  const bool l3_records = std::any_of(files.begin(), files.end(), [](const std::string& f) {
    return collectors::DispatchDirOf(f).has_value() &&
           fs::path(f).filename() == collectors::kSwimlaneRecordsFile;
  });
  if (l3_records) {
    text.insert(text.size() - 1, fmt::format("The whole run in one trace: {} swimlane --run {}\n",
                                             view, ShellQuote(dfx_dir.string())));
  }
  text += FormatArtifacts(dfx_dir, std::move(files), requested, view);
  return WriteFileAtomic(dfx_dir / collectors::kArtifactsReadmeFile, text);
}

std::string FormatArtifacts(const fs::path& dfx_dir, std::vector<std::string> files,
                            const config::RunConfig& requested, const std::string& view) {
  std::string text;
  std::sort(files.begin(), files.end());
  // Group by dispatch directory ("" at L2, "rank0/d1" at L3).
  std::map<std::string, std::vector<std::string>> groups;
  for (const auto& f : files) {
    auto dir = collectors::DispatchDirOf(f);
    groups[dir ? collectors::DispatchDirPath(*dir) : std::string()].push_back(f);
  }
  for (const auto& [group, members] : groups) {
    fs::path dir = group.empty() ? dfx_dir : dfx_dir / group;
    text += fmt::format("artifacts in {}:\n", ShellQuote(dir.string()));
    std::vector<std::string> hints;
    bool dump_hinted = false;
    for (const auto& f : members) {
      const fs::path p = dfx_dir / f;
      const std::string q = ShellQuote(p.string());
      text += fmt::format("  {}\n", q);
      const std::string name = p.filename().string();
      if (name == collectors::kSwimlaneRecordsFile) {
        hints.push_back(fmt::format("swimlane:     {} swimlane {}", view, q));
      } else if (name == collectors::kDepsFile && requested.enable_dep_gen) {
        hints.push_back(fmt::format("task graph:   {} deps {}", view, q));
        hints.push_back(
            fmt::format("  as HTML:    {} deps {} --format html --engine sfdp   (engines: "
                        "dot|sfdp|fdp|neato|circo|twopi; dot up to ~500 nodes, sfdp for 10k+)",
                        view, q));
      } else if (p.parent_path().filename() == collectors::kArgsDumpDir && !dump_hinted) {
        dump_hinted = true;
        hints.push_back(
            fmt::format("args dump:    {} dump {}", view, ShellQuote(p.parent_path().string())));
      } else if (p.parent_path().filename() == collectors::kScopeStatsDir) {
        hints.push_back(fmt::format("scope stats:  {} scope-stats {}", view, q));
      } else if (name == collectors::kPmuFile) {
        hints.push_back(fmt::format("pmu counters: {}", q));
      } else if (collectors::IsMergedSwimlaneFileName(name)) {
        hints.push_back(fmt::format("merged trace: {}   (open in https://ui.perfetto.dev)", q));
      }
    }
    for (const auto& h : hints) text += fmt::format("  -> {}\n", h);
  }
  return text;
}

std::string MakespanSummary(const std::vector<collectors::DispatchEntry>& dispatches) {
  std::vector<uint64_t> makespans, walls;
  const collectors::DispatchEntry* longest = nullptr;
  uint64_t total = 0;
  for (const collectors::DispatchEntry& d : dispatches) {
    if (!d.makespan_ns || d.status != collectors::DispatchState::kOk) continue;
    makespans.push_back(*d.makespan_ns);
    total += *d.makespan_ns;
    if (d.agent_wall_ns) walls.push_back(*d.agent_wall_ns);
    if (!longest || *d.makespan_ns > *longest->makespan_ns) longest = &d;
  }
  if (makespans.empty()) return "";
  auto median = [](std::vector<uint64_t> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  std::string line = fmt::format(
      "makespan (chip clock, the emulator's own accounting): {} dispatch(es), median {:.3f} us, "
      "longest {:.3f} us (rank {} d{} {}), sum {:.3f} us",
      makespans.size(), median(makespans) / 1e3, *longest->makespan_ns / 1e3, longest->rank,
      longest->k, longest->program, total / 1e3);
  if (!walls.empty()) {
    line += fmt::format("; agent run wall median {:.3f} ms", median(walls) / 1e6);
  }
  return line + "\n";
}

}  // namespace dfx::coordinator
