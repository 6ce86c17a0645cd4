// One dispatch on one chip: the pipeline an L2 run (`dfx-rank-agent exec`,
// exec.h) and an L3 dispatch (the agent's chip worker, agent.h) share, so
// both do the same steps in the same order (docs/design.md §1 step 3):
//
//   1. parse the program (unless the caller kept it parsed) and check the
//      RunConfig (a bad one is refused);
//   2. on_accepted (the caller's hook: L3 clears a stale dispatch directory);
//   3. the injected graph-pass fault, if any (fault_injection.h);
//   4. device-resident tensors from the L2 state file, if one is given;
//   5. Chip::RunProgram, artifacts flat into output_dir;
//   6. after a successful run only: save the resident tensors, then write the
//      name map when swimlane or dep_gen is on (the reference writes it in
//      its post-processing, after the run);
//   7. list what is in output_dir (also after a failure: whatever the chip
//      wrote is exported, as the reference does).
//
// Callers: one thread per chip (Chip is not thread-safe).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectors/name_map.h"
#include "common/json.h"
#include "common/status.h"
#include "config/pass_plan.h"
#include "config/run_config.h"
#include "device/chip.h"
#include "device/program.h"
#include "rank_agent/fault_injection.h"

namespace dfx::rank_agent {

struct DispatchRequest {
  std::string program_json;  // the program (docs/design.md §6); up to 32 MiB: move it in
  // The program already parsed (the agent's ProgramCache): when set,
  // program_json is not read and step 1 only checks the RunConfig.
  std::shared_ptr<const device::Program> program;
  // The caller dispatches this program again (the agent keeps its programs):
  // the chip may keep what it derived from it (Chip::RunShared).
  bool program_kept = false;
  std::string program_origin;  // names it in errors: its file (L2) or plan name (L3)
  // The program file's base name for scope sites "<file>:<line>"; empty =
  // the base name of program_origin.
  std::string program_file;
  config::RunConfig config;  // refused unless it validates
  config::PassKind pass = config::PassKind::kSingle;
  std::filesystem::path output_dir;  // the artifacts, flat
  // The name map's file name in output_dir (collectors/artifact_layout.h:
  // L2NameMapFileName at L2, kDispatchNameMapFile at L3).
  std::string name_map_file;
  // The L2 device memory between processes (<work_dir>/device_state/
  // collectors::kDeviceStateFile): loaded before and saved after a successful run when the
  // program has resident tensors. Empty: the Chip keeps them (L3).
  std::filesystem::path resident_state_file;
  // Called once the program and config are accepted, before anything runs
  // or is written; an error fails the dispatch. May be empty.
  std::function<Status()> on_accepted;
  FaultInjection faults;
};

// Where a dispatch failed, for the caller's report.
enum class DispatchFailure {
  kNone,
  kRefused,  // step 1: the program or the config is bad (L3: DispatchStatus::kRejected)
  kRun,      // step 5: the chip's run (kernel error, ring deadlock, dump timeout, ...)
  kOther,    // steps 2-4 and 6: the hook, an injected fault, device state, the name map
};

struct DispatchOutcome {
  Status status;  // OK, or why the dispatch failed
  DispatchFailure failure = DispatchFailure::kNone;
  uint64_t tasks_executed = 0;
  uint64_t wall_ns = 0;
  uint64_t makespan_ns = 0;            // the chip's own accounting (device::DispatchResult)
  std::vector<std::string> warnings;   // advice from the chip (print, do not fail)
  std::vector<std::string> artifacts;  // every file in output_dir, relative, sorted
  // The parsed program (given or parsed here), for the caller to keep;
  // null when the program or the config was refused.
  std::shared_ptr<const device::Program> program;
};

DispatchOutcome RunDispatch(device::Chip& chip, const DispatchRequest& request);

// Whether a dispatch of `program` under `config` is small enough for an
// agent's event loop to run it itself, without handing it to the chip's
// worker thread and back (two thread wake-ups per dispatch): one block at
// most, no kernel that spins (busy), at most kInlineMaxTensorBytes of
// tensors, and no collectors (they write files). Such a run takes
// microseconds; the event loop neither receives nor heartbeats meanwhile.
inline constexpr uint64_t kInlineMaxTensorBytes = 1ull << 20;
bool RunsInline(const device::Program& program, const config::RunConfig& config);

// Step 1's reading of a program (RunDispatch's when the request has no
// parsed program): the program `text` holds, with its source lines; or why
// it was refused: a syntax error, else what `before_program` returns (when
// given and not Ok; RunDispatch checks the run config there), else the
// program's first error. `origin` and `file` as in DispatchRequest.
Result<std::shared_ptr<const device::Program>> ParseDispatchProgram(
    const std::string& text, const std::string& origin, const std::string& file,
    const std::function<Status()>& before_program = nullptr);

// The program's kernel names as a name map (docs/formats.md §3): func_id ->
// name, orchestrator_name = the program's name.
collectors::NameMap NameMapFor(const device::Program& program);

}  // namespace dfx::rank_agent
