#include "coordinator/l2_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <optional>
#include <system_error>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/subprocess.h"
#include "config/pass_plan.h"
#include "config/run_config.h"
#include "coordinator/l2_manifest.h"
#include "coordinator/post_run.h"
#include "coordinator/stop_signals.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;

namespace {

// What the passes wrote into dfx_outputs/: the listing of an earlier run
// (README.txt) is not an artifact of this one, nor is the run's manifest.
std::vector<std::string> ListRunArtifacts(const fs::path& dfx_dir) {
  std::vector<std::string> files = collectors::ListArtifactFiles(dfx_dir, /*skip_hidden=*/true);
  std::erase(files, std::string(collectors::kArtifactsReadmeFile));
  std::erase(files, std::string(collectors::kRunManifestFile));
  return files;
}

// Waits for a pass in slices, so that a stop signal (stop_signals.h) ends
// it: 0 = the child exited, -1 = `timeout_ms` passed, else the signal.
int WaitForPass(ChildProcess& child, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    if (int signal = StopSignal(); signal != 0) return signal;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) return -1;
    if (child.Wait(static_cast<int>(std::min<int64_t>(left, 100)))) return 0;
  }
}

// --bench: a separate plain run of the program (no DFX flag, fresh device
// state, its own process); its wall time.
Result<double> BenchPlainRun(const L2Options& options, const fs::path& program_file) {
  config::RunConfig plain;
  plain.backend_type = options.config.backend_type;
  plain.execution_mode = options.config.execution_mode;
  plain.aicpu_thread_num = options.config.aicpu_thread_num;
  plain.rings = options.config.rings;
  protocol::AgentExecCommandLine exec = options.agent;
  exec.program = program_file.string();
  if (options.program_text) exec.program_origin = options.program.string();
  exec.output_dir = (options.work_dir / ".bench_unused").string();
  exec.config = plain;
  std::vector<std::string> argv = {options.agent_binary.string()};
  for (std::string& a : exec.ToArgv()) argv.push_back(std::move(a));
  DFX_ASSIGN_OR_RETURN(CompletedRun run, RunCaptured(argv, ToSeconds(options.timeouts.dispatch)));
  if (run.exit_code != 0) {
    return Internal(fmt::format(
        "{}: the --bench plain run failed ({}): {}", options.program.string(),
        run.timed_out ? "timed out" : "exit code " + std::to_string(run.exit_code), run.output));
  }
  return run.wall_s;
}

}  // namespace

Result<L2Outcome> RunL2(const L2Options& options) {
  const fs::path& work_dir = options.work_dir;
  const fs::path dfx_dir = collectors::DfxOutputsDir(work_dir);
  const fs::path state_dir = work_dir / collectors::kDeviceStateDirName;
  const std::vector<config::PassPlan> passes = config::PlanPasses(options.config, /*l3=*/false);
  L2Outcome out;
  out.two_pass = passes.size() > 1;
  // One coordinator per work dir (a concurrent run or gather would mix files).
  DFX_RETURN_IF_ERROR(MakeDirs(work_dir));
  DFX_ASSIGN_OR_RETURN(DirectoryLock lock, collectors::LockWorkDir(work_dir));
  if (!lock.warning().empty()) std::fprintf(stderr, "warning: %s\n", lock.warning().c_str());
  DFX_RETURN_IF_ERROR(CheckNoLinks(work_dir, collectors::kDfxOutputsDirName));
  DFX_RETURN_IF_ERROR(CheckNoLinks(work_dir, collectors::kDeviceStateDirName));
  // A new run is a new session: the chip's device memory starts empty.
  std::error_code state_ec;
  fs::remove_all(state_dir, state_ec);
  fs::path program_file = options.program;
  if (options.program_text) {
    program_file = work_dir / ".dfx_program.json";
    DFX_RETURN_IF_ERROR(CheckNoLinks(work_dir, program_file.filename()));
    DFX_RETURN_IF_ERROR(WriteFileAtomic(program_file, *options.program_text, 0600));
  }
  struct RemoveCopy {
    const L2Options& options;
    fs::path file;
    ~RemoveCopy() {
      std::error_code ec;
      if (options.program_text) fs::remove(file, ec);
    }
  } remove_copy{options, program_file};
  DFX_ASSIGN_OR_RETURN(L2Manifest manifest,
                       L2Manifest::Begin(work_dir, options.program, options.config, passes));
  // Every return below ends the manifest: ok, or failed with what ran.
  auto fail = [&](Status s) {
    manifest.Finish(collectors::RunState::kFailed, ListRunArtifacts(dfx_dir), {});
    return s;
  };
  // SIGINT / SIGTERM / SIGHUP end a pass cleanly (WaitForPass); from the
  // conversion on, they end the process as usual.
  std::optional<StopSignalGuard> stop_signals(std::in_place);
  for (size_t index = 0; index < passes.size(); ++index) {
    const config::PassPlan& pass = passes[index];
    protocol::AgentExecCommandLine exec = options.agent;
    exec.program = program_file.string();
    if (options.program_text) exec.program_origin = options.program.string();
    exec.output_dir = dfx_dir.string();
    exec.work_dir = work_dir.string();
    exec.config = pass.config;
    exec.pass = pass.kind;
    exec.device_state_dir = state_dir.string();
    std::vector<std::string> argv = {options.agent_binary.string()};
    for (std::string& a : exec.ToArgv()) argv.push_back(std::move(a));
    if (pass.kind == config::PassKind::kGraph) {
      std::printf("chip swimlane enabled, running the kernel twice\n");
      std::printf("run 1/2: capturing deps.json in a subprocess; its timing is discarded\n");
    } else if (pass.kind == config::PassKind::kTiming) {
      std::printf("run 2/2: measuring clean per-task timing\n");
    }
    std::fflush(stdout);
    // The exec child ends with this process, however it ends (Ctrl-C
    // reaches only this process group: the child runs in its own).
    SpawnOptions spawn;
    spawn.parent_death_signal = SIGKILL;
    manifest.PassStarted(index);
    auto spawned = ChildProcess::Spawn(argv, spawn);
    if (!spawned.ok()) return fail(spawned.status());
    ChildProcess& child = *spawned;
    const int waited = WaitForPass(child, ToPollMs(options.timeouts.dispatch));
    if (waited > 0) {
      // SIGINT / SIGTERM / SIGHUP: the pass ends, the manifest says so.
      child.Terminate(2000);
      manifest.Interrupt(index, "interrupted by " + StopSignalName(waited));
      manifest.Finish(collectors::RunState::kInterrupted, ListRunArtifacts(dfx_dir), {});
      out.stop_signal = waited;
      out.manifest_path = manifest.path();
      out.manifest = manifest.manifest();
      return out;
    }
    if (waited < 0 || !child.succeeded()) {
      if (waited < 0) child.Terminate(2000);
      const std::string text =
          waited < 0
              ? fmt::format("{}: the {} pass did not finish within --dispatch-timeout {:g} s",
                            options.program.string(), config::PassKindName(pass.kind),
                            ToSeconds(options.timeouts.dispatch))
              : fmt::format("{}: the {} pass failed ({}); its error is printed above",
                            options.program.string(), config::PassKindName(pass.kind),
                            child.Describe());
      manifest.PassEnded(index, text);
      if (pass.kind == config::PassKind::kGraph) {
        // Best effort, like the reference: the timing pass still runs.
        std::printf("%s\n", GraphPassWarning(options.program.string(), text,
                                             dfx_dir / collectors::kDepsFile)
                                .c_str());
        std::fflush(stdout);
        out.graph_pass_failed = true;
        continue;
      }
      return fail(waited < 0 ? DeadlineExceeded(text) : Internal(text));
    }
    manifest.PassEnded(index, "");
  }
  stop_signals.reset();
  out.artifacts = ListRunArtifacts(dfx_dir);
  std::vector<std::string> merged;
  if (options.config.enable_chip_swimlane > 0) {
    merged = ConvertSwimlanes(stdout, dfx_dir, out.artifacts, options.timeouts.convert);
    for (const auto& m : merged) out.artifacts.push_back(m);
  }
  // A failed graph pass is best effort: the run still succeeded.
  manifest.Finish(collectors::RunState::kOk, out.artifacts, merged);
  out.manifest_path = manifest.path();
  out.manifest = manifest.manifest();
  if (options.bench) {
    DFX_ASSIGN_OR_RETURN(double wall_s, BenchPlainRun(options, program_file));
    out.bench_wall_s = wall_s;
  }
  return out;
}

}  // namespace dfx::coordinator
