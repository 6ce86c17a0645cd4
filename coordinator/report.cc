#include "coordinator/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "coordinator/process.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;

void PrintArtifacts(std::FILE* out, const fs::path& dfx_dir, std::vector<std::string> files,
                    const collectors::RunConfig& requested) {
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
      }
    }
    for (const auto& h : hints) std::fprintf(out, "  -> %s\n", h.c_str());
  }
}

std::vector<PassPlan> PlanPasses(const collectors::RunConfig& config, bool l3) {
  if (config.execution_mode == collectors::ExecutionMode::kOnboard &&
      config.enable_chip_swimlane > 0) {
    PassPlan graph{protocol::PassKind::kGraph, config};
    graph.config.enable_chip_swimlane = 0;
    graph.config.enable_dep_gen = true;
    graph.config.enable_pmu = 0;
    graph.config.enable_scope_stats = false;
    graph.config.enable_dump_args = 0;
    PassPlan timing{protocol::PassKind::kTiming, config};
    timing.config.enable_dep_gen = false;
    return {graph, timing};
  }
  PassPlan single{protocol::PassKind::kSingle, config};
  if (l3 && config.enable_chip_swimlane > 0) single.config.enable_dep_gen = true;
  return {single};
}

std::vector<std::string> RunConfigToFlags(const collectors::RunConfig& c) {
  std::vector<std::string> f = {"--backend-type", collectors::BackendTypeName(c.backend_type),
                                "--execution-mode",
                                collectors::ExecutionModeName(c.execution_mode)};
  if (c.enable_chip_swimlane > 0) {
    f.push_back("--chip-swimlane-level");
    f.push_back(std::to_string(c.enable_chip_swimlane));
  }
  if (c.enable_dep_gen) f.push_back("--enable-dep-gen");
  if (c.enable_dump_args > 0) f.push_back("--dump-args=" + std::to_string(c.enable_dump_args));
  if (c.enable_pmu > 0) f.push_back("--enable-pmu=" + std::to_string(c.enable_pmu));
  if (c.enable_scope_stats) f.push_back("--enable-scope-stats");
  if (c.save_kernels) f.push_back("--save-kernels");
  if (c.aicpu_thread_num > 0) {
    f.push_back("--aicpu-thread-num");
    f.push_back(std::to_string(c.aicpu_thread_num));
  }
  auto rings = [&](const char* flag, const std::array<uint64_t, 4>& v) {
    if (v == std::array<uint64_t, 4>{}) return;
    f.push_back(flag);
    f.push_back(fmt::format("{},{},{},{}", v[0], v[1], v[2], v[3]));
  };
  rings("--ring-task-window", c.rings.task_window);
  rings("--ring-heap", c.rings.heap);
  rings("--ring-dep-pool", c.rings.dep_pool);
  return f;
}

}  // namespace dfx::coordinator
