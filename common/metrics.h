// Counters a dfx program exposes to Prometheus (README "Running agents as a
// service"): a registry of monotonically increasing counters and their text
// exposition (format 0.0.4: `# HELP`, `# TYPE ... counter`, one sample per
// line). `--metrics tcp://127.0.0.1:PORT` serves the process's registry
// over HTTP (common/metrics_server.h).
//
// The counters every program shares are named once, below (SessionsServed,
// Dispatches, ...): call sites count through them, so a name cannot drift
// between the agent, the coordinator and the docs. Each program declares
// the ones it reports at start (DeclareAgentCounters,
// DeclareCoordinatorCounters), so they read 0 before anything happened
// instead of being absent.
//
// Threads: everything here is thread-safe. Counting is one relaxed atomic
// add on a Counter the caller may keep a reference to (it lives as long as
// its registry); looking a counter up by name takes the registry's lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace dfx::metrics {

class Counter {
 public:
  void Add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The counter `name`, or its sample `label`="`value`" when `label` is
  // given; made (at 0) on the first call. `name` and `label` are Prometheus
  // names ([a-zA-Z_][a-zA-Z0-9_]*, a counter's name ending in _total: a
  // CHECK, they are the program's own); `help` and the label name of a
  // family are those of its first call.
  Counter& Get(std::string_view name, std::string_view help, std::string_view label = {},
               std::string_view value = {});
  // The value of a counter (0 when it does not exist).
  uint64_t Value(std::string_view name, std::string_view value = {}) const;
  // Every family in the order it was made, its samples in the order they
  // were made: "# HELP name help\n# TYPE name counter\nname{label=\"v\"} N\n".
  std::string Text() const;

 private:
  struct Family {
    std::string name, help, label;
    std::vector<std::pair<std::string, std::unique_ptr<Counter>>> samples;
  };
  const Family* Find(std::string_view name) const;

  mutable std::mutex mutex_;
  std::vector<Family> families_;
};

// The registry this process serves with --metrics.
Registry& Process();

// --- the counters of dfx programs (in Process()) ----------------------------
// Sessions: the agent's served runs (it attached to a coordinator's
// session); the coordinator's runs and gathers.
Counter& SessionsServed();
// Dispatches that ended, by how (ok, failed, rejected, cancelled, ...).
Counter& Dispatches(std::string_view status);
// Artifact bytes the agent's chips wrote into its spool.
Counter& BytesSpooled();
// Artifact bytes the agent streamed to a coordinator (chunk payloads).
Counter& BytesSent();
// Artifact bytes the coordinator received in chunks.
Counter& BytesReceived();
// Connections re-established to a peer after the first one (the agent's
// DEALER, read from its socket monitor).
Counter& Reconnects();
// Connections turned away at the CURVE handshake: by this coordinator (its
// ZAP handler refused a peer), or of this agent (refused by the peer).
Counter& HandshakesRefused();
// Coordinator: times an agent's credit window was used up by chunks still
// waiting for the writer (the agent must wait: its credits are withheld
// until the disk catches up).
Counter& CreditsWithheld();
// Coordinator: chunks that came without a credit (the agent ignored flow
// control and was dropped).
Counter& ChunksWithoutCredit();

// Makes the counters each program reports, at 0.
void DeclareAgentCounters();
void DeclareCoordinatorCounters();

}  // namespace dfx::metrics
