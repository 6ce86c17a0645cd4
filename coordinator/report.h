// What the coordinator prints after a run (design.md §10, spec §2.9): every
// artifact's path and the exact command that would render it. No renderer
// ever runs during a run. Paths are shell-quoted.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "collectors/run_config.h"
#include "protocol/messages.h"

namespace dfx::coordinator {

// Prints the artifacts under `dfx_dir` (paths relative to it, any order) with
// their render commands, grouped by directory. The deps hint is printed only
// when the user asked for dep_gen (spec §2.6).
void PrintArtifacts(std::FILE* out, const std::filesystem::path& dfx_dir,
                    std::vector<std::string> files, const collectors::RunConfig& requested);

// The passes a run makes (spec §2.6, §2.7): onboard with swimlane runs a graph
// pass (dep_gen only) then a timing pass (dep_gen off); otherwise one pass.
// At L3 a sim run with swimlane co-enables dep_gen.
struct PassPlan {
  protocol::PassKind kind = protocol::PassKind::kSingle;
  collectors::RunConfig config;
};
std::vector<PassPlan> PlanPasses(const collectors::RunConfig& config, bool l3);

// The DFX / run-config flags that reproduce `config` on a command line
// (the inverse of collectors::ParseRunConfigFlags, work_dir excluded).
std::vector<std::string> RunConfigToFlags(const collectors::RunConfig& config);

}  // namespace dfx::coordinator
