#include "config/pass_plan.h"

#include "common/enum_text.h"

namespace dfx::config {

namespace {

constexpr auto kPassKindText = MakeEnumTable<PassKind>({
    {PassKind::kSingle, "single"},
    {PassKind::kGraph, "graph"},
    {PassKind::kTiming, "timing"},
});

}  // namespace

const char* PassKindName(PassKind pass) { return kPassKindText.Name(pass); }

std::optional<PassKind> ParsePassKind(std::string_view name) { return kPassKindText.Parse(name); }

std::vector<PassPlan> PlanPasses(const RunConfig& config, bool l3) {
  if (config.execution_mode == ExecutionMode::kOnboard && config.enable_chip_swimlane > 0) {
    PassPlan graph{PassKind::kGraph, config};
    graph.config.enable_chip_swimlane = 0;
    graph.config.enable_dep_gen = true;
    graph.config.enable_pmu = 0;
    graph.config.enable_scope_stats = false;
    graph.config.enable_dump_args = 0;
    PassPlan timing{PassKind::kTiming, config};
    timing.config.enable_dep_gen = false;
    return {graph, timing};
  }
  PassPlan single{PassKind::kSingle, config};
  if (l3 && config.enable_chip_swimlane > 0) single.config.enable_dep_gen = true;
  return {single};
}

}  // namespace dfx::config
