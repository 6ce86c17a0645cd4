// Refusals end to end (issue 46, case 7 and the key files of case 8): a
// serve agent turned away at the CURVE handshake keeps trying with a
// backoff, across runs, until a coordinator admits it; key directories that
// others may write to and linked public keys are refused by name.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <random>

#include "protocol/channel.h"
#include "protocol/curve.h"
#include "tests/l3/raw_client.h"

namespace dfx::e2e {
namespace {

using namespace dfx::protocol;

const fs::path kVector = Source("examples/vector_pipeline.json");
constexpr const char* kRefusedLine = "refused this agent at the CURVE handshake";

fs::path Keygen(const fs::path& dir, const std::vector<std::string>& agents) {
  std::vector<std::string> argv = {Bin("dfx-coordinator"), "keygen", (dir / "keys").string()};
  for (const auto& a : agents) argv.insert(argv.end(), {"--agent", a});
  auto r = RunCommand(argv, dir, 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return dir / "keys";
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// A free loopback port below the kernel's ephemeral range, so that no port-0
// bind of a test running beside this one takes it between two coordinators
// (as in security_e2e_test's ServeAgentsResetChipStateBetweenSessions).
std::string FreeFixedEndpoint(Context& context) {
  int ephemeral_low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low;
  std::mt19937 pick(std::random_device{}());
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int port = std::uniform_int_distribution<int>(std::max(1024, ephemeral_low - 10000),
                                                        std::max(1025, ephemeral_low) - 1)(pick);
    const std::string candidate = "tcp://127.0.0.1:" + std::to_string(port);
    if (RouterChannel::Bind(context, candidate).ok()) return candidate;
  }
  return "";
}

// A serve agent whose key the coordinator does not admit is refused by its
// ZAP handler; once the key is admitted and a new run listens on the same
// endpoint, the agent attaches by itself (ZeroMQ alone never retries after
// a ZAP denial).
TEST(RefusalTest, AServeAgentRefusedByZapAttachesOnceItsKeyIsAdmitted) {
  fs::path dir = TestDir("refusal_zap");
  const fs::path keys = Keygen(dir, {"host0", "late"});
  const fs::path late_pub = keys / "agents/late.pub";
  fs::rename(late_pub, dir / "late.pub");  // not admitted yet
  Context context;
  const std::string endpoint = FreeFixedEndpoint(context);
  ASSERT_FALSE(endpoint.empty());
  Process agent({Bin("dfx-rank-agent"), "serve", "--coordinator", endpoint, "--rank", "0",
                 "--spool", (dir / "spool").string(), "--key", (keys / "agents/late.key").string(),
                 "--coordinator-key", (keys / "coordinator.pub").string()},
                dir);
  auto first = RunCommand({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "1",
                           "--attach", "--bind", endpoint, "--keys", keys.string(), "--work-dir",
                           (dir / "w1").string(), "--startup-timeout", "4"},
                          dir, 120);
  EXPECT_NE(first.exit_code, 0) << "no admitted agent: the run cannot start\n" << first.err;
  const std::string refused = agent.err();
  EXPECT_GE(Count(refused, kRefusedLine), 1u) << refused;
  EXPECT_LE(Count(refused, kRefusedLine), 5u) << "backoff 1 s, 2 s, 4 s ...\n" << refused;
  EXPECT_NE(refused.find("is not among the agent keys that coordinator admits"), std::string::npos)
      << refused;
  EXPECT_FALSE(agent.Wait(0)) << "a serve agent keeps trying: " << agent.err();

  fs::rename(dir / "late.pub", late_pub);  // admitted from the next run on
  auto second = RunCommand({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "1",
                            "--attach", "--bind", endpoint, "--keys", keys.string(), "--work-dir",
                            (dir / "w2").string(), "--enable-dep-gen", "--startup-timeout", "90"},
                           dir, 180);
  EXPECT_EQ(second.exit_code, 0) << second.err << "\nagent:\n" << agent.err();
  Json m = LoadJson(dir / "w2/dfx_outputs/run_manifest.json");
  EXPECT_EQ(m["status"], "ok");
  EXPECT_TRUE(fs::exists(dir / "w2/dfx_outputs/rank0/d0/deps.json"));
  agent.Signal(SIGTERM);
  ASSERT_TRUE(agent.Wait(60));
  fs::remove_all(dir);
}

// An agent pinning another coordinator key than the peer's: refused at each
// handshake, it tries again after 1 s, 2 s, 4 s ... instead of several times
// a second. Counted over a bounded window, not timed.
TEST(RefusalTest, AWrongPinnedCoordinatorKeyIsRetriedWithGrowingIntervals) {
  fs::path dir = TestDir("refusal_wrong_key");
  const fs::path keys = Keygen(dir, {"host0"});
  auto agent_pair = ReadKeyPairFile(keys / "agents/host0.key");
  ASSERT_TRUE(agent_pair.ok()) << agent_pair.status().ToString();
  Context context;
  auto other = GenerateCurveKeyPair();
  ASSERT_TRUE(other.ok());
  SocketOptions curve;
  curve.curve_server = CurveServer{*other, {agent_pair->public_key}};
  auto router = RouterChannel::Bind(context, "tcp://127.0.0.1:0", curve);
  ASSERT_TRUE(router.ok());
  Process agent({Bin("dfx-rank-agent"), "serve", "--coordinator", router->endpoint(), "--rank", "0",
                 "--spool", (dir / "spool").string(), "--key", (keys / "agents/host0.key").string(),
                 "--coordinator-key", (keys / "coordinator.pub").string()},
                dir);
  uint64_t handshakes = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(12);
  while (std::chrono::steady_clock::now() < deadline) {
    auto got = router->Receive(20);
    EXPECT_FALSE(got.ok() && got->frame) << "no message passes a wrong key";
    handshakes += router->TakeRefusals().count;
  }
  const std::string err = agent.err();
  // Attempts at about 0, 1, 3 (or after 3 s of silence) and 7 s: 2 to 5 in
  // 12 s (6.5 a second without a backoff).
  EXPECT_GE(Count(err, kRefusedLine), 2u) << err;
  EXPECT_LE(Count(err, kRefusedLine), 6u) << err;
  EXPECT_LE(handshakes, 8u) << "the coordinator side saw each attempt\n" << err;
  EXPECT_NE(err.find("connecting again in 2 s"), std::string::npos) << err;
  EXPECT_NE(err.find("--coordinator-key"), std::string::npos) << err;
  agent.Signal(SIGTERM);
  ASSERT_TRUE(agent.Wait(60));
  fs::remove_all(dir);
}

// Whoever may write to a key directory may admit a key of their own: such a
// directory is refused with its mode and `chmod go-w`; a linked .pub is
// refused by name rather than skipped.
TEST(RefusalTest, AGroupWritableKeyDirAndALinkedPubAreRefusedByName) {
  fs::path dir = TestDir("refusal_key_dirs");
  const fs::path keys = Keygen(dir, {"host0"});
  const fs::path agents = keys / "agents";
  auto run = [&] {
    return RunCommand({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "1", "--attach",
                       "--bind", "tcp://127.0.0.1:0", "--keys", keys.string(), "--work-dir",
                       (dir / "w").string(), "--startup-timeout", "2"},
                      dir, 60);
  };
  ASSERT_EQ(::chmod(agents.c_str(), 0770), 0);
  auto writable = run();
  EXPECT_NE(writable.exit_code, 0);
  EXPECT_NE(writable.err.find(agents.string() + ": mode 0770"), std::string::npos) << writable.err;
  EXPECT_NE(writable.err.find("chmod go-w " + agents.string()), std::string::npos) << writable.err;
  // The agent side: its own key's directory.
  auto agent = RunCommand(
      {Bin("dfx-rank-agent"), "serve", "--coordinator", "tcp://127.0.0.1:1", "--rank", "0",
       "--spool", (dir / "spool").string(), "--key", (agents / "host0.key").string(),
       "--coordinator-key", (keys / "coordinator.pub").string(), "--connect-timeout", "1"},
      dir, 60);
  EXPECT_NE(agent.exit_code, 0);
  EXPECT_NE(agent.err.find("chmod go-w " + agents.string()), std::string::npos) << agent.err;
  ASSERT_EQ(::chmod(agents.c_str(), 0700), 0);

  fs::rename(agents / "host0.pub", dir / "host0.pub");
  fs::create_symlink(dir / "host0.pub", agents / "host0.pub");
  auto linked = run();
  EXPECT_NE(linked.exit_code, 0);
  EXPECT_NE(linked.err.find((agents / "host0.pub").string() + ": is a symbolic link"),
            std::string::npos)
      << linked.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dfx::e2e
