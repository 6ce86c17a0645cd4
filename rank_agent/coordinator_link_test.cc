#include "rank_agent/coordinator_link.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "protocol/codec.h"
#include "protocol/curve.h"

namespace dfx::rank_agent {
namespace {

using namespace dfx::protocol;

constexpr uint64_t kMs = 1000000;
constexpr uint64_t kStart = 1000 * kMs * 1000;  // the fake clock starts at 1000 s
constexpr uint64_t kSession = 0x5e55;

// The coordinator's side of the link on an inproc ROUTER: what the link
// sent, and messages to it.
class Peer {
 public:
  explicit Peer(Context& context, const std::string& name)
      : endpoint_("inproc://link-test-" + name + "-" + std::to_string(::getpid())),
        router_(RouterChannel::Bind(context, endpoint_)) {}
  const std::string& endpoint() const { return endpoint_; }
  std::optional<Message> Next() {
    for (int i = 0; i < 100; ++i) {
      auto r = router_->Receive(50);
      if (r.ok() && r->frame) {
        id_ = r->frame->identity;
        auto m = Decode(r->frame->bytes);
        if (m.ok()) return *m;
      }
    }
    return std::nullopt;
  }
  // A frame as the link receives it, in `session`.
  Frame FrameOf(Body body, uint64_t session = kSession) {
    Frame frame;
    auto bytes = Encode(Message{Header{kProtocolVersion, session, 0, ++seq_}, body});
    frame.bytes = FrameBytes(bytes.ok() ? *bytes : std::string());
    return frame;
  }

 private:
  std::string endpoint_;
  Result<RouterChannel> router_;
  std::string id_;
  uint64_t seq_ = 0;
};

struct LinkBench {
  explicit LinkBench(const std::string& name, AgentMode mode = AgentMode::kOneShot)
      : clock(kStart), peer(context, name) {
    options.coordinator = peer.endpoint();
    options.session_id = mode == AgentMode::kServe ? 0 : kSession;
    options.mode = mode;
    options.spool_root = "/nonexistent-spool";
    options.timeouts.heartbeat_interval = std::chrono::milliseconds(200);
    options.timeouts.heartbeat_timeout = std::chrono::seconds(2);
    options.refused_backoff_min_ms = 1000;
    options.refused_backoff_max_ms = 3000;
    options.clock = &clock;
  }
  // Connects, says HELLO and has the peer receive it.
  bool Start(CoordinatorLink& link) {
    if (!link.Connect("agent-" + std::to_string(::getpid()), {3, 4}).ok()) return false;
    link.SendHello();
    auto hello = peer.Next();
    return hello && std::holds_alternative<Hello>(hello->body);
  }

  Context context;
  FakeClock clock;
  Peer peer;
  AgentOptions options;
};

TEST(CoordinatorLinkTest, HelloNamesTheRanksAndTheFirstAnswerAttaches) {
  LinkBench bench("hello");
  CoordinatorLink link(bench.context, bench.options);
  ASSERT_TRUE(link.Connect("agent-hello", {3, 4}).ok());
  link.SendHello();
  auto hello = bench.peer.Next();
  ASSERT_TRUE(hello);
  const auto& h = std::get<Hello>(hello->body);
  EXPECT_EQ(h.ranks, (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(h.chips, 2u);
  EXPECT_EQ(h.session_id, kSession);
  EXPECT_EQ(h.agent_clock_ns, kStart);
  EXPECT_EQ(hello->header.rank, 3);

  EXPECT_FALSE(link.attached());
  auto first = link.Admit(bench.peer.FrameOf(Heartbeat{1, 0, false}));
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->attached_now);
  ASSERT_TRUE(first->message);
  EXPECT_TRUE(link.attached());
  auto second = link.Admit(bench.peer.FrameOf(Heartbeat{2, 0, false}));
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->attached_now);
}

TEST(CoordinatorLinkTest, AMessageOfAnotherSessionIsIgnored) {
  LinkBench bench("session");
  CoordinatorLink link(bench.context, bench.options);
  ASSERT_TRUE(bench.Start(link));
  auto admitted = link.Admit(bench.peer.FrameOf(Heartbeat{1, 0, false}, kSession + 1));
  ASSERT_TRUE(admitted.ok());
  EXPECT_FALSE(admitted->message);
  EXPECT_FALSE(link.attached());
}

TEST(CoordinatorLinkTest, HeartbeatGoesOnlyAfterAnIntervalWithNothingSent) {
  LinkBench bench("heartbeat");
  CoordinatorLink link(bench.context, bench.options);
  ASSERT_TRUE(bench.Start(link));  // HELLO at kStart
  ASSERT_TRUE(link.Admit(bench.peer.FrameOf(Heartbeat{1, 0, false})).ok());
  bool lost = false;
  bench.clock.SetNs(kStart + 199 * kMs);
  ASSERT_TRUE(link.Tick(bench.clock.NowNs(), &lost).ok());  // too early: nothing
  bench.clock.SetNs(kStart + 200 * kMs);
  ASSERT_TRUE(link.Tick(bench.clock.NowNs(), &lost).ok());
  auto beat = bench.peer.Next();
  ASSERT_TRUE(beat);
  ASSERT_TRUE(std::holds_alternative<Heartbeat>(beat->body));
  // The first heartbeat is the one of the due tick, not of the early one.
  EXPECT_EQ(std::get<Heartbeat>(beat->body).sender_clock_ns, kStart + 200 * kMs);

  // A reply to a ping counts as a sign of life: the next heartbeat waits a
  // full interval after it.
  bench.clock.SetNs(kStart + 300 * kMs);
  link.OnHeartbeat(Heartbeat{7, 42, true});
  auto reply = bench.peer.Next();
  ASSERT_TRUE(reply);
  EXPECT_EQ(std::get<Heartbeat>(reply->body).echo_clock_ns, 7u) << "echoes the ping's clock";
  bench.clock.SetNs(kStart + 499 * kMs);
  ASSERT_TRUE(link.Tick(bench.clock.NowNs(), &lost).ok());
  bench.clock.SetNs(kStart + 500 * kMs);
  ASSERT_TRUE(link.Tick(bench.clock.NowNs(), &lost).ok());
  auto next = bench.peer.Next();
  ASSERT_TRUE(next);
  EXPECT_EQ(std::get<Heartbeat>(next->body).sender_clock_ns, kStart + 500 * kMs);
  EXPECT_FALSE(lost);
}

TEST(CoordinatorLinkTest, ASilentCoordinatorEndsAOneShotLink) {
  LinkBench bench("silence");
  CoordinatorLink link(bench.context, bench.options);
  ASSERT_TRUE(bench.Start(link));
  ASSERT_TRUE(link.Admit(bench.peer.FrameOf(Heartbeat{1, 0, false})).ok());  // at kStart
  bool lost = false;
  bench.clock.SetNs(kStart + 2000 * kMs);
  EXPECT_TRUE(link.Tick(bench.clock.NowNs(), &lost).ok());  // exactly the timeout: still alive
  bench.clock.SetNs(kStart + 2001 * kMs);
  Status s = link.Tick(bench.clock.NowNs(), &lost);
  EXPECT_EQ(s.code(), Code::kUnavailable);
  EXPECT_NE(s.message().find("--heartbeat-timeout"), std::string::npos) << s.message();
}

TEST(CoordinatorLinkTest, ASilentCoordinatorEndsOnlyTheSessionOfAServeLink) {
  LinkBench bench("serve-silence", AgentMode::kServe);
  CoordinatorLink link(bench.context, bench.options);
  ASSERT_TRUE(bench.Start(link));
  ASSERT_TRUE(link.Admit(bench.peer.FrameOf(Heartbeat{1, 0, false})).ok());
  EXPECT_EQ(link.session(), kSession) << "a serve link adopts the coordinator's session";
  bool lost = false;
  bench.clock.SetNs(kStart + 2001 * kMs);
  EXPECT_TRUE(link.Tick(bench.clock.NowNs(), &lost).ok());
  EXPECT_TRUE(lost);
  link.EndSession();
  EXPECT_FALSE(link.attached());
  EXPECT_EQ(link.session(), 0u);
}

TEST(CoordinatorLinkTest, ARefusalEndsAOneShotLink) {
  LinkBench bench("refused");
  CoordinatorLink link(bench.context, bench.options);
  ASSERT_TRUE(bench.Start(link));
  auto admitted = link.Admit(bench.peer.FrameOf(Error{ErrorCode::kUnknownRank, "no such rank"}));
  ASSERT_FALSE(admitted.ok());
  EXPECT_NE(admitted.status().message().find("3,4"), std::string::npos)
      << "the advice names the agent's ranks: " << admitted.status().message();
}

// The serve link's HELLO after the n-th refusal in a row.
uint64_t HelloAfterRefusal(LinkBench& bench, CoordinatorLink& link, uint64_t backoff_ms) {
  auto admitted = link.Admit(bench.peer.FrameOf(Error{ErrorCode::kDuplicateRank, "taken"}));
  EXPECT_TRUE(admitted.ok());
  EXPECT_TRUE(admitted.ok() && admitted->refused);
  link.EndSession();
  if (admitted.ok()) link.BackOff(admitted->refusal);
  const uint64_t refused_at = bench.clock.NowNs();
  bool lost = false;
  bench.clock.SetNs(refused_at + (backoff_ms - 1) * kMs);
  EXPECT_TRUE(link.Tick(bench.clock.NowNs(), &lost).ok());  // still backing off
  bench.clock.SetNs(refused_at + backoff_ms * kMs);
  EXPECT_TRUE(link.Tick(bench.clock.NowNs(), &lost).ok());
  auto hello = bench.peer.Next();
  if (!hello || !std::holds_alternative<Hello>(hello->body)) return 0;
  return std::get<Hello>(hello->body).agent_clock_ns - refused_at;
}

TEST(CoordinatorLinkTest, ARefusedServeLinkSaysHelloAgainAfterABackoffThatDoubles) {
  LinkBench bench("backoff", AgentMode::kServe);
  CoordinatorLink link(bench.context, bench.options);
  ASSERT_TRUE(bench.Start(link));
  EXPECT_EQ(HelloAfterRefusal(bench, link, 1000), 1000 * kMs);
  EXPECT_EQ(HelloAfterRefusal(bench, link, 2000), 2000 * kMs);
  EXPECT_EQ(HelloAfterRefusal(bench, link, 3000), 3000 * kMs) << "capped at the maximum";
  // A coordinator that answers resets the backoff.
  ASSERT_TRUE(link.Admit(bench.peer.FrameOf(Heartbeat{1, 0, false})).ok());
  EXPECT_EQ(HelloAfterRefusal(bench, link, 1000), 1000 * kMs);
}

// What the README promises with the agent's own defaults: 1 s doubling to 30 s.
TEST(CoordinatorLinkTest, TheDefaultBackoffIsOneSecondDoublingToThirty) {
  LinkBench bench("default-backoff", AgentMode::kServe);
  bench.options.refused_backoff_min_ms = AgentOptions{}.refused_backoff_min_ms;
  bench.options.refused_backoff_max_ms = AgentOptions{}.refused_backoff_max_ms;
  CoordinatorLink link(bench.context, bench.options);
  ASSERT_TRUE(bench.Start(link));
  for (uint64_t ms : {1000, 2000, 4000, 8000, 16000, 30000, 30000}) {
    EXPECT_EQ(HelloAfterRefusal(bench, link, ms), ms * kMs);
  }
}

// A serve link turned away at the CURVE handshake (its key is not admitted:
// ZeroMQ itself would never try again) closes its socket, and connects
// again only after the backoff, which doubles with each refusal.
// A serve link refused at the CURVE handshake closes its socket, and
// connects again only after the backoff, which doubles with each refusal:
// its key not admitted (a ZAP denial, after which ZeroMQ itself would never
// try again), or a peer that is not the coordinator whose key it pins
// (which ZeroMQ would retry every 100 ms).
void RefusedAtTheHandshakeConnectsAgainAfterTheBackoff(bool pin_wrong_key) {
  Context context;
  auto server_pair = GenerateCurveKeyPair();
  auto admitted = GenerateCurveKeyPair();
  auto stranger = GenerateCurveKeyPair();
  auto other_server = GenerateCurveKeyPair();
  ASSERT_TRUE(server_pair.ok() && admitted.ok() && stranger.ok() && other_server.ok());
  SocketOptions server;
  server.curve_server = CurveServer{*server_pair, {admitted->public_key}};
  auto router = RouterChannel::Bind(context, "tcp://127.0.0.1:0", server);
  ASSERT_TRUE(router.ok()) << router.status().ToString();
  FakeClock clock(kStart);
  AgentOptions options;
  options.coordinator = router->endpoint();
  options.mode = AgentMode::kServe;
  options.spool_root = "/nonexistent-spool";
  options.curve = pin_wrong_key ? CurveClient{*admitted, other_server->public_key}
                                : CurveClient{*stranger, server_pair->public_key};
  options.clock = &clock;
  CoordinatorLink link(context, options);
  ASSERT_TRUE(link.Connect("agent-refused", {0}).ok());
  link.SendHello();
  // Refused, as seen by the socket monitor (real time, bounded).
  auto refused = [&] {
    for (int i = 0; i < 800 && link.connected(); ++i) {
      (void)router->Receive(10);
      link.NoteHandshakeFailures(clock.NowNs());
    }
    return !link.connected();
  };
  bool lost = false;
  for (uint64_t backoff_ms : {1000, 2000, 4000}) {
    ASSERT_TRUE(refused()) << "refusal before a backoff of " << backoff_ms << " ms";
    const uint64_t at = clock.NowNs();
    clock.SetNs(at + (backoff_ms - 1) * kMs);
    ASSERT_TRUE(link.Tick(clock.NowNs(), &lost).ok());
    EXPECT_FALSE(link.connected()) << "still backing off";
    clock.SetNs(at + backoff_ms * kMs);
    ASSERT_TRUE(link.Tick(clock.NowNs(), &lost).ok());
    EXPECT_TRUE(link.connected()) << "connects again after " << backoff_ms << " ms";
  }
  // Connected again, and no answer (nor any event) within 3 s: refused again.
  clock.SetNs(clock.NowNs() + 3001 * kMs);
  ASSERT_TRUE(link.Tick(clock.NowNs(), &lost).ok());
  EXPECT_FALSE(link.connected()) << "silence after connecting again counts as a refusal";
}

TEST(CoordinatorLinkTest, AServeLinkWhoseKeyIsNotAdmittedConnectsAgainAfterTheBackoff) {
  RefusedAtTheHandshakeConnectsAgainAfterTheBackoff(/*pin_wrong_key=*/false);
}

TEST(CoordinatorLinkTest, AServeLinkPinningAnotherKeyConnectsAgainAfterTheBackoff) {
  RefusedAtTheHandshakeConnectsAgainAfterTheBackoff(/*pin_wrong_key=*/true);
}

TEST(CoordinatorLinkTest, IdleWaitLastsUntilTheNextHeartbeatWhenAttachedAndIdle) {
  LinkBench bench("idle");
  CoordinatorLink link(bench.context, bench.options);
  ASSERT_TRUE(bench.Start(link));
  EXPECT_EQ(link.IdleWaitMs(kStart, false), 50) << "not attached: polls";
  ASSERT_TRUE(link.Admit(bench.peer.FrameOf(Heartbeat{1, 0, false})).ok());
  EXPECT_EQ(link.IdleWaitMs(kStart + 20 * kMs, false), 180);
  EXPECT_EQ(link.IdleWaitMs(kStart + 20 * kMs, true), 50) << "busy: polls";
}

}  // namespace
}  // namespace dfx::rank_agent
