// Child processes the coordinator starts: dfx-rank-agent (local launcher,
// L2 exec), or mpirun. Each child runs in its own process group so that the
// whole subtree (mpirun and its ranks) can be signalled at once.
//
// ChildProcess is move-only; its destructor kills (SIGKILL) and reaps a child
// that is still running, so no child outlives a failed coordinator path.
// One thread at a time.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace dfx::coordinator {

class ChildProcess {
 public:
  // Starts argv[0] (a path, or a name looked up on PATH) with argv.
  static Result<ChildProcess> Spawn(const std::vector<std::string>& argv);
  ChildProcess() = default;
  ~ChildProcess();
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !exit_status_; }
  // Non-blocking: true once the child has exited (its status is then known).
  bool Poll();
  // Waits up to `timeout_ms`; true if it exited.
  bool Wait(int timeout_ms);
  // Sends `signal` to the child's process group.
  void Signal(int signal);
  // SIGTERM, wait `grace_ms`, then SIGKILL; reaps.
  void Terminate(int grace_ms);
  // Raw wait status once exited.
  std::optional<int> exit_status() const { return exit_status_; }
  // "exit code 3", "killed by signal 9 (Killed)", "running".
  std::string Describe() const;
  bool succeeded() const;

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_status_;
};

// The directory of the running executable (/proc/self/exe).
std::filesystem::path SelfDir();

// Finds dfx-rank-agent: $DFX_RANK_AGENT, else beside this binary, else
// ../rank_agent/ (build tree), else PATH. Error names every place looked at.
Result<std::filesystem::path> FindAgentBinary();

// True if `name` is an executable on PATH.
bool OnPath(const std::string& name);

// A shell-quoted word (POSIX sh), like Python's shlex.quote.
std::string ShellQuote(const std::string& word);

}  // namespace dfx::coordinator
