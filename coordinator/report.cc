#include "coordinator/report.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <set>
#include <system_error>
#include <thread>

#include "common/file_util.h"

#include "common/subprocess.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;

void PrintArtifacts(std::FILE* out, const fs::path& dfx_dir, std::vector<std::string> files,
                    const config::RunConfig& requested) {
  std::sort(files.begin(), files.end());
  // Group by dispatch directory ("" at L2, "rank0/d1" at L3).
  std::map<std::string, std::vector<std::string>> groups;
  for (const auto& f : files) {
    std::string group;
    if (f.rfind("rank", 0) == 0) {
      size_t first = f.find('/');
      size_t second = first == std::string::npos ? first : f.find('/', first + 1);
      if (second != std::string::npos) group = f.substr(0, second);
    }
    groups[group].push_back(f);
  }
  for (const auto& [group, members] : groups) {
    fs::path dir = group.empty() ? dfx_dir : dfx_dir / group;
    std::fprintf(out, "artifacts in %s:\n", ShellQuote(dir.string()).c_str());
    std::vector<std::string> hints;
    bool dump_hinted = false;
    for (const auto& f : members) {
      const fs::path p = dfx_dir / f;
      const std::string q = ShellQuote(p.string());
      std::fprintf(out, "  %s\n", q.c_str());
      const std::string name = p.filename().string();
      if (name == "chip_swimlane_records.json") {
        hints.push_back(fmt::format("swimlane:     dfx-view swimlane {}", q));
      } else if (name == "deps.json" && requested.enable_dep_gen) {
        hints.push_back(fmt::format("task graph:   dfx-view deps {}", q));
        hints.push_back(
            fmt::format("  as HTML:    dfx-view deps {} --format html --engine sfdp   (engines: "
                        "dot|sfdp|fdp|neato|circo|twopi; dot up to ~500 nodes, sfdp for 10k+)",
                        q));
      } else if (f.find("args_dump/") != std::string::npos && !dump_hinted) {
        dump_hinted = true;
        hints.push_back(
            fmt::format("args dump:    dfx-view dump {}", ShellQuote(p.parent_path().string())));
      } else if (name == "scope_stats.jsonl") {
        hints.push_back(fmt::format("scope stats:  dfx-view scope-stats {}", q));
      } else if (name == "pmu.csv") {
        hints.push_back(fmt::format("pmu counters: {}", q));
      } else if (name.rfind("merged_swimlane_", 0) == 0) {
        hints.push_back(fmt::format("merged trace: {}   (open in https://ui.perfetto.dev)", q));
      }
    }
    for (const auto& h : hints) std::fprintf(out, "  -> %s\n", h.c_str());
  }
}

namespace {

std::string TraceTimestamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d_%H%M%S", &tm);
  return buf;
}

}  // namespace

std::vector<std::string> ConvertSwimlanes(std::FILE* out, const fs::path& dfx_dir,
                                          const std::vector<std::string>& files, double timeout_s) {
  std::vector<std::string> written;
  std::set<std::string> dirs;  // relative, "" at L2
  for (const auto& f : files) {
    fs::path p(f);
    if (p.filename() == "chip_swimlane_records.json") dirs.insert(p.parent_path().generic_string());
  }
  if (dirs.empty()) return written;
  auto view = FindProjectBinary("dfx-view", "DFX_VIEW", {"../view"});
  if (!view.ok()) {
    std::fprintf(out, "warning: no merged swimlane trace: %s; the raw records are kept\n",
                 view.status().message().c_str());
    return written;
  }
  const std::string stamp = TraceTimestamp();
  for (const std::string& rel_dir : dirs) {
    const fs::path dir = rel_dir.empty() ? dfx_dir : dfx_dir / rel_dir;
    const fs::path records = dir / "chip_swimlane_records.json";
    const std::string name = "merged_swimlane_" + stamp + ".json";
    std::vector<std::string> argv = {view->string(), "swimlane", records.string(), "-o",
                                     (dir / name).string()};
    // The name map: per dispatch at L3 (name_map.json), name_map_<case>.json at L2.
    std::error_code ec;
    fs::path name_map;
    if (fs::exists(dir / "name_map.json", ec)) {
      name_map = dir / "name_map.json";
    } else {
      for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string n = e.path().filename().string();
        if (n.rfind("name_map_", 0) == 0 && e.path().extension() == ".json") name_map = e.path();
      }
    }
    if (!name_map.empty()) {
      argv.push_back("--func-names");
      argv.push_back(name_map.string());
    }
    const std::string command = ShellCommand(argv);
    auto run = RunCaptured(argv, timeout_s);
    std::string why;
    if (!run.ok()) {
      why = run.status().message();
    } else if (run->timed_out) {
      why = fmt::format("it did not finish within {:g} s", timeout_s);
    } else if (run->exit_code != 0) {
      why = fmt::format("exit code {}", run->exit_code);
    }
    if (why.empty() && fs::exists(dir / name, ec)) {
      written.push_back(rel_dir.empty() ? name : rel_dir + "/" + name);
      continue;
    }
    if (why.empty()) why = "it wrote no trace";
    std::fprintf(out,
                 "warning: the swimlane converter failed for %s (%s); the raw records are kept. "
                 "Re-run: %s\n",
                 ShellQuote(records.string()).c_str(), why.c_str(), command.c_str());
    if (run.ok() && !run->output.empty()) std::fprintf(out, "%s", run->output.c_str());
  }
  return written;
}

}  // namespace dfx::coordinator
