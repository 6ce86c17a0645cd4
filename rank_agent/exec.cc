#include "rank_agent/exec.h"

#include <fmt/format.h>

#include <algorithm>
#include <system_error>

#include "collectors/artifact_layout.h"
#include "device/program_loader.h"

namespace dfx::rank_agent {

namespace fs = std::filesystem;

collectors::NameMap NameMapFor(const device::Program& program) {
  collectors::NameMap map;
  map.level = 2;
  map.orchestrator_name = program.name;
  for (const auto& kernel : program.kernels) {
    if (!kernel.name.empty()) map.callable_id_to_name.emplace_back(kernel.func_id, kernel.name);
  }
  return map;
}

Status GraphPassFault(bool graph_pass, const FaultInjection& faults) {
  if (!graph_pass || faults.graph_pass_error.empty()) return Status::Ok();
  return Internal(faults.graph_pass_error);
}

fs::path ResidentStateFile(const fs::path& device_state_dir) {
  return device_state_dir / "chip0.json";
}

Result<ExecResult> RunExec(const ExecOptions& options) {
  DFX_ASSIGN_OR_RETURN(device::Program program, device::LoadProgram(options.program_path));
  DFX_RETURN_IF_ERROR(GraphPassFault(options.pass == config::PassKind::kGraph, options.faults));
  auto chip = device::MakeEmulatedChip(options.chip);
  const bool resident = std::any_of(program.tensors.begin(), program.tensors.end(),
                                    [](const device::TensorDecl& t) { return t.resident; });
  const fs::path state_file =
      options.device_state_dir.empty() ? fs::path() : ResidentStateFile(options.device_state_dir);
  if (resident && !state_file.empty()) {
    DFX_ASSIGN_OR_RETURN(chip->resident_state(), device::LoadResidentState(state_file));
  }
  device::DispatchResult run = chip->RunProgram(program, options.config, options.output_dir);
  if (run.status.ok() && resident && !state_file.empty()) {
    DFX_RETURN_IF_ERROR(device::SaveResidentState(state_file, chip->resident_state()));
  }
  if (!run.status.ok()) {
    return Status(
        run.status.code(),
        fmt::format("{}: the run failed: {}", options.program_path.string(), run.status.message()));
  }
  const config::RunConfig& c = options.config;
  if (c.enable_chip_swimlane > 0 || c.enable_dep_gen) {
    // L2 form: name_map_<work_dir name>.json beside the artifacts (artifacts.md §3).
    const fs::path work_dir =
        options.work_dir.empty() ? options.output_dir.parent_path() : options.work_dir;
    DFX_RETURN_IF_ERROR(collectors::WriteNameMap(
        options.output_dir / collectors::L2NameMapFileName(work_dir), NameMapFor(program)));
  }
  ExecResult result;
  result.tasks_executed = run.tasks_executed;
  result.warnings = run.warnings;
  result.artifacts = collectors::ListArtifactFiles(options.output_dir);
  return result;
}

}  // namespace dfx::rank_agent
