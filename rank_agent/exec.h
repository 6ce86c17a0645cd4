// The one-shot L2 run: one program, once, on one local emulated chip, with
// the artifacts flat in an output directory (design.md §8, last bullet).
// `dfx-coordinator run PROGRAM.json` starts this in a child process
// (`dfx-rank-agent exec`), so an L2 run is isolated like the reference's
// subprocess graph pass.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "collectors/name_map.h"
#include "collectors/recorders.h"
#include "common/status.h"
#include "config/run_config.h"
#include "device/chip.h"
#include "device/program.h"

namespace dfx::rank_agent {

struct ExecOptions {
  std::filesystem::path program_path;
  std::filesystem::path output_dir;  // <work_dir>/dfx_outputs
  std::filesystem::path work_dir;    // names the L2 name map; empty = output_dir's parent
  config::RunConfig config;          // validated by the caller
  device::ChipOptions chip;
  // "single", "graph" or "timing" (which pass of the coordinator's plan this
  // process runs; only the fault injection below reads it).
  std::string pass = "single";
  // Device-resident tensors persist here between the processes of one L2
  // run (<work_dir>/device_state/); empty = only for this process.
  std::filesystem::path device_state_dir;
};

struct ExecResult {
  std::vector<std::string> artifacts;  // relative to output_dir, sorted
  uint64_t tasks_executed = 0;
  std::vector<std::string> warnings;  // advice from the chip (print, do not fail)
};

// Fault injection for the best-effort graph pass (documented in the README):
// with DFX_FAULT_GRAPH_PASS=1 in the environment a graph pass fails before it
// runs, at L2 (`exec --pass graph`) and at L3 (the agent's dispatch path).
// Returns OK for every other pass or when the variable is unset.
Status GraphPassFault(bool graph_pass);

// The L2 state file of the device-resident tensors inside `device_state_dir`.
std::filesystem::path ResidentStateFile(const std::filesystem::path& device_state_dir);

// Loads the program, runs it, writes the L2 name map
// (name_map_<work_dir name>.json, only when swimlane or dep_gen is on).
// A program or kernel error is returned as a Status naming the file.
Result<ExecResult> RunExec(const ExecOptions& options);

// The program's kernel names as a name map (artifacts.md §3): func_id ->
// name, orchestrator_name = the program's name.
collectors::NameMap NameMapFor(const device::Program& program);

}  // namespace dfx::rank_agent
