#include "coordinator/capture_control.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>

#include "common/log.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;

namespace {

constexpr int kReadDeadlineMs = 500;
constexpr int kMaxPerPoll = 4;

std::string Errno() { return std::strerror(errno); }

// A sockaddr for `path`; a path longer than sun_path goes through the
// directory's descriptor (/proc/self/fd/N/name), which `dir_fd` keeps open.
Result<sockaddr_un> Address(const fs::path& path, int* dir_fd) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::string p = path.string();
  if (p.size() >= sizeof(addr.sun_path)) {
    *dir_fd = ::open(path.parent_path().c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*dir_fd < 0)
      return Unavailable(fmt::format("{}: {}", path.parent_path().string(), Errno()));
    p = fmt::format("/proc/self/fd/{}/{}", *dir_fd, path.filename().string());
  }
  std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
  return addr;
}

// Waits up to `ms` for `events` on `fd`.
bool WaitFd(int fd, short events, int ms) {
  pollfd p{fd, events, 0};
  int r;
  do {
    r = ::poll(&p, 1, ms);
  } while (r < 0 && errno == EINTR);
  return r > 0;
}

bool WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    if (!WaitFd(fd, POLLOUT, kReadDeadlineMs)) return false;
    const ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Reads one line (or to EOF) of at most `limit` bytes within `ms`.
Result<std::string> ReadLine(int fd, size_t limit, int ms) {
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0 || !WaitFd(fd, POLLIN, static_cast<int>(left))) {
      return DeadlineExceeded(fmt::format("no complete line within {} ms", ms));
    }
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Unavailable(Errno());
    if (n == 0) return text;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > limit) {
      return InvalidArgument(fmt::format("more than {} bytes", limit));
    }
    if (const size_t nl = text.find('\n'); nl != std::string::npos) return text.substr(0, nl);
  }
}

Json Refusal(const std::string& why) { return Json{{"ok", false}, {"error", why}}; }

}  // namespace

fs::path ControlSocketPath(const fs::path& work_dir) {
  return work_dir / kControlDirName / kControlSocketName;
}

CaptureControlServer::~CaptureControlServer() { Close(); }

CaptureControlServer::CaptureControlServer(CaptureControlServer&& other) noexcept
    : fd_(other.fd_), dir_(std::move(other.dir_)) {
  other.fd_ = -1;
  other.dir_.clear();
}

CaptureControlServer& CaptureControlServer::operator=(CaptureControlServer&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    dir_ = std::move(other.dir_);
    other.fd_ = -1;
    other.dir_.clear();
  }
  return *this;
}

Result<CaptureControlServer> CaptureControlServer::Open(const fs::path& work_dir) {
  const fs::path dir = work_dir / kControlDirName;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Unavailable(
        fmt::format("{}: cannot make the control directory: {}", dir.string(), Errno()));
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
    return InvalidArgument(fmt::format(
        "{}: is not a directory of this user (a link, a file or another owner); remove it",
        dir.string()));
  }
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0) {
    return Unavailable(fmt::format("{}: cannot make it 0700: {}", dir.string(), Errno()));
  }
  const fs::path path = dir / kControlSocketName;
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return InvalidArgument(
          fmt::format("{}: exists and is not a socket; remove it", path.string()));
    }
    ::unlink(path.c_str());  // left by a run that ended without removing it
  }
  CaptureControlServer server;
  server.dir_ = dir;
  server.fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (server.fd_ < 0) return Unavailable(fmt::format("control socket: {}", Errno()));
  int dir_fd = -1;
  auto addr = Address(path, &dir_fd);
  if (!addr.ok()) return addr.status();
  const int bound = ::bind(server.fd_, reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr));
  const int bind_errno = errno;
  if (dir_fd >= 0) ::close(dir_fd);
  if (bound != 0 || ::listen(server.fd_, 16) != 0) {
    return Unavailable(fmt::format("{}: cannot listen: {}", path.string(),
                                   std::strerror(bound != 0 ? bind_errno : errno)));
  }
  ::chmod(path.c_str(), 0600);
  return server;
}

void CaptureControlServer::Poll(const Handler& handler) {
  if (fd_ < 0) return;
  for (int i = 0; i < kMaxPerPoll; ++i) {
    const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return;  // EAGAIN: nobody waiting
    Serve(c, handler);
    ::close(c);
  }
}

void CaptureControlServer::Serve(int connection, const Handler& handler) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    DFX_LOG_WARN("capture control: cannot read the peer's credentials: {}", Errno());
    return;
  }
  if (cred.uid != ::geteuid()) {
    DFX_LOG_WARN("capture control: refused pid {} of uid {}: only uid {} may change this run",
                 cred.pid, cred.uid, ::geteuid());
    (void)WriteAll(
        connection,
        Refusal(fmt::format("refused: only the run's user (uid {}) may change it", ::geteuid()))
                .dump() +
            "\n");
    return;
  }
  Json answer;
  auto line = ReadLine(connection, kMaxControlRequestBytes, kReadDeadlineMs);
  if (!line.ok()) {
    answer = Refusal("the request: " + line.status().message());
  } else {
    auto json = ParseJson(*line, "the capture request");
    answer =
        json.ok() ? handler(*json, Peer{cred.pid, cred.uid}) : Refusal(json.status().message());
  }
  (void)WriteAll(connection, answer.dump() + "\n");
}

void CaptureControlServer::Close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (!dir_.empty()) {
    ::unlink((dir_ / kControlSocketName).c_str());
    ::rmdir(dir_.c_str());
    dir_.clear();
  }
}

Result<Json> SendControlRequest(const fs::path& work_dir, const Json& request, int timeout_ms) {
  const fs::path path = ControlSocketPath(work_dir);
  const std::string none = fmt::format("no run is going in {}: ", work_dir.string());
  struct stat st {};
  if (::lstat(work_dir.c_str(), &st) != 0 && errno == EACCES) {
    return Unavailable(
        fmt::format("{}: permission denied: only the user who started the run "
                    "may change it",
                    work_dir.string()));
  }
  if (::lstat(work_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return NotFound(fmt::format("{}: not a directory (give the --work-dir of a running run)",
                                work_dir.string()));
  }
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == EACCES) {
      return Unavailable(
          fmt::format("{}: permission denied: only the user who started the run "
                      "may change it",
                      path.string()));
    }
    return NotFound(none + fmt::format("no control socket {} (it exists only while an L3 run "
                                       "goes on)",
                                       path.string()));
  }
  if (!S_ISSOCK(st.st_mode)) return InvalidArgument(path.string() + ": is not a socket");
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Unavailable(Errno());
  int dir_fd = -1;
  auto addr = Address(path, &dir_fd);
  if (!addr.ok()) {
    ::close(fd);
    return addr.status();
  }
  const int connected = ::connect(fd, reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr));
  const int connect_errno = errno;
  if (dir_fd >= 0) ::close(dir_fd);
  if (connected != 0) {
    ::close(fd);
    if (connect_errno == ECONNREFUSED || connect_errno == ENOENT) {
      return NotFound(none + fmt::format("{} is left from a run that ended", path.string()));
    }
    if (connect_errno == EACCES) {
      return Unavailable(
          fmt::format("{}: permission denied: only the user who started the run "
                      "may change it",
                      path.string()));
    }
    return Unavailable(fmt::format("{}: {}", path.string(), std::strerror(connect_errno)));
  }
  Result<Json> out = Unavailable("no answer");
  if (!WriteAll(fd, request.dump() + "\n")) {
    out = Unavailable(fmt::format("{}: the run did not take the request", path.string()));
  } else {
    ::shutdown(fd, SHUT_WR);
    auto line = ReadLine(fd, kMaxControlAnswerBytes, timeout_ms);
    if (!line.ok()) {
      out = Unavailable(
          fmt::format("{}: no answer from the run: {}", path.string(), line.status().message()));
    } else if (line->empty()) {
      out = Unavailable(
          fmt::format("{}: the run closed the connection without an answer", path.string()));
    } else {
      out = ParseJson(*line, path.string());
    }
  }
  ::close(fd);
  return out;
}

}  // namespace dfx::coordinator
