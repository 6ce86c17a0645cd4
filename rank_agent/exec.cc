#include "rank_agent/exec.h"

#include <fmt/format.h>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "rank_agent/run_dispatch.h"

namespace dfx::rank_agent {

Result<ExecResult> RunExec(const ExecOptions& options) {
  DispatchRequest request;
  DFX_ASSIGN_OR_RETURN(request.program_json, ReadFile(options.program_path));
  request.program_origin = options.program_path.string();
  request.config = options.config;
  request.pass = options.pass;
  request.output_dir = options.output_dir;
  // L2 form: name_map_<work_dir name>.json beside the artifacts (artifacts.md §3).
  request.name_map_file = collectors::L2NameMapFileName(
      options.work_dir.empty() ? options.output_dir.parent_path() : options.work_dir);
  if (!options.device_state_dir.empty())
    request.resident_state_file = options.device_state_dir / collectors::kDeviceStateFile;
  request.faults = options.faults;

  auto chip = device::MakeEmulatedChip(options.chip);
  DispatchOutcome run = RunDispatch(*chip, request);
  if (run.failure == DispatchFailure::kRun) {
    return Status(
        run.status.code(),
        fmt::format("{}: the run failed: {}", options.program_path.string(), run.status.message()));
  }
  if (!run.status.ok()) return run.status;
  ExecResult result;
  result.tasks_executed = run.tasks_executed;
  result.warnings = std::move(run.warnings);
  result.artifacts = std::move(run.artifacts);
  return result;
}

}  // namespace dfx::rank_agent
