#include "view/process_util.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace dfx::view {

std::optional<std::filesystem::path> FindOnPath(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    if (access(program.c_str(), X_OK) == 0) return std::filesystem::path(program);
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    std::filesystem::path candidate = std::filesystem::path(dir) / program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

Result<ChildResult> RunChild(const std::vector<std::string>& argv,
                             const std::filesystem::path& stdout_path,
                             std::chrono::milliseconds timeout) {
  auto exe = FindOnPath(argv.at(0));
  if (!exe) return NotFound("'" + argv[0] + "' not found on PATH");
  std::filesystem::path err_path = stdout_path;
  err_path += ".stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, exe->c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return NotFound("cannot start '" + exe->string() + "'");
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  auto sleep = std::chrono::milliseconds(2);
  for (;;) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      std::filesystem::remove(err_path);
      return DeadlineExceeded("'" + argv[0] + "' did not finish within " +
                              std::to_string(timeout.count() / 1000) + " s and was stopped");
    }
    std::this_thread::sleep_for(sleep);
    if (sleep < std::chrono::milliseconds(50)) sleep *= 2;
  }
  ChildResult res;
  res.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream ef(err_path);
  std::string line;
  while (std::getline(ef, line) && res.stderr_text.size() < 65536) res.stderr_text += line + "\n";
  std::error_code ec;
  std::filesystem::remove(err_path, ec);
  return res;
}

}  // namespace dfx::view
