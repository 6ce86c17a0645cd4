// The DFX pass protocol (docs/run-config.md §2.6, §2.7: an onboard swimlane
// run runs the workload twice): which passes a RunConfig makes and
// what each pass arms. One owner for L2 and L3; pure functions, any thread.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "config/run_config.h"

namespace dfx::config {

// Which pass of the protocol a dispatch belongs to.
enum class PassKind : uint8_t {
  kSingle = 0,  // sim, or onboard without swimlane: one pass with the flags as given
  kGraph = 1,   // onboard graph pass: dep_gen only (best effort)
  kTiming = 2,  // onboard timing pass: dep_gen forced off
};
const char* PassKindName(PassKind pass);  // "single" | "graph" | "timing"
std::optional<PassKind> ParsePassKind(std::string_view name);

struct PassPlan {
  PassKind kind = PassKind::kSingle;
  RunConfig config;  // what this pass arms
};

// Onboard with swimlane runs a graph pass (dep_gen only) and then a timing
// pass (dep_gen off); otherwise one pass. At L3 a sim run with the swimlane
// co-enables dep_gen (the reference does, so the lanes get kernel names).
std::vector<PassPlan> PlanPasses(const RunConfig& config, bool l3);

// What pass `kind` arms of `config` (the same rules as PlanPasses): a
// dispatch's own configuration (a plan step's, a capture change's) in the
// passes the run's configuration made. A config without a collector arms
// none in any pass.
RunConfig ArmForPass(PassKind kind, const RunConfig& config, bool l3);

}  // namespace dfx::config
