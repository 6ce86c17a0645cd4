// The per-rank agent service (docs/design.md §1, §7, §8): one dfx-rank-agent
// process owns one or more local chips, connects a DEALER to the
// coordinator's ROUTER, says HELLO, initialises its chips, says READY, then
// runs dispatches (one at a time per chip) and streams every artifact back in
// checksummed chunks under credit-based flow control.
//
// Parts, one job each, wired together by RankAgent:
// - CoordinatorLink (coordinator_link.h): the socket, HELLO and its
//   backoff, heartbeats, the admission of each message, the deadlines;
// - ArtifactSender (artifact_sender.h): the spool's files to the
//   coordinator, credits, checksums, the local bulk path, ack-then-delete;
// - ChipPool (chip_pool.h): the chips, made through AgentOptions::make_chip
//   (device/chip_factory.h), and their worker threads.
//
// Threads: the thread that calls Run() owns the socket (the event loop: it
// receives, streams, heartbeats); each chip has its own worker thread that
// runs programs. Heartbeats are sent by the event loop on their own timer, so
// a long dispatch never silences the agent. A dispatch small enough to take
// microseconds (run_dispatch.h RunsInline) on an idle chip runs on the event
// loop's thread instead, sparing two thread wake-ups. Stop() may be called
// from any thread (e.g. a signal-watching thread).
//
// A serve agent ends a session (Shutdown, a silent coordinator, a refusal)
// by forgetting its queued work and, once no dispatch is running, clearing
// every chip's device-resident tensors: nothing of one run is visible to the
// next.
//
// Spool: artifacts are written to <spool>/<session>/rank<N>/d<K>/
// (collectors/artifact_layout.h: SessionSpoolDir, DispatchDirPath) and each
// file is deleted only after the coordinator acknowledged it (ArtifactAck ok),
// so a coordinator crash loses nothing (`dfx-coordinator gather`).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "common/timeouts.h"
#include "device/chip.h"
#include "device/chip_factory.h"
#include "protocol/channel.h"
#include "protocol/curve.h"
#include "protocol/messages.h"
#include "rank_agent/fault_injection.h"

namespace dfx::rank_agent {

struct AgentOptions {
  std::string coordinator;  // e.g. tcp://127.0.0.1:5555
  uint64_t session_id = 0;  // 0 = adopt the coordinator's (serve mode)
  int32_t first_rank = 0;   // this agent owns ranks first_rank .. first_rank+chips-1
  int chips = 1;
  std::filesystem::path spool_root;  // artifacts in <spool_root>/<session hex>/rank<N>/d<K>/
  protocol::AgentMode mode = protocol::AgentMode::kOneShot;
  // Recover mode: offer only first_rank's spool (one recovery agent per rank
  // streams in parallel); false = every rank found in the spool.
  bool recover_only_first_rank = false;
  // Deadlines (docs/design.md §9: every wait has one): connect (the first
  // coordinator answer of a one-shot or recover agent), serve_connect (how
  // long a serve agent waits for a coordinator, at start and after each
  // session, before giving up with an error; 0 = no limit) and the
  // heartbeat pair (how often this agent says it is alive; the coordinator
  // silence after which it is gone).
  Timeouts timeouts;
  // Serve: the wait for a coordinator is logged when it starts and every
  // serve_wait_log_ms while it lasts.
  int serve_wait_log_ms = 30000;
  uint64_t chunk_bytes = protocol::kDefaultChunkBytes;
  // CURVE credentials (protocol/curve.h): this agent's pair and the pinned
  // coordinator key. Unset: no authentication (loopback-only coordinators).
  std::optional<protocol::CurveClient> curve;
  // A serve agent the coordinator turns away (e.g. its rank is served by
  // another agent) says HELLO again after a backoff that doubles from the
  // first value up to the second.
  int refused_backoff_min_ms = 1000;
  int refused_backoff_max_ms = 30000;
  device::ChipOptions chip;
  // How each chip is made (device/chip_factory.h): a backend by name, or a
  // test's own Chip.
  device::ChipMaker make_chip = device::ChipMakerFor();
  FaultInjection faults;  // tests only; set by main
  const Clock* clock = &MonotonicClock::Instance();
};

class RankAgent {
 public:
  // `context` must outlive the agent.
  RankAgent(protocol::Context& context, AgentOptions options);
  ~RankAgent();
  RankAgent(const RankAgent&) = delete;
  RankAgent& operator=(const RankAgent&) = delete;

  // Runs until the coordinator says Shutdown (one-shot, recover), the
  // coordinator is unreachable / silent past its deadline (error), it turns
  // this agent away (error), or Stop() is called. A serve agent survives
  // Shutdown and coordinator loss: it waits for the next session.
  Status Run();
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dfx::rank_agent
