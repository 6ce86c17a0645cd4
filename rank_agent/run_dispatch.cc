#include "rank_agent/run_dispatch.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <new>
#include <vector>

#include "collectors/artifact_layout.h"
#include "common/json.h"
#include "device/dtype.h"
#include "device/program_loader.h"

namespace dfx::rank_agent {

namespace {

DispatchOutcome Failed(DispatchOutcome out, DispatchFailure failure, Status status) {
  out.failure = failure;
  out.status = std::move(status);
  return out;
}

// Adds the blocks `body` submits (scopes included) to *blocks; false once
// past `limit` or at a kernel that spins.
bool CountBlocks(const device::Program& program, const std::vector<device::Statement>& body,
                 uint64_t limit, uint64_t* blocks) {
  for (const device::Statement& s : body) {
    if (s.kind == device::Statement::Kind::kScope) {
      if (!CountBlocks(program, s.body, limit, blocks)) return false;
      continue;
    }
    if (s.kind != device::Statement::Kind::kSubmit) continue;
    const int kernel = s.submit.kernel;
    if (kernel < 0 || static_cast<size_t>(kernel) >= program.kernels.size() ||
        program.kernels[kernel].op == device::KernelOp::kBusy) {
      return false;
    }
    *blocks += static_cast<uint64_t>(std::max(s.submit.block_num, 1));
    if (*blocks > limit) return false;
  }
  return true;
}

DispatchOutcome RunDispatchSteps(device::Chip& chip, const DispatchRequest& request);

}  // namespace

bool RunsInline(const device::Program& program, const config::RunConfig& config) {
  if (config.AnyDfx()) return false;
  uint64_t bytes = 0;
  for (const device::TensorDecl& t : program.tensors) {
    if (t.view_of >= 0) continue;  // shares its parent's buffer
    const uint64_t numel = t.Numel();
    if (numel > kInlineMaxTensorBytes) return false;  // (and no overflow below)
    bytes += numel * device::DTypeSize(t.dtype);
    if (bytes > kInlineMaxTensorBytes) return false;
  }
  uint64_t blocks = 0;
  return CountBlocks(program, program.orchestration, 1, &blocks);
}

collectors::NameMap NameMapFor(const device::Program& program) {
  collectors::NameMap map;
  map.level = 2;
  map.orchestrator_name = program.name;
  for (const auto& kernel : program.kernels) {
    if (!kernel.name.empty()) map.callable_id_to_name.emplace_back(kernel.func_id, kernel.name);
  }
  return map;
}

Result<std::shared_ptr<const device::Program>> ParseDispatchProgram(
    const std::string& text, const std::string& origin, const std::string& file,
    const std::function<Status()>& before_program) {
  DFX_ASSIGN_OR_RETURN(device::Program program,
                       device::ParseProgramText(text, origin, before_program));
  device::AttachSourceLines(
      &program, text, file.empty() ? std::filesystem::path(origin).filename().string() : file);
  return std::make_shared<const device::Program>(std::move(program));
}

DispatchOutcome RunDispatch(device::Chip& chip, const DispatchRequest& request) {
  // The dispatch boundary: memory running out anyway (the budget of
  // device/memory_budget.h is checked before the run; other processes take
  // memory too) fails this dispatch by name instead of killing the agent.
  DispatchOutcome out;
  try {
    out = RunDispatchSteps(chip, request);
  } catch (const std::bad_alloc&) {
    out = Failed(DispatchOutcome{}, DispatchFailure::kRun,
                 FailedPrecondition(fmt::format(
                     "{}: out of host memory (std::bad_alloc) during the dispatch; the program "
                     "needs more memory than this host has free: make its tensors smaller or "
                     "fewer, or run on a host with more free memory",
                     request.program_origin)));
  }
  // 7. Whatever is there, even after a failure.
  out.artifacts = collectors::ListArtifactFiles(request.output_dir);
  return out;
}

namespace {

// Steps 1-6 (run_dispatch.h).
DispatchOutcome RunDispatchSteps(device::Chip& chip, const DispatchRequest& request) {
  return [&]() -> DispatchOutcome {
    DispatchOutcome o;
    // 1. The program and the config, in the order a reader fixes them.
    std::shared_ptr<const device::Program> program = request.program;
    if (!program) {
      auto parsed =
          ParseDispatchProgram(request.program_json, request.program_origin, request.program_file,
                               [&request] { return request.config.Validate(); });
      if (!parsed.ok()) return Failed(std::move(o), DispatchFailure::kRefused, parsed.status());
      program = std::move(*parsed);
    } else if (Status s = request.config.Validate(); !s.ok()) {
      return Failed(std::move(o), DispatchFailure::kRefused, s);
    }
    o.program = program;

    // 2.-4. Before the run.
    if (request.on_accepted) {
      if (Status s = request.on_accepted(); !s.ok())
        return Failed(std::move(o), DispatchFailure::kOther, s);
    }
    if (request.pass == config::PassKind::kGraph && !request.faults.graph_pass_error.empty())
      return Failed(std::move(o), DispatchFailure::kOther,
                    Internal(request.faults.graph_pass_error));
    const bool resident = !request.resident_state_file.empty() &&
                          std::any_of(program->tensors.begin(), program->tensors.end(),
                                      [](const device::TensorDecl& t) { return t.resident; });
    if (resident) {
      auto state = device::LoadResidentState(request.resident_state_file);
      if (!state.ok()) return Failed(std::move(o), DispatchFailure::kOther, state.status());
      chip.resident_state() = std::move(*state);
    }

    // 5. The run.
    device::DispatchResult run =
        request.program_kept ? chip.RunShared(program, request.config, request.output_dir)
                             : chip.RunProgram(*program, request.config, request.output_dir);
    o.tasks_executed = run.tasks_executed;
    o.wall_ns = run.wall_ns;
    o.makespan_ns = run.makespan_ns;
    o.warnings = std::move(run.warnings);
    if (!run.status.ok()) return Failed(std::move(o), DispatchFailure::kRun, run.status);

    // 6. After a successful run.
    if (resident) {
      if (Status s = device::SaveResidentState(request.resident_state_file, chip.resident_state());
          !s.ok())
        return Failed(std::move(o), DispatchFailure::kOther, s);
    }
    const config::RunConfig& c = request.config;
    if (c.enable_chip_swimlane > 0 || c.enable_dep_gen) {
      // Only where the spec says so (docs/run-config.md §2.8).
      if (Status s = collectors::WriteNameMap(request.output_dir / request.name_map_file,
                                              NameMapFor(*program));
          !s.ok())
        return Failed(std::move(o), DispatchFailure::kOther, s);
    }
    return o;
  }();
}

}  // namespace

}  // namespace dfx::rank_agent
