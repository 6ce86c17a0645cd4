// dfx-rank-agent: parse flags, build the agent, run it (docs/design.md §11.1). The
// command line (its forms, flags, bounds and --help) is described once, in
// protocol/agent_command_line.h, which the coordinator's launcher writes with.
// Usage errors exit 2, a failed run or agent 1.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "collectors/artifact_layout.h"
#include "collectors/dispatch_bytes.h"
#include "common/heap.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/metrics_server.h"
#include "protocol/agent_command_line.h"
#include "rank_agent/agent.h"
#include "rank_agent/exec.h"
#include "rank_agent/launch_guard.h"
#include "rank_agent/rank_env.h"

namespace {

namespace fs = std::filesystem;
using dfx::Result;
using dfx::Status;

dfx::rank_agent::RankAgent* g_agent = nullptr;
volatile sig_atomic_t g_signal = 0;  // the signal that stopped the agent

void OnSignal(int signal) {
  g_signal = signal;
  if (g_agent != nullptr) g_agent->Stop();  // atomic store + pipe write: async-signal-safe
}

int Fail(const std::string& message, int code = 2) {
  std::fprintf(stderr, "dfx-rank-agent: %s\n", message.c_str());
  return code;
}

// The test hooks, read here and nowhere else and compiled in only with
// -DDFX_FAULT_HOOKS=ON (cmake/fault_hooks.cmake): DFX_FAULT_GRAPH_PASS=1 makes
// every graph pass fail before it runs, DFX_FAULT_FORGET_PROGRAMS=1 makes
// the agent keep no program between dispatches, DFX_FAULT_WRONG_BULK_TOKEN=1
// makes it present a wrong token on the local bulk path (a coordinator passes its
// environment to the agents it starts, so a test sets it there).
dfx::rank_agent::FaultInjection FaultsFromEnvironment() {
  dfx::rank_agent::FaultInjection faults;
#ifdef DFX_FAULT_HOOKS
  const char* graph_pass = std::getenv("DFX_FAULT_GRAPH_PASS");
  if (graph_pass != nullptr && std::string(graph_pass) == "1") {
    faults.graph_pass_error =
        "fault injection: DFX_FAULT_GRAPH_PASS=1 makes the graph pass (dep_gen capture) fail "
        "before it runs; unset it to capture deps.json";
  }
  const char* forget = std::getenv("DFX_FAULT_FORGET_PROGRAMS");
  faults.forget_programs = forget != nullptr && std::string(forget) == "1";
  const char* token = std::getenv("DFX_FAULT_WRONG_BULK_TOKEN");
  faults.wrong_bulk_token = token != nullptr && std::string(token) == "1";
#endif
  return faults;
}

// Creates `dir` (mode 0700) or checks the existing one: a real directory
// (not a link) owned by this user that nobody else may write to.
Status CheckOwnPrivateDir(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return dfx::InvalidArgument(
        fmt::format("{}: cannot create the spool: {}", dir.string(), std::strerror(errno)));
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid() ||
      (st.st_mode & 022) != 0) {
    return dfx::FailedPrecondition(fmt::format(
        "{}: the default spool must be a directory owned by this user and writable by no one "
        "else (it is a link, someone else's, or group/world-writable); remove it or give "
        "--spool DIR",
        dir.string()));
  }
  return Status::Ok();
}

dfx::device::ChipOptions ChipOptionsFrom(const dfx::protocol::AgentChipFlags& flags) {
  dfx::device::ChipOptions chip;
  chip.virtual_clock = flags.virtual_clock;
  chip.aic_cores = flags.aic_cores;
  chip.aiv_cores = flags.aiv_cores;
  return chip;
}

int RunExecMode(const dfx::protocol::AgentExecCommandLine& line) {
  dfx::rank_agent::ExecOptions options;
  options.program_path = line.program;
  options.program_origin = line.program_origin;
  options.check_only = line.check_only;
  options.check_host_memory = line.check_host_memory;
  options.estimate = line.estimate;
  options.output_dir = line.output_dir;
  options.work_dir = line.work_dir;
  options.config = line.config;
  options.pass = line.pass;
  options.device_state_dir = line.device_state_dir;
  options.chip = ChipOptionsFrom(line.chip);
  options.chip.dump_drain_bytes_per_sec = line.dump_drain_bytes_per_sec;
  options.chip.dump_timeout_ms = line.dump_timeout_ms;
  options.chip.dump_arena_bytes = line.dump_arena_bytes;
  options.faults = FaultsFromEnvironment();
  dfx::log::Init("dfx-rank-agent exec", line.chip.log_level);
  auto result = dfx::rank_agent::RunExec(options);
  if (!result.ok()) return Fail(result.status().message(), 1);
  if (options.check_only && result->estimate) {
    std::printf("%s\n", dfx::collectors::DispatchBytesJson(*result->estimate).c_str());
    return 0;
  }
  if (options.check_only) {
    std::printf("checked %s: ok\n", (options.program_origin.empty() ? options.program_path.string()
                                                                    : options.program_origin)
                                        .c_str());
    return 0;
  }
  for (const auto& w : result->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  // The makespan comes from the emulator's own accounting, so a run with no
  // collector reports it too: compare runs with and without them
  // (bench/perturbation).
  std::printf(
      "ran %s: %llu task(s), makespan %.3f us on the chip clock, run wall %.3f ms, %zu "
      "artifact(s) in %s\n",
      options.program_path.c_str(), static_cast<unsigned long long>(result->tasks_executed),
      result->makespan_ns / 1000.0, result->wall_ns / 1e6, result->artifacts.size(),
      options.output_dir.c_str());
  for (const auto& a : result->artifacts) std::printf("  %s\n", a.c_str());
  return 0;
}

int RunAgentMode(const dfx::protocol::AgentCommandLine& line, bool connect_timeout_given) {
  dfx::rank_agent::AgentOptions options;
  options.mode = line.mode;
  options.coordinator = line.coordinator;
  options.session_id = line.session_id;
  options.chips = line.chips;
  options.spool_root = line.spool;
  // Credentials first: they come out of the environment before anything else runs.
  auto curve = dfx::protocol::ResolveAgentCurve(line);
  if (!curve.ok()) return Fail(curve.status().message());
  options.curve = *curve;
  options.timeouts = line.timeouts;
  // A serve agent waits for coordinators without end unless told a limit.
  if (connect_timeout_given) options.timeouts.serve_connect = line.timeouts.connect;
  options.chip = ChipOptionsFrom(line.chip);
  options.faults = FaultsFromEnvironment();
  const std::optional<int> flag_rank = line.rank;

  // The rank comes from the launcher's environment when it is there: no
  // MPI_Init (a collective) before HELLO, so a rank that dies early fails
  // alone and is named. MPI only for a launcher that sets no variable.
  const bool recover = options.mode == dfx::protocol::AgentMode::kRecover;
  const std::optional<dfx::rank_agent::LaunchRank> env_rank =
      flag_rank || recover ? std::nullopt : dfx::rank_agent::RankFromEnvironment();
  dfx::rank_agent::MpiScope mpi;
  std::optional<dfx::rank_agent::LaunchRank> mpi_rank;
  if (!flag_rank && !recover && !env_rank) mpi_rank = mpi.InitIfLaunched();
  auto rank = recover ? Result<dfx::rank_agent::LaunchRank>(
                            dfx::rank_agent::LaunchRank{flag_rank.value_or(0), 1, "spool"})
                      : dfx::rank_agent::ResolveRank(flag_rank, mpi_rank);
  if (!rank.ok()) return Fail(rank.status().message());
  // Several chips per agent: ranks are dense in launcher-rank order. A
  // recovery agent with --rank R offers rank R's spool only.
  options.first_rank = recover ? rank->rank : rank->rank * options.chips;
  options.recover_only_first_rank = recover && flag_rank.has_value();
  if (line.total_ranks > 0 && !recover) {
    // The last agent of a run whose rank count is not a multiple of
    // --chips drives only the ranks the run has.
    if (options.first_rank >= line.total_ranks) {
      return Fail(fmt::format("rank {} (launcher rank {} x --chips {}) is beyond --total-ranks {}",
                              options.first_rank, rank->rank, options.chips, line.total_ranks));
    }
    options.chips = std::min(options.chips, line.total_ranks - options.first_rank);
  }
  if (env_rank && options.mode == dfx::protocol::AgentMode::kOneShot) {
    // Started by mpirun / srun: run under the launch guard, which reports
    // this agent's death before HELLO (rank_agent/launch_guard.h).
    dfx::rank_agent::LaunchGuardOptions guard;
    guard.coordinator = options.coordinator;
    guard.session = options.session_id;
    for (int i = 0; i < options.chips; ++i) guard.ranks.push_back(options.first_rank + i);
    guard.curve = options.curve;
    guard.log_prefix = fmt::format("dfx-rank-agent rank {}", options.first_rank);
    if (std::optional<int> code = dfx::rank_agent::RunLaunchGuard(guard)) return *code;
#ifdef DFX_FAULT_HOOKS
    // Test hook: DFX_FAULT_KILL_RANK_BEFORE_HELLO=R kills the agent of
    // launcher rank R here, as a crash before HELLO would.
    if (const char* kill = std::getenv("DFX_FAULT_KILL_RANK_BEFORE_HELLO");
        kill != nullptr && std::string(kill) == std::to_string(rank->rank)) {
      std::raise(SIGKILL);
    }
#endif
  }
  if (options.spool_root.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    options.spool_root =
        fs::path(tmp != nullptr ? tmp : "/tmp") / dfx::collectors::DefaultSpoolDirName(::getuid());
    // A shared /tmp: the default spool must be this user's own directory,
    // not a link or a directory someone else prepared.
    if (Status s = CheckOwnPrivateDir(options.spool_root); !s.ok()) return Fail(s.message(), 1);
  }
  dfx::log::Init(fmt::format("dfx-rank-agent rank {}", options.first_rank), line.chip.log_level);
  DFX_LOG_INFO("rank {} (from {}), {} chip(s), coordinator {}, spool {}", options.first_rank,
               rank->source, options.chips, options.coordinator, options.spool_root.string());

  // --metrics (serve only, checked by the parser): counters and /healthz
  // for as long as the agent runs.
  std::unique_ptr<dfx::metrics::MetricsServer> metrics;
  if (!line.metrics.empty()) {
    dfx::metrics::DeclareAgentCounters();
    auto served = dfx::metrics::ServeMetrics(
        line.metrics, fmt::format("dfx-rank-agent serve rank {}", options.first_rank),
        [] { return fmt::format("{} session(s) served", dfx::metrics::SessionsServed().Value()); });
    if (!served.ok()) return Fail(served.status().message(), 1);
    metrics = std::move(*served);
  }
  dfx::protocol::Context context;
  dfx::rank_agent::RankAgent agent(context, options);
  g_agent = &agent;
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  Status s = agent.Run();
  g_agent = nullptr;
  const bool serve = options.mode == dfx::protocol::AgentMode::kServe;
  if (g_signal != 0) {
    std::fprintf(stderr, "dfx-rank-agent rank %d: exiting on %s (signal %d)\n", options.first_rank,
                 ::strsignal(g_signal), static_cast<int>(g_signal));
  }
  if (!s.ok()) return Fail(s.message(), 1);
  if (serve && g_signal == 0) {
    std::fprintf(stderr, "dfx-rank-agent rank %d: exiting\n", options.first_rank);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  dfx::TuneHeap();  // before anything is allocated in earnest
  using Form = dfx::protocol::ParsedAgentCommandLine::Form;
  auto parsed =
      dfx::protocol::ParseAgentCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.ok()) return Fail(parsed.status().message());
  for (const auto& w : parsed->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  switch (parsed->form) {
    case Form::kHelp:
      std::fputs(parsed->help.c_str(), stdout);
      return 0;
    case Form::kExec:
      return RunExecMode(parsed->exec);
    case Form::kAgent:
      break;
  }
  const bool connect_timeout_given = std::any_of(argv + 1, argv + argc, [](const char* a) {
    return std::strcmp(a, "--connect-timeout") == 0 ||
           std::strncmp(a, "--connect-timeout=", 18) == 0;
  });
  return RunAgentMode(parsed->agent, connect_timeout_given);
}
