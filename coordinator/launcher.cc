#include "coordinator/launcher.h"

#include <fmt/format.h>
#include <unistd.h>

#include <thread>

#include "common/file_util.h"
#include "common/log.h"

namespace dfx::coordinator {

const char* LauncherName(Launcher launcher) {
  switch (launcher) {
    case Launcher::kLocal:
      return "local";
    case Launcher::kMpirun:
      return "mpirun";
    case Launcher::kAttach:
      return "attach";
  }
  return "?";
}

// The agent's command line (protocol/agent_command_line.h owns its flag
// names, bounds and formatting; the agent parses it with the same table).
protocol::AgentCommandLine AgentLauncher::CommandLine(const AgentLaunch& l) const {
  protocol::AgentCommandLine line;
  line.coordinator = l.endpoint;
  line.session_id = l.session;
  line.chips = l.chips_per_agent;
  line.spool = l.spool_root.string();
  line.connect_timeout_s = l.connect_timeout_s;
  line.heartbeat_interval_s = l.heartbeat_interval_s;
  line.heartbeat_timeout_s = l.heartbeat_timeout_s;
  line.chip.log_level = l.log_level;
  line.chip.virtual_clock = l.virtual_clock;
  line.total_ranks = l.total_ranks;
  return line;
}

Status AgentLauncher::Spawn(const std::vector<std::string>& argv, const AgentLaunch& launch) {
  SpawnOptions options;
  if (launch.curve) options.extra_env = protocol::CurveClientEnvironment(*launch.curve);
  DFX_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Spawn(argv, options));
  children_.push_back(std::move(child));
  reported_.push_back(false);
  return Status::Ok();
}

Status AgentLauncher::StartRun(Launcher launcher, int ranks, const AgentLaunch& launch) {
  if (launcher == Launcher::kAttach) return Status::Ok();
  const protocol::AgentCommandLine line = CommandLine(launch);
  const int agents = (ranks + launch.chips_per_agent - 1) / launch.chips_per_agent;
  if (launcher == Launcher::kMpirun) {
    // --enable-recovery: without it Open MPI 4.1 aborts every rank as soon
    // as one dies (e.g. SIGKILL); with it the others run on, the dead rank is
    // found by its heartbeat deadline and mpirun exits once all ranks are gone.
    std::vector<std::string> argv = {"mpirun", "--enable-recovery"};
    if (::geteuid() == 0) argv.push_back("--allow-run-as-root");
    if (agents > static_cast<int>(std::thread::hardware_concurrency())) {
      argv.push_back("--oversubscribe");
    }
    // The credentials travel in the environment: mpirun forwards the names given with -x.
    if (launch.curve) {
      for (const std::string& name : protocol::CurveClientEnvironmentNames()) {
        argv.insert(argv.end(), {"-x", name});
      }
    }
    argv.insert(argv.end(), {"-np", std::to_string(agents), launch.agent_binary.string()});
    for (std::string& a : line.ToArgv()) argv.push_back(std::move(a));  // no --rank: from MPI
    DFX_LOG_INFO("starting {}", fmt::join(argv, " "));
    return Spawn(argv, launch);
  }
  for (int i = 0; i < agents; ++i) {
    protocol::AgentCommandLine local = line;
    local.rank = i;
    std::vector<std::string> argv = {launch.agent_binary.string()};
    for (std::string& a : local.ToArgv()) argv.push_back(std::move(a));
    DFX_RETURN_IF_ERROR(Spawn(argv, launch));
  }
  return Status::Ok();
}

Status AgentLauncher::StartRecovery(const AgentLaunch& l, int32_t rank) {
  protocol::AgentCommandLine line = CommandLine(l);
  line.mode = protocol::AgentMode::kRecover;
  line.rank = rank;
  std::vector<std::string> argv = {l.agent_binary.string()};
  for (std::string& a : line.ToArgv()) argv.push_back(std::move(a));
  return Spawn(argv, l);
}

std::vector<AgentLauncher::Exit> AgentLauncher::Reap() {
  std::vector<Exit> exits;
  for (size_t i = 0; i < children_.size(); ++i) {
    if (reported_[i] || !children_[i].Poll()) continue;
    reported_[i] = true;
    exits.push_back({i, children_[i].pid(), children_[i].Describe()});
  }
  return exits;
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

void AgentLauncher::TerminateAll(int grace_ms) {
  for (auto& child : children_) {
    if (!child.Poll()) {
      DFX_LOG_WARN("child pid {} still running after --shutdown-timeout; terminating it",
                   child.pid());
      child.Terminate(grace_ms);
    }
  }
}

std::string AgentLauncher::DescribeFirst() const {
  return children_.empty() ? "no agent was started" : children_.front().Describe();
}

}  // namespace dfx::coordinator
