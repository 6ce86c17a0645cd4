// The L3 run (docs/design.md §1, §7–§9): one session of a plan over N ranks. The
// coordinator binds one ROUTER (EventLoop), starts or attaches to rank agents
// (AgentLauncher), waits for every rank's READY under one startup deadline,
// fans dispatches out (DispatchScheduler: ordered per rank, ranks in
// parallel, one in flight per chip), gathers every artifact into
// <work_dir>/dfx_outputs/rank<N>/d<K>/ (ArtifactReceiver: streamed to a
// temporary name, renamed once its checksum verifies), converts the swimlane
// records (post_run.h) and writes the run manifest (collectors/run_manifest.h).
//
// The work dir is locked (a flock of the directory) for the whole run, so
// neither a second run nor a `gather` touches it meanwhile; an earlier run's
// rank<N>/d<K>/ directories are cleared only once this run really started
// (some rank is READY; the caller checked the programs before, see
// program_check.h): one that cannot be removed fails every rank, naming it,
// before any dispatch; nothing is written or removed through a link.
//
// Threads: RunSession owns the socket and does everything on the calling
// thread (one event loop).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/timeouts.h"
#include "config/run_config.h"
#include "coordinator/access.h"
#include "coordinator/artifact_receiver.h"
#include "coordinator/capture_policy.h"
#include "coordinator/launcher.h"
#include "coordinator/plan.h"
#include "coordinator/post_run.h"
#include "protocol/channel.h"

namespace dfx::coordinator {

struct SessionOptions {
  std::filesystem::path work_dir;  // artifacts in <work_dir>/dfx_outputs/
  config::RunConfig config;        // as the user asked (passes derive from it)
  // --capture-ranks / --capture-dispatches: elsewhere collectors are off
  // (capture_policy.h; plan steps may carry their own run_config).
  CaptureSelection capture;
  int ranks = 1;
  int chips_per_agent = 1;
  Launcher launcher = Launcher::kLocal;
  std::string bind = "tcp://127.0.0.1:0";  // ephemeral port by default; a host name or interface
  // What agents dial (protocol/endpoint.h): "" = derived from the bind.
  std::string advertise;
  std::filesystem::path agent_binary;  // dfx-rank-agent (local / mpirun / srun)
  // mpirun / srun: the launcher program (default: "mpirun" / "srun" on
  // PATH), the arguments passed to it before the agent's command (a
  // hostfile, -H, --map-by, MCA options, srun's --nodes ...), and the agent
  // command the launched hosts run (default: agent_binary's absolute path;
  // a bare name is looked up on each host's PATH).
  std::string launcher_binary;
  std::vector<std::string> launcher_args;
  std::string agent_command;
  // Default: <work_dir>/.dfx_spool for local agents; node-local
  // ($TMPDIR/dfx-spool-<uid>/<session>/ on each host) for mpirun / srun.
  std::filesystem::path spool_root;
  bool virtual_clock = false;  // agents run virtual-clock chips
  std::string agent_log_level = "warn";
  // Deadlines (every wait has one): startup, the heartbeat pair, dispatch,
  // shutdown and convert (the post-run swimlane conversion, per dispatch).
  Timeouts timeouts;
  unsigned convert_jobs = 0;  // conversions at once; 0 = one per core (post_run.h)
  // Whether the per-dispatch merged traces are written after the run.
  SwimlaneTraces swimlane_traces = SwimlaneTraces::kAuto;
  uint32_t credit_window = 8;                              // chunks in flight per agent (enforced)
  uint64_t max_artifact_bytes = kDefaultMaxArtifactBytes;  // --max-artifact-bytes
  // --max-run-bytes (0 = no budget): checked against the estimate before the
  // run (coordinator/run_estimate.h), enforced as streams begin.
  std::uint64_t max_run_bytes = 0;
  // --wire-compression: how agents send artifact chunks (named in each Dispatch).
  protocol::WireCompression wire_compression = protocol::WireCompression::kAuto;
  // Who may connect (coordinator/access.h): launched agents always use a
  // key pair of this run; the flags admit agents started elsewhere.
  AccessFlags access;
  // Progress display: redraw in place when stderr is a terminal.
  bool live_progress = false;
  // Test-only fault injection (set by main from the environment): SIGKILL
  // the coordinator after this many artifact chunks (0 = never).
  uint64_t fault_kill_after_chunks = 0;
  // ... and make every chunk write take this long (a slow disk).
  uint32_t fault_write_delay_ms = 0;
  const Clock* clock = &MonotonicClock::Instance();
  // The ZeroMQ context of the coordinator's sockets; nullptr = its own.
  // Agents in this process on an inproc:// bind share it.
  protocol::Context* context = nullptr;
};

struct SessionOutcome {
  bool success = false;
  uint64_t session_id = 0;
  std::filesystem::path manifest_path;
  std::vector<std::string> artifacts;  // relative to <work_dir>/dfx_outputs, verified
  std::string summary;                 // one line per failure, for the user
  std::string makespan;                // MakespanSummary(): "" when no dispatch reported one
  int stop_signal = 0;  // SIGINT / SIGTERM / SIGHUP stopped the run (stop_signals.h); 0: none
  std::vector<std::string> idle_collectors;  // IdleCollectorLines(): said once, at info
};

// Runs `plan` once. Returns an error status only when the run could not
// start at all (bad endpoint, agent binary missing, plan naming ranks that do
// not exist); failures of ranks and dispatches are reported in the outcome
// and the manifest.
Result<SessionOutcome> RunSession(const Plan& plan, const SessionOptions& options);

// A new run's session id: random, never 0.
uint64_t RandomSessionId();

}  // namespace dfx::coordinator
