#include "coordinator/agent_registry.h"

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/log.h"
#include "protocol/codec.h"

namespace dfx::coordinator {

std::string AgentState::Describe() const {
  // The ranks first: "rank-1.x died" did not say which rank(s) went with it.
  const std::string served = ranks.size() == 1 ? fmt::format("rank {}", ranks.front())
                             : ranks.empty()   ? std::string("no rank")
                                               : fmt::format("ranks {}", fmt::join(ranks, ","));
  return fmt::format("the agent of {} ({}, pid {} on {})", served, identity, pid,
                     host.empty() ? "?" : host);
}

AgentRegistry::AgentRegistry(protocol::RouterChannel& router, const Clock& clock,
                             AdmissionPolicy policy)
    : router_(router), clock_(clock), policy_(std::move(policy)) {}

std::string AgentRegistry::Printable(const std::string& identity) {
  std::string out;
  for (unsigned char c : identity) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out.empty() ? "<anonymous>" : out;
}

std::variant<AgentRegistry::Admitted, AgentRegistry::Refusal> AgentRegistry::Admit(
    const std::string& identity, const protocol::Header& header, const protocol::Hello& hello) {
  using protocol::ErrorCode;
  const std::string who = fmt::format("{} (pid {} on {})", Printable(identity), hello.pid,
                                      hello.host.empty() ? "?" : hello.host);
  if (header.protocol_version != protocol::kProtocolVersion ||
      hello.protocol_version != protocol::kProtocolVersion) {
    return Refusal{ErrorCode::kVersionMismatch,
                   fmt::format("agent {} speaks protocol version {}, this coordinator speaks "
                               "version {}; run the same build on both sides",
                               who, header.protocol_version, protocol::kProtocolVersion)};
  }
  protocol::Expectations structure_only;
  if (Status s = protocol::Validate(protocol::Message{header, hello}, structure_only); !s.ok()) {
    return Refusal{ErrorCode::kBadMessage, "bad HELLO from " + who + ": " + s.message()};
  }
  if (hello.session_id != 0 && hello.session_id != policy_.session) {
    return Refusal{
        ErrorCode::kSessionMismatch,
        fmt::format("agent {} was started for session {}, this run is session {}; "
                    "restart it with --session {} (or use `dfx-rank-agent serve`)",
                    who, Hex64(hello.session_id), Hex64(policy_.session), Hex64(policy_.session)),
        false, hello.ranks};
  }
  if (policy_.ignored_modes.count(hello.mode)) return Refusal{ErrorCode::kBadMessage, "", true};
  if (!policy_.modes.count(hello.mode)) {
    return Refusal{ErrorCode::kBadMessage,
                   fmt::format("agent {} in {} mode does not fit this coordinator", who,
                               protocol::AgentModeName(hello.mode)),
                   false, hello.ranks};
  }
  if (auto it = agents_.find(identity); it != agents_.end()) {
    AgentState& known = it->second;
    if (known.pid == hello.pid && !known.dead) return Admitted{&known, false};
    if (known.dead) {
      return Refusal{ErrorCode::kDuplicateRank,
                     fmt::format("agent {}: its ranks failed earlier in this run ({}); a failed "
                                 "rank is not re-admitted",
                                 who, known.error),
                     false, hello.ranks};
    }
    if (policy_.num_ranks > 0) {
      return Refusal{ErrorCode::kDuplicateRank,
                     fmt::format("agent {} claims ranks already owned by pid {} on {}", who,
                                 known.pid, known.host),
                     false, hello.ranks};
    }
  }
  if (policy_.num_ranks > 0) {
    for (int32_t r : hello.ranks) {
      if (r >= policy_.num_ranks) {
        return Refusal{ErrorCode::kUnknownRank,
                       fmt::format("agent {} owns rank {}, but this run has --ranks {} (0..{})",
                                   who, r, policy_.num_ranks, policy_.num_ranks - 1),
                       false, hello.ranks};
      }
      if (auto owner = owner_by_rank_.find(r); owner != owner_by_rank_.end()) {
        const AgentState* holder = Find(owner->second);
        return Refusal{
            ErrorCode::kDuplicateRank,
            holder != nullptr && holder->dead
                ? fmt::format("agent {} claims rank {}, which failed earlier in this run ({}); a "
                              "failed rank is not re-admitted",
                              who, r, holder->error)
                : fmt::format("agent {} claims rank {}, already served by {}", who, r,
                              holder != nullptr ? holder->Describe() : owner->second),
            false, hello.ranks};
      }
    }
  }
  AgentState agent;
  agent.identity = identity;
  agent.ranks = hello.ranks;
  agent.host = hello.host;
  agent.pid = hello.pid;
  agent.mode = hello.mode;
  agent.spool = hello.spool_dir;
  agent.last_rx_ns = Now();
  agent.hello_ns = agent.last_rx_ns;
  agent.clock_offset_ns = static_cast<int64_t>(hello.agent_clock_ns - Now());
  AgentState& stored = agents_[identity] = std::move(agent);
  if (policy_.num_ranks > 0) {
    for (int32_t r : hello.ranks) owner_by_rank_[r] = identity;
  }
  DFX_LOG_DEBUG("HELLO from {}: ranks [{}], {} mode", who, fmt::join(hello.ranks, ","),
                protocol::AgentModeName(hello.mode));
  return Admitted{&stored, true};
}

AgentState* AgentRegistry::Find(const std::string& identity) {
  auto it = agents_.find(identity);
  return it == agents_.end() ? nullptr : &it->second;
}

AgentState* AgentRegistry::OwnerOf(int32_t rank) {
  auto it = owner_by_rank_.find(rank);
  return it == owner_by_rank_.end() ? nullptr : Find(it->second);
}

bool AgentRegistry::Send(AgentState& agent, int32_t rank, protocol::Body body) {
  protocol::Message m{
      protocol::Header{protocol::kProtocolVersion, policy_.session, rank, ++agent.sequence},
      std::move(body)};
  auto r = router_.Send(agent.identity, m);
  if (!r.ok()) {
    DFX_LOG_WARN("sending {} to {} failed: {}", protocol::BodyName(m.body), agent.identity,
                 r.status().message());
    return false;
  }
  if (*r == protocol::SendResult::kUnroutable) {
    // The ROUTER has no connection to it any more: said once, and the
    // event loop declares it dead (nothing sent to it can arrive).
    if (!agent.disconnected) {
      DFX_LOG_WARN("sending {} to {}: its connection is gone", protocol::BodyName(m.body),
                   agent.Describe());
    }
    agent.disconnected = true;
    return false;
  }
  if (*r != protocol::SendResult::kSent) {
    DFX_LOG_WARN("sending {} to {}: queue full", protocol::BodyName(m.body), agent.identity);
    return false;
  }
  agent.last_tx_ns = Now();
  return true;
}

const char* AgentRegistry::RefusalText(protocol::ErrorCode code) {
  switch (code) {
    case protocol::ErrorCode::kVersionMismatch:
      return "refused: another protocol version";
    case protocol::ErrorCode::kSessionMismatch:
      return "refused: not the session this agent was started for";
    case protocol::ErrorCode::kUnknownRank:
      return "refused: rank not part of this run";
    case protocol::ErrorCode::kDuplicateRank:
      return "refused: rank already served, or failed earlier in this run";
    case protocol::ErrorCode::kBadMessage:
      return "refused: say HELLO first, with a valid HELLO for this coordinator";
    case protocol::ErrorCode::kInternal:
      break;
  }
  return "refused";
}

void AgentRegistry::Refuse(const std::string& identity, const Refusal& refusal) {
  if (refusal.silent) return;
  for (int32_t r : refusal.ranks) refusal_by_rank_[r] = refusal.message;
  // A peer refused again and again (e.g. two agents claiming one rank) is
  // logged once per interval, with the count since.
  constexpr uint64_t kRefusalLogIntervalNs = 10000000000ull;
  if (refusal_log_.size() > 4096) refusal_log_.clear();  // many distinct peers: forget old ones
  RefusalLog& log = refusal_log_[identity];
  const uint64_t now = Now();
  if (log.logged_ns == 0 || now - log.logged_ns >= kRefusalLogIntervalNs) {
    DFX_LOG_WARN("turned away {}: {}{}", Printable(identity), refusal.message,
                 log.suppressed > 0 ? fmt::format(" ({} more refusal(s) of it since the last "
                                                  "report)",
                                                  log.suppressed)
                                    : std::string());
    log.logged_ns = now;
    log.suppressed = 0;
  } else {
    ++log.suppressed;
  }
  // The header carries no session and the text no detail: nothing of the run leaks.
  protocol::Message m{protocol::Header{protocol::kProtocolVersion, 0, 0, 0},
                      protocol::Error{refusal.code, RefusalText(refusal.code)}};
  (void)router_.Send(identity, m);
}

const std::string* AgentRegistry::RefusalOf(int32_t rank) const {
  auto it = refusal_by_rank_.find(rank);
  return it == refusal_by_rank_.end() ? nullptr : &it->second;
}

void AgentRegistry::OnHeartbeat(AgentState& agent, const protocol::Heartbeat& hb) {
  if (hb.echo_clock_ns == 0) return;
  const uint64_t now = Now();
  if (hb.echo_clock_ns > now) return;
  const uint64_t rtt = now - hb.echo_clock_ns;
  if (rtt <= agent.best_rtt_ns) {
    agent.best_rtt_ns = rtt;
    // agent clock - coordinator clock, at the midpoint of the round trip.
    agent.clock_offset_ns =
        static_cast<int64_t>(hb.sender_clock_ns) - static_cast<int64_t>(hb.echo_clock_ns + rtt / 2);
  }
}

std::vector<AgentState*> AgentRegistry::Tick(uint64_t interval_ns, uint64_t timeout_ns) {
  std::vector<AgentState*> silent;
  const uint64_t now = Now();
  for (auto& [id, agent] : agents_) {
    if (agent.dead || agent.shutdown_sent || agent.disconnected) continue;
    if (now - agent.last_rx_ns > timeout_ns) {
      silent.push_back(&agent);
      continue;
    }
    if (now - agent.last_ping_ns < interval_ns) continue;
    // At 64 agents, pings and their replies were about a tenth of the
    // messages of a run of back-to-back dispatches, each a wake-up of both
    // sides.
    const bool busy = now - agent.last_rx_ns < interval_ns && now - agent.last_tx_ns < interval_ns;
    if (busy && now - agent.last_ping_ns < kPingEveryBusyIntervals * interval_ns) continue;
    Send(agent, agent.ranks.front(), protocol::Heartbeat{now, 0, true});
    agent.last_ping_ns = now;
  }
  return silent;
}

bool AgentRegistry::MarkDead(AgentState& agent, const std::string& why) {
  if (agent.dead) return false;
  agent.dead = true;
  agent.error = why;
  DFX_LOG_ERROR("{} declared dead: {}", agent.Describe(), why);
  return true;
}

}  // namespace dfx::coordinator
