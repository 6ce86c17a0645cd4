// The launch guard (docs/design.md §8, §9): an agent that mpirun or srun
// started may die before it says HELLO (killed, crashed, out of memory).
// Nobody would then tell the coordinator which rank that was, and the rank
// would fail only at --startup-timeout, unnamed. So a launched agent runs
// as the child of a small guard process: the guard waits for it and, if it
// ended badly before its first HELLO, says so to the coordinator itself (a
// Hello carrying launch_failure for the agent's ranks, over the agent's own
// credentials), and the coordinator fails those ranks at once, by name.
//
// The guard forwards SIGTERM / SIGINT / SIGHUP to the agent; the agent is
// killed if the guard dies, and the guard if its launcher (mpirun, srun,
// orted) dies (PR_SET_PDEATHSIG, SIGKILL). Main thread only, before any
// other thread exists (it forks).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/curve.h"

namespace dfx::rank_agent {

struct LaunchGuardOptions {
  std::string coordinator;
  uint64_t session = 0;
  std::vector<int32_t> ranks;
  std::optional<protocol::CurveClient> curve;
  std::string log_prefix;  // "dfx-rank-agent rank 2"
};

// Forks. Returns nullopt in the child, which goes on as the agent and calls
// NoteHelloSent once it said HELLO. In the guard, returns (once the child
// ended, after any report) the exit code the guard should end with.
std::optional<int> RunLaunchGuard(const LaunchGuardOptions& options);

// In the agent: tells its guard (if any) that HELLO was sent, so an ending
// after this is the coordinator's to notice. Async-signal-safe, idempotent.
void NoteHelloSent();

}  // namespace dfx::rank_agent
