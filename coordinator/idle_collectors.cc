#include "coordinator/idle_collectors.h"

#include <fmt/format.h>

#include <string_view>

#include "collectors/artifact_layout.h"
#include "config/pass_plan.h"

namespace dfx::coordinator {

namespace {

struct Collector {
  bool (*armed)(const config::RunConfig&);
  const char* file;     // its file in a dispatch's directory
  const char* nothing;  // what it found none of
};

constexpr Collector kCollectors[] = {
    {[](const config::RunConfig& c) { return c.enable_chip_swimlane > 0; },
     collectors::kSwimlaneRecordsFile, "chip swimlane: no task record"},
    {[](const config::RunConfig& c) { return c.enable_dump_args > 0; },
     collectors::kArgsDumpManifestFile, "args dump: no tensor tagged for dump"},
    {[](const config::RunConfig& c) { return c.enable_pmu > 0; }, collectors::kPmuFile,
     "PMU: no counter row"},
};

bool Wrote(const collectors::DispatchEntry& d, std::string_view file) {
  for (const collectors::ArtifactEntry& a : d.artifacts) {
    const std::string_view path = a.path;
    if (path == file || (path.size() > file.size() && path.ends_with(file) &&
                         path[path.size() - file.size() - 1] == '/')) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::vector<std::string> IdleCollectorLines(
    const std::vector<collectors::DispatchEntry>& dispatches, const config::RunConfig& config,
    bool l3) {
  const std::vector<config::PassPlan> passes = config::PlanPasses(config, l3);
  std::vector<std::string> lines;
  for (const Collector& c : kCollectors) {
    size_t armed = 0, idle = 0;
    for (const collectors::DispatchEntry& d : dispatches) {
      if (d.status != collectors::DispatchState::kOk) continue;
      for (const config::PassPlan& p : passes) {
        if (p.kind != d.pass || !c.armed(p.config)) continue;
        ++armed;
        if (!Wrote(d, c.file)) ++idle;
        break;
      }
    }
    if (idle > 0)
      lines.push_back(fmt::format("{} in {} of {} dispatch(es)", c.nothing, idle, armed));
  }
  return lines;
}

}  // namespace dfx::coordinator
