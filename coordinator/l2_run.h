// The L2 run (design.md §8): `dfx-coordinator run PROGRAM.json --work-dir W`
// runs one program on one local emulated chip by starting
// `dfx-rank-agent exec` (the coordinator never links the device), with the
// artifacts flat in W/dfx_outputs/. Onboard with swimlane runs the graph pass
// (best effort, its own process) and then the timing pass (spec §2.6).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "collectors/run_config.h"
#include "common/status.h"

namespace dfx::coordinator {

struct L2Options {
  std::filesystem::path program;
  collectors::RunConfig config;  // work_dir set
  std::filesystem::path agent_binary;
  std::vector<std::string> agent_args;  // extra exec flags (e.g. --virtual-clock)
  double timeout_s = 3600;              // per pass
};

struct L2Outcome {
  std::vector<std::string> artifacts;  // relative to W/dfx_outputs
};

// Runs the passes; prints nothing but the pass banners. Error: the program or
// the timing/single pass failed (message names the program and the reason).
Result<L2Outcome> RunL2(const L2Options& options);

}  // namespace dfx::coordinator
