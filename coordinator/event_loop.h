// The coordinator's event loop (docs/design.md §7, §11.12): one ROUTER
// socket, the agents that said HELLO (AgentRegistry) and the artifact
// streams they send (ArtifactReceiver), shared by a run (session.h) and a
// gather (gather.h). It decodes and validates every frame, answers peers
// that are not registered, keeps heartbeats and notices silent agents; what
// a message means for the run or the gather is the PeerHandler's business.
//
// Threads: the thread that calls Bind / Pump owns the socket; not
// thread-safe. Move-only in spirit (holds a socket and a writer thread).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/timeouts.h"
#include "coordinator/agent_registry.h"
#include "coordinator/artifact_receiver.h"
#include "protocol/channel.h"
#include "protocol/messages.h"

namespace dfx::coordinator {

// What a run or a gather does with what agents say.
class PeerHandler {
 public:
  virtual ~PeerHandler() = default;
  // A new agent was admitted (its first HELLO).
  virtual void OnAdmitted(AgentState& agent) = 0;
  // A validated message from a live registered agent other than heartbeats
  // and artifact streams: Ready, DispatchAccepted, Progress, DispatchDone,
  // GatherDone, Error, ...
  virtual void OnMessage(AgentState& agent, protocol::Body& body) = 0;
  // Where a stream an agent starts belongs: the dispatch record (a run), no
  // record (a gather), or a refusal (the text goes back to the agent).
  virtual Result<std::optional<size_t>> PlaceArtifact(AgentState& agent,
                                                      const protocol::ArtifactBegin& begin) = 0;
  // `agent` was declared dead (its streams are already failed).
  virtual void OnAgentDead(AgentState& agent, const std::string& why) = 0;
  // Once per Pump, after the messages: deadlines and children of the owner.
  virtual void OnTick() = 0;
  // A launched agent's launch guard reports that the agent process of
  // `hello.ranks` ended before it said HELLO (hello.launch_failure says
  // how). Nobody is admitted; a run fails those ranks at once.
  virtual void OnLaunchFailure(const protocol::Hello& /*hello*/) {}
  // This process was stopped (SIGSTOP, SIGTSTP, a suspended machine) for
  // `gap_ns`: its own clock jumped between two turns of the loop by more
  // than half the heartbeat timeout. Called before the turn declares
  // anyone dead: the agents' silence meanwhile was not theirs (their
  // deadlines restart now), but one that gave up has closed its connection.
  virtual void OnPaused(uint64_t /*gap_ns*/) {}
  // A reconnect (docs/design.md §9): the dispatches `agent` was sent and
  // has not finished (its Resume lists them), and `agent` is back after
  // `gap_ns` away.
  virtual std::vector<protocol::DispatchRef> AwaitedDispatches(AgentState& /*agent*/) { return {}; }
  virtual void OnReconnected(AgentState& /*agent*/, uint64_t /*gap_ns*/) {}
};

struct LoopOptions {
  // heartbeat_interval (both directions) and heartbeat_timeout (a silent
  // peer is dead after it); the loop reads no other deadline.
  Timeouts timeouts;
  ReceiverOptions receiver;
  // Agents never send a frame larger than kMaxAgentFrameBytes, and at most
  // the credit window of chunks plus a few control messages at a time: the
  // ROUTER buffers no more than that per peer (ZMQ_MAXMSGSIZE, RCVHWM).
  protocol::SocketOptions socket = [] {
    protocol::SocketOptions o;
    o.max_message_bytes = static_cast<int64_t>(protocol::kMaxAgentFrameBytes);
    o.receive_high_water = 64;
    return o;
  }();
  // The ZeroMQ context of the loop's sockets; nullptr = a context of the
  // loop's own. Agents in the same process that dial an inproc:// endpoint
  // must share the loop's context.
  protocol::Context* context = nullptr;
};

// The options of a run's or a gather's loop: their deadlines, the receiver's
// credit window and size bound, and the state a verified artifact gets.
LoopOptions MakeLoopOptions(const Timeouts& timeouts, uint32_t credit_window,
                            uint64_t max_artifact_bytes, collectors::ArtifactState verified_state);

class EventLoop {
 public:
  // `clock` must outlive the loop. Artifacts land under `dfx_dir`.
  EventLoop(std::filesystem::path dfx_dir, AdmissionPolicy policy, LoopOptions options,
            const Clock& clock, ArtifactLedger& ledger);
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Binds the ROUTER; with `curve`, only its admitted agent keys can
  // connect (docs/design.md §7).
  Status Bind(const std::string& endpoint,
              std::optional<protocol::CurveServer> curve = std::nullopt);
  // The bound endpoint with its real port.
  const std::string& endpoint() const { return router_.endpoint(); }
  // The local bulk path (docs/design.md §7, "local bulk path"): a second ROUTER
  // on an ipc:// endpoint in a fresh 0700 directory (under $XDG_RUNTIME_DIR,
  // else $TMPDIR, else /tmp; removed with the loop), admitting only peers of
  // this uid that present a token OfferBulk gave them, from the pid their
  // HELLO named (ZAP, protocol/channel.h local_peers_only). Agents offered
  // it send their artifact streams there, unencrypted; control messages
  // stay on the CURVE socket.
  Status BindBulk();
  bool bulk_bound() const { return !bulk_dir_.empty(); }
  // Offers `agent` the bulk path: a fresh token for its identity and pid,
  // sent over its (CURVE) control connection in a Credit of 0 chunks.
  void OfferBulk(AgentState& agent);
  // Artifact payload bytes received over the bulk path / the control socket.
  uint64_t bulk_bytes() const { return bulk_bytes_; }
  uint64_t control_bytes() const { return control_bytes_; }
  AgentRegistry& registry() { return registry_; }
  ArtifactReceiver& receiver() { return receiver_; }
  uint64_t NowNs() const { return clock_.NowNs(); }

  // One turn: waits up to `timeout_ms` for a frame or a writer result,
  // handles what arrived, heartbeats, declares silent agents dead, then
  // calls handler.OnTick().
  Status Pump(int timeout_ms, PeerHandler& handler);
  // Declares `agent` dead: fails its open streams, tells the handler.
  void DeclareDead(AgentState& agent, const std::string& why, PeerHandler& handler);
  // Whether this process was stopped since the last check (a turn's poll, or
  // this): says so and calls handler.OnPaused. Called before an agent is
  // declared gone, so that one that gave up during the stop is not blamed.
  void CheckPaused(PeerHandler& handler) { NotePause(NowNs(), 0, handler); }
  // Pumps until every queued file is written and acknowledged (or the deadline).
  void DrainWriter(uint64_t deadline_ns, PeerHandler& handler);
  // Tells every live agent to go (serve agents wait for the next session).
  void SendShutdown(const std::string& reason);
  // True while some registered agent that is not dead still has its
  // connection (as of the last Pump): false once every one of them left.
  bool AnyConnected();
  // Stops listening once the agents are gone: every connection's descriptor
  // is freed (half-open ones from strangers too) before the post-run work
  // writes its files. Pump only waits from then on.
  void CloseListener() { router_.Close(); }

 private:
  void OnFrame(const protocol::Frame& frame, PeerHandler& handler, bool bulk = false);
  // Hands a validated message of a live agent to the receiver, the
  // registry or the handler.
  void Deliver(AgentState& agent, protocol::Message& m, PeerHandler& handler, bool bulk);
  // The refusals the socket monitor has read (RouterChannel::ReadMonitor).
  void LogRefusedHandshakes();
  void OnHello(const std::string& identity, const protocol::Header& header,
               const protocol::Hello& hello, const std::string& address, int connection_fd,
               PeerHandler& handler);
  // A reconnect HELLO (reconnect_window.cc): the agent is taken back, or refused.
  void OnReconnect(const std::string& identity, const protocol::Header& header,
                   const protocol::Hello& hello, const std::string& address, int connection_fd,
                   PeerHandler& handler);
  // Whether `agent`, gone from its connection, may come back within the
  // window rather than fail at once; marks it away (from now) if so.
  // `closed`: its connection closed (it must reconnect); else it went silent
  // on an open connection (a partition: its next frame there takes it back).
  bool GoAway(AgentState& agent, const std::string& why, bool closed);
  // An agent away for silence spoke again on the same connection.
  void ComeBack(AgentState& agent, PeerHandler& handler);
  // Fails the agents away for longer than the window.
  void ExpireAway(PeerHandler& handler);
  static std::string NewResumeToken();
  // `read_monitor`: read the socket monitor first; false uses what the
  // turn's RouterChannel::ReadMonitor read.
  void MarkDisconnected(bool read_monitor = true);
  void DeclareDisconnected(PeerHandler& handler, bool read_monitor = true);
  // Whether this turn began after a pause of the whole process (see
  // PeerHandler::OnPaused); says so, restarts the agents' deadlines.
  void NotePause(uint64_t turn_ns, int timeout_ms, PeerHandler& handler);

  const Clock& clock_;
  LoopOptions options_;
  std::optional<protocol::Context> own_context_;  // when options.context is unset
  protocol::Context& context_;
  protocol::RouterChannel router_;
  protocol::RouterChannel bulk_;    // the local bulk path, when bound
  std::filesystem::path bulk_dir_;  // its 0700 directory (removed in the destructor)
  uint64_t bulk_bytes_ = 0;
  uint64_t control_bytes_ = 0;
  uint64_t refused_handshakes_ = 0;  // since the last log line
  std::string last_refused_handshake_;
  uint64_t refused_logged_ns_ = 0;
  uint64_t last_turn_end_ns_ = 0;  // when the previous Pump returned (0: none yet)
  AgentRegistry registry_;
  ArtifactReceiver receiver_;  // last: its writer thread stops first
};

}  // namespace dfx::coordinator
