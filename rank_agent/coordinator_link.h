// The rank agent's link to its coordinator (docs/design.md §7, §9): the
// DEALER socket, HELLO (again after a backoff that doubles when a serve
// agent is turned away, by an Error or at the CURVE handshake), the admission of each message
// (refusals, session checks, a serve agent adopting the coordinator's session), heartbeats on their
// own timer and the deadlines: the first answer of a one-shot or recover agent, a serve agent's
// wait for a coordinator, and coordinator silence once attached.
//
// Every message the agent sends goes through Send (or NextHeader for an
// encoded chunk), so one sequence numbers them all.
//
// Threads: the event loop's only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "protocol/channel.h"
#include "protocol/messages.h"
#include "rank_agent/agent.h"

namespace dfx::rank_agent {

// The agent's socket options (the link's socket and the bulk path's).
protocol::SocketOptions AgentSocketOptions(const std::optional<protocol::CurveClient>& curve);

// What the link made of one received frame.
struct Admission {
  // The message to act on; unset when it was ignored or was a refusal.
  std::optional<protocol::Message> message;
  // Serve: the coordinator turned this agent away. The caller ends the
  // session, then calls BackOff(refusal).
  bool refused = false;
  std::string refusal;
  // The first message of a coordinator in this session (READY is due).
  bool attached_now = false;
};

class CoordinatorLink {
 public:
  // `context` and `options` must outlive the link.
  CoordinatorLink(protocol::Context& context, const AgentOptions& options);

  // Connects as `identity` for `ranks` (the first one names the agent's
  // own messages), in session options.session_id.
  Status Connect(const std::string& identity, std::vector<int32_t> ranks);
  // This agent's HELLO as of now (who it is, its session, its spool).
  protocol::Hello MakeHello() const;
  void SendHello();

  // Sends `body` on `via` (the bulk path) or the link's socket. Returns
  // false when it could not be queued (would block); the caller retries.
  bool Send(int32_t rank, protocol::Body body, protocol::DealerChannel* via = nullptr);
  // The header of a message encoded by the caller; TakeBackHeader when it
  // was not sent after all.
  protocol::Header NextHeader(int32_t rank);
  void TakeBackHeader();

  // Deadlines, HELLO retries and heartbeats, once per turn of the loop.
  // A non-OK status ends the agent; *lost: a serve agent's coordinator went
  // silent (the caller ends the session).
  Status Tick(uint64_t now, bool* lost);
  // Failed CURVE handshakes. A serve agent not attached disconnects on one (ZeroMQ would never
  // retry after a ZAP denial, and would retry a wrong pinned key every 100 ms), logs it once with
  // the cure and connects again after the backoff (as BackOff); others log them at most every 5 s.
  void NoteHandshakeFailures(uint64_t now);
  // Receives on the link's socket; while a serve agent is disconnected
  // (backing off after a refused handshake) it only waits on `wake_fd`.
  Result<protocol::Polled> Receive(int timeout_ms, int wake_fd = -1);
  // Decodes and checks one frame of the coordinator; a non-OK status ends
  // the agent (a refusal of a one-shot or recover agent).
  Result<Admission> Admit(const protocol::Frame& frame);
  // A dropped connection is not a dead agent (docs/design.md §9): whether
  // the socket lost its connection to the coordinator of this session
  // since the last call (only once the coordinator gave a resume token).
  bool LostConnection();
  // Opens a fresh socket (nothing queued on the old one goes out) and says
  // a reconnect HELLO with the token, naming the streams begun and not yet
  // acknowledged; reconnecting() until the coordinator's Resume arrives.
  Status Reconnect(std::vector<uint64_t> open_transfers);
  bool reconnecting() const { return reconnecting_; }
  // The coordinator's Resume: a first one carries the token; the answer to
  // a reconnect HELLO ends reconnecting().
  void OnResume(const protocol::Resume& resume);
  // Answers a heartbeat that asks for it.
  void OnHeartbeat(const protocol::Heartbeat& heartbeat);
  // Serve, refused: HELLO again only after the backoff, which doubles from
  // options.refused_backoff_min_ms up to refused_backoff_max_ms.
  void BackOff(const std::string& refusal);
  // The session is over: detached, a serve agent forgets the adopted
  // session and waits for a coordinator.
  void EndSession();
  // Serve: a wait for a coordinator starts (at start, after each session).
  void BeginServeWait();

  // How long the event loop may sleep: until the next heartbeat when
  // attached and idle (`busy`: a chip runs or something waits to be sent),
  // else 50 ms at most.
  int IdleWaitMs(uint64_t now, bool busy) const;

  uint64_t Now() const { return options_.clock->NowNs(); }
  uint64_t session() const { return session_; }
  bool attached() const { return attached_; }
  // False while a serve agent backs off (disconnected) after a refused handshake.
  bool connected() const { return connected_; }
  const std::vector<int32_t>& ranks() const { return ranks_; }
  const std::string& identity() const { return identity_; }
  std::filesystem::path SessionDir() const;
  protocol::DealerChannel& channel() { return channel_; }

 private:
  Status CheckServeWait(uint64_t now);
  Status CheckConnectDeadline(uint64_t now);
  Status CheckSilence(uint64_t now, bool* lost);
  std::optional<Admission> OnError(const protocol::Error& error, Status* fatal);
  std::string Advice(protocol::ErrorCode code) const;
  void RefusedAtHandshake(uint64_t now, const protocol::HandshakeRefusals& refusals);
  void CountReconnects();
  Status OpenSocket();
  // The next backoff step: 0 -> min, then doubling up to max.
  uint64_t GrowBackoff();

  protocol::Context& context_;
  const AgentOptions& options_;
  protocol::DealerChannel channel_;
  std::string identity_;
  std::vector<int32_t> ranks_;
  uint64_t session_ = 0;  // current session (0 = none yet)
  uint64_t sequence_ = 0;
  bool attached_ = false;   // a coordinator answered in this session
  bool connected_ = false;  // the socket is connected (serve: not while backing off)
  // Serve: connected again after a refused handshake (at reconnected_ns_);
  // no answer within kRetryAnswerNs is one more refusal.
  static constexpr uint64_t kRetryAnswerNs = 3000000000ull;
  bool handshake_retry_ = false;
  uint64_t reconnected_ns_ = 0;
  uint64_t started_ns_ = 0;
  uint64_t last_rx_ns_ = 0;
  uint64_t last_hb_ns_ = 0;
  uint64_t last_tx_ns_ = 0;  // the last message this agent sent (any kind)
  uint64_t last_hello_ns_ = 0;
  uint64_t wait_started_ns_ = 0;  // serve: when the current wait for a coordinator began
  uint64_t wait_logged_ns_ = 0;
  uint64_t next_hello_ns_ = 0;     // serve: no HELLO before this (backoff after a refusal)
  uint64_t hello_backoff_ns_ = 0;  // the current backoff; 0 = none
  uint64_t handshake_failures_ = 0;
  std::string last_handshake_failure_;
  uint64_t last_handshake_log_ns_ = 0;
  std::string resume_token_;  // from the coordinator's first Resume (this session)
  bool reconnecting_ = false;
  uint64_t lost_ns_ = 0;            // when the connection was lost (reconnecting)
  uint64_t socket_handshakes_ = 0;  // of the current socket, counted so far
  bool ever_handshaken_ = false;    // this agent connected once: later handshakes are reconnects
};

}  // namespace dfx::rank_agent
