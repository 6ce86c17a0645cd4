// Every deadline of a run in one value type (docs/design.md §9: every wait
// has one). A struct that needs deadlines embeds a Timeouts rather than
// copying fields, so a deadline has one name, one unit (std::chrono) and one
// default wherever it is read: the coordinator's session, gather and
// launcher, the agent's command line, and the agent itself.
//
// Command lines speak seconds (--heartbeat-timeout 10); Seconds() and
// ToSeconds() convert at that edge only. Plain value type.
#pragma once

#include <chrono>
#include <cstdint>

#include "common/status.h"

namespace dfx {

using namespace std::chrono_literals;

struct Timeouts {
  using Duration = std::chrono::nanoseconds;

  // An agent: the coordinator's first answer (one-shot and recover agents
  // give up after it). A serve agent waits for a coordinator without limit
  // unless serve_connect is set.
  Duration connect = 30s;
  Duration serve_connect = Duration::zero();  // 0 = no limit
  // The coordinator: spawn + HELLO + READY of every rank.
  Duration startup = 60s;
  // Both directions: how often a side says it is alive, and the silence
  // after which its peer counts it gone.
  Duration heartbeat_interval = 200ms;
  Duration heartbeat_timeout = 10s;
  // One dispatch, run + stream; agents exiting after Shutdown; one
  // post-run swimlane conversion; a whole gather.
  Duration dispatch = 3600s;
  Duration shutdown = 10s;
  Duration convert = 600s;
  Duration gather = 120s;
  // The coordinator: how long an agent whose connection closed (or went
  // silent) may take to come back before its ranks fail (docs/design.md §9).
  // Negative: heartbeat_timeout; 0: no window (a closed connection fails at once).
  Duration reconnect_window = Duration(-1);
  Duration ReconnectWindow() const {
    return reconnect_window < Duration::zero() ? heartbeat_timeout : reconnect_window;
  }

  // The heartbeat pair is sane: the interval at least
  // kMinHeartbeatInterval, the timeout at least kMinHeartbeatTimeoutIntervals
  // intervals, so one late heartbeat never declares a live peer dead. The
  // error names --heartbeat-interval / --heartbeat-timeout.
  Status ValidateHeartbeat() const;

  bool operator==(const Timeouts&) const = default;
};

inline constexpr Timeouts::Duration kMinHeartbeatInterval = 10ms;
inline constexpr int kMinHeartbeatTimeoutIntervals = 3;
// The largest deadline a flag accepts (11.6 days).
inline constexpr double kMaxTimeoutSeconds = 1e6;

// Seconds as a command line gives them -> a Duration, rounded to the
// nearest ns (so a Duration written by ToSeconds reads back exactly).
constexpr Timeouts::Duration Seconds(double s) {
  return std::chrono::round<Timeouts::Duration>(std::chrono::duration<double>(s));
}
// A Duration in seconds, for messages and command lines.
constexpr double ToSeconds(Timeouts::Duration d) {
  return std::chrono::duration<double>(d).count();
}
// A Duration in ns as the clocks count (common/clock.h).
constexpr uint64_t ToNs(Timeouts::Duration d) { return static_cast<uint64_t>(d.count()); }
// A Duration in whole ms (poll timeouts), at least 0.
constexpr int ToPollMs(Timeouts::Duration d) {
  return d.count() <= 0 ? 0 : static_cast<int>(d.count() / 1000000);
}

}  // namespace dfx
