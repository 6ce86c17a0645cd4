#include "protocol/curve.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <thread>

#include "common/file_util.h"
#include "protocol/channel.h"
#include "protocol/codec.h"

namespace dfx::protocol {
namespace {

namespace fs = std::filesystem;

fs::path TempDir() {
  fs::path dir =
      fs::temp_directory_path() / ("dfx_curve_test_" + std::to_string(::getpid()) + "_" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

CurveKeyPair Pair() {
  auto p = GenerateCurveKeyPair();
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *p;
}

TEST(CurveKeys, KeyFilesRoundTripAndSecretsMustBePrivate) {
  ASSERT_TRUE(CurveAvailable()) << "Debian's libzmq has CURVE";
  const fs::path dir = TempDir();
  const CurveKeyPair pair = Pair();
  EXPECT_TRUE(IsCurveKey(pair.public_key));
  ASSERT_TRUE(WriteKeyPairFile(dir / "a.key", pair).ok());
  ASSERT_TRUE(WritePublicKeyFile(dir / "a.pub", pair.public_key).ok());
  struct stat st {};
  ASSERT_EQ(::stat((dir / "a.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto read = ReadKeyPairFile(dir / "a.key");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, pair);
  EXPECT_EQ(*ReadPublicKeyFile(dir / "a.pub"), pair.public_key);
  EXPECT_EQ(*ReadPublicKeyFile(dir / "a.key"), pair.public_key) << "a .key holds its public half";

  ::chmod((dir / "a.key").c_str(), 0640);
  auto readable = ReadKeyPairFile(dir / "a.key");
  ASSERT_FALSE(readable.ok());
  EXPECT_NE(readable.status().message().find("chmod 600"), std::string::npos)
      << readable.status().message();

  ::chmod((dir / "a.key").c_str(), 0600);
  fs::create_symlink(dir / "a.key", dir / "link.key");
  auto link = ReadKeyPairFile(dir / "link.key");
  ASSERT_FALSE(link.ok());
  EXPECT_NE(link.status().message().find("symbolic link"), std::string::npos);

  // A pair whose halves do not belong together.
  ASSERT_TRUE(WriteKeyPairFile(dir / "mixed.key", {Pair().public_key, pair.secret_key}).ok());
  auto mixed = ReadKeyPairFile(dir / "mixed.key");
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("does not belong"), std::string::npos);

  ASSERT_TRUE(WriteFileAtomic(dir / "junk.pub", "public-key = short\n").ok());
  EXPECT_FALSE(ReadPublicKeyFile(dir / "junk.pub").ok());
  fs::remove_all(dir);
}

TEST(CurveKeys, ADirectoryOfPublicKeys) {
  const fs::path dir = TempDir();
  EXPECT_FALSE(ReadPublicKeys(dir).ok()) << "an empty directory admits nobody: an error";
  const CurveKeyPair a = Pair(), b = Pair();
  ASSERT_TRUE(WritePublicKeyFile(dir / "a.pub", a.public_key).ok());
  ASSERT_TRUE(WritePublicKeyFile(dir / "b.pub", b.public_key).ok());
  ASSERT_TRUE(WriteKeyPairFile(dir / "b.key", b).ok());  // not a .pub: not listed twice
  auto keys = ReadPublicKeys(dir);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(*keys, (std::vector<std::string>{a.public_key, b.public_key}));
  fs::remove_all(dir);
}

// Whoever may write to a key directory could admit a key of their own; a
// linked .pub could change under the coordinator: both refused by name.
TEST(CurveKeys, AKeyDirectoryOthersMayWriteToAndALinkedPubAreRefused) {
  const fs::path dir = TempDir();
  const CurveKeyPair a = Pair();
  ASSERT_TRUE(WritePublicKeyFile(dir / "a.pub", a.public_key).ok());
  ASSERT_TRUE(WriteKeyPairFile(dir / "a.key", a).ok());
  ASSERT_EQ(::chmod(dir.c_str(), 0757), 0);
  for (const Status& s : {ReadPublicKeys(dir).status(), ReadPublicKeys(dir / "a.pub").status(),
                          ReadKeyPairFile(dir / "a.key").status()}) {
    EXPECT_NE(s.message().find(dir.string() + ": mode 0757"), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("chmod go-w " + dir.string()), std::string::npos) << s.ToString();
  }
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  EXPECT_TRUE(ReadPublicKeys(dir).ok());
  fs::create_symlink(dir / "a.pub", dir / "b.pub");
  auto linked = ReadPublicKeys(dir);
  ASSERT_FALSE(linked.ok());
  EXPECT_NE(linked.status().message().find((dir / "b.pub").string() + ": is a symbolic link"),
            std::string::npos)
      << linked.status().ToString();
  fs::remove_all(dir);
}

TEST(CurveKeys, TheEnvironmentOfALaunchedAgentIsTakenOnce) {
  CurveClient client{Pair(), Pair().public_key};
  for (const std::string& kv : CurveClientEnvironment(client)) {
    const size_t eq = kv.find('=');
    ::setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
  }
  auto taken = TakeCurveClientFromEnvironment();
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  ASSERT_TRUE(taken->has_value());
  EXPECT_EQ(**taken, client);
  EXPECT_EQ(std::getenv(kEnvAgentSecretKey), nullptr) << "children do not inherit the secret";
  auto none = TakeCurveClientFromEnvironment();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  ::setenv(kEnvAgentSecretKey, "not a key", 1);
  EXPECT_FALSE(TakeCurveClientFromEnvironment().ok());
}

TEST(CurveKeys, LoopbackEndpoints) {
  for (const char* e : {"tcp://127.0.0.1:5555", "tcp://127.1.2.3:1", "tcp://localhost:9",
                        "tcp://[::1]:80", "ipc:///tmp/x", "inproc://y"}) {
    EXPECT_TRUE(IsLoopbackEndpoint(e)) << e;
  }
  for (const char* e :
       {"tcp://0.0.0.0:5555", "tcp://*:5555", "tcp://10.0.0.1:1", "tcp://host-a:5555",
        "tcp://127.0.0.1.evil.com:1", "tcp://[::]:80", "tcp://eth0:5555", "udp://127.0.0.1:1"}) {
    EXPECT_FALSE(IsLoopbackEndpoint(e)) << e;
  }
}

// A CURVE server admits exactly the client keys it was given; everyone else
// fails the handshake and never gets a message through, in either direction.
class CurveChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_keys_ = Pair();
    agent_keys_ = Pair();
    SocketOptions options;
    options.curve_server = CurveServer{server_keys_, {agent_keys_.public_key}};
    options.handshake_ms = 1000;
    auto router = RouterChannel::Bind(context_, "tcp://127.0.0.1:0", options);
    ASSERT_TRUE(router.ok()) << router.status().ToString();
    router_ = std::move(*router);
    EXPECT_TRUE(router_.authenticated());
  }

  // Connects a dealer with `curve` (or none), sends a Hello, and returns
  // whether the router received it within `ms`.
  bool Reaches(const std::optional<CurveClient>& curve, int ms, DealerChannel* keep = nullptr) {
    SocketOptions options;
    options.curve_client = curve;
    options.handshake_ms = 1000;
    options.linger_ms = 0;
    auto dealer = DealerChannel::Connect(context_, router_.endpoint(), "rank-0.1", options);
    EXPECT_TRUE(dealer.ok());
    EXPECT_TRUE(dealer->Send(Message{Header{}, Hello{{0}, 1}}).ok());
    bool reached = false;
    // By the clock: a wait a signal interrupts returns early.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!reached && std::chrono::steady_clock::now() < deadline) {
      auto r = router_.Receive(20);
      reached = r.ok() && r->frame.has_value();
      (void)dealer->Receive(0);  // lets the dealer's monitor events drain
    }
    if (keep != nullptr) *keep = std::move(*dealer);
    return reached;
  }

  Context context_;
  CurveKeyPair server_keys_, agent_keys_;
  RouterChannel router_;
};

TEST_F(CurveChannelTest, AnAdmittedKeyGetsThroughBothWays) {
  DealerChannel dealer;
  ASSERT_TRUE(Reaches(CurveClient{agent_keys_, server_keys_.public_key}, 10000, &dealer));
  EXPECT_EQ(router_.TakeRefusals().count, 0u);
}

TEST_F(CurveChannelTest, AnUnknownKeyIsRefusedByTheZapHandler) {
  DealerChannel dealer;
  EXPECT_FALSE(Reaches(CurveClient{Pair(), server_keys_.public_key}, 2000, &dealer));
  HandshakeRefusals server_side = router_.TakeRefusals();
  EXPECT_GT(server_side.count, 0u);
  EXPECT_NE(server_side.last.find("is not an admitted agent key"), std::string::npos)
      << server_side.last;
  HandshakeRefusals client_side = dealer.TakeRefusals();
  EXPECT_GT(client_side.count, 0u);
  EXPECT_NE(client_side.last.find("refused the credentials"), std::string::npos)
      << client_side.last;
}

TEST_F(CurveChannelTest, APlainPeerIsRefused) {
  DealerChannel dealer;
  EXPECT_FALSE(Reaches(std::nullopt, 2000, &dealer));
  EXPECT_GT(router_.TakeRefusals().count, 0u);
  EXPECT_NE(dealer.TakeRefusals().last.find("another security mechanism"), std::string::npos);
}

// The agent's side: an impostor coordinator (a server without the pinned
// key) never completes the handshake, so nothing it sends is read.
TEST_F(CurveChannelTest, AClientPinningAnotherServerKeyTalksToNobody) {
  DealerChannel dealer;
  EXPECT_FALSE(Reaches(CurveClient{agent_keys_, Pair().public_key}, 2000, &dealer));
  EXPECT_GT(dealer.TakeRefusals().count + router_.TakeRefusals().count, 0u);
}

// The ZAP handler answers every handshake from a thread of its own, which
// takes the process's signals like any thread the program made (libzmq's
// own threads block them). A signal there once ended that thread (EINTR out
// of its poll), and every later CURVE handshake went unanswered. Here the
// process is signalled without pause while agents connect one after
// another.
void IgnoreSignal(int) {}

TEST_F(CurveChannelTest, HandshakesAreAnsweredWhileTheProcessIsSignalled) {
  struct sigaction action {};
  action.sa_handler = IgnoreSignal;  // no SA_RESTART: a waiting poll returns EINTR
  struct sigaction old {};
  ASSERT_EQ(::sigaction(SIGUSR1, &action, &old), 0);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> signals{0};
  std::thread storm([&] {
    sigset_t mine;
    sigemptyset(&mine);
    sigaddset(&mine, SIGUSR1);
    ::pthread_sigmask(SIG_BLOCK, &mine, nullptr);  // the others take them
    while (!stop.load()) {
      ::kill(::getpid(), SIGUSR1);
      signals.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  });
  // Handshakes until thousands of signals went by (most go to this thread:
  // the kernel offers a process's signal to its main thread first).
  int reached = 0;
  bool answered = true;
  while (answered && reached < 1000 && (reached < 10 || signals.load() < 3000)) {
    DealerChannel dealer;
    answered = Reaches(CurveClient{agent_keys_, server_keys_.public_key}, 10000, &dealer);
    if (answered) ++reached;
  }
  stop = true;
  storm.join();
  ::sigaction(SIGUSR1, &old, nullptr);
  EXPECT_TRUE(answered) << "handshake " << reached + 1 << " went unanswered after "
                        << signals.load() << " signal(s)";
  EXPECT_GE(signals.load(), 1000u) << "after " << reached << " handshakes";
}

}  // namespace
}  // namespace dfx::protocol
