#include "coordinator/stop_signals.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/subprocess.h"

namespace dfx::coordinator {

namespace {

constexpr int kStopSignals[3] = {SIGINT, SIGTERM, SIGHUP};
std::atomic<int> g_stop_signal{0};

// No work here: record the first signal; a second one ends the process.
void OnStopSignal(int signal) {
  int none = 0;
  if (!g_stop_signal.compare_exchange_strong(none, signal)) ::_exit(ExitCodeForSignal(signal));
}

}  // namespace

StopSignalGuard::StopSignalGuard() {
  g_stop_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int i = 0; i < 3; ++i) ::sigaction(kStopSignals[i], &sa, &old_[i]);
}

StopSignalGuard::~StopSignalGuard() {
  for (int i = 0; i < 3; ++i) ::sigaction(kStopSignals[i], &old_[i], nullptr);
}

int StopSignal() { return g_stop_signal.load(); }

std::string StopSignalName(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return fmt::format("signal {}", signal);
  }
}

std::string GatherCommand(const std::filesystem::path& work_dir) {
  return ShellCommand(
      {"dfx-coordinator", "gather", "--work-dir", std::filesystem::absolute(work_dir).string()});
}

bool SpoolHoldsDispatch(const std::vector<std::filesystem::path>& spool_roots, uint64_t session,
                        int32_t rank, uint32_t k) {
  namespace fs = std::filesystem;
  for (const fs::path& root : spool_roots) {
    const fs::path dir =
        collectors::SessionSpoolDir(root, session) / collectors::DispatchDirPath(rank, k);
    std::error_code ec;
    int looked = 0;
    for (auto it = fs::recursive_directory_iterator(dir, ec);
         !ec && it != fs::recursive_directory_iterator() && looked < 4096;
         it.increment(ec), ++looked) {
      if (it->is_regular_file(ec) && !it->is_symlink(ec) &&
          !IsTemporaryPath(it->path().filename().string())) {
        return true;
      }
    }
  }
  return false;
}

void PrintGatherHint(const DispatchScheduler& scheduler, const std::filesystem::path& work_dir,
                     std::FILE* out, bool always) {
  size_t ok = 0, in_spool = 0, not_done = 0;
  for (const collectors::DispatchEntry& d : scheduler.dispatches()) {
    if (d.status == collectors::DispatchState::kOk) {
      ++ok;
    } else if (d.status == collectors::DispatchState::kInSpool) {
      ++in_spool;
    } else {
      ++not_done;
    }
  }
  if (in_spool == 0 && !always) return;
  std::fprintf(out,
               "%zu dispatch(es) complete here, %zu with files in the agents' spools, %zu not "
               "complete; fetch what the spools hold with:\n  %s\n",
               ok, in_spool, not_done, GatherCommand(work_dir).c_str());
}

}  // namespace dfx::coordinator
