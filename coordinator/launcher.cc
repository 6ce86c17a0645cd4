#include "coordinator/launcher.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "common/enum_text.h"
#include "common/file_util.h"
#include "common/log.h"

namespace dfx::coordinator {

namespace {

// What a local agent gets when its coordinator dies (even by SIGKILL): it
// stops as on any SIGTERM, letting the dispatch on its chip write its files
// whole into the spool (SIGKILL could cut a file there), then exits.
constexpr int kAgentDeathSignal = SIGTERM;

constexpr auto kLauncherText = MakeEnumTable<Launcher>({
    {Launcher::kLocal, "local"},
    {Launcher::kMpirun, "mpirun"},
    {Launcher::kSrun, "srun"},
    {Launcher::kAttach, "attach"},
});

// kUnknown has no row: it names itself with the fallback.
constexpr auto kMpiFlavourText = MakeEnumTable<MpiFlavour>(
    {
        {MpiFlavour::kOpenMpi, "Open MPI"},
        {MpiFlavour::kMpich, "MPICH"},
        {MpiFlavour::kIntelMpi, "Intel MPI"},
    },
    "an unknown MPI");

}  // namespace

const char* LauncherName(Launcher launcher) { return kLauncherText.Name(launcher); }

std::optional<Launcher> ParseLauncher(std::string_view name) { return kLauncherText.Parse(name); }

const char* MpiFlavourName(MpiFlavour flavour) { return kMpiFlavourText.Name(flavour); }

MpiFlavour MpiFlavourFromVersion(const std::string& text) {
  // "mpirun (Open MPI) 4.1.4"; MPICH's Hydra: "HYDRA build details: ...";
  // "Intel(R) MPI Library for Linux* OS, Version 2021...".
  if (text.find("Open MPI") != std::string::npos || text.find("OpenRTE") != std::string::npos) {
    return MpiFlavour::kOpenMpi;
  }
  if (text.find("Intel(R) MPI") != std::string::npos) return MpiFlavour::kIntelMpi;
  if (text.find("HYDRA") != std::string::npos || text.find("MPICH") != std::string::npos) {
    return MpiFlavour::kMpich;
  }
  return MpiFlavour::kUnknown;
}

MpiFlavour DetectMpiFlavour(const std::string& mpirun) {
  auto run = RunCaptured({mpirun, "--version"}, 10);
  if (!run.ok() || run->timed_out) return MpiFlavour::kUnknown;
  return MpiFlavourFromVersion(run->output);
}

std::vector<std::string> LauncherArgv(Launcher launcher, int agents, const AgentLaunch& launch,
                                      const std::vector<std::string>& agent_args) {
  std::vector<std::string> argv;
  const std::vector<std::string> secrets =
      launch.curve ? protocol::CurveClientEnvironmentNames() : std::vector<std::string>();
  if (launcher == Launcher::kSrun) {
    // srun passes this process's environment (the credentials with it) to
    // every task by default (--export=ALL); one failed task must not end
    // the others (--kill-on-bad-exit=0): the coordinator fails its rank.
    argv = {launch.launcher_binary.empty() ? "srun" : launch.launcher_binary,
            "--ntasks=" + std::to_string(agents), "--kill-on-bad-exit=0", "--export=ALL"};
  } else {
    argv = {launch.launcher_binary.empty() ? "mpirun" : launch.launcher_binary};
    switch (launch.mpi_flavour) {
      case MpiFlavour::kOpenMpi:
        // --enable-recovery: without it Open MPI 4.1 aborts every rank as
        // soon as one dies (e.g. SIGKILL); with it the others run on and
        // the coordinator fails the dead rank alone.
        argv.push_back("--enable-recovery");
        if (launch.root) argv.push_back("--allow-run-as-root");
        if (agents > static_cast<int>(launch.cores)) argv.push_back("--oversubscribe");
        // The credentials travel in the environment: mpirun forwards the names given with -x.
        for (const std::string& name : secrets) argv.insert(argv.end(), {"-x", name});
        break;
      case MpiFlavour::kMpich:
      case MpiFlavour::kIntelMpi:
        // Hydra forwards the whole environment by default; say so for the
        // credentials anyway, in case a site default turned that off.
        if (!secrets.empty())
          argv.insert(argv.end(), {"-genvlist", fmt::format("{}", fmt::join(secrets, ","))});
        break;
      case MpiFlavour::kUnknown:
        break;  // plain -np N: whatever else it needs comes from --launcher-args
    }
    argv.insert(argv.end(), {"-np", std::to_string(agents)});
  }
  argv.insert(argv.end(), launch.launcher_args.begin(), launch.launcher_args.end());
  // mpirun says nothing when a rank ends: the wrapper does (launcher_report.h).
  if (launcher == Launcher::kMpirun) {
    for (std::string& word : RankWrapperArgv()) argv.push_back(std::move(word));
  }
  argv.push_back(launch.agent_command.empty() ? launch.agent_binary.string()
                                              : launch.agent_command);
  argv.insert(argv.end(), agent_args.begin(), agent_args.end());
  return argv;
}

// The agent's command line (protocol/agent_command_line.h owns its flag
// names, bounds and formatting; the agent parses it with the same table).
protocol::AgentCommandLine AgentLauncher::CommandLine(const AgentLaunch& l) const {
  protocol::AgentCommandLine line;
  line.coordinator = l.endpoint;
  line.session_id = l.session;
  line.chips = l.chips_per_agent;
  line.spool = l.spool_root.string();
  line.timeouts = l.timeouts;
  line.chip.log_level = l.log_level;
  line.chip.virtual_clock = l.virtual_clock;
  line.total_ranks = l.total_ranks;
  return line;
}

Status AgentLauncher::Spawn(const std::vector<std::string>& argv, const AgentLaunch& launch,
                            int parent_death_signal, LauncherOutput* output) {
  SpawnOptions options;
  options.parent_death_signal = parent_death_signal;
  if (output != nullptr) options.stderr_fd = output->write_fd();
  if (launch.curve) options.extra_env = protocol::CurveClientEnvironment(*launch.curve);
  DFX_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Spawn(argv, options));
  if (output != nullptr) output->Start();
  children_.push_back(std::move(child));
  reported_.push_back(false);
  return Status::Ok();
}

Status AgentLauncher::StartRun(Launcher launcher, int ranks, const AgentLaunch& launch) {
  if (launcher == Launcher::kAttach) return Status::Ok();
  const protocol::AgentCommandLine line = CommandLine(launch);
  const int agents = (ranks + launch.chips_per_agent - 1) / launch.chips_per_agent;
  if (launcher == Launcher::kMpirun || launcher == Launcher::kSrun) {
    // No --rank: each agent reads it from the launcher's environment.
    std::vector<std::string> argv = LauncherArgv(launcher, agents, launch, line.ToArgv());
    DFX_LOG_INFO("starting {}", fmt::join(argv, " "));
    // Its stderr comes through a pipe: what it says about ranks that ended.
    DFX_ASSIGN_OR_RETURN(launcher_output_, LauncherOutput::Open(agents));
    // SIGTERM: mpirun / srun then take their ranks down with them.
    return Spawn(argv, launch, SIGTERM, launcher_output_.get());
  }
  for (int i = 0; i < agents; ++i) {
    protocol::AgentCommandLine local = line;
    local.rank = i;
    std::vector<std::string> argv = {launch.agent_binary.string()};
    for (std::string& a : local.ToArgv()) argv.push_back(std::move(a));
    DFX_RETURN_IF_ERROR(Spawn(argv, launch, kAgentDeathSignal));
  }
  return Status::Ok();
}

Status AgentLauncher::StartRecovery(const AgentLaunch& l, int32_t rank) {
  protocol::AgentCommandLine line = CommandLine(l);
  line.mode = protocol::AgentMode::kRecover;
  line.rank = rank;
  std::vector<std::string> argv = {l.agent_binary.string()};
  for (std::string& a : line.ToArgv()) argv.push_back(std::move(a));
  return Spawn(argv, l, kAgentDeathSignal);
}

namespace {
// Whether some child of this process may have exited and not been waited
// for (it stays waitable: WNOWAIT). One system call where polling each child
// is one per child: the event loop asks on every turn, and with 64 agents
// that was 64 waitpid calls per message handled. An error (no child at all)
// says "maybe": the children are then polled one by one, as before.
bool AnyChildExited() {
  siginfo_t info{};
  if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return true;
  return info.si_pid != 0;
}
}  // namespace

std::vector<AgentLauncher::Exit> AgentLauncher::Reap() {
  std::vector<Exit> exits;
  if (!AnyChildExited()) return exits;
  for (size_t i = 0; i < children_.size(); ++i) {
    if (reported_[i] || !children_[i].Poll()) continue;
    reported_[i] = true;
    exits.push_back({i, children_[i].pid(), children_[i].Describe()});
  }
  return exits;
}

std::vector<RankExitReport> AgentLauncher::TakeRankExits() {
  return launcher_output_ ? launcher_output_->Take() : std::vector<RankExitReport>();
}

bool AgentLauncher::AnyRunning() {
  bool running = false;
  for (auto& child : children_) running |= !child.Poll();
  return running;
}

size_t AgentLauncher::exited() const {
  size_t n = 0;
  for (const auto& child : children_) n += child.exit_status().has_value() ? 1 : 0;
  return n;
}

void AgentLauncher::TerminateAll(int grace_ms, const std::string& when) {
  for (auto& child : children_) {
    if (!child.Poll()) {
      DFX_LOG_WARN("child pid {} still running {}; terminating it", child.pid(), when);
      child.Terminate(grace_ms);
    }
  }
}

std::string AgentLauncher::DescribeFirst() const {
  return children_.empty() ? "no agent was started" : children_.front().Describe();
}

}  // namespace dfx::coordinator
