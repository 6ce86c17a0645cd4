// Test helpers for the coordinator's parts: a ROUTER bound on inproc:// and
// DEALER peers that play agents, in one process (docs/design.md §11.5). Header-only.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <string>
#include <variant>

#include "protocol/channel.h"
#include "protocol/codec.h"

namespace dfx::coordinator::testing {

inline std::string UniqueInproc(const std::string& name) {
  static std::atomic<int> counter{0};
  return "inproc://" + name + "-" + std::to_string(counter++);
}

// A fake agent: a DEALER with an identity, sending and receiving decoded messages.
class FakeAgent {
 public:
  FakeAgent(protocol::Context& context, const std::string& endpoint, const std::string& identity,
            uint64_t session)
      : session_(session) {
    auto d = protocol::DealerChannel::Connect(context, endpoint, identity);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    dealer_ = std::move(*d);
  }
  void Send(int32_t rank, protocol::Body body) {
    auto r = dealer_.Send(
        protocol::Message{protocol::Header{protocol::kProtocolVersion, session_, rank, ++sequence_},
                          std::move(body)});
    ASSERT_TRUE(r.ok());
  }
  // The next message within `ms`, if any.
  std::optional<protocol::Message> Receive(int ms = 5000) {
    for (int waited = 0; waited < ms; waited += 10) {
      auto r = dealer_.Receive(10);
      if (!r.ok()) return std::nullopt;
      if (r->frame) {
        auto m = protocol::Decode(r->frame->bytes);
        if (m.ok()) return std::move(*m);
      }
    }
    return std::nullopt;
  }
  // The next message of type T (others are skipped) within `ms`.
  template <typename T>
  std::optional<T> Expect(int ms = 5000) {
    for (int i = 0; i < 100; ++i) {
      auto m = Receive(ms);
      if (!m) return std::nullopt;
      if (auto* t = std::get_if<T>(&m->body)) return *t;
    }
    return std::nullopt;
  }
  protocol::DealerChannel& dealer() { return dealer_; }

 private:
  protocol::DealerChannel dealer_;
  uint64_t session_;
  uint64_t sequence_ = 0;
};

inline protocol::Hello MakeHello(std::vector<int32_t> ranks, uint32_t pid, uint64_t session,
                                 protocol::AgentMode mode = protocol::AgentMode::kOneShot) {
  protocol::Hello h;
  h.ranks = std::move(ranks);
  h.chips = static_cast<uint32_t>(h.ranks.size());
  h.session_id = session;
  h.host = "test-host";
  h.pid = pid;
  h.mode = mode;
  return h;
}

}  // namespace dfx::coordinator::testing
