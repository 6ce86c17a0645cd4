// Starting the agents of a run or a gather (docs/design.md §8): N local agent
// processes, one mpirun that starts them, or the recovery agents of a
// gather; and noticing when one of them exits. Agents attached from
// elsewhere (serve agents) are not launched here.
//
// Owns the child processes (killed on destruction if still running, and
// signalled by the kernel when this process dies: SIGTERM, on which an
// agent finishes writing what its chip runs and exits, and mpirun / srun
// end their ranks).
// Threads: the event loop's only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/subprocess.h"
#include "common/timeouts.h"
#include "coordinator/launcher_report.h"
#include "protocol/agent_command_line.h"
#include "protocol/curve.h"

namespace dfx::coordinator {

enum class Launcher { kLocal, kMpirun, kSrun, kAttach };
const char* LauncherName(Launcher launcher);
// The launcher named exactly `name` (a LauncherName); nullopt otherwise.
std::optional<Launcher> ParseLauncher(std::string_view name);

// Which MPI an mpirun belongs to: they differ in the flags they accept
// (Open MPI's --enable-recovery, --allow-run-as-root, --oversubscribe, -x
// NAME; Hydra's -genvlist NAMES for MPICH and Intel MPI).
enum class MpiFlavour { kOpenMpi, kMpich, kIntelMpi, kUnknown };
const char* MpiFlavourName(MpiFlavour flavour);
// From the text of `mpirun --version`.
MpiFlavour MpiFlavourFromVersion(const std::string& version_text);
// Runs `<mpirun> --version` (bounded to a few seconds).
MpiFlavour DetectMpiFlavour(const std::string& mpirun);

// What every launched agent is told: its command line, and its CURVE
// credentials through its environment (never the command line: mpirun gets
// `-x NAME` and reads the values from its own environment).
struct AgentLaunch {
  std::filesystem::path agent_binary;
  // mpirun / srun (see SessionOptions): the launcher program, its extra
  // arguments, the agent command the hosts run ("" = agent_binary) and,
  // for mpirun, its flavour.
  std::string launcher_binary;
  std::vector<std::string> launcher_args;
  std::string agent_command;
  MpiFlavour mpi_flavour = MpiFlavour::kUnknown;
  bool root = false;     // this process runs as root (Open MPI must be told)
  unsigned cores = 1;    // of this host (Open MPI needs --oversubscribe past them)
  std::string endpoint;  // the coordinator's, as agents dial it
  uint64_t session = 0;
  int chips_per_agent = 1;
  std::filesystem::path spool_root;  // empty: each agent's node-local default
  // What the agents are told: connect (their wait for this coordinator's
  // first answer: the run's startup deadline) and the heartbeat pair.
  Timeouts timeouts;
  std::string log_level = "warn";
  bool virtual_clock = false;
  int total_ranks = 0;  // the run's rank count: the last agent drives only ranks below it
  std::optional<protocol::CurveClient> curve;
};

// The launcher's command line for `agents` agents (mpirun / srun; pure,
// so tests check it): launcher program, its flags for the flavour, the
// user's launcher arguments, then (mpirun) the rank wrapper of
// launcher_report.h, the agent command and its arguments.
std::vector<std::string> LauncherArgv(Launcher launcher, int agents, const AgentLaunch& launch,
                                      const std::vector<std::string>& agent_args);

class AgentLauncher {
 public:
  // A child that exited since the last Reap.
  struct Exit {
    size_t index = 0;  // in launch order
    pid_t pid = 0;
    std::string how;  // "exit code 3", "killed by signal 9 (Killed)"
  };

  // Starts the agents of `ranks` ranks with `launch`: one mpirun (`kMpirun`)
  // or srun (`kSrun`) that starts them all, or one process per agent
  // (`kLocal`; agent i owns ranks i*chips ..).
  // `kAttach` starts nothing.
  Status StartRun(Launcher launcher, int ranks, const AgentLaunch& launch);
  // Starts one recovery agent for `rank`'s spool under `spool_root`.
  Status StartRecovery(const AgentLaunch& launch, int32_t rank);

  std::vector<Exit> Reap();
  // What mpirun / srun reported since the last call: ranks' processes
  // that ended (launcher_report.h); empty for the other launchers.
  std::vector<RankExitReport> TakeRankExits();
  bool AnyRunning();
  size_t size() const { return children_.size(); }
  size_t exited() const;
  // SIGTERM, wait `grace_ms`, SIGKILL, for each child still running; the
  // warning says it was still running `when`.
  void TerminateAll(int grace_ms, const std::string& when = "after --shutdown-timeout");
  // The first child's ending, for messages.
  std::string DescribeFirst() const;

 private:
  protocol::AgentCommandLine CommandLine(const AgentLaunch& launch) const;
  // `parent_death_signal`: what the child gets when this process dies;
  // `output`: where its stderr goes (nullptr: inherited).
  Status Spawn(const std::vector<std::string>& argv, const AgentLaunch& launch,
               int parent_death_signal, LauncherOutput* output = nullptr);
  // mpirun's / srun's stderr, read for its reports; destroyed after the
  // children (declared before them) so its reader sees their last lines.
  std::unique_ptr<LauncherOutput> launcher_output_;
  std::vector<ChildProcess> children_;
  std::vector<bool> reported_;
};

}  // namespace dfx::coordinator
