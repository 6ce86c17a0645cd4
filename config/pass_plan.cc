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
    return {{PassKind::kGraph, ArmForPass(PassKind::kGraph, config, l3)},
            {PassKind::kTiming, ArmForPass(PassKind::kTiming, config, l3)}};
  }
  return {{PassKind::kSingle, ArmForPass(PassKind::kSingle, config, l3)}};
}

RunConfig ArmForPass(PassKind kind, const RunConfig& config, bool l3) {
  RunConfig armed = config;
  switch (kind) {
    case PassKind::kGraph:
      armed.enable_chip_swimlane = 0;
      armed.enable_dep_gen = config.AnyDfx();
      armed.enable_pmu = 0;
      armed.enable_scope_stats = false;
      armed.enable_dump_args = 0;
      break;
    case PassKind::kTiming:
      armed.enable_dep_gen = false;
      break;
    case PassKind::kSingle:
      if (l3 && config.enable_chip_swimlane > 0) armed.enable_dep_gen = true;
      break;
  }
  return armed;
}

}  // namespace dfx::config
