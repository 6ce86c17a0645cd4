#include "coordinator/process.h"

#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

extern char** environ;

namespace dfx::coordinator {

namespace fs = std::filesystem;

Result<ChildProcess> ChildProcess::Spawn(const std::vector<std::string>& argv) {
  DFX_CHECK(!argv.empty());
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0].c_str(), nullptr, &attr, cargv.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return Unavailable(fmt::format("cannot start {}: {}", argv[0], std::strerror(rc)));
  }
  ChildProcess child;
  child.pid_ = pid;
  return child;
}

ChildProcess::~ChildProcess() {
  if (running()) Terminate(0);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_), exit_status_(other.exit_status_) {
  other.pid_ = -1;
  other.exit_status_.reset();
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    if (running()) Terminate(0);
    pid_ = other.pid_;
    exit_status_ = other.exit_status_;
    other.pid_ = -1;
    other.exit_status_.reset();
  }
  return *this;
}

bool ChildProcess::Poll() {
  if (pid_ <= 0) return true;
  if (exit_status_) return true;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_status_ = status;
    return true;
  }
  if (r < 0 && errno == ECHILD) {
    exit_status_ = 0;
    return true;
  }
  return false;
}

bool ChildProcess::Wait(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!Poll()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void ChildProcess::Signal(int signal) {
  if (pid_ > 0 && !exit_status_) {
    if (::killpg(pid_, signal) != 0) ::kill(pid_, signal);
  }
}

void ChildProcess::Terminate(int grace_ms) {
  if (!running()) return;
  if (grace_ms > 0) {
    Signal(SIGTERM);
    if (Wait(grace_ms)) return;
  }
  Signal(SIGKILL);
  Wait(10000);
}

std::string ChildProcess::Describe() const {
  if (!exit_status_) return "running";
  int s = *exit_status_;
  if (WIFEXITED(s)) return fmt::format("exit code {}", WEXITSTATUS(s));
  if (WIFSIGNALED(s)) {
    return fmt::format("killed by signal {} ({})", WTERMSIG(s), strsignal(WTERMSIG(s)));
  }
  return fmt::format("wait status {}", s);
}

bool ChildProcess::succeeded() const {
  return exit_status_ && WIFEXITED(*exit_status_) && WEXITSTATUS(*exit_status_) == 0;
}

fs::path SelfDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

bool OnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::string p = path;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    fs::path candidate = fs::path(p.substr(start, end - start)) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

Result<fs::path> FindAgentBinary() {
  std::vector<fs::path> looked;
  if (const char* env = std::getenv("DFX_RANK_AGENT"); env != nullptr && *env) {
    if (::access(env, X_OK) == 0) return fs::path(env);
    looked.push_back(env);
  }
  for (const fs::path& p :
       {SelfDir() / "dfx-rank-agent", SelfDir() / ".." / "rank_agent" / "dfx-rank-agent"}) {
    if (::access(p.c_str(), X_OK) == 0) return p.lexically_normal();
    looked.push_back(p.lexically_normal());
  }
  if (OnPath("dfx-rank-agent")) return fs::path("dfx-rank-agent");
  std::string where;
  for (const auto& p : looked) where += " " + p.string();
  return NotFound("dfx-rank-agent not found (looked at $DFX_RANK_AGENT," + where +
                  " and PATH); build it or set DFX_RANK_AGENT");
}

std::string ShellQuote(const std::string& word) {
  if (word.empty()) return "''";
  bool safe = true;
  for (char c : word) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::strchr("@%+=:,./_-", c) != nullptr)) {
      safe = false;
      break;
    }
  }
  if (safe) return word;
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\"'\"'";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace dfx::coordinator
