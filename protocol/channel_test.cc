#include "protocol/channel.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "protocol/codec.h"

namespace dfx::protocol {
namespace {

Result<Polled> ReceiveWithin(RouterChannel& router, int ms) {
  for (int waited = 0; waited < ms; waited += 50) {
    auto r = router.Receive(50);
    if (!r.ok() || r->frame) return r;
  }
  return Polled{};
}

// The local bulk path's socket (local_peers_only): an ipc:// ROUTER in a
// private directory under /tmp (short: ipc paths are bounded), removed
// with it.
struct LocalRouter {
  LocalRouter() : dir(PrivateDir()), router(BindIn(context, dir)) {}
  ~LocalRouter() {
    if (router.ok()) router->Close();
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
  static std::string PrivateDir() {
    char dir[] = "/tmp/dfx-chan-test-XXXXXX";
    return ::mkdtemp(dir) != nullptr ? dir : "";
  }
  static Result<RouterChannel> BindIn(Context& context, const std::string& dir) {
    if (dir.empty()) return Internal(std::string("mkdtemp failed: ") + std::strerror(errno));
    SocketOptions o;
    o.local_peers_only = true;
    return RouterChannel::Bind(context, "ipc://" + dir + "/s", o);
  }
  std::string dir;
  Context context;
  Result<RouterChannel> router;
};

// `Exchange`s a frame from a PLAIN dealer with `user`/`token` over a LocalRouter.
class LocalPeersTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(local_.router.ok()) << local_.router.status().ToString(); }
  RouterChannel& router() { return *local_.router; }
  // What the router got from a dealer presenting user/token (nullopt: nothing
  // within `ms`), and how many handshakes it refused meanwhile.
  std::optional<Frame> Exchange(const std::string& user, const std::string& token, int ms,
                                HandshakeRefusals* refused) {
    SocketOptions o;
    o.plain_client = std::make_pair(user, token);
    o.linger_ms = 0;
    auto dealer = DealerChannel::Connect(local_.context, router().endpoint(), user, o);
    EXPECT_TRUE(dealer.ok());
    EXPECT_TRUE(dealer->SendRaw("hello").ok());
    auto got = ReceiveWithin(router(), ms);
    *refused = router().TakeRefusals();
    return got.ok() ? got->frame : std::nullopt;
  }
  LocalRouter local_;
};

TEST_F(LocalPeersTest, AdmitsTheOfferedTokenFromItsPidAsItsUser) {
  router().AdmitLocalPeer("rank-0.1", "secret-token", static_cast<uint32_t>(::getpid()));
  HandshakeRefusals refused;
  auto frame = Exchange("rank-0.1", "secret-token", 10000, &refused);
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ(frame->bytes.view(), "hello");
  EXPECT_EQ(frame->user_id, "rank-0.1");
  EXPECT_EQ(frame->identity, "rank-0.1");
}

TEST_F(LocalPeersTest, RefusesAWrongTokenAnUnknownUserAndAnotherPid) {
  router().AdmitLocalPeer("rank-0.1", "secret-token", static_cast<uint32_t>(::getpid()));
  router().AdmitLocalPeer("rank-1.1", "other-token", static_cast<uint32_t>(::getpid()) + 1);
  struct Case {
    std::string user, token, why;
  };
  for (const Case& c :
       {Case{"rank-0.1", "secret-tokeX", "wrong token"}, Case{"rank-0.1", "secret", "wrong token"},
        Case{"rank-9.1", "secret-token", "no token this coordinator offered"},
        Case{"rank-1.1", "other-token", "the token of pid"}}) {
    HandshakeRefusals refused;
    auto frame = Exchange(c.user, c.token, 1500, &refused);
    EXPECT_FALSE(frame.has_value()) << c.user << " / " << c.token << " was admitted";
    EXPECT_GE(refused.count, 1u) << c.user;
    EXPECT_NE(refused.last.find(c.why), std::string::npos) << refused.last;
  }
}

// A process of another uid reaching the socket (here the directory is
// opened up on purpose) is refused by its kernel credentials, token or not.
// The peer is forked before this process starts any thread: a child forked
// from a process with ZeroMQ's threads running can deadlock on a lock one
// of them held at the fork (this test once hung in CI until its timeout),
// so it waits for the endpoint on a pipe instead.
TEST(LocalPeersUidTest, RefusesAnotherUidEvenWithTheToken) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a peer as another uid";
  int endpoint_pipe[2];
  ASSERT_EQ(::pipe(endpoint_pipe), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(endpoint_pipe[1]);
    std::string endpoint;
    char buf[256];
    ssize_t n;
    while ((n = ::read(endpoint_pipe[0], buf, sizeof buf)) > 0) endpoint.append(buf, n);
    if (endpoint.empty()) ::_exit(5);  // the parent gave up before binding
    // As nobody: a fresh context, send, wait a little, leave.
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    {
      Context context;
      SocketOptions o;
      o.plain_client = std::make_pair(std::string("rank-0.1"), std::string("secret-token"));
      o.linger_ms = 0;
      auto dealer = DealerChannel::Connect(context, endpoint, "rank-0.1", o);
      if (!dealer.ok()) ::_exit(4);
      (void)dealer->SendRaw("hello");
      (void)dealer->Receive(1500);
    }
    ::_exit(0);
  }
  ::close(endpoint_pipe[0]);
  // Ends the child however this test ends (it is ours: not reaped yet).
  struct Peer {
    pid_t pid;
    int pipe_fd;
    ~Peer() {
      if (pipe_fd >= 0) ::close(pipe_fd);
      if (pid > 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
  } peer{child, endpoint_pipe[1]};
  LocalRouter local;
  auto& router = local.router;
  ASSERT_TRUE(router.ok()) << router.status().ToString();
  std::filesystem::permissions(local.dir, std::filesystem::perms::all);
  std::filesystem::permissions(local.dir + "/s", std::filesystem::perms::all);
  router->AdmitLocalPeer("rank-0.1", "secret-token", 0);  // any pid
  const std::string endpoint = router->endpoint();
  ASSERT_EQ(::write(peer.pipe_fd, endpoint.data(), endpoint.size()),
            static_cast<ssize_t>(endpoint.size()));
  ::close(peer.pipe_fd);
  peer.pipe_fd = -1;
  auto got = ReceiveWithin(*router, 2000);
  // The peer leaves after 1.5 s; 30 s is a hang.
  int status = 0;
  pid_t reaped = 0;
  for (int waited_ms = 0; waited_ms < 30000 && reaped == 0; waited_ms += 10) {
    reaped = ::waitpid(child, &status, WNOHANG);
    if (reaped == 0) ::usleep(10000);
  }
  ASSERT_EQ(reaped, child) << "the peer of uid 65534 did not exit within 30 s";
  peer.pid = -1;
  ASSERT_TRUE(WIFEXITED(status)) << status;
  ASSERT_EQ(WEXITSTATUS(status), 0);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->frame.has_value()) << "a peer of uid 65534 was admitted";
  auto refused = router->TakeRefusals();
  EXPECT_GE(refused.count, 1u);
  EXPECT_NE(refused.last.find("uid 65534"), std::string::npos) << refused.last;
}

TEST(ChannelTest, DealerAndRouterExchangeMessages) {
  Context context;
  auto router = RouterChannel::Bind(context, "tcp://127.0.0.1:0");
  ASSERT_TRUE(router.ok()) << router.status().ToString();
  EXPECT_NE(router->endpoint().find("tcp://127.0.0.1:"), std::string::npos);
  EXPECT_EQ(router->endpoint().find(":0"), std::string::npos) << "ephemeral port not resolved";

  auto dealer = DealerChannel::Connect(context, router->endpoint(), AgentIdentity(7, 1));
  ASSERT_TRUE(dealer.ok());
  Message hello{Header{kProtocolVersion, 0, 7, 1}, Hello{{7}, 1, kProtocolVersion, 0, "h", 1}};
  auto sent = dealer->Send(hello);
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(*sent, SendResult::kSent);

  auto got = ReceiveWithin(*router, 10000);
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->frame.has_value()) << "no frame within the deadline";
  EXPECT_EQ(got->frame->identity, "rank-7.00000001");
  auto decoded = Decode(got->frame->bytes);
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(std::holds_alternative<Hello>(decoded->body));

  auto reply =
      router->Send(got->frame->identity, Message{Header{kProtocolVersion, 5, 7, 1}, Credit{4}});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(*reply, SendResult::kSent);
  std::optional<Frame> back;
  for (int i = 0; i < 200 && !back; ++i) {
    auto r = dealer->Receive(50);
    ASSERT_TRUE(r.ok());
    back = r->frame;
  }
  ASSERT_TRUE(back.has_value());
  auto credit = Decode(back->bytes);
  ASSERT_TRUE(credit.ok());
  EXPECT_EQ(std::get<Credit>(credit->body).chunks, 4u);
}

// The gather's zero-copy path: a full-size chunk sent without a copy
// arrives word-aligned inside its ZeroMQ message, so the receiver decodes it
// in place (DecodeChunkView) and the data is never copied.
TEST(ChannelTest, LargeChunksArriveDecodableInPlace) {
  Context context;
  auto router = RouterChannel::Bind(context, "tcp://127.0.0.1:0");
  ASSERT_TRUE(router.ok());
  auto dealer = DealerChannel::Connect(context, router->endpoint(), AgentIdentity(1, 2));
  ASSERT_TRUE(dealer.ok());
  const std::string payload(kDefaultChunkBytes, 'q');
  auto frame = EncodeChunk(Header{kProtocolVersion, 5, 1, 1}, 3, 0, payload.size(),
                           [&](char* dst, size_t size) -> Result<size_t> {
                             std::memcpy(dst, payload.data(), size);
                             return size;
                           });
  ASSERT_TRUE(frame.ok());
  auto sent = dealer->SendEncoded(std::move(*frame));
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(*sent, SendResult::kSent);
  auto got = ReceiveWithin(*router, 10000);
  ASSERT_TRUE(got.ok() && got->frame.has_value());
  FrameBytes bytes = got->frame->bytes;  // a copy shares the message
  auto view = DecodeChunkView(bytes);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  ASSERT_TRUE(view->has_value()) << "the frame is not word-aligned: the zero-copy path is lost";
  EXPECT_EQ((*view)->transfer_id, 3u);
  EXPECT_EQ((*view)->data, payload);
  EXPECT_GE((*view)->data.data(), bytes.data());
  EXPECT_LT((*view)->data.data(), bytes.data() + bytes.size());
}

TEST(ChannelTest, SendingToAnUnknownPeerIsAValueNotAnError) {
  Context context;
  auto router = RouterChannel::Bind(context, "tcp://127.0.0.1:0");
  ASSERT_TRUE(router.ok());
  auto r = router->SendRaw("nobody", "xxxxxxxx");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, SendResult::kUnroutable);
}

TEST(ChannelTest, WakePipeInterruptsAWait) {
  Context context;
  auto router = RouterChannel::Bind(context, "tcp://127.0.0.1:0");
  ASSERT_TRUE(router.ok());
  WakePipe wake;
  wake.Notify();
  auto r = router->Receive(10000, wake.read_fd());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->woken);
  EXPECT_FALSE(r->frame.has_value());
  wake.Drain();
}

TEST(ChannelTest, BindingABusyEndpointNamesIt) {
  Context context;
  auto first = RouterChannel::Bind(context, "tcp://127.0.0.1:0");
  ASSERT_TRUE(first.ok());
  auto second = RouterChannel::Bind(context, first->endpoint());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find(first->endpoint()), std::string::npos);
}

// A handled signal interrupts libzmq's mailbox check (poll, EINTR) before
// it queues anything: bind, connect, send and receive all go on as if it
// had not come (the agent handles SIGTERM and SIGINT; a signal during a
// send once failed it: "zmq send failed: Interrupted system call"). Here a
// second thread signals this one without pause while it binds, connects
// and exchanges messages both ways; nothing may fail and nothing be lost.
void NoteSignal(int) {}

TEST(ChannelTest, HandledSignalsInterruptNothing) {
  struct sigaction action {};
  action.sa_handler = NoteSignal;  // no SA_RESTART: poll returns EINTR
  struct sigaction old {};
  ASSERT_EQ(::sigaction(SIGUSR1, &action, &old), 0);
  const pthread_t self = ::pthread_self();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> signals{0};
  std::thread storm([&] {
    while (!stop.load()) {
      ::pthread_kill(self, SIGUSR1);
      signals.fetch_add(1);
    }
  });
  constexpr int kRounds = 40;
  int binds = 0, exchanged = 0;
  std::string failure;
  // A send that must go out, and a frame that must arrive: waited for by
  // the clock, since under the signals a wait returns early (EINTR), as an
  // event loop's does, and is simply made again.
  auto sent = [&](const Result<SendResult>& r, const char* who) {
    if (r.ok() && *r == SendResult::kSent) return true;
    failure = std::string(who) + " send: " + (r.ok() ? "not sent" : r.status().ToString());
    return false;
  };
  auto arrived = [&](auto& channel, const char* who) -> std::optional<Frame> {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      auto r = channel.Receive(25);
      if (!r.ok()) {
        failure = std::string(who) + " receive: " + r.status().ToString();
        return std::nullopt;
      }
      if (r->frame) return r->frame;
    }
    failure = std::string("nothing reached the ") + who;
    return std::nullopt;
  };
  for (int round = 0; round < kRounds && failure.empty(); ++round) {
    Context context;
    auto router = RouterChannel::Bind(context, "tcp://127.0.0.1:0");
    if (!router.ok()) {
      failure = "bind: " + router.status().ToString();
      break;
    }
    ++binds;
    auto dealer = DealerChannel::Connect(context, router->endpoint(), AgentIdentity(round, 1));
    if (!dealer.ok()) {
      failure = "connect: " + dealer.status().ToString();
      break;
    }
    for (int i = 0; i < 20 && failure.empty(); ++i) {
      if (!sent(dealer->SendRaw("ping"), "dealer")) break;
      std::optional<Frame> ping = arrived(*router, "router");
      if (!ping || !sent(router->SendRaw(ping->identity, "pong"), "router")) break;
      if (!arrived(*dealer, "dealer")) break;
      ++exchanged;
    }
  }
  stop = true;
  storm.join();
  ::sigaction(SIGUSR1, &old, nullptr);
  EXPECT_EQ(failure, "") << "after " << binds << " bind(s), " << exchanged << " exchange(s) and "
                         << signals.load() << " signal(s)";
  EXPECT_EQ(exchanged, kRounds * 20);
  EXPECT_GT(signals.load(), 1000u);
}

}  // namespace
}  // namespace dfx::protocol
