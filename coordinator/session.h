// The L3 orchestration (design.md §1, §7–§9): one run (session) of a plan
// over N ranks. The coordinator binds one ROUTER, starts or attaches to rank
// agents, waits for every rank's READY under one startup deadline, fans
// dispatches out (ordered per rank, ranks in parallel, one in flight per
// chip), gathers every artifact into <work_dir>/dfx_outputs/rank<N>/d<K>/
// (streamed to a temporary name, renamed once its checksum verifies), and
// writes the run manifest.
//
// Threads: Run() owns the ROUTER socket and does everything on the calling
// thread (one event loop). Not thread-safe; one Run per Session object.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/json.h"
#include "common/status.h"
#include "config/run_config.h"
#include "coordinator/plan.h"

namespace dfx::coordinator {

enum class Launcher { kLocal, kMpirun, kAttach };
const char* LauncherName(Launcher launcher);

struct SessionOptions {
  std::filesystem::path work_dir;  // artifacts in <work_dir>/dfx_outputs/
  config::RunConfig config;        // as the user asked (passes derive from it)
  int ranks = 1;
  int chips_per_agent = 1;
  Launcher launcher = Launcher::kLocal;
  std::string bind = "tcp://127.0.0.1:0";  // ephemeral port by default
  std::filesystem::path agent_binary;      // dfx-rank-agent (local / mpirun)
  std::filesystem::path spool_root;        // default <work_dir>/.dfx_spool
  std::vector<std::string> agent_args;     // extra agent flags (e.g. --virtual-clock)
  std::string agent_log_level = "warn";
  // Deadlines (every wait has one).
  double startup_timeout_s = 60;      // spawn + HELLO + READY of every rank
  double heartbeat_interval_s = 0.2;  // both directions
  double heartbeat_timeout_s = 10;    // a silent peer is dead after this
  double dispatch_timeout_s = 3600;   // one dispatch, run + stream
  double shutdown_timeout_s = 10;     // agents exiting after Shutdown
  uint32_t credit_window = 8;         // chunks in flight per agent
  // Progress display: redraw in place when stderr is a terminal.
  bool live_progress = false;
  const Clock* clock = &MonotonicClock::Instance();
};

struct SessionOutcome {
  bool success = false;
  uint64_t session_id = 0;
  std::filesystem::path manifest_path;
  std::vector<std::string> artifacts;  // relative to <work_dir>/dfx_outputs, verified
  std::string summary;                 // one line per failure, for the user
};

// Runs `plan` once. Returns an error status only when the run could not
// start at all (bad endpoint, agent binary missing, plan naming ranks that do
// not exist); failures of ranks and dispatches are reported in the outcome
// and the manifest.
Result<SessionOutcome> RunSession(const Plan& plan, const SessionOptions& options);

struct GatherOptions {
  std::filesystem::path work_dir;
  std::filesystem::path spool_root;  // empty = the one recorded in .session.json
  std::filesystem::path agent_binary;
  // Attach mode: no recovery agent is started; running `dfx-rank-agent
  // serve` agents (on hosts whose spool this coordinator cannot read) connect
  // to `bind`, get a GatherRequest and stream what their spool still holds.
  // Done once every rank of the run (.session.json "ranks") was gathered.
  bool attach = false;
  std::string bind;
  double timeout_s = 120;
  double heartbeat_timeout_s = 10;
  const Clock* clock = &MonotonicClock::Instance();
};

struct GatherOutcome {
  bool success = false;
  uint64_t session_id = 0;
  std::vector<std::string> recovered;  // relative to dfx_outputs
  std::vector<std::string> failed;     // "path: why"
};

// Collects what agents still hold in their spool after a coordinator crash:
// reads <work_dir>/dfx_outputs/.session.json, starts a recovery agent on the
// recorded spool (or, with `attach`, waits for serve agents to connect and
// sends them a GatherRequest), receives every spooled file exactly like a live run
// (checksummed, renamed into place), acknowledges it (the agent then deletes
// its copy) and records the recovery in run_manifest.json.
Result<GatherOutcome> RunGather(const GatherOptions& options);

// Name of the per-run record written at start: session id, spool, endpoint.
constexpr const char* kSessionFile = ".session.json";
constexpr const char* kManifestFile = "run_manifest.json";

}  // namespace dfx::coordinator
