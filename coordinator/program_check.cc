#include "coordinator/program_check.h"

#include <fmt/format.h>
#include <unistd.h>

#include <string>
#include <system_error>
#include <vector>

#include "common/file_util.h"
#include "common/subprocess.h"
#include "protocol/agent_command_line.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;

namespace {

// The agent's own words: its "dfx-rank-agent: " prefix and trailing newline go.
std::string AgentMessage(const std::string& output) {
  std::string text = output;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  // The refusal is its last line; log lines may come before it.
  const size_t line = text.rfind('\n');
  if (line != std::string::npos) text = text.substr(line + 1);
  constexpr std::string_view kPrefix = "dfx-rank-agent: ";
  if (text.rfind(kPrefix, 0) == 0) text = text.substr(kPrefix.size());
  return text;
}

Status CheckOne(const PlanProgram& program, const fs::path& scratch, size_t index,
                const SessionOptions& options, const config::RunConfig* estimate_config,
                collectors::DispatchBytes* estimate) {
  const fs::path copy = scratch / fmt::format("program{}.json", index);
  DFX_RETURN_IF_ERROR(WriteFileAtomic(copy, program.json_text, 0600));
  protocol::AgentExecCommandLine exec;
  exec.program = copy.string();
  exec.program_origin = program.path.string();
  exec.output_dir = (scratch / "unused").string();
  exec.config = estimate_config ? *estimate_config : options.config;
  exec.check_only = true;
  exec.estimate = estimate != nullptr;
  exec.check_host_memory = options.launcher == Launcher::kLocal;
  exec.chip.log_level = "error";
  std::vector<std::string> argv = {options.agent_binary.string()};
  for (std::string& a : exec.ToArgv()) argv.push_back(std::move(a));
  DFX_ASSIGN_OR_RETURN(CompletedRun run, RunCaptured(argv, ToSeconds(options.timeouts.startup)));
  if (run.exit_code == 0 && estimate != nullptr) {
    auto bytes = collectors::ParseDispatchBytes(
        AgentMessage(run.output), fmt::format("the estimate of {}", program.path.string()));
    if (!bytes.ok()) return bytes.status();
    *estimate = *bytes;
  }
  if (run.exit_code == 0) return Status::Ok();
  if (run.timed_out) {
    return DeadlineExceeded(fmt::format(
        "{}: checking the program took longer than --startup-timeout {:g} s; nothing of the "
        "previous run was touched",
        program.path.string(), ToSeconds(options.timeouts.startup)));
  }
  const std::string said = AgentMessage(run.output);
  if (said.empty()) {
    return Internal(fmt::format(
        "{}: the program check ({}) ended without a word: {}", program.path.string(),
        ShellCommand(argv),
        run.exit_code < 0 ? "killed by a signal" : fmt::format("exit code {}", run.exit_code)));
  }
  return InvalidArgument(
      said + " (refused before the run started: nothing of an earlier run was touched)");
}

}  // namespace

Status CheckPlanPrograms(const Plan& plan, const SessionOptions& options,
                         std::map<std::string, collectors::DispatchBytes>* estimates,
                         const config::RunConfig* estimate_config) {
  DFX_RETURN_IF_ERROR(MakeDirs(options.work_dir));
  const fs::path scratch = options.work_dir / fmt::format(".dfx_check.{}", ::getpid());
  DFX_RETURN_IF_ERROR(MakeDirsNoLinks(options.work_dir, scratch.filename()));
  Status status = Status::Ok();
  size_t index = 0;
  for (const auto& [name, program] : plan.programs) {
    collectors::DispatchBytes* estimate = estimates ? &(*estimates)[name] : nullptr;
    status = CheckOne(program, scratch, index++, options, estimate_config, estimate);
    if (!status.ok()) break;
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);
  return status;
}

}  // namespace dfx::coordinator
