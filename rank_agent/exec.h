// The one-shot L2 run: one program, once, on one local chip, with
// the artifacts flat in an output directory (docs/design.md §8, last bullet).
// `dfx-coordinator run PROGRAM.json` starts this in a child process
// (`dfx-rank-agent exec`), so an L2 run is isolated like the reference's
// subprocess graph pass.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "config/pass_plan.h"
#include "config/run_config.h"
#include "device/chip.h"
#include "device/chip_factory.h"
#include "device/output_estimate.h"
#include "rank_agent/fault_injection.h"

namespace dfx::rank_agent {

struct ExecOptions {
  std::filesystem::path program_path;
  std::string program_origin;  // names the program in errors; empty = program_path
  // Every run first parses the program, validates the config and checks the
  // memory budget (device/memory_budget.h: the chip model's capacity and
  // this host's available memory) before a chip is made. check_only stops
  // there with an empty result (nothing is written), and checks the host's
  // memory only when check_host_memory.
  bool check_only = false;
  bool check_host_memory = false;
  // With check_only: fill ExecResult::estimate (device/output_estimate.h).
  bool estimate = false;
  std::filesystem::path output_dir;  // <work_dir>/dfx_outputs
  std::filesystem::path work_dir;    // names the L2 name map; empty = output_dir's parent
  config::RunConfig config;          // validated by the caller
  device::ChipOptions chip;
  device::ChipMaker make_chip = device::ChipMakerFor();  // how the chip is made
  // Which pass of the coordinator's plan this process runs (only the fault
  // injection reads it).
  config::PassKind pass = config::PassKind::kSingle;
  // Device-resident tensors persist here between the processes of one L2
  // run (<work_dir>/device_state/, in collectors::kDeviceStateFile); empty =
  // only for this process.
  std::filesystem::path device_state_dir;
  FaultInjection faults;  // tests only; set by main
};

struct ExecResult {
  std::vector<std::string> artifacts;  // relative to output_dir, sorted
  uint64_t tasks_executed = 0;
  uint64_t wall_ns = 0;               // host wall time of the chip's run
  uint64_t makespan_ns = 0;           // first dispatch to last retire, the chip's own accounting
  std::vector<std::string> warnings;  // advice from the chip (print, do not fail)
  std::optional<device::DispatchBytes> estimate;  // check_only with estimate
};

// Runs the program once through RunDispatch (run_dispatch.h) on a new chip:
// the L2 name map is name_map_<work_dir name>.json, the device memory lives
// in device_state_dir. A program or kernel error is returned as a Status
// naming the file.
Result<ExecResult> RunExec(const ExecOptions& options);

}  // namespace dfx::rank_agent
