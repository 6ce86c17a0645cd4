#include "coordinator/launcher_report.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <optional>
#include <utility>

namespace dfx::coordinator {

namespace {

constexpr size_t kMaxLine = 4096;

// The wrapper (POSIX sh: dash, bash, busybox alike). Traps first, so a
// signal that comes while the agent starts is passed on, not fatal; the
// agent runs in the background only so that the traps can run while it
// does (a foreground child would hold them off); `wait` returns early for
// every trapped signal, hence the loop until the agent is really gone. The
// launcher's pid goes to the launch guard (DFX_LAUNCHER_PID), which ends
// the agent if the launcher dies while this shell lives on.
constexpr const char* kWrapperScript =
    "r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-unknown}}}}; p=; "
    "for s in TERM INT HUP; do trap \"[ -n \\\"\\$p\\\" ] && kill -$s \\$p 2>/dev/null\" $s; done; "
    "DFX_LAUNCHER_PID=$PPID; export DFX_LAUNCHER_PID; "
    "\"$@\" & p=$!; "
    "while :; do wait \"$p\"; c=$?; kill -0 \"$p\" 2>/dev/null || break; done; "
    "echo \"dfx-rank-exit: rank=$r host=$(uname -n) status=$c\" >&2; "
    "exit \"$c\"";

std::optional<int> ToInt(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// "1", "0-2,5": srun's task lists. Nullopt for anything else.
std::optional<std::vector<int>> TaskList(std::string_view text, int agents) {
  std::vector<int> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const size_t dash = item.find('-');
    auto first = ToInt(item.substr(0, dash));
    auto last = dash == std::string_view::npos ? first : ToInt(item.substr(dash + 1));
    if (!first || !last || *last < *first) return std::nullopt;
    for (int t = *first; t <= *last && t < agents; ++t) out.push_back(t);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

// "Killed" -> "killed by signal 9 (Killed)"; srun prints strsignal's text.
std::string DescribeSignalText(std::string_view text) {
  if (const size_t core = text.find(" (core dumped)"); core != std::string_view::npos) {
    text = text.substr(0, core);
  }
  for (int s = 1; s < NSIG; ++s) {
    const char* name = ::sigdescr_np(s);
    if (name != nullptr && text == name) return fmt::format("killed by signal {} ({})", s, name);
  }
  return fmt::format("ended: {}", text);
}

// "dfx-rank-exit: rank=R host=H status=S".
std::vector<RankExitReport> ParseWrapperLine(std::string_view line, int agents) {
  line.remove_prefix(kRankExitMarker.size());
  std::string_view rank, host, status;
  while (!line.empty()) {
    const size_t space = line.find(' ');
    const std::string_view field = line.substr(0, space);
    if (field.rfind("rank=", 0) == 0) rank = field.substr(5);
    if (field.rfind("host=", 0) == 0) host = field.substr(5);
    if (field.rfind("status=", 0) == 0) status = field.substr(7);
    if (space == std::string_view::npos) break;
    line.remove_prefix(space + 1);
  }
  auto r = ToInt(rank);
  auto s = ToInt(status);
  if (!r || !s || *r >= agents || *s > 255 || host.empty()) return {};
  return {RankExitReport{*r, std::string(host), DescribeExitStatus(*s), *s == 0}};
}

// "srun: error: HOST: task 1: Exited with exit code 3", "... tasks 0-1: Killed".
std::vector<RankExitReport> ParseSrunLine(std::string_view line, int agents) {
  constexpr std::string_view kPrefix = "srun: error: ";
  line.remove_prefix(kPrefix.size());
  const size_t host_end = line.find(": ");
  if (host_end == std::string_view::npos || host_end == 0) return {};
  const std::string host(line.substr(0, host_end));
  line.remove_prefix(host_end + 2);
  if (line.rfind("tasks ", 0) == 0) {
    line.remove_prefix(6);
  } else if (line.rfind("task ", 0) == 0) {
    line.remove_prefix(5);
  } else {
    return {};
  }
  const size_t list_end = line.find(": ");
  if (list_end == std::string_view::npos) return {};
  auto tasks = TaskList(line.substr(0, list_end), agents);
  if (!tasks) return {};
  const std::string_view what = line.substr(list_end + 2);
  constexpr std::string_view kExited = "Exited with exit code ";
  std::string how;
  bool clean = false;
  if (what.rfind(kExited, 0) == 0) {
    auto code = ToInt(what.substr(kExited.size()));
    if (!code) return {};
    how = DescribeExitStatus(*code);
    clean = *code == 0;
  } else {
    how = DescribeSignalText(what);
  }
  std::vector<RankExitReport> out;
  for (int t : *tasks) out.push_back({t, host, how, clean});
  return out;
}

void WriteAll(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

std::vector<std::string> RankWrapperArgv() {
  return {"/bin/sh", "-c", kWrapperScript, "dfx-rank-wrapper"};
}

std::string DescribeExitStatus(int status) {
  if (status > 128 && status < 128 + NSIG) {
    const char* name = ::sigdescr_np(status - 128);
    return fmt::format("killed by signal {} ({})", status - 128, name != nullptr ? name : "?");
  }
  if (status == 127) return "exit code 127 (command not found, or a library it needs)";
  if (status == 126) return "exit code 126 (found but not executable)";
  return fmt::format("exit code {}", status);
}

std::vector<RankExitReport> ParseLauncherLine(std::string_view line, int agents) {
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
  if (line.size() > kMaxLine) return {};
  // Open MPI may prefix a rank's output ("[1,1]<stderr>:") under
  // --tag-output: the marker is then found after it.
  if (const size_t at = line.find(kRankExitMarker); at != std::string_view::npos && at < 64) {
    return ParseWrapperLine(line.substr(at), agents);
  }
  if (line.rfind("srun: error: ", 0) == 0) return ParseSrunLine(line, agents);
  return {};
}

Result<std::unique_ptr<LauncherOutput>> LauncherOutput::Open(int agents) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return Unavailable(
        fmt::format("cannot make a pipe for the launcher's output: {}", std::strerror(errno)));
  }
  return std::unique_ptr<LauncherOutput>(new LauncherOutput(fds[0], fds[1], agents));
}

LauncherOutput::LauncherOutput(int read_fd, int write_fd, int agents)
    : read_fd_(read_fd), write_fd_(write_fd), agents_(agents) {}

LauncherOutput::~LauncherOutput() {
  stop_ = true;
  if (reader_.joinable()) reader_.join();
  if (write_fd_ >= 0) ::close(write_fd_);
  ::close(read_fd_);
}

void LauncherOutput::Start() {
  ::close(write_fd_);
  write_fd_ = -1;
  reader_ = std::thread([this] { ReadLoop(); });
}

std::vector<RankExitReport> LauncherOutput::Take() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(reports_, {});
}

void LauncherOutput::Line(std::string_view line) {
  std::vector<RankExitReport> reports = ParseLauncherLine(line, agents_);
  if (reports.empty()) {
    WriteAll(STDERR_FILENO, line);  // the agents' own lines, passed on
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (RankExitReport& r : reports) reports_.push_back(std::move(r));
}

void LauncherOutput::ReadLoop() {
  std::string pending;
  char buffer[16384];
  // Once the owner is going, at most three more reads, each waiting at most
  // 0.1 s (a rank that outlived its launcher could write forever).
  int turns_after_stop = 0;
  for (;;) {
    if (stop_ && ++turns_after_stop > 3) break;
    pollfd p{read_fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, 100);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) {
      if (stop_) break;  // nothing more came: the owner is going
      continue;
    }
    const ssize_t n = ::read(read_fd_, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // every writer closed the pipe
    pending.append(buffer, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n', start)) {
      Line(std::string_view(pending).substr(start, nl + 1 - start));
      start = nl + 1;
    }
    pending.erase(0, start);
    if (pending.size() > kMaxLine) {  // a line without end: passed on, never parsed
      WriteAll(STDERR_FILENO, pending);
      pending.clear();
    }
  }
  if (!pending.empty()) WriteAll(STDERR_FILENO, pending);
}

}  // namespace dfx::coordinator
