#include "coordinator/agent_registry.h"

#include <gtest/gtest.h>

#include "coordinator/testing/loopback.h"

namespace dfx::coordinator {
namespace {

using protocol::AgentMode;
using protocol::ErrorCode;
using testing::FakeAgent;
using testing::MakeHello;

constexpr uint64_t kSession = 0x5e55;

class AgentRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    endpoint_ = testing::UniqueInproc("registry");
    auto r = protocol::RouterChannel::Bind(context_, endpoint_);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    router_ = std::move(*r);
    AdmissionPolicy policy;
    policy.session = kSession;
    policy.num_ranks = 4;
    policy.modes = {AgentMode::kOneShot, AgentMode::kServe};
    registry_ = std::make_unique<AgentRegistry>(router_, clock_, policy);
  }
  AgentRegistry::Refusal RefusalOf(const std::string& id, const protocol::Hello& hello,
                                   uint32_t version = protocol::kProtocolVersion) {
    auto r = registry_->Admit(id, protocol::Header{version, 0, hello.ranks.front(), 1}, hello);
    EXPECT_TRUE(std::holds_alternative<AgentRegistry::Refusal>(r));
    return std::holds_alternative<AgentRegistry::Refusal>(r) ? std::get<AgentRegistry::Refusal>(r)
                                                             : AgentRegistry::Refusal{};
  }
  AgentRegistry::Admitted AdmittedOf(const std::string& id, const protocol::Hello& hello) {
    auto r = registry_->Admit(
        id, protocol::Header{protocol::kProtocolVersion, 0, hello.ranks.front(), 1}, hello);
    EXPECT_TRUE(std::holds_alternative<AgentRegistry::Admitted>(r));
    return std::holds_alternative<AgentRegistry::Admitted>(r) ? std::get<AgentRegistry::Admitted>(r)
                                                              : AgentRegistry::Admitted{};
  }

  FakeClock clock_{1000};
  protocol::Context context_;
  std::string endpoint_;
  protocol::RouterChannel router_;
  std::unique_ptr<AgentRegistry> registry_;
};

TEST_F(AgentRegistryTest, AdmitsOneOwnerPerRankInsideTheRun) {
  auto first = AdmittedOf("rank-0", MakeHello({0, 1}, 10, kSession));
  ASSERT_NE(first.agent, nullptr);
  EXPECT_TRUE(first.fresh);
  EXPECT_EQ(registry_->OwnerOf(1), first.agent);
  EXPECT_EQ(registry_->OwnerOf(2), nullptr);
  // The same agent saying HELLO again is not a new registration.
  auto again = AdmittedOf("rank-0", MakeHello({0, 1}, 10, kSession));
  EXPECT_EQ(again.agent, first.agent);
  EXPECT_FALSE(again.fresh);

  auto dup = RefusalOf("rank-1", MakeHello({1}, 11, kSession));
  EXPECT_EQ(dup.code, ErrorCode::kDuplicateRank);
  EXPECT_NE(dup.message.find("already served by the agent of ranks 0,1 (rank-0, pid 10"),
            std::string::npos)
      << dup.message;
  auto outside = RefusalOf("rank-4", MakeHello({4}, 12, kSession));
  EXPECT_EQ(outside.code, ErrorCode::kUnknownRank);
  EXPECT_NE(outside.message.find("--ranks 4"), std::string::npos) << outside.message;
}

TEST_F(AgentRegistryTest, RefusesOtherVersionsSessionsAndModes) {
  EXPECT_EQ(RefusalOf("rank-0", MakeHello({0}, 1, kSession), 99).code, ErrorCode::kVersionMismatch);
  EXPECT_EQ(RefusalOf("rank-0", MakeHello({0}, 1, kSession + 1)).code, ErrorCode::kSessionMismatch);
  EXPECT_EQ(RefusalOf("rank-0", MakeHello({0}, 1, kSession, AgentMode::kRecover)).code,
            ErrorCode::kBadMessage);
  // A serve agent (session 0: attach to any) is welcome.
  EXPECT_NE(AdmittedOf("rank-0", MakeHello({0}, 1, 0, AgentMode::kServe)).agent, nullptr);
}

TEST_F(AgentRegistryTest, AFailedRankIsNeverReadmitted) {
  AgentState* agent = AdmittedOf("rank-2", MakeHello({2}, 20, kSession)).agent;
  ASSERT_NE(agent, nullptr);
  EXPECT_TRUE(registry_->MarkDead(*agent, "killed"));
  EXPECT_FALSE(registry_->MarkDead(*agent, "again")) << "dead once";
  auto back = RefusalOf("rank-2", MakeHello({2}, 21, kSession));
  EXPECT_EQ(back.code, ErrorCode::kDuplicateRank);
  EXPECT_NE(back.message.find("not re-admitted"), std::string::npos);
}

TEST_F(AgentRegistryTest, HeartbeatsPingAndSilenceIsNoticedOnTheFakeClock) {
  FakeAgent peer(context_, endpoint_, "rank-3", kSession);
  peer.Send(3, MakeHello({3}, 30, kSession));  // makes the identity routable
  auto hello = [&] {
    for (int i = 0; i < 500; ++i) {
      auto r = router_.Receive(10);
      if (r.ok() && r->frame) return true;
    }
    return false;
  }();
  ASSERT_TRUE(hello);
  AgentState* agent = AdmittedOf("rank-3", MakeHello({3}, 30, kSession)).agent;
  ASSERT_NE(agent, nullptr);
  const uint64_t s = 1000000000;
  clock_.AdvanceNs(s / 2);
  EXPECT_TRUE(registry_->Tick(s / 5, 10 * s).empty());
  auto ping = peer.Expect<protocol::Heartbeat>();
  ASSERT_TRUE(ping.has_value()) << "a ping after the interval";
  EXPECT_TRUE(ping->want_reply);
  // The reply's round trip (2 ms) bounds the offset: agent clock = coordinator + 5 s.
  clock_.AdvanceNs(2000000);
  registry_->OnHeartbeat(*agent, protocol::Heartbeat{ping->sender_clock_ns + 1000000 + 5 * s,
                                                     ping->sender_clock_ns, false});
  EXPECT_EQ(agent->best_rtt_ns, 2000000u);
  EXPECT_EQ(agent->clock_offset_ns, static_cast<int64_t>(5 * s));
  clock_.AdvanceNs(11 * s);
  auto silent = registry_->Tick(s / 5, 10 * s);
  ASSERT_EQ(silent.size(), 1u);
  EXPECT_EQ(silent[0], agent);
}

TEST_F(AgentRegistryTest, AnAgentBusyBothWaysIsPingedOnlyEveryFewIntervals) {
  FakeAgent peer(context_, endpoint_, "rank-1", kSession);
  peer.Send(1, MakeHello({1}, 10, kSession));
  for (int i = 0; i < 500; ++i) {
    auto r = router_.Receive(10);
    if (r.ok() && r->frame) break;
  }
  AgentState* agent = AdmittedOf("rank-1", MakeHello({1}, 10, kSession)).agent;
  ASSERT_NE(agent, nullptr);
  const uint64_t interval = 200000000;  // 0.2 s
  const uint64_t timeout = 10 * interval * AgentRegistry::kPingEveryBusyIntervals;
  clock_.AdvanceNs(interval);
  EXPECT_TRUE(registry_->Tick(interval, timeout).empty());
  ASSERT_TRUE(peer.Expect<protocol::Heartbeat>().has_value()) << "the first ping";
  // A dispatch each way every interval after it: no ping until
  // kPingEveryBusyIntervals intervals passed since the last one.
  int pings = 0;
  for (uint64_t i = 1; i <= AgentRegistry::kPingEveryBusyIntervals; ++i) {
    clock_.AdvanceNs(interval / 2);
    ASSERT_TRUE(registry_->Send(*agent, 1, protocol::Cancel{1, static_cast<uint32_t>(i), "x"}));
    agent->last_rx_ns = clock_.NowNs();
    clock_.AdvanceNs(interval / 2);
    EXPECT_TRUE(registry_->Tick(interval, timeout).empty());
    for (;;) {
      auto m = peer.Receive(i == AgentRegistry::kPingEveryBusyIntervals ? 2000 : 100);
      if (!m) break;
      if (std::holds_alternative<protocol::Heartbeat>(m->body)) {
        ++pings;
        EXPECT_EQ(i, AgentRegistry::kPingEveryBusyIntervals) << "a ping while busy both ways";
        break;
      }
    }
  }
  EXPECT_EQ(pings, 1) << "one ping after kPingEveryBusyIntervals busy intervals";
  // Busy one way only (nothing received): pinged every interval again.
  clock_.AdvanceNs(interval / 2);
  ASSERT_TRUE(registry_->Send(*agent, 1, protocol::Cancel{1, 99, "x"}));
  clock_.AdvanceNs(interval / 2);
  EXPECT_TRUE(registry_->Tick(interval, timeout).empty());
  EXPECT_TRUE(peer.Expect<protocol::Heartbeat>().has_value()) << "nothing came back: a ping";
}

TEST_F(AgentRegistryTest, ARefusedPeerIsToldWhy) {
  FakeAgent peer(context_, endpoint_, "rank-9", kSession);
  peer.Send(9, MakeHello({9}, 90, kSession));
  for (int i = 0; i < 500; ++i) {
    auto r = router_.Receive(10);
    if (r.ok() && r->frame) break;
  }
  auto refusal = RefusalOf("rank-9", MakeHello({9}, 90, kSession));
  registry_->Refuse("rank-9", refusal);
  auto error = peer.Expect<protocol::Error>();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code, ErrorCode::kUnknownRank);
}

}  // namespace
}  // namespace dfx::coordinator
