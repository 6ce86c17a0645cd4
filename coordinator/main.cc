// dfx-coordinator: parse flags, build the run, print what it produced.
//
//   dfx-coordinator run PROGRAM.json --work-dir W [DFX flags]              (L2, one chip)
//   dfx-coordinator run PLAN.json --ranks N --work-dir W [--launcher mpirun|local] [--attach]
//                   [--bind tcp://127.0.0.1:PORT] [DFX flags] [deadline flags]      (L3)
//   dfx-coordinator gather --work-dir W [--spool DIR] [--attach --bind ENDPOINT]
#include <fmt/format.h>
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/json.h"
#include "common/log.h"
#include "common/subprocess.h"
#include "config/run_config.h"
#include "coordinator/gather.h"
#include "coordinator/l2_run.h"
#include "coordinator/plan.h"
#include "coordinator/report.h"
#include "coordinator/session.h"

namespace {

namespace fs = std::filesystem;
namespace dc = dfx::coordinator;
using dfx::Result;

constexpr const char* kUsage = R"(usage:
  dfx-coordinator run PROGRAM.json --work-dir W [DFX flags]
  dfx-coordinator run PLAN.json --ranks N --work-dir W [--launcher mpirun|local] [--attach]
                  [--bind tcp://127.0.0.1:PORT] [--chips-per-agent N] [--spool DIR] [DFX flags]
  dfx-coordinator gather --work-dir W [--spool DIR] [--timeout S]
                  [--attach --bind tcp://HOST:PORT]  (serve agents stream their spools)
DFX flags: --enable-chip-swimlane | --chip-swimlane-level N, --enable-dep-gen, --dump-args [L],
  --enable-pmu [N], --enable-scope-stats, --backend-type a2a3|a5, --execution-mode sim|onboard,
  --platform P (deprecated), --aicpu-thread-num N, --ring-task-window/--ring-heap/--ring-dep-pool
deadline flags (seconds): --startup-timeout (60), --heartbeat-interval (0.2),
  --heartbeat-timeout (10), --dispatch-timeout (3600), --shutdown-timeout (10)
other: --agent-log-level LEVEL (warn), --log-level LEVEL (info), --virtual-clock,
  --bench (after the run, a separate plain run without DFX flags; prints its wall time)
L2 only: --dump-drain-bytes-per-sec B, --dump-timeout-ms MS, --dump-arena-bytes B
  (the emulated host args-dump drain; defaults: disk speed, 30000, 128 MiB)
)";

int Fail(const std::string& message, int code = 2) {
  std::fprintf(stderr, "dfx-coordinator: %s\n", message.c_str());
  return code;
}

struct Flags {
  std::vector<std::string> args;
  size_t i = 0;
  std::string name;
  std::optional<std::string> inline_value;
  bool Next() {
    if (i >= args.size()) return false;
    const std::string& a = args[i++];
    inline_value.reset();
    name = a;
    if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = a.substr(0, eq);
      inline_value = a.substr(eq + 1);
    }
    return true;
  }
  Result<std::string> Value() {
    if (inline_value) return *inline_value;
    if (i >= args.size()) return dfx::InvalidArgument(name + ": missing value");
    return args[i++];
  }
  Result<double> Seconds() {
    DFX_ASSIGN_OR_RETURN(std::string v, Value());
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0' || !(d > 0) || d > 1e7) {
      return dfx::InvalidArgument(name + " " + v + ": expected a positive number of seconds");
    }
    return d;
  }
  Result<int> Int(int min, int max) {
    DFX_ASSIGN_OR_RETURN(std::string v, Value());
    char* end = nullptr;
    long n = std::strtol(v.c_str(), &end, 10);
    if (end == v.c_str() || *end != '\0' || n < min || n > max) {
      return dfx::InvalidArgument(
          fmt::format("{} {}: expected an integer in [{}, {}]", name, v, min, max));
    }
    return static_cast<int>(n);
  }
};

#define OR_FAIL(lhs, expr)                                                                      \
  auto DFX_CONCAT(r_, __LINE__) = (expr);                                                       \
  if (!DFX_CONCAT(r_, __LINE__).ok()) return Fail(DFX_CONCAT(r_, __LINE__).status().message()); \
  lhs = std::move(DFX_CONCAT(r_, __LINE__)).value()

int Run(std::vector<std::string> args) {
  auto parsed = dfx::config::ParseRunConfigFlags(args);
  if (!parsed.ok()) return Fail(parsed.status().message());
  for (const auto& w : parsed->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  dc::SessionOptions so;
  so.config = parsed->config;
  std::optional<int> ranks;
  std::optional<std::string> launcher;
  bool attach = false;
  bool bench = false;
  std::vector<std::string> chip_knobs;  // args-dump drain model, L2 exec only
  std::string log_level = "info";
  std::vector<std::string> positional;
  Flags flags{args};
  while (flags.Next()) {
    const std::string f = flags.name;
    if (f.rfind("--", 0) != 0) {
      positional.push_back(f);
    } else if (f == "--ranks") {
      OR_FAIL(ranks, flags.Int(1, 4096));
    } else if (f == "--launcher") {
      OR_FAIL(launcher, flags.Value());
      if (*launcher != "mpirun" && *launcher != "local") {
        return Fail("--launcher " + *launcher + ": allowed: mpirun, local");
      }
    } else if (f == "--attach") {
      attach = true;
    } else if (f == "--work-dir") {
      std::string v;
      OR_FAIL(v, flags.Value());
      if (v.empty()) return Fail("--work-dir: the directory must not be empty");
      so.work_dir = v;
    } else if (f == "--bind") {
      OR_FAIL(so.bind, flags.Value());
    } else if (f == "--chips-per-agent") {
      OR_FAIL(so.chips_per_agent, flags.Int(1, 64));
    } else if (f == "--spool") {
      std::string v;
      OR_FAIL(v, flags.Value());
      so.spool_root = v;
    } else if (f == "--startup-timeout") {
      OR_FAIL(so.startup_timeout_s, flags.Seconds());
    } else if (f == "--heartbeat-interval") {
      OR_FAIL(so.heartbeat_interval_s, flags.Seconds());
    } else if (f == "--heartbeat-timeout") {
      OR_FAIL(so.heartbeat_timeout_s, flags.Seconds());
    } else if (f == "--dispatch-timeout") {
      OR_FAIL(so.dispatch_timeout_s, flags.Seconds());
    } else if (f == "--shutdown-timeout") {
      OR_FAIL(so.shutdown_timeout_s, flags.Seconds());
    } else if (f == "--agent-log-level") {
      OR_FAIL(so.agent_log_level, flags.Value());
    } else if (f == "--log-level") {
      OR_FAIL(log_level, flags.Value());
    } else if (f == "--virtual-clock") {
      so.agent_args.push_back("--virtual-clock");
    } else if (f == "--bench") {
      bench = true;
    } else if (f == "--dump-drain-bytes-per-sec" || f == "--dump-timeout-ms" ||
               f == "--dump-arena-bytes") {
      std::string v;
      OR_FAIL(v, flags.Value());
      chip_knobs.push_back(f);
      chip_knobs.push_back(v);
    } else if (f == "--help" || f == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      return Fail(fmt::format("run: unknown flag '{}'\n{}", f, kUsage));
    }
  }
  dfx::log::Init("dfx-coordinator", log_level);
  if (positional.size() != 1) {
    return Fail("run: expected exactly one PROGRAM.json or PLAN.json\n" + std::string(kUsage));
  }
  if (so.work_dir.empty()) return Fail("run: --work-dir DIR is required");
  const fs::path file = positional[0];
  auto json = dfx::ReadJsonFile(file);
  if (!json.ok()) return Fail(json.status().message());
  auto agent = dfx::FindProjectBinary("dfx-rank-agent", "DFX_RANK_AGENT", {"../rank_agent"});
  if (!agent.ok()) return Fail(agent.status().message(), 1);
  so.agent_binary = *agent;
  const fs::path dfx_dir = dfx::collectors::DfxOutputsDir(so.work_dir);

  const bool is_plan = dc::IsPlan(*json);
  const bool two_pass = so.config.execution_mode == dfx::config::ExecutionMode::kOnboard &&
                        so.config.enable_chip_swimlane > 0;
  auto print_common = [&] {
    if (so.config.AnyDfx()) {
      std::printf("save_kernels: forced on (a DFX flag is on); %s is kept after the run\n",
                  dfx::ShellQuote(dfx_dir.string()).c_str());
    }
    if (two_pass) {
      std::printf(
          "warning: do not read wall-clock from this run: chip swimlane onboard ran the "
          "workload twice (graph pass + timing pass) and the collectors perturb timing; measure "
          "in a separate plain run (no DFX flags) or use `dfx-coordinator run --bench`\n");
    }
  };
  if (!is_plan && !ranks && !launcher && !attach) {
    // L2: one program on one local chip, artifacts flat in dfx_outputs/.
    if (!json->is_object())
      return Fail(dfx::JsonError(file, "$", "a program object", *json).message());
    dc::L2Options l2;
    l2.program = file;
    l2.work_dir = so.work_dir;
    l2.config = so.config;
    l2.agent_binary = so.agent_binary;
    l2.agent_args = so.agent_args;
    l2.agent_args.insert(l2.agent_args.end(), chip_knobs.begin(), chip_knobs.end());
    l2.timeout_s = so.dispatch_timeout_s;
    l2.bench = bench;
    auto out = dc::RunL2(l2);
    if (!out.ok()) return Fail(out.status().message(), 1);
    if (out->artifacts.empty()) {
      std::printf("run complete; no DFX flag was on, so no artifacts were collected\n");
    } else {
      dc::PrintArtifacts(stdout, dfx_dir, out->artifacts, so.config);
    }
    print_common();
    if (out->bench_wall_s) {
      std::printf(
          "bench: a separate plain run (no DFX flags, its own process) took %.3f s "
          "wall-clock\n",
          *out->bench_wall_s);
    }
    return 0;
  }
  if (!chip_knobs.empty()) {
    return Fail(chip_knobs.front() +
                ": the args-dump drain model is an L2 knob (one program, `dfx-rank-agent exec`); "
                "drop it for a plan / --ranks run");
  }

  Result<dc::Plan> plan = is_plan ? dc::ParsePlan(*json, file) : dc::PlanForProgram(file);
  if (!plan.ok()) return Fail(plan.status().message());
  so.ranks = ranks.value_or(1);
  if (attach) {
    so.launcher = dc::Launcher::kAttach;
  } else if (launcher) {
    so.launcher = *launcher == "mpirun" ? dc::Launcher::kMpirun : dc::Launcher::kLocal;
  } else {
    so.launcher =
        dfx::FindExecutable("mpirun").has_value() ? dc::Launcher::kMpirun : dc::Launcher::kLocal;
  }
  if (so.launcher == dc::Launcher::kMpirun && !dfx::FindExecutable("mpirun").has_value()) {
    return Fail("--launcher mpirun: mpirun is not on PATH; use --launcher local", 1);
  }
  so.live_progress = ::isatty(STDERR_FILENO) != 0;
  // Test-only fault injection (the gather tests kill the coordinator mid-stream).
  if (const char* f = std::getenv("DFX_FAULT_COORDINATOR_KILL_AFTER_CHUNKS")) {
    so.fault_kill_after_chunks = std::strtoull(f, nullptr, 10);
  }
  auto outcome = dc::RunSession(*plan, so);
  if (!outcome.ok()) return Fail(outcome.status().message(), 1);
  if (!outcome->artifacts.empty())
    dc::PrintArtifacts(stdout, dfx_dir, outcome->artifacts, so.config);
  std::printf("run manifest: %s\n", dfx::ShellQuote(outcome->manifest_path.string()).c_str());
  print_common();
  if (bench) {
    // A separate plain session (no DFX flags) in a scratch work dir.
    dc::SessionOptions plain = so;
    dfx::config::RunConfig c;
    c.backend_type = so.config.backend_type;
    c.execution_mode = so.config.execution_mode;
    c.aicpu_thread_num = so.config.aicpu_thread_num;
    c.rings = so.config.rings;
    plain.config = c;
    plain.work_dir = so.work_dir / ".bench";
    plain.spool_root.clear();
    plain.live_progress = false;
    const auto t0 = std::chrono::steady_clock::now();
    auto bench_out = dc::RunSession(*plan, plain);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::error_code ec;
    fs::remove_all(plain.work_dir, ec);
    if (!bench_out.ok() || !bench_out->success) {
      return Fail("--bench: the plain run failed: " +
                      (bench_out.ok() ? bench_out->summary : bench_out.status().message()),
                  1);
    }
    std::printf(
        "bench: a separate plain run (no DFX flags, agents started fresh) took %.3f s "
        "wall-clock\n",
        wall);
  }
  if (!outcome->success) {
    std::fprintf(stderr, "dfx-coordinator: the run did not fully succeed:\n%s",
                 outcome->summary.c_str());
    return 1;
  }
  return 0;
}

int Gather(std::vector<std::string> args) {
  dc::GatherOptions options;
  std::string log_level = "info";
  Flags flags{std::move(args)};
  while (flags.Next()) {
    const std::string f = flags.name;
    if (f == "--work-dir") {
      std::string v;
      OR_FAIL(v, flags.Value());
      options.work_dir = v;
    } else if (f == "--spool") {
      std::string v;
      OR_FAIL(v, flags.Value());
      options.spool_root = v;
    } else if (f == "--timeout") {
      OR_FAIL(options.timeout_s, flags.Seconds());
    } else if (f == "--attach") {
      options.attach = true;
    } else if (f == "--bind") {
      OR_FAIL(options.bind, flags.Value());
    } else if (f == "--log-level") {
      OR_FAIL(log_level, flags.Value());
    } else {
      return Fail(fmt::format("gather: unknown argument '{}'\n{}", f, kUsage));
    }
  }
  dfx::log::Init("dfx-coordinator gather", log_level);
  if (options.work_dir.empty()) return Fail("gather: --work-dir DIR is required");
  if (options.attach && options.bind.empty()) {
    return Fail(
        "gather: --attach needs --bind ENDPOINT (where the serve agents connect, e.g. the run's "
        "--bind)");
  }
  auto agent = dfx::FindProjectBinary("dfx-rank-agent", "DFX_RANK_AGENT", {"../rank_agent"});
  if (!agent.ok()) return Fail(agent.status().message(), 1);
  options.agent_binary = *agent;
  auto out = dc::RunGather(options);
  if (!out.ok()) return Fail(out.status().message(), 1);
  const fs::path dfx_dir = dfx::collectors::DfxOutputsDir(options.work_dir);
  std::printf("gather of session %s: %zu file(s) recovered\n", dfx::Hex64(out->session_id).c_str(),
              out->recovered.size());
  for (const auto& r : out->recovered) {
    std::printf("  %s\n", dfx::ShellQuote((dfx_dir / r).string()).c_str());
  }
  for (const auto& f : out->failed) std::fprintf(stderr, "  not recovered: %s\n", f.c_str());
  return out->success ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Artifact chunks are 1 MiB buffers allocated and freed per chunk; keep
  // them in the heap instead of mmap/munmap + page faults for every one.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "run") return Run(std::move(args));
  if (command == "gather") return Gather(std::move(args));
  return Fail("unknown command '" + command + "' (expected run or gather)\n" + kUsage);
}
