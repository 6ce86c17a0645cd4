// Starting the agents of a run or a gather (design.md §8): N local agent
// processes, one mpirun that starts them, or the recovery agents of a
// gather; and noticing when one of them exits. Agents attached from
// elsewhere (serve agents) are not launched here.
//
// Owns the child processes (killed on destruction if still running).
// Threads: the event loop's only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/subprocess.h"
#include "protocol/agent_command_line.h"
#include "protocol/curve.h"

namespace dfx::coordinator {

enum class Launcher { kLocal, kMpirun, kAttach };
const char* LauncherName(Launcher launcher);

// What every launched agent is told: its command line, and its CURVE
// credentials through its environment (never the command line: mpirun gets
// `-x NAME` and reads the values from its own environment).
struct AgentLaunch {
  std::filesystem::path agent_binary;
  std::string endpoint;  // the coordinator's, as agents dial it
  uint64_t session = 0;
  int chips_per_agent = 1;
  std::filesystem::path spool_root;
  double connect_timeout_s = 60;
  double heartbeat_interval_s = 0.2;
  double heartbeat_timeout_s = 10;
  std::string log_level = "warn";
  bool virtual_clock = false;
  int total_ranks = 0;  // the run's rank count: the last agent drives only ranks below it
  std::optional<protocol::CurveClient> curve;
};

class AgentLauncher {
 public:
  // A child that exited since the last Reap.
  struct Exit {
    size_t index = 0;  // in launch order
    pid_t pid = 0;
    std::string how;  // "exit code 3", "killed by signal 9 (Killed)"
  };

  // Starts the agents of `ranks` ranks with `launch`: one mpirun (`kMpirun`)
  // or one process per agent (`kLocal`; agent i owns ranks i*chips ..).
  // `kAttach` starts nothing.
  Status StartRun(Launcher launcher, int ranks, const AgentLaunch& launch);
  // Starts one recovery agent for `rank`'s spool under `spool_root`.
  Status StartRecovery(const AgentLaunch& launch, int32_t rank);

  std::vector<Exit> Reap();
  bool AnyRunning();
  size_t size() const { return children_.size(); }
  size_t exited() const;
  // SIGTERM, wait `grace_ms`, SIGKILL, for each child still running.
  void TerminateAll(int grace_ms);
  // The first child's ending, for messages.
  std::string DescribeFirst() const;

 private:
  protocol::AgentCommandLine CommandLine(const AgentLaunch& launch) const;
  Status Spawn(const std::vector<std::string>& argv, const AgentLaunch& launch);
  std::vector<ChildProcess> children_;
  std::vector<bool> reported_;
};

}  // namespace dfx::coordinator
