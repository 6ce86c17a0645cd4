// A dropped connection is not a dead agent (docs/design.md §9): the part of
// the EventLoop that keeps an agent whose connection closed (or went
// silent) for the reconnect window, takes it back when it proves it is the
// same agent, and fails its ranks when the window passes.
#include <fmt/format.h>

#include <random>

#include "common/log.h"
#include "coordinator/event_loop.h"

namespace dfx::coordinator {

namespace {

// Whether two tokens are equal, in a time that does not depend on where
// they differ.
bool SameToken(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

std::string EventLoop::NewResumeToken() {
  std::random_device rd;
  std::string token;
  for (int i = 0; i < 8; ++i) token += fmt::format("{:08x}", rd());
  return token;
}

bool EventLoop::GoAway(AgentState& agent, const std::string& why, bool closed) {
  const Timeouts::Duration window = options_.timeouts.ReconnectWindow();
  if (window <= Timeouts::Duration::zero() || agent.resume_token.empty() || agent.dead ||
      agent.shutdown_sent || agent.gather_done) {
    return false;
  }
  if (closed) {
    agent.disconnected = true;
    agent.connection_fd = -1;
    agent.away_silent = false;
  }
  if (agent.away_since_ns != 0) return true;
  agent.away_silent = !closed;
  agent.away_since_ns = NowNs();
  agent.away_why = why;
  DFX_LOG_WARN("{}: {}; waiting up to {:g} s for it to come back (--reconnect-window)",
               agent.Describe(), why, ToSeconds(window));
  return true;
}

void EventLoop::ExpireAway(PeerHandler& handler) {
  const Timeouts::Duration window = options_.timeouts.ReconnectWindow();
  for (auto& [id, agent] : registry_.agents()) {
    if (agent.dead || agent.away_since_ns == 0) continue;
    if (agent.shutdown_sent || agent.gather_done) continue;  // it was done: it just left
    if (NowNs() - agent.away_since_ns <= ToNs(window)) continue;
    DeclareDead(agent,
                fmt::format("{} and {} did not come back within {:g} s (--reconnect-window)",
                            agent.away_why, agent.Describe(), ToSeconds(window)),
                handler);
  }
}

void EventLoop::ComeBack(AgentState& agent, PeerHandler& handler) {
  const uint64_t now = NowNs();
  const uint64_t gap = now - agent.away_since_ns;
  agent.away_since_ns = 0;
  agent.away_silent = false;
  agent.reconnects.push_back(Reconnect{now, gap});
  DFX_LOG_WARN("{} spoke again after {:.1f} s of silence on the same connection; taken back",
               agent.Describe(), gap / 1e9);
  handler.OnReconnected(agent, gap);
}

void EventLoop::OnReconnect(const std::string& identity, const protocol::Header& header,
                            const protocol::Hello& hello, const std::string& address,
                            int connection_fd, PeerHandler& handler) {
  AgentState* agent = registry_.Find(identity);
  std::string refused;
  if (agent == nullptr || agent->resume_token.empty()) {
    refused = "a reconnect HELLO from a peer this run never admitted";
  } else if (agent->dead) {
    refused = fmt::format("{} failed earlier in this run ({}); a failed rank is not re-admitted",
                          agent->Describe(), agent->error);
  } else if (!SameToken(hello.resume_token, agent->resume_token) || hello.pid != agent->pid ||
             header.session_id != registry_.session() || hello.session_id != registry_.session() ||
             hello.ranks != agent->ranks) {
    refused = fmt::format(
        "a reconnect HELLO as {} without its resume token, pid, session and ranks (pid {} on {})",
        agent->Describe(), hello.pid, hello.host);
  }
  if (!refused.empty()) {
    registry_.Refuse(identity, AgentRegistry::Refusal{protocol::ErrorCode::kDuplicateRank, refused,
                                                      false, hello.ranks});
    return;
  }
  // Closes the monitor reported meanwhile belong to the old connection, not
  // to this one (the kernel may give the new one the same descriptor).
  MarkDisconnected();
  const uint64_t now = NowNs();
  const uint64_t gap = agent->away_since_ns != 0 ? now - agent->away_since_ns : 0;
  agent->away_since_ns = 0;
  agent->away_silent = false;
  agent->disconnected = false;
  agent->connection_fd = connection_fd;
  agent->address = address;
  agent->last_rx_ns = now;
  agent->reconnects.push_back(Reconnect{now, gap});
  protocol::Resume resume;
  resume.reconnected = true;
  for (uint64_t id : hello.open_transfers) resume.transfers.push_back(receiver_.Where(*agent, id));
  resume.dispatches = handler.AwaitedDispatches(*agent);
  resume.credits = receiver_.RenewCredits(*agent);
  uint64_t held = 0;
  size_t by_state[4] = {0, 0, 0, 0};
  for (const protocol::TransferResume& t : resume.transfers) {
    held += t.offset;
    ++by_state[static_cast<size_t>(t.state) & 3];
  }
  using S = protocol::TransferState;
  DFX_LOG_WARN(
      "{} is back after {:.1f} s away; resuming {} stream(s) ({} open with {} bytes already "
      "here, {} being verified, {} verified, {} to send again) and {} dispatch(es)",
      agent->Describe(), gap / 1e9, resume.transfers.size(),
      by_state[static_cast<size_t>(S::kOpen)], held, by_state[static_cast<size_t>(S::kCommitting)],
      by_state[static_cast<size_t>(S::kAcked)], by_state[static_cast<size_t>(S::kUnknown)],
      resume.dispatches.size());
  registry_.Send(*agent, agent->ranks.front(), std::move(resume));
  handler.OnReconnected(*agent, gap);
}

}  // namespace dfx::coordinator
