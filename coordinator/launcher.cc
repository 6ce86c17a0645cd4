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

std::vector<std::string> AgentLauncher::CommonArgs(const AgentLaunch& l) const {
  std::vector<std::string> args = {"--coordinator",
                                   l.endpoint,
                                   "--session",
                                   Hex64(l.session),
                                   "--chips",
                                   std::to_string(l.chips_per_agent),
                                   "--spool",
                                   l.spool_root.string(),
                                   "--connect-timeout",
                                   fmt::format("{:g}", l.connect_timeout_s),
                                   "--heartbeat-interval",
                                   fmt::format("{:g}", l.heartbeat_interval_s),
                                   "--heartbeat-timeout",
                                   fmt::format("{:g}", l.heartbeat_timeout_s),
                                   "--log-level",
                                   l.log_level};
  args.insert(args.end(), l.extra_args.begin(), l.extra_args.end());
  return args;
}

Status AgentLauncher::StartRun(Launcher launcher, int ranks, const AgentLaunch& launch) {
  if (launcher == Launcher::kAttach) return Status::Ok();
  const std::vector<std::string> common = CommonArgs(launch);
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
    argv.insert(argv.end(), {"-np", std::to_string(agents), launch.agent_binary.string()});
    argv.insert(argv.end(), common.begin(), common.end());
    DFX_LOG_INFO("starting {}", fmt::join(argv, " "));
    DFX_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Spawn(argv));
    children_.push_back(std::move(child));
    reported_.push_back(false);
    return Status::Ok();
  }
  for (int i = 0; i < agents; ++i) {
    std::vector<std::string> argv = {launch.agent_binary.string(), "--rank", std::to_string(i)};
    argv.insert(argv.end(), common.begin(), common.end());
    DFX_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Spawn(argv));
    children_.push_back(std::move(child));
    reported_.push_back(false);
  }
  return Status::Ok();
}

Status AgentLauncher::StartRecovery(const AgentLaunch& l, int32_t rank) {
  std::vector<std::string> argv = {l.agent_binary.string(),
                                   "--recover",
                                   "--rank",
                                   std::to_string(rank),
                                   "--coordinator",
                                   l.endpoint,
                                   "--session",
                                   Hex64(l.session),
                                   "--spool",
                                   l.spool_root.string(),
                                   "--connect-timeout",
                                   fmt::format("{:g}", l.connect_timeout_s),
                                   "--heartbeat-timeout",
                                   fmt::format("{:g}", l.heartbeat_timeout_s),
                                   "--log-level",
                                   l.log_level};
  DFX_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Spawn(argv));
  children_.push_back(std::move(child));
  reported_.push_back(false);
  return Status::Ok();
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
