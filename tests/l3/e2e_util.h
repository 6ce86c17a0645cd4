// Helpers for end-to-end tests that run the real binaries (dfx-coordinator,
// dfx-rank-agent, mpirun) as child processes on loopback. Header-only; used
// by tests/l2 and tests/l3. Every wait is bounded; nothing asserts durations.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/file_util.h"
#include "common/json.h"
#include "common/testing/temp_dirs.h"

namespace dfx::e2e {

namespace fs = std::filesystem;

inline std::string Bin(const std::string& name) {
  return std::string(DFX_BINARY_DIR) + "/bin/" + name;
}
inline fs::path Source(const std::string& rel) { return fs::path(DFX_SOURCE_DIR) / rel; }

inline std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// In a forked child: adds `env` (NAME=value) and replaces the process with
// argv (looked up on PATH); exit 127 when it cannot.
[[noreturn]] inline void ExecInChild(const std::vector<std::string>& argv,
                                     const std::vector<std::string>& env) {
  for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  ::_exit(127);
}

// A child process with stdout/stderr captured to files. Killed (SIGKILL, its
// whole process group) on destruction if still running.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const fs::path& log_dir,
          const std::vector<std::string>& env = {}) {
    static int counter = 0;
    const std::string tag = std::to_string(::getpid()) + "_" + std::to_string(counter++);
    out_path_ = log_dir / ("stdout_" + tag);
    err_path_ = log_dir / ("stderr_" + tag);
    fs::create_directories(log_dir);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(out, 1);
      ::dup2(err, 2);
      ExecInChild(argv, env);
    }
  }
  ~Process() {
    if (!done_) {
      ::killpg(pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
      Wait(30);
    }
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  // Waits up to `timeout_s`; true when it exited.
  bool Wait(int timeout_s) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    while (!done_) {
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        done_ = true;
        status_ = status;
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }
  void Signal(int sig) { ::kill(pid_, sig); }
  bool exited() const { return done_; }
  int exit_code() const { return done_ && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1; }
  int term_signal() const { return done_ && WIFSIGNALED(status_) ? WTERMSIG(status_) : 0; }
  std::string out() const { return Slurp(out_path_); }
  std::string err() const { return Slurp(err_path_); }

 private:
  pid_t pid_ = -1;
  bool done_ = false;
  int status_ = 0;
  fs::path out_path_, err_path_;
};

struct CommandResult {
  int exit_code = -1;
  bool timed_out = false;
  std::string out, err;
};

// Runs to completion (bounded by `timeout_s`; killed after it).
inline CommandResult RunCommand(const std::vector<std::string>& argv, const fs::path& log_dir,
                                int timeout_s = 180, const std::vector<std::string>& env = {}) {
  Process p(argv, log_dir, env);
  CommandResult r;
  r.timed_out = !p.Wait(timeout_s);
  if (r.timed_out) {
    ::killpg(p.pid(), SIGKILL);
    p.Wait(30);
  }
  r.exit_code = p.exit_code();
  r.out = p.out();
  r.err = p.err();
  return r;
}

// A fresh directory for one test.
inline fs::path TestDir(const std::string& name) {
  return FreshTestDir("dfx_e2e_" + std::to_string(::getpid()) + "_" + name);
}

// Every regular file under `dir`, relative, sorted.
inline std::set<std::string> Tree(const fs::path& dir) {
  std::set<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) files.insert(fs::relative(it->path(), dir, ec).generic_string());
  }
  return files;
}

// The artifacts a spool holds: Tree without the checksums the agents keep
// beside them (<dispatch dir>/.xxh64/...) and without files an agent is
// still writing (temporary names are never artifacts: IsTemporaryPath).
inline std::set<std::string> SpooledArtifacts(const fs::path& dir) {
  std::set<std::string> files;
  for (const std::string& f : Tree(dir)) {
    if (f.find("/.xxh64/") == std::string::npos && !IsTemporaryPath(f)) files.insert(f);
  }
  return files;
}

// Pids of processes whose command line contains every one of `needles`.
inline std::vector<pid_t> FindProcesses(const std::vector<std::string>& needles) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = Slurp(entry.path() / "cmdline");
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    // Skip zombies: their cmdline is empty anyway.
    bool all = !cmdline.empty();
    for (const auto& n : needles) all &= cmdline.find(n) != std::string::npos;
    if (all) pids.push_back(static_cast<pid_t>(std::stoi(name)));
  }
  return pids;
}

// Polls `condition` every 20 ms up to `timeout_s`.
template <typename F>
bool WaitFor(F condition, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// A test's launcher as the coordinator's flags: "mpich" is mpirun played
// by MPICH's mpiexec (Hydra), installed beside Open MPI's mpirun.
inline std::vector<std::string> LauncherFlags(const std::string& launcher) {
  if (launcher == "mpich") return {"--launcher", "mpirun", "--launcher-binary", "mpiexec.mpich"};
  return {"--launcher", launcher};
}

// The agents among `pids` that run under a launch guard
// (rank_agent/launch_guard.h): a dfx-rank-agent process whose parent is a
// dfx-rank-agent too (not the guard, nor mpirun's sh rank wrapper).
inline std::vector<pid_t> GuardedAgents(const std::vector<pid_t>& pids) {
  const auto is_agent = [](pid_t pid) {
    std::error_code ec;
    const fs::path exe = fs::read_symlink(fs::path("/proc") / std::to_string(pid) / "exe", ec);
    return !ec && exe.filename() == "dfx-rank-agent";
  };
  std::vector<pid_t> out;
  for (pid_t pid : pids) {
    const std::string stat = Slurp(fs::path("/proc") / std::to_string(pid) / "stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    fields >> state >> ppid;
    if (is_agent(pid) && ppid > 1 && is_agent(ppid)) out.push_back(pid);
  }
  return out;
}

inline Json LoadJson(const fs::path& p) {
  auto j = ReadJsonFile(p);
  return j.ok() ? *j : Json();
}

}  // namespace dfx::e2e
