// How a run ends on SIGINT, SIGTERM and SIGHUP (docs/design.md §9,
// README "Networks and failures"): the handler only records the signal; the
// event loop polls StopSignal() on every turn and ends the run itself (stops
// dispatching, tells the agents to stop, writes the manifest "interrupted",
// prints the `gather` command). A second stop signal while the first is
// being handled exits at once (_exit(128 + signal), async-signal-safe):
// the manifest on disk is the last one written through a temporary name.
//
// Threads: Install / the guard's destructor on the thread that runs the
// loop; StopSignal() from any thread.
#pragma once

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "coordinator/dispatch_scheduler.h"

namespace dfx::coordinator {

// While alive, SIGINT, SIGTERM and SIGHUP are recorded instead of ending
// the process; the previous dispositions come back on destruction. One at
// a time per process.
class StopSignalGuard {
 public:
  StopSignalGuard();
  ~StopSignalGuard();
  StopSignalGuard(const StopSignalGuard&) = delete;
  StopSignalGuard& operator=(const StopSignalGuard&) = delete;

 private:
  struct sigaction old_[3]{};
};

// The first stop signal received under the guard (0: none).
int StopSignal();

// The exit code a process ended by `signal` reports in the shell: 128 + signal.
inline int ExitCodeForSignal(int signal) { return 128 + signal; }

// "SIGINT", "SIGTERM", "SIGHUP" (else "signal N").
std::string StopSignalName(int signal);

// The command that fetches what the agents left in their spools, shell-quoted
// so that it can be pasted: dfx-coordinator gather --work-dir '<work dir>'.
std::string GatherCommand(const std::filesystem::path& work_dir);

// Whether one of `spool_roots` holds a file (not a temporary one) of rank's
// dispatch k of `session`: <root>/<session>/rank<N>/d<K>/. Links are not
// followed; at most a few thousand entries are looked at.
bool SpoolHoldsDispatch(const std::vector<std::filesystem::path>& spool_roots, uint64_t session,
                        int32_t rank, uint32_t k);

// When some dispatch is "in_spool" (or `always`), says on `out` how many
// dispatches are complete, in the agents' spools and not run, and the
// GatherCommand that fetches the spools.
void PrintGatherHint(const DispatchScheduler& scheduler, const std::filesystem::path& work_dir,
                     std::FILE* out, bool always = false);

}  // namespace dfx::coordinator
