// What mpirun / srun say when a rank's process ends (docs/design.md §8, §9):
// the launcher's word, read from its stderr through a pipe, so a rank whose
// process dies before the agent's launch guard runs (a wrapper script that
// fails, a binary missing or broken on one host, a loader error) fails at
// once, named, and not at --startup-timeout.
//
// Where the word comes from, per launcher:
//  - srun prints it itself ("srun: error: HOST: task 1: Exited with exit
//    code 3", "srun: error: HOST: tasks 0,2: Killed"; --kill-on-bad-exit=0
//    keeps the other tasks running).
//  - mpirun does not: Open MPI 4.1 with --enable-recovery prints nothing
//    when a rank exits and ends with status 0; MPICH's Hydra prints nothing
//    for a non-zero exit. So mpirun starts each rank under a POSIX sh
//    wrapper (RankWrapperArgv, present on every host) that runs the agent
//    command, forwards SIGTERM / SIGINT / SIGHUP to it, and prints one
//    line "dfx-rank-exit: rank=R host=H status=S" when it ends; mpirun
//    forwards that line to its stderr.
//
// Every other line is passed on to this process's stderr unchanged (the
// agents' own log lines). Lines are bounded (4 KiB; longer ones are passed
// on in pieces and never parsed).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/status.h"

namespace dfx::coordinator {

// One process of the launcher ended, as the launcher reported it.
struct RankExitReport {
  int launcher_rank = 0;  // the task / MPI rank: the agent's index in launch order
  std::string host;
  std::string how;     // "exit code 3", "killed by signal 9 (Killed)"
  bool clean = false;  // exit code 0
};

// The first line the mpirun rank wrapper prints when its rank ends.
inline constexpr std::string_view kRankExitMarker = "dfx-rank-exit: ";

// The words put before the agent command on mpirun's command line:
// {"/bin/sh", "-c", SCRIPT, NAME}; the agent command and its arguments follow.
std::vector<std::string> RankWrapperArgv();

// "exit code 3"; a status above 128 from a shell or a launch guard is a
// signal ("killed by signal 9 (Killed)"); 126 / 127 say what sh meant.
std::string DescribeExitStatus(int status);

// The reports one line of launcher output carries (a wrapper's line, or
// srun's "task(s) LIST: ..." line), for launcher ranks below `agents`;
// empty for any other line.
std::vector<RankExitReport> ParseLauncherLine(std::string_view line, int agents);

// The read end of a pipe that becomes mpirun's / srun's stderr, read by one
// thread of its own until the pipe closes or this object is destroyed.
// Take() is for the event loop's thread; the reader thread only appends.
class LauncherOutput {
 public:
  // Makes the pipe; `agents`: the launcher's process count.
  static Result<std::unique_ptr<LauncherOutput>> Open(int agents);
  ~LauncherOutput();
  LauncherOutput(const LauncherOutput&) = delete;
  LauncherOutput& operator=(const LauncherOutput&) = delete;

  // The write end, to hand to the child as its stderr (SpawnOptions::stderr_fd).
  int write_fd() const { return write_fd_; }
  // Starts reading; closes this process's copy of the write end (the child
  // holds its own), so the pipe ends when the launcher and its ranks do.
  void Start();
  // The reports seen since the last call, in order.
  std::vector<RankExitReport> Take();

 private:
  LauncherOutput(int read_fd, int write_fd, int agents);
  void ReadLoop();
  void Line(std::string_view line);

  int read_fd_ = -1;
  int write_fd_ = -1;
  const int agents_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<RankExitReport> reports_;  // guarded by mutex_
  std::thread reader_;
};

}  // namespace dfx::coordinator
