// The agents a coordinator knows (docs/design.md §7, §9): who said HELLO, which
// ranks each owns, whether it is alive, its clock offset, and the one way to
// send it a message. The admission rules live here: protocol version,
// session, the mode the coordinator accepts, ranks inside the run, one owner
// per rank, and a failed rank never re-admitted.
//
// Threads: the event loop's only (it owns the ROUTER socket the registry
// sends on). Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "protocol/channel.h"
#include "protocol/messages.h"

namespace dfx::coordinator {

// One time an agent's connection dropped and it came back (docs/design.md §9).
struct Reconnect {
  uint64_t at_ns = 0;   // coordinator clock: when it was taken back
  uint64_t gap_ns = 0;  // how long it was away (from the close, or from the silence)
};

struct AgentState {
  std::string identity;  // the DEALER routing identity
  std::vector<int32_t> ranks;
  std::string host;
  uint32_t pid = 0;
  protocol::AgentMode mode = protocol::AgentMode::kOneShot;
  std::string spool;
  bool ready = false;
  bool dead = false;
  bool shutdown_sent = false;
  bool gather_done = false;  // recover / attach-gather: every spooled file was offered
  // Transport: where its connection comes from, that connection's
  // descriptor (a disconnect event names it), and whether the ROUTER lost
  // the route to it (closed, or unroutable on send: logged once).
  std::string address;
  int connection_fd = -1;
  bool disconnected = false;
  std::string error;  // why it is dead
  // A dropped connection is not a dead agent: the token its reconnect HELLO
  // must repeat (sent in its first Resume), since when it is away (0: it is
  // not) and why, and each time it came back.
  std::string resume_token;
  uint64_t away_since_ns = 0;
  std::string away_why;
  bool away_silent = false;  // away for silence, its connection still open
  std::vector<Reconnect> reconnects;
  uint64_t last_rx_ns = 0;
  uint64_t hello_ns = 0;  // when it said HELLO, and READY (0: not yet); coordinator clock
  uint64_t ready_ns = 0;
  uint64_t last_ping_ns = 0;
  uint64_t last_tx_ns = 0;  // the last message sent to it (any kind)
  // Agent clock minus coordinator clock, from the heartbeat with the
  // shortest round trip so far (the offset is good to +- best_rtt_ns / 2).
  int64_t clock_offset_ns = 0;
  uint64_t best_rtt_ns = UINT64_MAX;
  uint64_t sequence = 0;  // of messages sent to it
  // Plan programs it ran (DispatchDone ok or failed): it keeps them parsed
  // (rank_agent/program_cache.h), so their next dispatches go by hash, without the program's text.
  std::set<std::string> programs_kept;

  // "rank-0 (pid 12 on host-a)".
  std::string Describe() const;
};

// What a coordinator admits.
struct AdmissionPolicy {
  uint64_t session = 0;
  // Run: ranks must be < num_ranks and unowned. 0 = any ranks, no ownership
  // (gather: recovery agents offer what their spool holds).
  int num_ranks = 0;
  std::set<protocol::AgentMode> modes;  // modes that fit this coordinator
  // Modes that are not refused but quietly ignored (a serve agent knocking
  // while a gather runs: it is not for this coordinator now).
  std::set<protocol::AgentMode> ignored_modes;
};

class AgentRegistry {
 public:
  // `router` and `clock` must outlive the registry.
  AgentRegistry(protocol::RouterChannel& router, const Clock& clock, AdmissionPolicy policy);

  // A refusal. The peer is told only the reason code (RefusalText: a
  // refused peer learns nothing of the run, neither its session nor its
  // ranks); `message` is the detail for this side's log. `silent`: the peer
  // is told nothing at all.
  struct Refusal {
    protocol::ErrorCode code = protocol::ErrorCode::kBadMessage;
    std::string message;
    bool silent = false;
    std::vector<int32_t> ranks;  // the ranks the peer claimed (for RefusalOf)
  };
  struct Admitted {
    AgentState* agent = nullptr;
    bool fresh = false;  // false: a repeated HELLO of an agent already registered
  };
  // Applies the admission rules to a HELLO. Admitted: the agent is
  // registered (or, for a repeated HELLO, returned as is) and owns its
  // ranks. Refused: the caller sends the refusal (Refuse).
  std::variant<Admitted, Refusal> Admit(const std::string& identity, const protocol::Header& header,
                                        const protocol::Hello& hello);

  uint64_t session() const { return policy_.session; }
  AgentState* Find(const std::string& identity);
  // The live or dead agent that owns `rank`; nullptr when none said HELLO for it.
  AgentState* OwnerOf(int32_t rank);
  std::map<std::string, AgentState>& agents() { return agents_; }

  // Sends `body` about `rank` to `agent`. False (and logged once per kind of
  // failure) when it could not be queued.
  bool Send(AgentState& agent, int32_t rank, protocol::Body body);
  // Answers a peer that is not (or not yet) a registered agent with the
  // reason code alone, and logs the detail (a peer refused again and again
  // is logged once per kRefusalLogIntervalNs, with a count).
  void Refuse(const std::string& identity, const Refusal& refusal);
  // The last refusal of an agent that claimed `rank`; nullptr if none.
  const std::string* RefusalOf(int32_t rank) const;
  // What a refused peer is told: a fixed text per code.
  static const char* RefusalText(protocol::ErrorCode code);

  // Folds a heartbeat reply into the clock offset (the sample with the
  // shortest round trip wins).
  void OnHeartbeat(AgentState& agent, const protocol::Heartbeat& heartbeat);
  // Pings every live agent whose interval passed, except one that both
  // sent and was sent something within the interval (a dispatch and its
  // answers: a ping would tell neither side anything new), which is pinged
  // every kPingEveryBusyIntervals intervals only (for its clock offset);
  // returns the live agents silent for longer than `timeout_ns` (the caller
  // declares them dead).
  static constexpr uint64_t kPingEveryBusyIntervals = 5;
  std::vector<AgentState*> Tick(uint64_t interval_ns, uint64_t timeout_ns);
  // Marks `agent` dead with `why`; false if it already was.
  bool MarkDead(AgentState& agent, const std::string& why);

  // A printable form of a routing identity (non-printable bytes as \xNN).
  static std::string Printable(const std::string& identity);

 private:
  uint64_t Now() const { return clock_.NowNs(); }

  protocol::RouterChannel& router_;
  const Clock& clock_;
  AdmissionPolicy policy_;
  std::map<std::string, AgentState> agents_;
  std::map<int32_t, std::string> owner_by_rank_;
  std::map<int32_t, std::string> refusal_by_rank_;
  // Refusal log throttle, per peer: when it was last logged, how many since.
  struct RefusalLog {
    uint64_t logged_ns = 0;
    uint64_t suppressed = 0;
  };
  std::map<std::string, RefusalLog> refusal_log_;
};

}  // namespace dfx::coordinator
