// The one way to start a child process (docs/design.md §11.11): the coordinator's
// agents, mpirun and post-run converters, the L2 exec passes, Graphviz for
// the viewers. Every child runs in its own process group, so a whole subtree
// (mpirun and its ranks) is signalled at once, and every wait is bounded.
//
// ChildProcess is move-only; its destructor kills (SIGKILL) and reaps a child
// that is still running, so no child outlives a failed path. One thread at a
// time. The free functions are thread-safe.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace dfx {

struct SpawnOptions {
  // Where the child's stdout / stderr go (created or truncated); unset =
  // inherited from this process. `stderr_to_stdout` sends stderr wherever
  // stdout goes.
  std::optional<std::filesystem::path> stdout_path;
  std::optional<std::filesystem::path> stderr_path;
  bool stderr_to_stdout = false;
  // A descriptor of this process (a pipe's write end) to become the child's
  // stderr; -1 = none. The caller keeps and closes its own copy.
  int stderr_fd = -1;
  bool stdin_from_dev_null = false;
  // Extra "NAME=value" entries on top of this process's environment
  // (how launched agents get their secrets: never on the command line).
  std::vector<std::string> extra_env;
  // Linux: the signal the child gets when its parent dies
  // (PR_SET_PDEATHSIG, set in the child before exec; a child whose parent
  // is already gone by then exits 127 at once). 0 = none. The coordinator's
  // agents, mpirun and srun end with it even when it is SIGKILLed. Linux
  // ties this to the thread that spawned the child, not the process: spawn
  // from a thread that lives as long as the child (the coordinator spawns
  // from the thread that runs its loop).
  int parent_death_signal = 0;
};

class ChildProcess {
 public:
  // Starts argv[0] (a path, or a name looked up on PATH) with argv.
  static Result<ChildProcess> Spawn(const std::vector<std::string>& argv,
                                    const SpawnOptions& options = {});
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
  // The exit code once exited normally; -1 for a signal or while running.
  int exit_code() const;
  // "exit code 3", "killed by signal 9 (Killed)", "running".
  std::string Describe() const;
  bool succeeded() const;

 private:
  static Result<ChildProcess> ForkExec(const std::vector<std::string>& argv,
                                       const SpawnOptions& options, char** envp);
  pid_t pid_ = -1;
  std::optional<int> exit_status_;
};

// A child run to completion with its console output captured.
struct CompletedRun {
  int exit_code = -1;  // -1 for a timeout or a signal
  bool timed_out = false;
  std::string output;  // stdout + stderr interleaved, first 64 KiB
  double wall_s = 0;
};
// Runs argv and waits up to `timeout_s` (killed, with its group, after it).
// Error only when the child cannot be started.
Result<CompletedRun> RunCaptured(const std::vector<std::string>& argv, double timeout_s,
                                 const SpawnOptions& options = {});

// The absolute path of `program` on $PATH (or `program` itself when it holds
// a '/' and is executable); nullopt when there is none.
std::optional<std::filesystem::path> FindExecutable(const std::string& program);

// The directory of the running executable (/proc/self/exe).
std::filesystem::path SelfDir();

// Finds one of this project's programs: $<env_var> when set, else beside
// this binary, else at each of `build_tree_dirs` (relative to this binary's
// directory), else on PATH. The error names every place looked at and how to
// point at the program.
Result<std::filesystem::path> FindProjectBinary(const std::string& name, const std::string& env_var,
                                                const std::vector<std::string>& build_tree_dirs);

// A shell-quoted word (POSIX sh), like Python's shlex.quote.
std::string ShellQuote(const std::string& word);
// The words shell-quoted and joined by spaces: a command a user can paste.
std::string ShellCommand(const std::vector<std::string>& argv);
// The inverse for one flag's value: words split at blanks, with '...'
// (literal) and "..." (backslash escapes \" and \\) quoting and \ outside
// quotes; no expansion of any kind. Error for an unterminated quote.
Result<std::vector<std::string>> SplitShellWords(const std::string& text);

}  // namespace dfx
