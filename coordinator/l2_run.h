// The L2 run (docs/design.md §8): `dfx-coordinator run PROGRAM.json --work-dir W`
// runs one program on one local emulated chip by starting
// `dfx-rank-agent exec` (the coordinator never links the device), with the
// artifacts flat in W/dfx_outputs/. Onboard with swimlane runs the graph pass
// (best effort, its own process) and then the timing pass (docs/run-config.md §2.6).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "collectors/run_manifest.h"
#include "common/status.h"
#include "common/timeouts.h"
#include "config/run_config.h"
#include "protocol/agent_command_line.h"

namespace dfx::coordinator {

struct L2Options {
  std::filesystem::path program;
  // The program's text when `program` cannot be read again (a pipe, read
  // once by the caller): written to <work_dir>/.dfx_program.json for the
  // exec passes, which name `program` in errors, and removed after the run.
  std::optional<std::string> program_text;
  std::filesystem::path work_dir;  // artifacts in <work_dir>/dfx_outputs/
  config::RunConfig config;
  std::filesystem::path agent_binary;
  // What every `dfx-rank-agent exec` of the run shares (chip flags, the
  // args-dump drain model); RunL2 fills in the program, dirs, config, pass.
  protocol::AgentExecCommandLine agent;
  Timeouts timeouts;  // .dispatch bounds each pass, .convert the merged trace
  // After the run, a separate plain run (no DFX flags, fresh device state)
  // whose wall time is reported (`run --bench`).
  bool bench = false;
};

struct L2Outcome {
  std::vector<std::string> artifacts;  // relative to W/dfx_outputs
  bool two_pass = false;               // the workload ran twice (onboard swimlane)
  bool graph_pass_failed = false;
  std::optional<double> bench_wall_s;  // the plain run's wall time
  // The run manifest it wrote (docs/formats.md §16.1, level "L2").
  std::filesystem::path manifest_path;
  collectors::RunManifest manifest;
  // SIGINT / SIGTERM / SIGHUP stopped the run (its pass was ended, the
  // manifest says "interrupted"); 0: none.
  int stop_signal = 0;
};

// Runs the passes (each its own `exec` process; device-resident tensors
// persist between them in W/device_state/, reset at the start of the run),
// then converts the swimlane records into merged_swimlane_<ts>.json (onboard
// and sim; a converter failure is printed, not returned). Writes the run
// manifest as it goes (L2Manifest), failed runs included. Prints the pass
// banners and warnings. Error: the program or
// the timing/single pass failed (message names the program and the reason).
Result<L2Outcome> RunL2(const L2Options& options);

}  // namespace dfx::coordinator
