#include "rank_agent/coordinator_link.h"

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/log.h"
#include "common/metrics.h"
#include "protocol/codec.h"
#include "protocol/endpoint.h"
#include "rank_agent/launch_guard.h"

namespace dfx::rank_agent {

namespace fs = std::filesystem;
using protocol::AgentMode;

// Everything that matters (DispatchDone, Ends) is sent long before exit; a
// short linger keeps an agent whose coordinator is gone from hanging on close.
protocol::SocketOptions AgentSocketOptions(const std::optional<protocol::CurveClient>& curve) {
  protocol::SocketOptions options;
  options.linger_ms = 500;
  options.curve_client = curve;
  // A coordinator sends at most one Dispatch per chip at a time plus small
  // control messages: a short inbound queue bounds what a peer can park here.
  options.receive_high_water = 64;
  return options;
}

CoordinatorLink::CoordinatorLink(protocol::Context& context, const AgentOptions& options)
    : context_(context), options_(options), session_(options.session_id) {}

fs::path CoordinatorLink::SessionDir() const {
  return collectors::SessionSpoolDir(options_.spool_root, session_);
}

Status CoordinatorLink::Connect(const std::string& identity, std::vector<int32_t> ranks) {
  started_ns_ = Now();
  if (options_.mode == AgentMode::kServe) BeginServeWait();
  identity_ = identity;
  ranks_ = std::move(ranks);
  return OpenSocket();
}

Status CoordinatorLink::OpenSocket() {
  DFX_ASSIGN_OR_RETURN(channel_,
                       protocol::DealerChannel::Connect(context_, options_.coordinator, identity_,
                                                        AgentSocketOptions(options_.curve)));
  connected_ = true;
  socket_handshakes_ = 0;
  return Status::Ok();
}

Result<protocol::Polled> CoordinatorLink::Receive(int timeout_ms, int wake_fd) {
  if (connected_) return channel_.Receive(timeout_ms, wake_fd);
  protocol::Polled polled;
  pollfd fd{wake_fd, POLLIN, 0};
  if (wake_fd >= 0) {
    polled.woken = ::poll(&fd, 1, timeout_ms) > 0 && (fd.revents & POLLIN) != 0;
  } else if (timeout_ms > 0) {
    ::poll(nullptr, 0, timeout_ms);
  }
  return polled;
}

protocol::Header CoordinatorLink::NextHeader(int32_t rank) {
  return protocol::Header{protocol::kProtocolVersion, session_, rank, ++sequence_};
}

void CoordinatorLink::TakeBackHeader() { --sequence_; }

bool CoordinatorLink::Send(int32_t rank, protocol::Body body, protocol::DealerChannel* via) {
  if (via == nullptr && !connected_) return false;  // backing off: HELLO goes on reconnect
  protocol::Message m{NextHeader(rank), std::move(body)};
  auto r = (via != nullptr ? *via : channel_).Send(m);
  if (!r.ok()) {
    DFX_LOG_WARN("sending {} failed: {}", protocol::BodyName(m.body), r.status().ToString());
    return false;
  }
  if (*r == protocol::SendResult::kWouldBlock) {
    TakeBackHeader();
    return false;
  }
  last_tx_ns_ = Now();
  return true;
}

protocol::Hello CoordinatorLink::MakeHello() const {
  protocol::Hello hello;
  hello.ranks = ranks_;
  hello.chips = static_cast<uint32_t>(ranks_.size());
  hello.session_id = session_;
  hello.host = protocol::ThisHostName("unknown");
  hello.pid = static_cast<uint32_t>(::getpid());
  hello.agent_clock_ns = Now();
  hello.mode = options_.mode;
  hello.spool_dir = fs::absolute(options_.spool_root).string();
  return hello;
}

void CoordinatorLink::SendHello() {
  protocol::Hello hello = MakeHello();
  Send(ranks_.front(), std::move(hello));
  last_hello_ns_ = Now();
}

Status CoordinatorLink::Tick(uint64_t now, bool* lost) {
  *lost = false;
  const uint64_t hb_interval =
      static_cast<uint64_t>(ToPollMs(options_.timeouts.heartbeat_interval)) * 1000000;
  if (!attached_) {
    if (options_.mode != AgentMode::kServe) return CheckConnectDeadline(now);
    DFX_RETURN_IF_ERROR(CheckServeWait(now));
    if (!connected_) {
      if (now < next_hello_ns_) return Status::Ok();
      if (Status s = OpenSocket(); !s.ok()) {
        DFX_LOG_ERROR("{}; trying again in {:.0f} s", s.message(), GrowBackoff() / 1e9);
        next_hello_ns_ = now + hello_backoff_ns_;
        return Status::Ok();
      }
      reconnected_ns_ = now;
      SendHello();
      return Status::Ok();
    }
    // Connected again after a refused handshake: a coordinator that admits
    // this agent answers its HELLO within milliseconds. A second failure is
    // not always reported by the socket monitor (a peer holding another key
    // was seen to close the connection without an event and without ZeroMQ
    // trying again), so silence counts as a refusal too.
    if (handshake_retry_ && now - reconnected_ns_ > kRetryAnswerNs) {
      ++handshake_failures_;
      metrics::HandshakesRefused().Add();
      RefusedAtHandshake(
          now, protocol::HandshakeRefusals{
                   1,
                   fmt::format("no answer within {} s of connecting again (the handshake failed "
                               "without a word, or nothing listens there)",
                               kRetryAnswerNs / 1000000000),
                   false});
      return Status::Ok();
    }
    if (now >= next_hello_ns_ && now - last_hello_ns_ > 2 * hb_interval + 500000000ull) {
      SendHello();
    }
    return Status::Ok();
  }
  // Any message tells the coordinator this agent is alive (it resets its
  // silence deadline on each): a heartbeat of its own only after an
  // interval with nothing else sent (replies to the coordinator's pings
  // count), not beside a stream of dispatches.
  if (now - std::max(last_hb_ns_, last_tx_ns_) >= hb_interval) {
    Send(ranks_.front(), protocol::Heartbeat{now, 0, false});
    last_hb_ns_ = now;
  }
  return CheckSilence(now, lost);
}

Status CoordinatorLink::CheckConnectDeadline(uint64_t now) {
  if (now - started_ns_ <= ToNs(options_.timeouts.connect)) return Status::Ok();
  return DeadlineExceeded(
      fmt::format("could not reach the coordinator at {} within {} ms (--connect-timeout); is it "
                  "running and is the endpoint right?{}",
                  options_.coordinator, ToPollMs(options_.timeouts.connect),
                  handshake_failures_ == 0
                      ? std::string()
                      : fmt::format(" The CURVE handshake failed {} time(s): {}; check --key and "
                                    "--coordinator-key (or the keys the launcher gave)",
                                    handshake_failures_, last_handshake_failure_)));
}

Status CoordinatorLink::CheckSilence(uint64_t now, bool* lost) {
  if (now - last_rx_ns_ <= ToNs(options_.timeouts.heartbeat_timeout)) return Status::Ok();
  std::string text = fmt::format(
      "the coordinator at {} has been silent for {} ms (--heartbeat-timeout); session {} "
      "abandoned, unconfirmed artifacts kept in {}",
      options_.coordinator, ToPollMs(options_.timeouts.heartbeat_timeout), Hex64(session_),
      SessionDir().string());
  if (options_.mode != AgentMode::kServe) return Unavailable(text);
  DFX_LOG_WARN("{}", text);
  *lost = true;
  return Status::Ok();
}

void CoordinatorLink::BeginServeWait() {
  wait_started_ns_ = Now();
  wait_logged_ns_ = wait_started_ns_;
  std::fprintf(stderr, "dfx-rank-agent rank %d: waiting for a coordinator at %s (%s)\n",
               options_.first_rank, options_.coordinator.c_str(),
               options_.timeouts.serve_connect.count() > 0
                   ? fmt::format("giving up after --connect-timeout {:g} s",
                                 ToSeconds(options_.timeouts.serve_connect))
                         .c_str()
                   : "no time limit; --connect-timeout S sets one");
}

// Serve, not attached: logs the wait now and then; an error once it passed
// --connect-timeout.
Status CoordinatorLink::CheckServeWait(uint64_t now) {
  const uint64_t waited = now - wait_started_ns_;
  if (options_.timeouts.serve_connect.count() > 0 &&
      waited > ToNs(options_.timeouts.serve_connect)) {
    return DeadlineExceeded(fmt::format(
        "no coordinator answered at {} within --connect-timeout {:g} s{}", options_.coordinator,
        ToSeconds(options_.timeouts.serve_connect),
        handshake_failures_ == 0
            ? std::string("; is it running, and is the endpoint one this host can reach?")
            : fmt::format("; the CURVE handshake failed {} time(s): {}; check --key and "
                          "--coordinator-key",
                          handshake_failures_, last_handshake_failure_)));
  }
  if (now - wait_logged_ns_ > static_cast<uint64_t>(options_.serve_wait_log_ms) * 1000000) {
    wait_logged_ns_ = now;
    std::fprintf(stderr,
                 "dfx-rank-agent rank %d: still waiting for a coordinator at %s (%.0f s so "
                 "far%s)\n",
                 options_.first_rank, options_.coordinator.c_str(), waited / 1e9,
                 handshake_failures_ == 0
                     ? ""
                     : fmt::format("; {} CURVE handshake(s) failed: {}", handshake_failures_,
                                   last_handshake_failure_)
                           .c_str());
  }
  return Status::Ok();
}

// Failed CURVE handshakes (a coordinator that does not admit this key, or a
// peer that is not the coordinator whose key is pinned): never silently
// retried forever.
void CoordinatorLink::NoteHandshakeFailures(uint64_t now) {
  if (!connected_) return;
  protocol::HandshakeRefusals r = channel_.TakeRefusals();
  CountReconnects();
  if (r.count > 0) {
    metrics::HandshakesRefused().Add(r.count);
    handshake_failures_ += r.count;
    last_handshake_failure_ = r.last;
  }
  if (r.count > 0 && options_.mode == AgentMode::kServe && !attached_) {
    RefusedAtHandshake(now, r);
    return;
  }
  if (handshake_failures_ > 0 && now - last_handshake_log_ns_ > 5000000000ull && r.count > 0) {
    last_handshake_log_ns_ = now;
    DFX_LOG_WARN(
        "the handshake with {} failed ({} so far): {}; no message was exchanged with that peer",
        options_.coordinator, handshake_failures_, last_handshake_failure_);
  }
}

// Every handshake the socket completed after this agent's first is a
// reconnection (the coordinator's connection dropped and came back, or a new
// coordinator took the endpoint): --metrics dfx_reconnects_total.
void CoordinatorLink::CountReconnects() {
  const uint64_t handshakes = channel_.HandshakesRead();
  for (; socket_handshakes_ < handshakes; ++socket_handshakes_) {
    if (ever_handshaken_) metrics::Reconnects().Add();
    ever_handshaken_ = true;
  }
}

// Serve: the socket disconnects until the backoff ends (ZeroMQ does not
// reconnect after a ZAP denial, and would hammer a peer holding another key
// every 100 ms); one line per backoff step names the cause and the cure.
void CoordinatorLink::RefusedAtHandshake(uint64_t now, const protocol::HandshakeRefusals& r) {
  channel_ = protocol::DealerChannel();
  connected_ = false;
  handshake_retry_ = true;
  next_hello_ns_ = now + GrowBackoff();
  const std::string cure =
      r.last_denied_key
          ? "this agent's key is not among the agent keys that coordinator admits: add its "
            ".pub to the coordinator's keys (DIR/agents/ of --keys DIR, or --agent-keys) and "
            "start a run there; this agent keeps trying"
          : "the peer at that endpoint is not the coordinator whose key --coordinator-key "
            "pins, or it does not admit this agent's --key: check both";
  DFX_LOG_ERROR(
      "the coordinator at {} refused this agent at the CURVE handshake ({} so far): {}; "
      "{}; connecting again in {:.0f} s",
      options_.coordinator, handshake_failures_, r.last, cure, hello_backoff_ns_ / 1e9);
}

uint64_t CoordinatorLink::GrowBackoff() {
  const uint64_t min_ns = static_cast<uint64_t>(options_.refused_backoff_min_ms) * 1000000;
  const uint64_t max_ns = static_cast<uint64_t>(options_.refused_backoff_max_ms) * 1000000;
  hello_backoff_ns_ = std::min(max_ns, std::max(min_ns, 2 * hello_backoff_ns_));
  return hello_backoff_ns_;
}

// What a refusal code means for this agent (the coordinator's message is a
// bare reason: it tells a refused peer nothing about the run).
std::string CoordinatorLink::Advice(protocol::ErrorCode code) const {
  switch (code) {
    case protocol::ErrorCode::kVersionMismatch:
      return fmt::format(
          " (this agent speaks protocol version {}: run the same dfx build on both sides)",
          protocol::kProtocolVersion);
    case protocol::ErrorCode::kSessionMismatch:
      return fmt::format(
          " (this agent was started for session {}, which is not the run at that endpoint: "
          "start it with the session the coordinator printed, or use `dfx-rank-agent serve`)",
          Hex64(session_));
    case protocol::ErrorCode::kUnknownRank:
      return fmt::format(
          " (rank(s) {} of this agent are not part of that run: check --rank, --chips and the "
          "run's --ranks)",
          fmt::join(ranks_, ","));
    case protocol::ErrorCode::kDuplicateRank:
      return fmt::format(
          " (rank(s) {} are already served by another agent in that run, or failed earlier in "
          "it: two agents must not claim one rank)",
          fmt::join(ranks_, ","));
    default:
      return "";
  }
}

// An Error from the coordinator: a refusal ends a one-shot or recover
// agent (*fatal) and a serve agent's session; anything else is logged.
std::optional<Admission> CoordinatorLink::OnError(const protocol::Error& error, Status* fatal) {
  const bool refusal = error.code == protocol::ErrorCode::kVersionMismatch ||
                       error.code == protocol::ErrorCode::kSessionMismatch ||
                       error.code == protocol::ErrorCode::kUnknownRank ||
                       error.code == protocol::ErrorCode::kDuplicateRank;
  // A refusal carries a reason code only (a refused peer learns nothing of
  // the run); what it means for this agent is said here.
  std::string text =
      fmt::format("the coordinator at {} rejected this agent ({}): {}{}", options_.coordinator,
                  protocol::ErrorCodeName(error.code), error.message, Advice(error.code));
  if (refusal && options_.mode != AgentMode::kServe) {
    *fatal = FailedPrecondition(text);
    return std::nullopt;
  }
  Admission admission;
  if (!refusal) {
    DFX_LOG_ERROR("{}", text);
    return admission;
  }
  admission.refused = true;
  admission.refusal = std::move(text);
  return admission;
}

Result<Admission> CoordinatorLink::Admit(const protocol::Frame& frame) {
  auto decoded = protocol::Decode(frame.bytes);
  if (!decoded.ok()) {
    DFX_LOG_WARN("rejected a message from the coordinator: {}", decoded.status().message());
    return Admission{};
  }
  protocol::Message& m = *decoded;
  if (const auto* error = std::get_if<protocol::Error>(&m.body)) {
    Status fatal = Status::Ok();
    std::optional<Admission> admission = OnError(*error, &fatal);
    if (!admission) return fatal;
    return std::move(*admission);
  }
  protocol::Expectations expect;
  expect.session_id = session_;
  const bool adopting = session_ == 0 && options_.mode == AgentMode::kServe;
  if (adopting) {
    if (m.header.session_id == 0) {
      DFX_LOG_WARN("coordinator message without a session ignored");
      return Admission{};
    }
    expect.session_id = m.header.session_id;
  }
  if (auto s = protocol::Validate(m, expect); !s.ok()) {
    DFX_LOG_WARN("rejected {} from the coordinator: {}", protocol::BodyName(m.body), s.message());
    return Admission{};
  }
  hello_backoff_ns_ = 0;  // a coordinator answered: no refusal to back off from
  handshake_retry_ = false;
  if (adopting) {
    session_ = m.header.session_id;
    DFX_LOG_INFO("attached to session {} of the coordinator at {}", Hex64(session_),
                 options_.coordinator);
  }
  last_rx_ns_ = Now();
  Admission admission;
  if (!attached_) {
    attached_ = true;
    admission.attached_now = true;
    NoteHelloSent();  // admitted: from now on the coordinator notices if this process ends
  }
  admission.message = std::move(m);
  return admission;
}

bool CoordinatorLink::LostConnection() {
  if (!connected_ || !attached_ || resume_token_.empty()) return false;
  return channel_.TakeDisconnects() > 0;
}

Status CoordinatorLink::Reconnect(std::vector<uint64_t> open_transfers) {
  if (!reconnecting_) lost_ns_ = Now();
  reconnecting_ = true;
  DFX_LOG_WARN(
      "the connection to the coordinator at {} closed; connecting again (session {}, {} "
      "stream(s) to resume)",
      options_.coordinator, Hex64(session_), open_transfers.size());
  channel_ = protocol::DealerChannel();
  DFX_RETURN_IF_ERROR(OpenSocket());
  protocol::Hello hello = MakeHello();
  hello.reconnect = true;
  hello.resume_token = resume_token_;
  hello.open_transfers = std::move(open_transfers);
  Send(ranks_.front(), std::move(hello));
  return Status::Ok();
}

void CoordinatorLink::OnResume(const protocol::Resume& resume) {
  if (!resume.token.empty() && !resume.reconnected) {
    // A new session's first answer: closes seen before it (the previous
    // coordinator of a serve agent going away) are not this session's.
    if (connected_) (void)channel_.TakeDisconnects();
    resume_token_ = resume.token;
  }
  if (resume.reconnected && reconnecting_) {
    reconnecting_ = false;
    DFX_LOG_WARN("back in session {} of the coordinator at {} after {:.1f} s", Hex64(session_),
                 options_.coordinator, (Now() - lost_ns_) / 1e9);
  }
}

void CoordinatorLink::OnHeartbeat(const protocol::Heartbeat& heartbeat) {
  if (heartbeat.want_reply) {
    Send(ranks_.front(), protocol::Heartbeat{Now(), heartbeat.sender_clock_ns, false});
  }
}

// Serve: so two agents claiming one rank do not flood the coordinator (or
// the logs) with HELLO and refusal.
void CoordinatorLink::BackOff(const std::string& refusal) {
  next_hello_ns_ = Now() + GrowBackoff();
  // The next HELLO goes on a fresh connection: a refused socket may still
  // hold what it queued for the session it was refused from (a reconnect's
  // streams to a coordinator that crashed), and a HELLO queued behind that
  // was seen never to leave (the gather that followed waited for this rank
  // until its --timeout).
  channel_ = protocol::DealerChannel();
  connected_ = false;
  DFX_LOG_ERROR("{}; saying HELLO again in {:.0f} s", refusal, hello_backoff_ns_ / 1e9);
}

void CoordinatorLink::EndSession() {
  attached_ = false;
  resume_token_.clear();
  reconnecting_ = false;
  if (options_.session_id == 0) session_ = 0;
  last_hello_ns_ = 0;
  BeginServeWait();
}

int CoordinatorLink::IdleWaitMs(uint64_t now, bool busy) const {
  const int interval_ms = ToPollMs(options_.timeouts.heartbeat_interval);
  const int poll_ms = std::max(1, std::min(interval_ms, 50));
  // Not attached, or work under way: progress reports of a running
  // dispatch, a send that would have blocked, HELLO retries and deadlines.
  if (!attached_ || busy) return poll_ms;
  // Attached and idle: until its own heartbeat is due (anything received,
  // a completion or Stop() wakes the loop before).
  const uint64_t due =
      std::max(last_hb_ns_, last_tx_ns_) + static_cast<uint64_t>(interval_ms) * 1000000;
  if (due <= now) return 1;
  const uint64_t ms = (due - now + 999999) / 1000000;
  return static_cast<int>(std::clamp<uint64_t>(ms, 1, std::max(1, interval_ms)));
}

}  // namespace dfx::rank_agent
