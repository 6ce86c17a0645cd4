// `dfx-coordinator gather` (docs/design.md §9): after a coordinator crash, the
// agents still hold in their spools every artifact the coordinator had not
// acknowledged. Gather reads the run's session record, then either starts
// one recovery agent per rank on each recorded spool (the spools this host
// can read) or, with `attach`, waits for `dfx-rank-agent serve` agents (on
// hosts whose spools it cannot read) to connect; every spooled file is
// received exactly like in a live run (checksummed, renamed into place),
// acknowledged (the agent then deletes its copy) and recorded in the run
// manifest's "gather" entry. A run whose coordinator died is marked
// "interrupted" there (the run, and every rank and dispatch it left
// unfinished). Gather holds the work dir's lock (a live run holds it too):
// it refuses to touch a run whose coordinator is still alive.
//
// Threads: the calling thread runs the event loop.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/timeouts.h"
#include "coordinator/access.h"
#include "coordinator/artifact_receiver.h"
#include "protocol/channel.h"

namespace dfx::coordinator {

struct GatherOptions {
  std::filesystem::path work_dir;
  std::filesystem::path spool_root;  // empty = the ones recorded in the session record
  std::filesystem::path agent_binary;
  // Attach mode: no recovery agent is started; serve agents connect to
  // `bind`, get a GatherRequest and stream what their spool still holds.
  // Done once every rank of the run (the session record's "ranks") was gathered.
  bool attach = false;
  std::string bind;
  std::string advertise;  // what the serve agents dial ("" = derived from bind)
  // Deadlines: gather (the whole gather, --timeout), the heartbeat pair
  // and shutdown.
  Timeouts timeouts;
  uint32_t credit_window = 8;
  uint64_t max_artifact_bytes = kDefaultMaxArtifactBytes;
  // --max-run-bytes: the bytes this gather may fetch (0 = no budget); a
  // file past it stays in its spool for a gather with a larger budget.
  std::uint64_t max_run_bytes = 0;
  // --wire-compression: how the agents send chunks (named in each Credit).
  protocol::WireCompression wire_compression = protocol::WireCompression::kAuto;
  // Attach mode: who may connect (coordinator/access.h). Recovery agents
  // started here always get a key pair of this gather.
  AccessFlags access;
  // How recovery agents on this host send their artifact streams
  // (docs/design.md §7, "local bulk path"): "auto" = over an ipc:// socket in a
  // 0700 directory, admitted by uid, pid and a token given over CURVE;
  // "curve" = over the CURVE connection like everything else. Remote
  // (attached) agents always use CURVE.
  std::string bulk_transport = "auto";
  const Clock* clock = &MonotonicClock::Instance();
  // The ZeroMQ context of the gather's sockets; nullptr = its own. Serve
  // agents in this process on an inproc:// bind share it.
  protocol::Context* context = nullptr;
};

struct GatherOutcome {
  bool success = false;
  uint64_t session_id = 0;
  std::vector<std::string> recovered;  // relative to dfx_outputs
  std::vector<std::string> failed;     // "path: why"
};

Result<GatherOutcome> RunGather(const GatherOptions& options);

}  // namespace dfx::coordinator
