#include "coordinator/event_loop.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

#include "common/log.h"
#include "common/metrics.h"
#include "protocol/codec.h"

namespace dfx::coordinator {

LoopOptions MakeLoopOptions(const Timeouts& timeouts, uint32_t credit_window,
                            uint64_t max_artifact_bytes, collectors::ArtifactState verified_state) {
  LoopOptions o;
  o.timeouts = timeouts;
  o.receiver.credit_window = credit_window;
  o.receiver.max_artifact_bytes = max_artifact_bytes;
  o.receiver.verified_state = verified_state;
  return o;
}

namespace {

// Artifact data takes the zero-copy path: the chunk is decoded in place
// and its bytes go to the writer thread inside the received frame.
Result<protocol::Message> DecodeFrame(std::string_view bytes,
                                      std::optional<protocol::ChunkView>* chunk) {
  auto peeked = protocol::DecodeChunkView(bytes);
  if (!peeked.ok()) return peeked.status();
  if (peeked->has_value()) {
    *chunk = **peeked;
    return protocol::Message{
        (*chunk)->header,
        protocol::ArtifactChunk{
            (*chunk)->transfer_id, (*chunk)->offset, {}, (*chunk)->coding, (*chunk)->raw_size}};
  }
  return protocol::Decode(bytes);
}

}  // namespace

EventLoop::EventLoop(std::filesystem::path dfx_dir, AdmissionPolicy policy, LoopOptions options,
                     const Clock& clock, ArtifactLedger& ledger)
    : clock_(clock),
      options_(options),
      own_context_(options.context == nullptr ? std::make_optional<protocol::Context>()
                                              : std::nullopt),
      context_(options.context != nullptr ? *options.context : *own_context_),
      registry_(router_, clock, std::move(policy)),
      receiver_(std::move(dfx_dir), registry_, ledger, options.receiver) {}

EventLoop::~EventLoop() {
  bulk_.Close();
  if (!bulk_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(bulk_dir_, ec);
  }
}

Status EventLoop::BindBulk() {
  // AF_UNIX paths are limited to 107 bytes: the first candidate that leaves
  // room for "/s" wins.
  std::vector<std::string> parents;
  for (const char* var : {"XDG_RUNTIME_DIR", "TMPDIR"}) {
    if (const char* v = std::getenv(var); v != nullptr && *v == '/') parents.push_back(v);
  }
  parents.push_back("/tmp");
  std::string last_error = "no candidate directory";
  for (const std::string& parent : parents) {
    std::string dir = (std::filesystem::path(parent) / "dfx-bulk-XXXXXX").string();
    if (dir.size() + 2 > 100) {
      last_error = fmt::format("{}: too long for an ipc:// socket path", dir);
      continue;
    }
    if (::mkdtemp(dir.data()) == nullptr) {  // mode 0700, a fresh name
      last_error = fmt::format("cannot create {}: {}", dir, std::strerror(errno));
      continue;
    }
    protocol::SocketOptions socket = options_.socket;
    socket.local_peers_only = true;
    auto bound = protocol::RouterChannel::Bind(context_, "ipc://" + dir + "/s", socket);
    if (!bound.ok()) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      last_error = bound.status().message();
      continue;
    }
    bulk_ = std::move(*bound);
    bulk_dir_ = dir;
    DFX_LOG_DEBUG("local bulk path on {}", bulk_.endpoint());
    return Status::Ok();
  }
  return Unavailable("cannot bind the local bulk path: " + last_error);
}

void EventLoop::OfferBulk(AgentState& agent) {
  if (!bulk_bound() || agent.pid == 0) return;
  std::random_device rd;
  std::string token;
  for (int i = 0; i < 4; ++i) token += fmt::format("{:08x}", rd());
  bulk_.AdmitLocalPeer(agent.identity, token, agent.pid);
  registry_.Send(agent, agent.ranks.front(), protocol::Credit{0, bulk_.endpoint(), token});
}

Status EventLoop::Bind(const std::string& endpoint, std::optional<protocol::CurveServer> curve) {
  protocol::SocketOptions socket = options_.socket;
  socket.curve_server = std::move(curve);
  DFX_ASSIGN_OR_RETURN(router_, protocol::RouterChannel::Bind(context_, endpoint, socket));
  return Status::Ok();
}

// Peers turned away at the handshake (no CURVE, an unknown key) never
// reach the registry; they are counted and logged every few seconds.
void EventLoop::LogRefusedHandshakes() {
  protocol::HandshakeRefusals r = router_.TakeRefusals(/*read_monitor=*/false);
  if (r.count > 0) {
    metrics::HandshakesRefused().Add(r.count);
    refused_handshakes_ += r.count;
    last_refused_handshake_ = r.last;
  }
  if (refused_handshakes_ > 0 && NowNs() - refused_logged_ns_ > 5000000000ull) {
    DFX_LOG_WARN(
        "turned away {} connection(s) at the handshake (not admitted; they were sent "
        "nothing): last: {}",
        refused_handshakes_, last_refused_handshake_);
    refused_handshakes_ = 0;
    refused_logged_ns_ = NowNs();
  }
}

void EventLoop::OnHello(const std::string& identity, const protocol::Header& header,
                        const protocol::Hello& hello, const std::string& address, int connection_fd,
                        PeerHandler& handler) {
  auto admitted = registry_.Admit(identity, header, hello);
  if (auto* refusal = std::get_if<AgentRegistry::Refusal>(&admitted)) {
    registry_.Refuse(identity, *refusal);
    return;
  }
  const auto& a = std::get<AgentRegistry::Admitted>(admitted);
  if (!a.agent->disconnected) a.agent->connection_fd = connection_fd;
  if (!a.fresh) return;
  a.agent->address = address;
  // The first answer carries the session (a serve agent adopts it) and
  // starts the clock-offset measurement.
  registry_.Send(*a.agent, a.agent->ranks.front(), protocol::Heartbeat{NowNs(), 0, true});
  a.agent->last_ping_ns = NowNs();
  // The proof a reconnect HELLO must repeat (docs/design.md §9); none with
  // --reconnect-window 0, so such a run's agents do not try to come back.
  if (options_.timeouts.ReconnectWindow() > Timeouts::Duration::zero()) {
    a.agent->resume_token = NewResumeToken();
    registry_.Send(*a.agent, a.agent->ranks.front(), protocol::Resume{a.agent->resume_token});
  }
  handler.OnAdmitted(*a.agent);
}

void EventLoop::Deliver(AgentState& agent, protocol::Message& m, PeerHandler& handler, bool bulk) {
  std::visit(
      [&](auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, protocol::Heartbeat>) {
          registry_.OnHeartbeat(agent, body);
        } else if constexpr (std::is_same_v<T, protocol::ArtifactBegin>) {
          auto place = handler.PlaceArtifact(agent, body);
          if (!place.ok()) {
            receiver_.Refuse(agent, body.transfer_id, place.status().message());
          } else {
            receiver_.OnBegin(agent, body, *place);
          }
        } else if constexpr (std::is_same_v<T, protocol::ArtifactChunk>) {
          // Only a frame that could not be parsed in place (misaligned) lands here.
          (bulk ? bulk_bytes_ : control_bytes_) += body.data.size();
          protocol::FrameBytes owned(std::move(body.data));
          receiver_.OnChunk(agent, body.transfer_id, body.offset, owned.view(), owned, body.coding,
                            body.raw_size);
        } else if constexpr (std::is_same_v<T, protocol::ArtifactEnd>) {
          receiver_.OnEnd(agent, body);
        } else if constexpr (std::is_same_v<T, protocol::Error>) {
          DFX_LOG_WARN("{} reported an error ({}): {}", agent.identity,
                       protocol::ErrorCodeName(body.code), body.message);
        } else {
          handler.OnMessage(agent, m.body);
        }
      },
      m.body);
}

void EventLoop::OnFrame(const protocol::Frame& frame, PeerHandler& handler, bool bulk) {
  if (bulk && frame.user_id != frame.identity) {
    // The token admitted the connection as one agent: it speaks only as that one.
    DFX_LOG_WARN("ignored a message on the local bulk path from {}, admitted as {}",
                 AgentRegistry::Printable(frame.identity), AgentRegistry::Printable(frame.user_id));
    return;
  }
  if (frame.had_extra_parts) {
    DFX_LOG_WARN("rejected a multipart message from {}: every message is one frame",
                 AgentRegistry::Printable(frame.identity));
    return;
  }
  std::optional<protocol::ChunkView> chunk;
  Result<protocol::Message> decoded = DecodeFrame(frame.bytes, &chunk);
  AgentState* agent = registry_.Find(frame.identity);
  if (!decoded.ok()) {
    DFX_LOG_WARN("rejected a message from {}: {}", AgentRegistry::Printable(frame.identity),
                 decoded.status().message());
    if (agent != nullptr && !agent->dead) {
      registry_.Send(*agent, agent->ranks.front(),
                     protocol::Error{protocol::ErrorCode::kBadMessage, decoded.status().message()});
    }
    return;
  }
  protocol::Message& m = *decoded;
  if (auto* hello = std::get_if<protocol::Hello>(&m.body)) {
    if (!hello->launch_failure.empty()) {
      if (m.header.session_id == registry_.session() && hello->session_id == registry_.session()) {
        handler.OnLaunchFailure(*hello);
      } else {
        DFX_LOG_WARN("ignored a launch-failure report from {} for another session",
                     AgentRegistry::Printable(frame.identity));
      }
      return;
    }
    if (hello->reconnect) {
      OnReconnect(frame.identity, m.header, *hello, frame.peer_address, frame.connection_fd,
                  handler);
    } else {
      OnHello(frame.identity, m.header, *hello, frame.peer_address, frame.connection_fd, handler);
    }
    return;
  }
  if (agent == nullptr) {
    if (auto* error = std::get_if<protocol::Error>(&m.body)) {
      DFX_LOG_WARN("error from unregistered peer {}: {}", AgentRegistry::Printable(frame.identity),
                   error->message);
      return;
    }
    registry_.Refuse(frame.identity,
                     {protocol::ErrorCode::kBadMessage,
                      fmt::format("{} from a peer that never said HELLO (rank {}); say HELLO first",
                                  protocol::BodyName(m.body), m.header.rank)});
    return;
  }
  if (agent->dead) return;  // a dead rank stays dead for the run (no re-admission)
  // Away: nothing counts until its reconnect HELLO (what it sent before
  // that is resent from where the Resume says).
  if (agent->away_since_ns != 0) {
    if (!agent->away_silent || agent->disconnected || bulk ||
        frame.connection_fd != agent->connection_fd) {
      return;
    }
    ComeBack(*agent, handler);  // nothing was lost on a connection that stayed open
  }
  if (bulk && !(chunk || std::holds_alternative<protocol::ArtifactBegin>(m.body) ||
                std::holds_alternative<protocol::ArtifactChunk>(m.body) ||
                std::holds_alternative<protocol::ArtifactEnd>(m.body) ||
                std::holds_alternative<protocol::DispatchDone>(m.body) ||
                std::holds_alternative<protocol::GatherDone>(m.body))) {
    DFX_LOG_WARN("ignored {} from {} on the local bulk path (artifact streams only)",
                 protocol::BodyName(m.body), agent->identity);
    return;
  }
  if (chunk || std::holds_alternative<protocol::ArtifactChunk>(m.body)) {
    // Credits are enforced where chunks arrive: a peer that sends beyond
    // its window is dropped before its data is queued anywhere.
    if (!receiver_.TakeCredit(*agent)) {
      const std::string why = fmt::format(
          "sent an artifact chunk without credit (more than the credit window of {} unwritten "
          "chunks): flow control violated, dropped",
          options_.receiver.credit_window);
      registry_.Send(*agent, agent->ranks.front(),
                     protocol::Error{protocol::ErrorCode::kBadMessage, why});
      DeclareDead(*agent, why, handler);
      return;
    }
  }
  protocol::Expectations expect;
  expect.session_id = registry_.session();
  expect.ranks.insert(agent->ranks.begin(), agent->ranks.end());
  if (Status s = protocol::Validate(m, expect); !s.ok()) {
    const bool fatal = s.code() == Code::kFailedPrecondition;
    DFX_LOG_WARN("rejected {} from {}: {}", protocol::BodyName(m.body), agent->identity,
                 s.message());
    registry_.Send(*agent, agent->ranks.front(),
                   protocol::Error{fatal ? protocol::ErrorCode::kSessionMismatch
                                         : protocol::ErrorCode::kBadMessage,
                                   s.message()});
    if (std::holds_alternative<protocol::ArtifactChunk>(m.body)) receiver_.ReturnCredit(*agent);
    return;
  }
  agent->last_rx_ns = NowNs();
  if (!bulk && frame.connection_fd >= 0 && !agent->disconnected) {
    agent->connection_fd = frame.connection_fd;
  }
  if (chunk) {
    (bulk ? bulk_bytes_ : control_bytes_) += chunk->data.size();
    receiver_.OnChunk(*agent, chunk->transfer_id, chunk->offset, chunk->data, frame.bytes,
                      chunk->coding, chunk->raw_size);
    return;
  }
  Deliver(*agent, m, handler, bulk);
}

Status EventLoop::Pump(int timeout_ms, PeerHandler& handler) {
  const int wait_ms = timeout_ms;
  if (bulk_bound()) {
    DFX_RETURN_IF_ERROR(
        protocol::RouterChannel::WaitAny(router_, bulk_, timeout_ms, receiver_.wake_fd()));
    timeout_ms = 0;
  }
  auto polled = router_.Receive(timeout_ms, receiver_.wake_fd());
  if (!polled.ok()) return polled.status();
  NotePause(NowNs(), wait_ms, handler);
  // Closed connections are tied to their agents before the frame just read
  // is handled: a descriptor the kernel reused for a new peer must not
  // take that peer down with the old one. Only a frame from a connection
  // not yet tied to its sender can be such a peer's; reading the monitor
  // costs system calls, so the frames of known connections skip it. The
  // frame just read first, then what else is queued (256 more at most).
  std::optional<protocol::Frame> frame = std::move(polled->frame);
  for (int i = 0; frame; ++i) {
    const AgentState* sender = registry_.Find(frame->identity);
    if (sender == nullptr || sender->connection_fd != frame->connection_fd) MarkDisconnected();
    OnFrame(*frame, handler);
    if (i == 256) break;
    auto more = router_.Receive(0);
    if (!more.ok()) break;
    frame = std::move(more->frame);
  }
  if (bulk_bound()) {
    // The bulk path's frames, as many as the control socket's at most per turn.
    for (int i = 0; i < 256; ++i) {
      auto more = bulk_.Receive(0);
      if (!more.ok() || !more->frame) break;
      OnFrame(*more->frame, handler, /*bulk=*/true);
    }
  }
  receiver_.TakeWriterResults(polled->woken);
  // The socket monitor once a turn (each read is a system call): the
  // refusals to log and the connections that closed.
  router_.ReadMonitor();
  LogRefusedHandshakes();
  if (bulk_bound()) {
    protocol::HandshakeRefusals r = bulk_.TakeRefusals();
    if (r.count > 0) {
      metrics::HandshakesRefused().Add(r.count);
      DFX_LOG_WARN("turned away {} connection(s) on the local bulk path: last: {}", r.count,
                   r.last);
    }
  }
  // A stop that came after the poll returned (while frames were handled) is
  // noticed before any agent is declared gone: an agent that gave up while
  // this process was stopped must not read as one that died on its own.
  CheckPaused(handler);
  DeclareDisconnected(handler, /*read_monitor=*/false);
  const Timeouts& t = options_.timeouts;
  for (AgentState* silent : registry_.Tick(ToNs(t.heartbeat_interval), ToNs(t.heartbeat_timeout))) {
    const std::string why =
        fmt::format("silent for {:.1f} s (heartbeat deadline --heartbeat-timeout {:g} s)",
                    (NowNs() - silent->last_rx_ns) / 1e9, ToSeconds(t.heartbeat_timeout));
    if (!GoAway(*silent, why, /*closed=*/false)) DeclareDead(*silent, why, handler);
  }
  ExpireAway(handler);
  handler.OnTick();
  last_turn_end_ns_ = NowNs();
  return Status::Ok();
}

void EventLoop::NotePause(uint64_t turn_ns, int timeout_ms, PeerHandler& handler) {
  const uint64_t previous = last_turn_end_ns_;
  last_turn_end_ns_ = turn_ns;
  const uint64_t waited_ns = static_cast<uint64_t>(std::max(timeout_ms, 0)) * 1000000ull;
  if (previous == 0 || turn_ns < previous + waited_ns) return;
  const uint64_t gap_ns = turn_ns - previous - waited_ns;
  const Timeouts& t = options_.timeouts;
  if (gap_ns <= ToNs(t.heartbeat_timeout) / 2) return;
  DFX_LOG_WARN(
      "this coordinator was paused for {:.1f} s (its own clock jumped between two turns of its "
      "event loop: SIGSTOP / Ctrl-Z, or the machine was suspended); agents that heard nothing for "
      "--heartbeat-timeout {:g} s gave up and kept their files in their spools",
      gap_ns / 1e9, ToSeconds(t.heartbeat_timeout));
  for (auto& [id, agent] : registry_.agents()) {
    if (!agent.dead) agent.last_rx_ns = turn_ns;
    if (!agent.dead && agent.away_since_ns != 0) agent.away_since_ns = turn_ns;
  }
  handler.OnPaused(gap_ns);
}

// The transport knows at once when a peer's connection closed (its process
// ended, or its host closed the socket). MarkDisconnected ties each closed
// descriptor to the agent that used it, as of now; DeclareDisconnected, once
// the frames already received were handled (a last DispatchDone or
// GatherDone still counts), declares such an agent dead, not after
// --heartbeat-timeout. One that was told to go, or finished its gather,
// just left.
void EventLoop::MarkDisconnected(bool read_monitor) {
  for (int fd : router_.TakeDisconnects(read_monitor)) {
    for (auto& [id, agent] : registry_.agents()) {
      if (agent.connection_fd == fd && !agent.dead) {
        agent.disconnected = true;
        agent.connection_fd = -1;
      }
    }
  }
}

void EventLoop::DeclareDisconnected(PeerHandler& handler, bool read_monitor) {
  MarkDisconnected(read_monitor);
  for (auto& [id, agent] : registry_.agents()) {
    if (!agent.disconnected || agent.dead || agent.shutdown_sent || agent.gather_done) continue;
    if (agent.away_since_ns != 0) continue;  // ExpireAway decides
    const std::string why =
        fmt::format("its connection{} closed (the agent process or its host is gone)",
                    agent.address.empty() ? "" : " from " + agent.address);
    if (!GoAway(agent, why, /*closed=*/true)) DeclareDead(agent, why, handler);
  }
}

bool EventLoop::AnyConnected() {
  for (auto& [id, agent] : registry_.agents()) {
    if (!agent.dead && !agent.disconnected) return true;
  }
  return false;
}

void EventLoop::DeclareDead(AgentState& agent, const std::string& why, PeerHandler& handler) {
  if (!registry_.MarkDead(agent, why)) return;
  receiver_.AbortAgent(agent.identity, why);
  handler.OnAgentDead(agent, why);
}

void EventLoop::DrainWriter(uint64_t deadline_ns, PeerHandler& handler) {
  while (!receiver_.WriterIdle() && NowNs() < deadline_ns) (void)Pump(20, handler);
}

void EventLoop::SendShutdown(const std::string& reason) {
  for (auto& [id, agent] : registry_.agents()) {
    if (agent.dead) continue;
    registry_.Send(agent, agent.ranks.front(), protocol::Shutdown{reason});
    agent.shutdown_sent = true;
  }
}

}  // namespace dfx::coordinator
