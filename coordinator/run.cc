#include "coordinator/run.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <system_error>
#include <utility>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/input_file.h"
#include "common/json.h"
#include "common/log.h"
#include "common/subprocess.h"
#include "coordinator/idle_collectors.h"
#include "coordinator/l2_run.h"
#include "coordinator/plan.h"
#include "coordinator/post_run.h"
#include "coordinator/program_check.h"
#include "coordinator/report.h"
#include "coordinator/run_estimate.h"
#include "coordinator/session_capture.h"
#include "coordinator/stop_signals.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;

namespace {

// A report that ends the command without a verdict: "dfx-coordinator: <message>".
RunReport Stopped(RunReport report, const std::string& message, RunExit exit) {
  report.exit = exit;
  report.errors += "dfx-coordinator: " + message + "\n";
  return report;
}

std::string VerdictLine(bool ok, const std::string& what) {
  return fmt::format("verdict: {}: {}\n", ok ? "ok" : "FAILED", what);
}

// What the run's end prints on stdout, L2 and L3 alike.
class RunPrinter {
 public:
  RunPrinter(const RunRequest& request, fs::path dfx_dir)
      : request_(request),
        config_(request.session.config),
        dfx_dir_(std::move(dfx_dir)),
        view_(ViewCommand()) {}

  const std::string& view() const { return view_; }

  // The artifacts' paths in README.txt (at L3 instead of the console).
  void WriteReadme(const std::vector<std::string>& artifacts) const {
    if (artifacts.empty()) return;
    Status s = WriteArtifactsReadme(dfx_dir_, artifacts, config_, view_);
    if (!s.ok()) DFX_LOG_WARN("cannot write the artifact listing: {}", s.message());
  }
  // The summary first, the verdict last; -q keeps only the verdict.
  void PrintSummary(const std::vector<std::string>& artifacts) const {
    if (request_.quiet) return;
    std::fputs(Summary(artifacts, {}).c_str(), stdout);
  }
  // The summary's text, computed once by one dfx-view, which writes the run
  // report to `report` too when it is set (also under -q); "" without
  // swimlane records.
  std::string Summary(const std::vector<std::string>& artifacts, const fs::path& report) const {
    if (config_.enable_chip_swimlane == 0 || artifacts.empty()) return "";
    if (request_.quiet && report.empty()) return "";
    return RunSummaryText(dfx_dir_, request_.verbose, view_, report);
  }
  void PrintCommon() const {
    if (config_.AnyDfx()) {
      std::printf("save_kernels: forced on (a DFX flag is on); %s is kept after the run\n",
                  ShellQuote(dfx_dir_.string()).c_str());
    }
    if (config_.execution_mode == config::ExecutionMode::kOnboard &&
        config_.enable_chip_swimlane > 0) {
      std::printf(
          "warning: do not read wall-clock from this run: chip swimlane onboard ran the "
          "workload twice (graph pass + timing pass) and the collectors perturb timing; measure "
          "in a separate plain run (no DFX flags) or use `dfx-coordinator run --bench`\n");
    }
  }

 private:
  const RunRequest& request_;
  const config::RunConfig& config_;
  const fs::path dfx_dir_;
  const std::string view_;
};

// Before a run that writes anything: the estimate's line, and its refusal
// when the run will not fit where it lands or exceeds --max-run-bytes
// (--force starts anyway). The estimate checks every program as the agents
// load it (coordinator/program_check.h). Returns the refusal, or nothing.
std::optional<Status> EstimateBeforeRun(const RunRequest& request, const Plan& plan, bool l3) {
  auto estimate = EstimateRun(plan, l3, request.session, request.report);
  if (!estimate.ok()) return estimate.status();
  // A log line (stderr): stdout opens with the summary (tests/dfx/summary_test.cc).
  DFX_LOG_INFO("{}", EstimateLine(*estimate));
  Status fits = CheckEstimate(*estimate, request.session.max_run_bytes);
  if (fits.ok()) return std::nullopt;
  if (!request.force) return fits;
  DFX_LOG_WARN("--force: starting anyway: {}", fits.message());
  return std::nullopt;
}

// The L2 exec child's flags of the run: chip flags and the args-dump drain model.
L2Options MakeL2Options(const RunRequest& request) {
  const SessionOptions& so = request.session;
  L2Options l2;
  l2.program = request.file;
  l2.work_dir = so.work_dir;
  l2.config = so.config;
  l2.agent_binary = so.agent_binary;
  l2.agent.chip.virtual_clock = so.virtual_clock;
  // The exec child's lines follow this process's level unless told otherwise.
  if (request.agent_log_level_given) {
    l2.agent.chip.log_level = so.agent_log_level;
  } else {
    const auto name = spdlog::level::to_string_view(spdlog::default_logger_raw()->level());
    const std::string own(name.data(), name.size());
    l2.agent.chip.log_level = own == "warning" ? "warn" : own;
  }
  if (request.dump_drain_bytes_per_sec >= 0) {
    l2.agent.dump_drain_bytes_per_sec = request.dump_drain_bytes_per_sec;
  }
  if (request.dump_timeout_ms >= 0) {
    l2.agent.dump_timeout_ms = static_cast<uint64_t>(request.dump_timeout_ms);
  }
  if (request.dump_arena_bytes >= 0) {
    l2.agent.dump_arena_bytes = static_cast<uint64_t>(request.dump_arena_bytes);
  }
  l2.timeouts = so.timeouts;
  l2.bench = request.bench;
  return l2;
}

// L2: one program on one local chip, artifacts flat in dfx_outputs/.
RunReport RunLevel2(const RunRequest& request, std::string text, RunReport report) {
  report.level = RunLevel::kL2;
  const RunPrinter print(request, report.dfx_dir);
  L2Options l2 = MakeL2Options(request);
  // The exec passes read a regular file themselves; anything else (a pipe)
  // was read once here, and they read what was read.
  // Validate before you clear: the run replaces an earlier run's manifest
  // and rank<N>/d<K>/ (l2_manifest.h) only for a program the agent accepts.
  std::error_code ec;
  const fs::path dfx_dir = collectors::DfxOutputsDir(request.session.work_dir);
  Plan one;
  one.origin = request.file;
  one.programs["program"] = PlanProgram{"program", request.file, text};
  if (request.session.config.AnyDfx()) {
    // The estimate checks the program too (and stops before anything is touched).
    if (auto refused = EstimateBeforeRun(request, one, /*l3=*/false)) {
      report = Stopped(std::move(report), refused->message(), RunExit::kFailed);
      report.verdict = VerdictLine(false, "not started: " + refused->message());
      return report;
    }
  } else if (fs::exists(dfx_dir / collectors::kRunManifestFile, ec) ||
             fs::exists(request.session.work_dir / collectors::kRunManifestFile, ec) ||
             !collectors::ListDispatchDirs(dfx_dir).empty()) {
    if (Status s = CheckPlanPrograms(one, request.session); !s.ok()) {
      report = Stopped(std::move(report), s.message(), RunExit::kFailed);
      report.verdict = VerdictLine(false, "the run failed: " + s.message());
      return report;
    }
  }
  if (!fs::is_regular_file(request.file, ec)) l2.program_text = std::move(text);
  auto out = RunL2(l2);
  if (!out.ok()) {
    report = Stopped(std::move(report), out.status().message(), RunExit::kFailed);
    report.verdict = VerdictLine(false, "the run failed: " + out.status().message());
    return report;
  }
  if (out->stop_signal != 0) {
    report.exit = RunExit::kFailed;
    report.stop_signal = out->stop_signal;
    report.manifest_path = out->manifest_path;
    report.verdict =
        VerdictLine(false, fmt::format("interrupted by {}; the manifest says what ran: {}",
                                       StopSignalName(out->stop_signal),
                                       ShellQuote(out->manifest_path.string())));
    return report;
  }
  report.success = true;
  report.artifacts = out->artifacts;
  report.bench_wall_s = out->bench_wall_s;
  report.manifest_path = out->manifest_path;
  for (const std::string& line :
       IdleCollectorLines(out->manifest.dispatches, request.session.config, /*l3=*/false)) {
    DFX_LOG_INFO("{}", line);
  }
  print.WriteReadme(out->artifacts);
  if (!request.quiet) {
    // The summary first, as at L3; then, one dispatch's paths fit the
    // console (they are in README.txt too); the verdict last.
    print.PrintSummary(out->artifacts);
    if (out->artifacts.empty()) {
      std::printf("run complete; no DFX flag was on, so no artifacts were collected\n");
    } else {
      PrintArtifacts(stdout, report.dfx_dir, out->artifacts, request.session.config, print.view());
    }
    print.PrintCommon();
    if (out->bench_wall_s) {
      std::printf(
          "bench: a separate plain run (no DFX flags, its own process) took %.3f s "
          "wall-clock\n",
          *out->bench_wall_s);
    }
  }
  report.verdict =
      VerdictLine(true, out->artifacts.empty()
                            ? std::string("the program ran; no DFX flag, no artifacts")
                            : fmt::format("1 dispatch, {} artifact(s) in {}", out->artifacts.size(),
                                          ShellQuote(report.dfx_dir.string())));
  return report;
}

// The launcher flags into the session: --attach, --launcher (default:
// mpirun when on PATH, else local), and the mpirun / srun program and words.
// Returns a usage error's or a missing program's report, or nothing.
std::optional<RunReport> ChooseLauncher(const RunRequest& request, SessionOptions& so,
                                        const RunReport& report) {
  if (request.attach) {
    so.launcher = Launcher::kAttach;
  } else if (!request.launcher.empty()) {
    // main's flag check admits mpirun, srun and local only.
    so.launcher = ParseLauncher(request.launcher).value_or(Launcher::kLocal);
  } else {
    so.launcher = FindExecutable("mpirun").has_value() ? Launcher::kMpirun : Launcher::kLocal;
  }
  const bool launcher_program = so.launcher == Launcher::kMpirun || so.launcher == Launcher::kSrun;
  if (!launcher_program && (!so.launcher_binary.empty() || !request.launcher_args.empty() ||
                            !so.agent_command.empty())) {
    return Stopped(report,
                   fmt::format("--launcher-binary, --launcher-args and --agent-command are for "
                               "--launcher mpirun or srun, not {}",
                               LauncherName(so.launcher)),
                   RunExit::kUsage);
  }
  if (!launcher_program) return std::nullopt;
  const std::string program = !so.launcher_binary.empty()      ? so.launcher_binary
                              : so.launcher == Launcher::kSrun ? "srun"
                                                               : "mpirun";
  if (!FindExecutable(program)) {
    return Stopped(
        report,
        fmt::format("--launcher {}: {} is not {}; {}", LauncherName(so.launcher), program,
                    so.launcher_binary.empty() ? "on PATH" : "an executable file",
                    so.launcher_binary.empty()
                        ? "give its path with --launcher-binary, or use --launcher local"
                        : "give the path of an existing mpirun / srun"),
        RunExit::kFailed);
  }
  auto words = SplitShellWords(request.launcher_args);
  if (!words.ok()) {
    return Stopped(report, "--launcher-args: " + words.status().message(), RunExit::kUsage);
  }
  so.launcher_args = *words;
  return std::nullopt;
}

// --bench at L3: a separate plain session (no DFX flags) in a scratch work
// dir; returns its wall time, or why it failed.
Result<double> RunPlainSession(const Plan& plan, const SessionOptions& so) {
  SessionOptions plain = so;
  config::RunConfig c;
  c.backend_type = so.config.backend_type;
  c.execution_mode = so.config.execution_mode;
  c.aicpu_thread_num = so.config.aicpu_thread_num;
  c.rings = so.config.rings;
  plain.config = c;
  plain.work_dir = so.work_dir / ".bench";
  plain.spool_root.clear();
  plain.live_progress = false;
  plain.fault_kill_after_chunks = 0;
  plain.fault_write_delay_ms = 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto out = RunSession(plan, plain);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::error_code ec;
  fs::remove_all(plain.work_dir, ec);
  if (!out.ok() || !out->success) {
    return Internal("--bench: the plain run failed: " +
                    (out.ok() ? out->summary : out.status().message()));
  }
  return wall;
}

// What an L3 run prints before its verdict: the summary, where the paths
// are, the swimlane hint, the makespan, the manifest.
void PrintSessionEnd(const RunRequest& request, const RunPrinter& print,
                     const SessionOutcome& outcome, const RunReport& report,
                     const std::string& summary) {
  const SessionOptions& so = request.session;
  for (const std::string& line : outcome.idle_collectors) DFX_LOG_INFO("{}", line);
  std::fputs(summary.c_str(), stdout);
  // With a run report, its line (last before the verdict) points at README.txt too.
  if (!outcome.artifacts.empty() && !report.run_report) {
    std::printf(
        "artifacts: %zu file(s) in %zu rank<N>/d<K> dir(s); every path with its render "
        "command: %s\n",
        outcome.artifacts.size(), report.dispatch_dirs,
        ShellQuote((report.dfx_dir / collectors::kArtifactsReadmeFile).string()).c_str());
  }
  if (so.config.enable_chip_swimlane > 0 &&
      !ConvertSwimlanesEagerly(so.swimlane_traces,
                               so.config.execution_mode == config::ExecutionMode::kOnboard)) {
    std::fputs(LazySwimlaneHint(report.dfx_dir, outcome.artifacts, print.view()).c_str(), stdout);
  }
  std::fputs(outcome.makespan.c_str(), stdout);
  std::printf("run manifest: %s\n", ShellQuote(outcome.manifest_path.string()).c_str());
  print.PrintCommon();
  if (report.run_report) {
    std::printf(
        "open the run report in a browser: %s (%zu artifact file(s) in %zu rank<N>/d<K> dir(s), "
        "every path with its render command: %s)\n",
        ShellQuote(report.run_report->string()).c_str(), outcome.artifacts.size(),
        report.dispatch_dirs,
        ShellQuote((report.dfx_dir / collectors::kArtifactsReadmeFile).string()).c_str());
  }
}

// L3: a plan (or one program on --ranks N) over rank agents.
RunReport RunLevel3(RunRequest& request, const Json& json, std::string text, bool is_plan,
                    RunReport report) {
  report.level = RunLevel::kL3;
  SessionOptions& so = request.session;
  // A program is read once: the text already read (it may have been a pipe).
  Result<Plan> plan =
      is_plan ? ParsePlan(json, request.file) : PlanForProgram(request.file, std::move(text));
  if (!plan.ok()) return Stopped(std::move(report), plan.status().message(), RunExit::kUsage);
  so.ranks = request.ranks.value_or(1);
  // Capture selection and per-step run configs: refused before anything starts.
  if (Status s = CheckCaptureOptions(*plan, so.config, so.capture, so.ranks); !s.ok()) {
    return Stopped(std::move(report), s.message(), RunExit::kUsage);
  }
  if (auto stopped = ChooseLauncher(request, so, report)) return std::move(*stopped);
  // Validate before you clear: every program as the agents will load it,
  // before anything of the previous run is touched.
  so.swimlane_traces = request.swimlane_traces == "eager"  ? SwimlaneTraces::kEager
                       : request.swimlane_traces == "lazy" ? SwimlaneTraces::kLazy
                                                           : SwimlaneTraces::kAuto;
  if (!so.config.AnyDfx()) {
    if (Status s = CheckPlanPrograms(*plan, so); !s.ok()) {
      return Stopped(std::move(report), s.message(), RunExit::kUsage);
    }
  } else if (auto refused = EstimateBeforeRun(request, *plan, /*l3=*/true)) {
    // A program the agents refuse is a usage error; a run that does not fit is not.
    const bool usage = refused->code() != Code::kFailedPrecondition;
    return Stopped(std::move(report), refused->message(),
                   usage ? RunExit::kUsage : RunExit::kFailed);
  }
  auto outcome = RunSession(*plan, so);
  if (!outcome.ok())
    return Stopped(std::move(report), outcome.status().message(), RunExit::kFailed);
  const RunPrinter print(request, report.dfx_dir);
  // One dfx-view computes the summary and writes the run report from it.
  const fs::path report_path =
      request.report ? report.dfx_dir / collectors::kRunReportFile : fs::path();
  const std::string summary = print.Summary(outcome->artifacts, report_path);
  std::vector<std::string> listed = outcome->artifacts;
  std::error_code ec;
  if (!report_path.empty() && fs::is_regular_file(report_path, ec)) {
    report.run_report = report_path;
    listed.push_back(collectors::kRunReportFile);
  }
  print.WriteReadme(listed);
  std::set<std::string> dispatch_dirs;
  for (const auto& a : outcome->artifacts) {
    if (auto d = collectors::DispatchDirOf(a)) {
      dispatch_dirs.insert(collectors::DispatchDirPath(*d));
    }
  }
  report.success = outcome->success;
  report.artifacts = outcome->artifacts;
  report.manifest_path = outcome->manifest_path;
  report.dispatch_dirs = dispatch_dirs.size();
  report.summary = outcome->summary;
  if (!request.quiet) PrintSessionEnd(request, print, *outcome, report, summary);
  if (outcome->stop_signal != 0) {
    // Interrupted: no --bench run; the verdict says what stopped it.
    report.exit = RunExit::kFailed;
    report.stop_signal = outcome->stop_signal;
    report.errors += fmt::format(
        "dfx-coordinator: the run was stopped by {}; what arrived is in place, what the agents "
        "kept is in their spools: {}\n",
        StopSignalName(outcome->stop_signal), GatherCommand(request.session.work_dir));
    report.verdict = VerdictLine(
        false, fmt::format("interrupted by {}; {} dispatch dir(s), {} artifact(s) in {}",
                           StopSignalName(outcome->stop_signal), dispatch_dirs.size(),
                           outcome->artifacts.size(), ShellQuote(report.dfx_dir.string())));
    return report;
  }
  if (request.bench) {
    auto wall = RunPlainSession(*plan, so);
    if (!wall.ok()) return Stopped(std::move(report), wall.status().message(), RunExit::kFailed);
    report.bench_wall_s = *wall;
    if (!request.quiet) {
      std::printf(
          "bench: a separate plain run (no DFX flags, agents started fresh) took %.3f s "
          "wall-clock\n",
          *wall);
    }
  }
  const std::string counts = fmt::format("{} rank(s), {} dispatch dir(s), {} artifact(s) in {}",
                                         so.ranks, dispatch_dirs.size(), outcome->artifacts.size(),
                                         ShellQuote(report.dfx_dir.string()));
  if (!outcome->success) {
    report.exit = RunExit::kFailed;
    report.errors += "dfx-coordinator: the run did not fully succeed:\n" + outcome->summary;
    const std::string first = outcome->summary.substr(0, outcome->summary.find('\n'));
    report.verdict =
        VerdictLine(false, first + " (all problems above and in run_manifest.json); " + counts);
    return report;
  }
  report.verdict = VerdictLine(true, counts);
  return report;
}

}  // namespace

RunReport RunProgramOrPlan(RunRequest request) {
  RunReport report;
  SessionOptions& so = request.session;
  report.dfx_dir = collectors::DfxOutputsDir(so.work_dir);
  if (Status s = so.timeouts.ValidateHeartbeat(); !s.ok()) {
    return Stopped(std::move(report), s.message(), RunExit::kUsage);
  }
  std::vector<std::string> chip_knobs;  // given args-dump drain flags, L2 only
  for (auto [flag, value] :
       {std::pair{"--dump-drain-bytes-per-sec", request.dump_drain_bytes_per_sec},
        std::pair{"--dump-timeout-ms", request.dump_timeout_ms},
        std::pair{"--dump-arena-bytes", request.dump_arena_bytes}}) {
    if (value >= 0) chip_knobs.push_back(flag);
  }
  // Read once, bounded, by the limit every level shares: a pipe
  // (`run <(cat program.json)`) works, a FIFO, device or directory is
  // refused by what it is.
  auto text = ReadJsonText(request.file, kMaxProgramFileBytes);
  if (!text.ok()) return Stopped(std::move(report), text.status().message(), RunExit::kUsage);
  auto json = ParseJson(*text, request.file.string());
  if (!json.ok()) return Stopped(std::move(report), json.status().message(), RunExit::kUsage);
  if (so.agent_binary.empty()) {
    auto agent = FindProjectBinary("dfx-rank-agent", "DFX_RANK_AGENT", {"../rank_agent"});
    if (!agent.ok()) return Stopped(std::move(report), agent.status().message(), RunExit::kFailed);
    so.agent_binary = *agent;
  }
  const bool is_plan = IsPlan(*json);
  if (!is_plan && !request.ranks && request.launcher.empty() && !request.attach) {
    if (!json->is_object()) {
      return Stopped(std::move(report),
                     JsonError(request.file, "$", "a program object", *json).message(),
                     RunExit::kUsage);
    }
    if (!so.capture.empty()) {
      return Stopped(std::move(report),
                     std::string(so.capture.ranks ? "--capture-ranks" : "--capture-dispatches") +
                         " selects ranks and dispatches of an L3 run (a plan, or --ranks N); "
                         "this is an L2 run of one program on one chip: drop it or add --ranks",
                     RunExit::kUsage);
    }
    return RunLevel2(request, std::move(*text), std::move(report));
  }
  if (!chip_knobs.empty()) {
    return Stopped(std::move(report),
                   chip_knobs.front() +
                       ": the args-dump drain model is an L2 knob (one program, `dfx-rank-agent "
                       "exec`); drop it for a plan / --ranks run",
                   RunExit::kUsage);
  }
  return RunLevel3(request, *json, std::move(*text), is_plan, std::move(report));
}

}  // namespace dfx::coordinator
