#include "common/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

extern char** environ;

namespace dfx {

namespace fs = std::filesystem;

// posix_spawn cannot set a parent-death signal: fork, and in the child
// only async-signal-safe calls until exec (the parent has threads). An
// exec failure comes back through a close-on-exec pipe.
Result<ChildProcess> ChildProcess::ForkExec(const std::vector<std::string>& argv,
                                            const SpawnOptions& options, char** envp) {
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    return Unavailable(fmt::format("cannot start {}: pipe: {}", argv[0], std::strerror(errno)));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(report[0]);
    ::close(report[1]);
    return Unavailable(fmt::format("cannot start {}: fork: {}", argv[0], std::strerror(e)));
  }
  if (pid == 0) {
    ::close(report[0]);
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, options.parent_death_signal);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took hold
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGTERM, SIGINT, SIGPIPE, SIGHUP}) ::signal(sig, SIG_DFL);
    const auto redirect = [](int fd, const char* path, int flags) {
      const int opened = ::open(path, flags, 0644);
      if (opened < 0) return false;
      if (opened != fd) {
        ::dup2(opened, fd);
        ::close(opened);
      }
      return true;
    };
    bool ok = true;
    if (options.stdin_from_dev_null) ok &= redirect(0, "/dev/null", O_RDONLY);
    if (options.stdout_path) {
      ok &= redirect(1, options.stdout_path->c_str(), O_WRONLY | O_CREAT | O_TRUNC);
    }
    if (options.stderr_to_stdout) {
      ::dup2(1, 2);
    } else if (options.stderr_fd >= 0) {
      ok &= ::dup2(options.stderr_fd, 2) == 2;
    } else if (options.stderr_path) {
      ok &= redirect(2, options.stderr_path->c_str(), O_WRONLY | O_CREAT | O_TRUNC);
    }
    if (ok) ::execvpe(cargv[0], cargv.data(), envp);
    const int e = errno;
    [[maybe_unused]] ssize_t n = ::write(report[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(report[1]);
  int child_errno = 0;
  ssize_t n = 0;
  while ((n = ::read(report[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  ChildProcess child;
  child.pid_ = pid;
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    child.Wait(1000);
    return Unavailable(fmt::format("cannot start {}: {}", argv[0], std::strerror(child_errno)));
  }
  return child;
}

Result<ChildProcess> ChildProcess::Spawn(const std::vector<std::string>& argv,
                                         const SpawnOptions& options) {
  DFX_CHECK(!argv.empty());
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<std::string> env_storage;
  std::vector<char*> cenv;
  char** envp = environ;
  if (!options.extra_env.empty()) {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      std::string_view entry(*e);
      const std::string_view name = entry.substr(0, entry.find('='));
      bool replaced = false;
      for (const auto& extra : options.extra_env) {
        replaced |= std::string_view(extra).substr(0, extra.find('=')) == name;
      }
      if (!replaced) cenv.push_back(*e);
    }
    for (const auto& extra : options.extra_env) cenv.push_back(const_cast<char*>(extra.c_str()));
    cenv.push_back(nullptr);
    envp = cenv.data();
  }
  if (options.parent_death_signal != 0) return ForkExec(argv, options, envp);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (options.stdin_from_dev_null) {
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  }
  if (options.stdout_path) {
    posix_spawn_file_actions_addopen(&actions, 1, options.stdout_path->c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  if (options.stderr_to_stdout) {
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  } else if (options.stderr_fd >= 0) {
    posix_spawn_file_actions_adddup2(&actions, options.stderr_fd, 2);
  } else if (options.stderr_path) {
    posix_spawn_file_actions_addopen(&actions, 2, options.stderr_path->c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
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
  const int rc = posix_spawnp(&pid, argv[0].c_str(), &actions, &attr, cargv.data(), envp);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
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
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
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
  auto sleep = std::chrono::milliseconds(1);
  while (!Poll()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(sleep);
    if (sleep < std::chrono::milliseconds(10)) sleep *= 2;
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

int ChildProcess::exit_code() const {
  if (!exit_status_ || !WIFEXITED(*exit_status_)) return -1;
  return WEXITSTATUS(*exit_status_);
}

std::string ChildProcess::Describe() const {
  if (!exit_status_) return "running";
  const int s = *exit_status_;
  if (WIFEXITED(s)) return fmt::format("exit code {}", WEXITSTATUS(s));
  if (WIFSIGNALED(s)) {
    return fmt::format("killed by signal {} ({})", WTERMSIG(s), strsignal(WTERMSIG(s)));
  }
  return fmt::format("wait status {}", s);
}

bool ChildProcess::succeeded() const { return exit_code() == 0; }

Result<CompletedRun> RunCaptured(const std::vector<std::string>& argv, double timeout_s,
                                 const SpawnOptions& options) {
  char log_template[] = "/tmp/dfx-child-output-XXXXXX";
  const int log_fd = ::mkstemp(log_template);
  if (log_fd < 0) return Internal("cannot create a temporary file for a child's output");
  SpawnOptions spawn = options;
  spawn.stdout_path = log_template;
  spawn.stderr_to_stdout = true;
  const auto t0 = std::chrono::steady_clock::now();
  auto child = ChildProcess::Spawn(argv, spawn);
  ::unlink(log_template);  // the child has it open (file actions run before Spawn returns)
  if (!child.ok()) {
    ::close(log_fd);
    return child.status();
  }
  CompletedRun run;
  if (!child->Wait(static_cast<int>(timeout_s * 1000))) {
    child->Signal(SIGKILL);
    child->Wait(10000);
    run.timed_out = true;
  }
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!run.timed_out) run.exit_code = child->exit_code();
  char buf[4096];
  ssize_t n;
  while ((n = ::pread(log_fd, buf, sizeof buf, static_cast<off_t>(run.output.size()))) > 0 &&
         run.output.size() < 65536) {
    run.output.append(buf, static_cast<size_t>(n));
  }
  ::close(log_fd);
  return run;
}

std::optional<fs::path> FindExecutable(const std::string& program) {
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos) {
    if (::access(program.c_str(), X_OK) == 0) return fs::path(program);
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  const std::string_view p(path);
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string_view::npos) end = p.size();
    if (end > start) {
      fs::path candidate = fs::path(p.substr(start, end - start)) / program;
      std::error_code ec;
      if (::access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate, ec)) {
        return candidate;
      }
    }
    start = end + 1;
  }
  return std::nullopt;
}

fs::path SelfDir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

Result<fs::path> FindProjectBinary(const std::string& name, const std::string& env_var,
                                   const std::vector<std::string>& build_tree_dirs) {
  std::vector<std::string> looked;
  std::error_code ec;
  auto usable = [&](const fs::path& p) {
    looked.push_back(p.string());
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (const char* env = std::getenv(env_var.c_str()); env != nullptr && *env != '\0') {
    if (usable(env)) return fs::path(env);
  }
  const fs::path self = SelfDir();
  if (usable(self / name)) return (self / name).lexically_normal();
  for (const auto& dir : build_tree_dirs) {
    const fs::path p = (self / dir / name).lexically_normal();
    if (usable(p)) return p;
  }
  if (auto on_path = FindExecutable(name)) return *on_path;
  std::string where;
  for (const auto& p : looked) where += (where.empty() ? "" : ", ") + p;
  return NotFound(
      fmt::format("{} not found (looked at ${}, {} and PATH); build it, put it on PATH "
                  "or set {}=/path/to/{}",
                  name, env_var, where, env_var, name));
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

std::string ShellCommand(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + ShellQuote(a);
  return out;
}

Result<std::vector<std::string>> SplitShellWords(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\'') {
      const size_t end = text.find('\'', i + 1);
      if (end == std::string::npos) {
        return InvalidArgument("a ' quote that is never closed in: " + text);
      }
      word += text.substr(i + 1, end - i - 1);
      i = end;
      in_word = true;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\\' && j + 1 < text.size() && (text[j + 1] == '"' || text[j + 1] == '\\')) {
          ++j;
        }
        word += text[j];
      }
      if (j >= text.size()) return InvalidArgument("a \" quote that is never closed in: " + text);
      i = j;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
      in_word = true;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace dfx
