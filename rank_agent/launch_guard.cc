#include "rank_agent/launch_guard.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "protocol/channel.h"
#include "protocol/endpoint.h"

namespace dfx::rank_agent {

namespace {

std::atomic<int> g_hello_fd{-1};    // the agent's end of the guard's pipe
volatile sig_atomic_t g_child = 0;  // the guard's agent

void Forward(int signal) {
  if (g_child > 0) ::kill(g_child, signal);
}

std::string Describe(int status) {
  if (WIFSIGNALED(status)) {
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  }
  return fmt::format("exit code {}", WEXITSTATUS(status));
}

// Sends the report and gives it up to the socket's linger to leave.
void Report(const LaunchGuardOptions& o, pid_t child, const std::string& how) {
  protocol::Context context;
  protocol::SocketOptions socket;
  socket.curve_client = o.curve;
  socket.linger_ms = 3000;
  auto channel = protocol::DealerChannel::Connect(
      context, o.coordinator, fmt::format("launch-guard-{}", ::getpid()), socket);
  if (!channel.ok()) {
    std::fprintf(stderr, "%s: launch guard: cannot report to %s: %s\n", o.log_prefix.c_str(),
                 o.coordinator.c_str(), channel.status().message().c_str());
    return;
  }
  protocol::Hello hello;
  hello.ranks = o.ranks;
  hello.chips = static_cast<uint32_t>(o.ranks.size());
  hello.session_id = o.session;
  hello.host = protocol::ThisHostName("unknown");
  hello.pid = static_cast<uint32_t>(child);
  hello.mode = protocol::AgentMode::kOneShot;
  hello.launch_failure = how;
  protocol::Message m{protocol::Header{protocol::kProtocolVersion, o.session,
                                       o.ranks.empty() ? 0 : o.ranks.front(), 1},
                      std::move(hello)};
  (void)channel->Send(m);
  // Closing the channel, then the context, waits up to the linger for the send.
}

// Under mpirun the guard's parent is the rank wrapper (a shell,
// coordinator/launcher_report.h), which outlives mpirun when mpirun is
// SIGKILLed; the wrapper names mpirun's pid in DFX_LAUNCHER_PID, and the
// guard ends the agent when that process is gone.
void WaitWatchingLauncher(pid_t child, int* status) {
  const char* text = std::getenv("DFX_LAUNCHER_PID");
  const long launcher = text != nullptr ? std::strtol(text, nullptr, 10) : 0;
  if (launcher <= 1) {
    while (::waitpid(child, status, 0) < 0 && errno == EINTR) {
    }
    return;
  }
  bool killed = false;
  for (;;) {
    const pid_t r = ::waitpid(child, status, WNOHANG);
    if (r == child || (r < 0 && errno != EINTR)) return;
    if (!killed && ::kill(static_cast<pid_t>(launcher), 0) != 0 && errno == ESRCH) {
      ::kill(child, SIGKILL);  // the launcher died: so does its rank
      killed = true;
    }
    ::usleep(100 * 1000);
  }
}

}  // namespace

std::optional<int> RunLaunchGuard(const LaunchGuardOptions& options) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;  // no guard: run unguarded
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return std::nullopt;
  }
  if (child == 0) {
    ::close(fds[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // the guard is already gone
    g_hello_fd.store(fds[1]);
    return std::nullopt;
  }
  ::close(fds[1]);
  g_child = child;
  // The guard dies with its launcher (mpirun, srun, orted), however that
  // ends, and the agent with the guard: no agent outlives a dead launch.
  const pid_t launcher = ::getppid();
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != launcher) ::kill(child, SIGKILL);
  struct sigaction forward {};
  forward.sa_handler = Forward;
  sigemptyset(&forward.sa_mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(s, &forward, nullptr);
  int status = 0;
  WaitWatchingLauncher(child, &status);
  char byte = 0;
  const bool said_hello = ::read(fds[0], &byte, 1) == 1;
  ::close(fds[0]);
  const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!said_hello && !clean) {
    const std::string how = Describe(status);
    std::fprintf(stderr, "%s: the agent (pid %d) ended before it said HELLO (%s); telling %s\n",
                 options.log_prefix.c_str(), static_cast<int>(child), how.c_str(),
                 options.coordinator.c_str());
    Report(options, child, how);
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

void NoteHelloSent() {
  const int fd = g_hello_fd.exchange(-1);
  if (fd < 0) return;
  const char byte = 1;
  [[maybe_unused]] ssize_t n = ::write(fd, &byte, 1);
  ::close(fd);
}

}  // namespace dfx::rank_agent
