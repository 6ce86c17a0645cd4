// Security end to end: a real coordinator and real agents on loopback,
// attacked as a hostile peer and used as a careless user would. Each test
// names the defect it guards against.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <netinet/in.h>

#include <cstring>
#include <memory>
#include <optional>
#include <random>

#include "protocol/channel.h"
#include "protocol/codec.h"
#include "protocol/curve.h"
#include "tests/l3/fault_hooks.h"
#include "tests/l3/raw_client.h"

namespace dfx::e2e {
namespace {

using namespace dfx::protocol;

const fs::path kVector = Source("examples/vector_pipeline.json");
const fs::path kBusy = Source("tests/l3/testdata/busy.json");
const fs::path kCounter = Source("tests/dfx/testdata/counter.json");

// Every message a raw DEALER receives within `seconds`.
std::vector<Message> Drain(DealerChannel& ch, double seconds) {
  std::vector<Message> got;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int>(seconds * 1e3));
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = ch.Receive(50);
    if (!r.ok()) break;
    if (r->frame) {
      auto m = Decode(r->frame->bytes);
      if (m.ok()) got.push_back(*m);
    }
  }
  return got;
}

// An impostor: HELLO as a serve agent for rank 0 (session 0 adopts any run).
Message ImpostorHello() {
  return Message{Header{kProtocolVersion, 0, 0, 1},
                 Hello{{0}, 1, kProtocolVersion, 0, "impostor-host", 4242, 0, AgentMode::kServe}};
}

struct Keys {
  fs::path dir;
  fs::path coordinator_pub() const { return dir / "coordinator.pub"; }
  fs::path agent_key(const std::string& name) const { return dir / "agents" / (name + ".key"); }
};

Keys Keygen(const fs::path& dir, const std::vector<std::string>& agents) {
  std::vector<std::string> argv = {Bin("dfx-coordinator"), "keygen", (dir / "keys").string()};
  for (const auto& a : agents) argv.insert(argv.end(), {"--agent", a});
  auto r = RunCommand(argv, dir, 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return Keys{dir / "keys"};
}

uint64_t PeakRssKb(pid_t pid) {
  std::istringstream in(Slurp(fs::path("/proc") / std::to_string(pid) / "status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6));
  }
  return 0;
}

// --- authentication ------------------------------------------------------------

// Launched agents (local and mpirun) get a key pair of the run through their
// environment: a process that reads the endpoint from .session.json and says
// HELLO as rank 0 is refused at the handshake and hears nothing; the run
// completes with the real agent's artifacts.
void ImpostorRefusedUnderLauncher(const std::string& launcher) {
  fs::path dir = TestDir("sec_impostor_" + launcher);
  const fs::path work = dir / "w";
  Process coordinator({Bin("dfx-coordinator"), "run", kBusy.string(), "--ranks", "1", "--launcher",
                       launcher, "--work-dir", work.string(), "--enable-dep-gen"},
                      dir);
  Json session = WaitSession(work, coordinator);
  ASSERT_TRUE(session.is_object()) << coordinator.err();
  const std::string endpoint = session["endpoint"];
  const std::string hex = session["session"];
  Context context;
  // Without keys, and with a made-up key pair that pretends to know the server.
  auto plain = DealerChannel::Connect(context, endpoint, "rank-0.impostor");
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE(plain->Send(ImpostorHello()).ok());
  auto forged_pair = GenerateCurveKeyPair();
  ASSERT_TRUE(forged_pair.ok());
  SocketOptions forged;
  forged.curve_client = CurveClient{*forged_pair, forged_pair->public_key};
  auto curve = DealerChannel::Connect(context, endpoint, "rank-0.impostor2", forged);
  ASSERT_TRUE(curve.ok());
  ASSERT_TRUE(curve->Send(ImpostorHello()).ok());
  EXPECT_TRUE(Drain(*plain, 3).empty()) << "a refused peer hears nothing";
  EXPECT_TRUE(Drain(*curve, 1).empty());
  // The credentials never appear on a command line (mpirun gets `-x NAME`
  // and reads the value from its environment).
  for (pid_t pid : FindProcesses({"dfx-rank-agent", hex})) {
    std::string cmdline = Slurp(fs::path("/proc") / std::to_string(pid) / "cmdline");
    EXPECT_EQ(cmdline.find("SECRET_KEY="), std::string::npos) << cmdline;
    EXPECT_EQ(cmdline.find("--key"), std::string::npos) << cmdline;
  }
  ASSERT_TRUE(coordinator.Wait(180));
  EXPECT_EQ(coordinator.exit_code(), 0) << coordinator.err();
  EXPECT_NE(coordinator.err().find("at the handshake"), std::string::npos) << coordinator.err();
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  ASSERT_TRUE(m.is_object());
  EXPECT_EQ(m["status"], "ok");
  EXPECT_NE(m["ranks"][0]["host"], "impostor-host");
  EXPECT_NE(m["ranks"][0]["pid"], 4242);
  EXPECT_TRUE(fs::exists(work / "dfx_outputs/rank0/d0/deps.json"));
  fs::remove_all(dir);
}

TEST(SecurityTest, ImpostorAgentIsRefusedUnderTheLocalLauncher) {
  ImpostorRefusedUnderLauncher("local");
}
TEST(SecurityTest, ImpostorAgentIsRefusedUnderMpirun) { ImpostorRefusedUnderLauncher("mpirun"); }

// Attach mode with keys: only the agent keys given are admitted, whatever
// the impostor claims; the real serve agent, pinning the coordinator's key,
// runs the job.
TEST(SecurityTest, AttachWithKeysAdmitsOnlyKnownAgents) {
  fs::path dir = TestDir("sec_attach_keys");
  Keys keys = Keygen(dir, {"host0"});
  ASSERT_TRUE(fs::exists(keys.agent_key("host0")));
  EXPECT_EQ(fs::status(keys.agent_key("host0")).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  const fs::path work = dir / "w";
  Process coordinator({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "1", "--attach",
                       "--bind", "tcp://127.0.0.1:0", "--keys", keys.dir.string(), "--work-dir",
                       work.string(), "--enable-dep-gen", "--startup-timeout", "120"},
                      dir);
  Json session = WaitSession(work, coordinator);
  ASSERT_TRUE(session.is_object()) << coordinator.err();
  const std::string endpoint = session["endpoint"];
  Context context;
  // Knows the coordinator's public key (it is public) but holds no admitted pair.
  auto server_key = ReadPublicKeyFile(keys.coordinator_pub());
  ASSERT_TRUE(server_key.ok());
  auto pair = GenerateCurveKeyPair();
  ASSERT_TRUE(pair.ok());
  SocketOptions unknown;
  unknown.curve_client = CurveClient{*pair, *server_key};
  auto stranger = DealerChannel::Connect(context, endpoint, "rank-0.y", unknown);
  ASSERT_TRUE(stranger.ok());
  ASSERT_TRUE(stranger->Send(ImpostorHello()).ok());
  EXPECT_TRUE(Drain(*stranger, 3).empty());
  auto plain = DealerChannel::Connect(context, endpoint, "rank-0.x");
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE(plain->Send(ImpostorHello()).ok());
  EXPECT_TRUE(Drain(*plain, 2).empty());
  // The real agent.
  Process agent({Bin("dfx-rank-agent"), "serve", "--coordinator", endpoint, "--rank", "0",
                 "--spool", (dir / "spool").string(), "--key", keys.agent_key("host0").string(),
                 "--coordinator-key", keys.coordinator_pub().string()},
                dir);
  ASSERT_TRUE(coordinator.Wait(180));
  EXPECT_EQ(coordinator.exit_code(), 0) << coordinator.err();
  const std::string err = coordinator.err();
  EXPECT_NE(err.find("is not an admitted agent key"), std::string::npos) << err;
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  EXPECT_EQ(m["status"], "ok");
  EXPECT_NE(m["ranks"][0]["host"], "impostor-host");
  agent.Signal(SIGTERM);
  ASSERT_TRUE(agent.Wait(60));
  fs::remove_all(dir);
}

// A bind that other hosts can reach needs keys; loopback without keys stays
// possible (with a warning).
TEST(SecurityTest, ABindOffLoopbackWithoutKeysIsRefusedWithTheWayToMakeKeys) {
  fs::path dir = TestDir("sec_bind");
  for (const char* bind : {"tcp://0.0.0.0:0", "tcp://*:0"}) {
    auto r = RunCommand(
        {Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "1", "--attach", "--bind",
         bind, "--work-dir", (dir / "w").string(), "--enable-dep-gen", "--startup-timeout", "5"},
        dir, 60);
    EXPECT_NE(r.exit_code, 0) << bind;
    EXPECT_NE(r.err.find("authentication is required"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("dfx-coordinator keygen"), std::string::npos) << r.err;
  }
  // The agent side: a remote coordinator without keys is refused too.
  auto agent = RunCommand({Bin("dfx-rank-agent"), "serve", "--coordinator", "tcp://10.0.0.1:5555",
                           "--rank", "0", "--spool", (dir / "spool").string()},
                          dir, 60);
  EXPECT_EQ(agent.exit_code, 2) << agent.err;
  EXPECT_NE(agent.err.find("must authenticate"), std::string::npos) << agent.err;
  fs::remove_all(dir);
}

// Serve agents pin the coordinator's key: a fake coordinator (another key,
// or no CURVE at all) never receives a message from them.
TEST(SecurityTest, ServeAgentsRefuseAnImpostorCoordinator) {
  fs::path dir = TestDir("sec_fake_coord");
  Keys keys = Keygen(dir, {"host0"});
  auto agent_pair = ReadKeyPairFile(keys.agent_key("host0"));
  ASSERT_TRUE(agent_pair.ok());
  Context context;
  auto fake_pair = GenerateCurveKeyPair();
  ASSERT_TRUE(fake_pair.ok());
  SocketOptions fake_curve;
  // It even admits the agent's key: it just is not the coordinator pinned.
  fake_curve.curve_server = CurveServer{*fake_pair, {agent_pair->public_key}};
  auto curve_router = RouterChannel::Bind(context, "tcp://127.0.0.1:0", fake_curve);
  ASSERT_TRUE(curve_router.ok());
  auto plain_router = RouterChannel::Bind(context, "tcp://127.0.0.1:0");
  ASSERT_TRUE(plain_router.ok());
  std::vector<std::unique_ptr<Process>> agents;
  for (RouterChannel* r : {&*curve_router, &*plain_router}) {
    agents.push_back(std::make_unique<Process>(
        std::vector<std::string>{Bin("dfx-rank-agent"), "serve", "--coordinator", r->endpoint(),
                                 "--rank", "0", "--spool", (dir / "spool").string(), "--key",
                                 keys.agent_key("host0").string(), "--coordinator-key",
                                 keys.coordinator_pub().string()},
        dir));
  }
  int frames = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(7);
  while (std::chrono::steady_clock::now() < deadline) {
    for (RouterChannel* r : {&*curve_router, &*plain_router}) {
      auto got = r->Receive(20);
      if (got.ok() && got->frame) ++frames;
    }
  }
  EXPECT_EQ(frames, 0) << "an agent spoke to a coordinator that is not the one it pins";
  for (auto& a : agents) {
    EXPECT_FALSE(a->Wait(0)) << "it keeps waiting for the real coordinator: " << a->err();
    a->Signal(SIGTERM);
    ASSERT_TRUE(a->Wait(60));
  }
  // Against a coordinator without CURVE the agent says why it cannot talk.
  EXPECT_NE(agents[1]->err().find("handshake"), std::string::npos) << agents[1]->err();
  fs::remove_all(dir);
}

// A refused peer learns nothing: no session id, no rank list, no advice
// that names them — neither a raw peer nor a real agent started wrongly.
TEST(SecurityTest, ARefusalCarriesNoSecret) {
  fs::path dir = TestDir("sec_refusal");
  const fs::path work = dir / "w";
  Process coordinator({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "2", "--attach",
                       "--work-dir", work.string(), "--enable-dep-gen", "--startup-timeout", "120"},
                      dir);
  Json session = WaitSession(work, coordinator);
  ASSERT_TRUE(session.is_object()) << coordinator.err();
  const std::string endpoint = session["endpoint"];
  const std::string hex = session["session"];
  const std::string short_hex = hex.substr(hex.find_first_not_of('0'));
  Context context;
  auto raw = DealerChannel::Connect(context, endpoint, "rank-9.raw");
  ASSERT_TRUE(raw.ok());
  std::vector<Message> sent = {
      Message{Header{kProtocolVersion, 0, 9, 1},
              Hello{{9}, 1, kProtocolVersion, 0, "h", 1, 0, AgentMode::kServe}},
      Message{Header{kProtocolVersion, 0x1234, 0, 2},
              Hello{{0}, 1, kProtocolVersion, 0x1234, "h", 1, 0, AgentMode::kOneShot}},
      Message{Header{kProtocolVersion + 1, 0, 0, 3},
              Hello{{0}, 1, kProtocolVersion + 1, 0, "h", 1, 0, AgentMode::kServe}},
      Message{Header{kProtocolVersion, 0, 0, 4}, Ready{}}};
  for (const auto& m : sent) ASSERT_TRUE(raw->Send(m).ok());
  int errors = 0;
  for (const Message& m : Drain(*raw, 3)) {
    EXPECT_EQ(m.header.session_id, 0u);
    if (const auto* e = std::get_if<Error>(&m.body)) {
      ++errors;
      EXPECT_EQ(e->message.find(short_hex), std::string::npos) << e->message;
      EXPECT_EQ(e->message.find("--session"), std::string::npos) << e->message;
      EXPECT_EQ(e->message.find("--ranks"), std::string::npos) << e->message;
    } else {
      ADD_FAILURE() << "a refused peer got " << BodyName(m.body);
    }
  }
  EXPECT_EQ(errors, 4);
  // A real agent started for another session: told it was refused and why
  // in its own terms, never the run's session.
  auto rogue = RunCommand({Bin("dfx-rank-agent"), "--coordinator", endpoint, "--session", "1234",
                           "--rank", "0", "--spool", (dir / "spool").string()},
                          dir, 60);
  EXPECT_NE(rogue.exit_code, 0);
  EXPECT_NE(rogue.err.find("session_mismatch"), std::string::npos) << rogue.err;
  EXPECT_EQ(rogue.err.find(short_hex), std::string::npos) << rogue.err;
  coordinator.Signal(SIGTERM);
  ASSERT_TRUE(coordinator.Wait(60));
  fs::remove_all(dir);
}

// --- bounded memory -------------------------------------------------------------

// A peer that ignores credits: it announces 1 TiB (refused: over the cap,
// and recorded), then 1 GiB, and pushes 4 MiB chunks without waiting. It is
// dropped past its window; the coordinator's peak RSS stays bounded. The
// coordinator's disk is made slow (200 ms a chunk): on a fast disk the writer
// keeps up, the peer never holds more than its window unwritten and there is
// nothing to enforce.
TEST(SecurityTest, ACreditIgnoringPeerIsDroppedAndMemoryStaysBounded) {
  DFX_SKIP_WITHOUT_FAULT_HOOKS();
  fs::path dir = TestDir("sec_credits");
  const fs::path work = dir / "w";
  Process coordinator(
      {Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "1", "--attach", "--work-dir",
       work.string(), "--enable-dep-gen", "--startup-timeout", "120", "--heartbeat-timeout", "60"},
      dir,
      // Under ASan, freed memory waits in a 256 MiB quarantine: measure what
      // the coordinator holds, not what ASan keeps.
      {"ASAN_OPTIONS=detect_leaks=0:quarantine_size_mb=0",
       "DFX_FAULT_COORDINATOR_WRITE_DELAY_MS=200"});
  Json session_json = WaitSession(work, coordinator);
  ASSERT_TRUE(session_json.is_object()) << coordinator.err();
  const uint64_t session = std::stoull(session_json["session"].get<std::string>(), nullptr, 16);
  Context context;
  SocketOptions options;
  options.linger_ms = 0;
  options.send_high_water = 100000;
  auto ch = DealerChannel::Connect(context, session_json["endpoint"], "rank-0.greedy", options);
  ASSERT_TRUE(ch.ok());
  uint64_t seq = 0;
  auto send = [&](Body body) {
    ASSERT_TRUE(
        ch->Send(Message{Header{kProtocolVersion, session, 0, ++seq}, std::move(body)}).ok());
  };
  send(Hello{{0}, 1, kProtocolVersion, session, "greedy", 1, 0, AgentMode::kOneShot});
  ASSERT_TRUE(ReceiveA<Heartbeat>(*ch).has_value());
  send(Ready{{"greedy"}});
  auto dispatch = ReceiveA<Dispatch>(*ch);
  ASSERT_TRUE(dispatch.has_value());
  const uint32_t k = dispatch->second.k;
  send(ArtifactBegin{1, 0, k, "huge.bin", 1ull << 40});
  auto refused = ReceiveA<ArtifactAck>(*ch);
  ASSERT_TRUE(refused.has_value());
  EXPECT_FALSE(refused->second.ok);
  EXPECT_NE(refused->second.error.find("--max-artifact-bytes"), std::string::npos)
      << refused->second.error;
  send(ArtifactBegin{2, 0, k, "big.bin", 1ull << 30});
  const std::string payload(kMaxChunkBytes, 'x');
  uint64_t peak_kb = 0;
  for (int i = 0; i < 100 && !coordinator.Wait(0); ++i) {
    auto frame = EncodeChunk(Header{kProtocolVersion, session, 0, ++seq}, 2,
                             static_cast<uint64_t>(i) * payload.size(), payload.size(),
                             [&](char* dst, size_t n) -> Result<size_t> {
                               std::memcpy(dst, payload.data(), n);
                               return n;
                             });
    ASSERT_TRUE(frame.ok());
    (void)ch->SendRaw(std::move(*frame));
    peak_kb = std::max(peak_kb, PeakRssKb(coordinator.pid()));
  }
  WaitFor(
      [&] {
        peak_kb = std::max(peak_kb, PeakRssKb(coordinator.pid()));
        return coordinator.Wait(0);
      },
      120);
  ASSERT_TRUE(coordinator.Wait(60));
  EXPECT_EQ(coordinator.exit_code(), 1) << coordinator.err();
  // 100 x 4 MiB were pushed; the coordinator held a window of them at most.
  EXPECT_LT(peak_kb, 128u * 1024) << "peak RSS " << peak_kb << " kB";
  std::fprintf(stderr, "coordinator peak RSS under a credit-ignoring peer: %llu kB\n",
               static_cast<unsigned long long>(peak_kb));
  const std::string err = coordinator.err();
  EXPECT_NE(err.find("without credit"), std::string::npos) << err;
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  EXPECT_EQ(m["ranks"][0]["status"], "failed");
  bool recorded_huge = false;
  for (const auto& a : m["dispatches"][0]["artifacts"]) {
    if (a["path"].get<std::string>().find("huge.bin") != std::string::npos) {
      recorded_huge = true;
      EXPECT_EQ(a["status"], "failed");
      EXPECT_NE(a["error"].get<std::string>().find("refused"), std::string::npos);
    }
  }
  EXPECT_TRUE(recorded_huge) << "a refused artifact leaves a record";
  EXPECT_FALSE(fs::exists(work / "dfx_outputs/rank0/d0/big.bin"));
  fs::remove_all(dir);
}

// Half-open connections cannot starve the real agent of descriptors: with
// `ulimit -n 256` and 1000 connections that never handshake, the real agent
// still gets in (unfinished handshakes are closed after 5 s instead of
// libzmq's 30 s, so the backlog drains). On a loaded 2-core machine draining
// it can take longer than 25 s, so the agent waits up to 100 s.
TEST(SecurityTest, HalfOpenConnectionsDoNotLockOutTheRealAgent) {
  fs::path dir = TestDir("sec_halfopen");
  const fs::path work = dir / "w";
  Process coordinator({"/bin/sh", "-c", "ulimit -n 256 && exec \"$0\" \"$@\"",
                       Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "1", "--attach",
                       "--work-dir", work.string(), "--enable-dep-gen", "--startup-timeout", "170"},
                      dir);
  Json session = WaitSession(work, coordinator);
  ASSERT_TRUE(session.is_object()) << coordinator.err();
  const std::string endpoint = session["endpoint"];
  const int port = std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
  std::vector<int> fds;
  for (int i = 0; i < 1000; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    (void)::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    fds.push_back(fd);
  }
  ASSERT_GT(fds.size(), 300u);
  Process agent({Bin("dfx-rank-agent"), "--coordinator", endpoint, "--session",
                 session["session"].get<std::string>(), "--rank", "0", "--spool",
                 (dir / "spool").string(), "--connect-timeout", "100"},
                dir);
  const bool finished = coordinator.Wait(180);
  for (int fd : fds) ::close(fd);
  ASSERT_TRUE(finished) << coordinator.err();
  ASSERT_TRUE(agent.Wait(60));
  // The agent got in and its rank ran. (With every descriptor taken, a file
  // the coordinator opens meanwhile can still fail with EMFILE: that is
  // reported in the manifest, never silent, so only admission is asserted.)
  EXPECT_EQ(agent.err().find("could not reach the coordinator"), std::string::npos) << agent.err();
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  ASSERT_TRUE(m.is_object()) << coordinator.err();
  EXPECT_NE(m["ranks"][0]["status"], "waiting") << coordinator.err();
  EXPECT_EQ(m["dispatches"][0]["status"] == "ok", coordinator.exit_code() == 0)
      << coordinator.err();
  fs::remove_all(dir);
}

// --- never crash on input ---------------------------------------------------------

std::string DeepProgram() {
  return R"({"name": "deep", "kernels": [], "tensors": [], "orchestration": )" +
         std::string(100000, '[') + std::string(100000, ']') + "}";
}

TEST(SecurityTest, DeepJsonIsRefusedByEveryFrontDoor) {
  fs::path dir = TestDir("sec_deep");
  ASSERT_TRUE(WriteFileAtomic(dir / "deep.json", DeepProgram()).ok());
  ASSERT_TRUE(WriteFileAtomic(dir / "deep_plan.json",
                              R"({"programs": {"a": "deep.json"}, "steps": )" +
                                  std::string(100000, '[') + std::string(100000, ']') + "}")
                  .ok());
  ASSERT_TRUE(WriteFileAtomic(dir / "plan_of_deep.json",
                              R"({"programs": {"a": "deep.json"}, "steps": [{"program": "a"}]})")
                  .ok());
  auto expect_refused = [&](const CommandResult& r, const std::string& what) {
    EXPECT_EQ(r.exit_code, 2) << what << ": " << r.err;
    EXPECT_NE(r.err.find("nested deeper than 256 levels"), std::string::npos) << what << r.err;
    EXPECT_NE(r.err.find("(depth 257)"), std::string::npos) << what << r.err;
    EXPECT_LT(r.err.size(), 4096u) << what << ": the value is never dumped into the error";
  };
  expect_refused(RunCommand({Bin("dfx-coordinator"), "run", (dir / "deep.json").string(),
                             "--work-dir", (dir / "w1").string(), "--enable-dep-gen"},
                            dir, 60),
                 "L2 program");
  expect_refused(RunCommand({Bin("dfx-coordinator"), "run", (dir / "deep_plan.json").string(),
                             "--ranks", "1", "--work-dir", (dir / "w2").string()},
                            dir, 60),
                 "plan");
  auto plan_of_deep =
      RunCommand({Bin("dfx-coordinator"), "run", (dir / "plan_of_deep.json").string(), "--ranks",
                  "1", "--launcher", "local", "--work-dir", (dir / "w3").string()},
                 dir, 60);
  EXPECT_NE(plan_of_deep.exit_code, 0);
  EXPECT_NE(plan_of_deep.err.find("nested deeper than 256 levels"), std::string::npos)
      << plan_of_deep.err;
  auto exec = RunCommand({Bin("dfx-rank-agent"), "exec", "--program", (dir / "deep.json").string(),
                          "--output-dir", (dir / "out").string()},
                         dir, 60);
  EXPECT_NE(exec.exit_code, 0);
  EXPECT_GT(exec.exit_code, 0) << "no signal: " << exec.err;
  EXPECT_NE(exec.err.find("nested deeper than 256 levels"), std::string::npos) << exec.err;

  // A serve agent receiving such a program in a Dispatch (from whatever
  // coordinator) rejects that dispatch and keeps serving.
  Context context;
  auto router = RouterChannel::Bind(context, "tcp://127.0.0.1:0");
  ASSERT_TRUE(router.ok());
  Process agent({Bin("dfx-rank-agent"), "serve", "--coordinator", router->endpoint(), "--rank", "0",
                 "--spool", (dir / "spool").string()},
                dir);
  std::string id;
  auto receive = [&]() -> std::optional<Message> {
    for (int i = 0; i < 600; ++i) {
      auto r = router->Receive(50);
      if (r.ok() && r->frame) {
        id = r->frame->identity;
        auto m = Decode(r->frame->bytes);
        if (m.ok()) return *m;
      }
    }
    return std::nullopt;
  };
  auto receive_a = [&](size_t index) -> std::optional<Message> {
    for (int i = 0; i < 1000; ++i) {
      auto m = receive();
      if (!m) return std::nullopt;
      if (m->body.index() == index) return m;
    }
    return std::nullopt;
  };
  ASSERT_TRUE(receive_a(Body(Hello{}).index()).has_value()) << agent.err();
  const uint64_t session = 0x5e55;
  uint64_t seq = 0;
  auto send = [&](Body body) {
    ASSERT_TRUE(
        router->Send(id, Message{Header{kProtocolVersion, session, 0, ++seq}, std::move(body)})
            .ok());
  };
  send(Heartbeat{1, 0, true});
  ASSERT_TRUE(receive_a(Body(Ready{}).index()).has_value()) << agent.err();
  send(Dispatch{session, 0, 0, "deep", DeepProgram(), {}, PassKind::kSingle});
  auto done = receive_a(Body(DispatchDone{}).index());
  ASSERT_TRUE(done.has_value()) << agent.err();
  EXPECT_NE(std::get<DispatchDone>(done->body).status, DispatchStatus::kOk);
  EXPECT_NE(std::get<DispatchDone>(done->body).error.find("nested deeper"), std::string::npos)
      << std::get<DispatchDone>(done->body).error;
  EXPECT_FALSE(agent.Wait(1)) << "the serve agent survives: " << agent.err();
  agent.Signal(SIGTERM);
  ASSERT_TRUE(agent.Wait(60));
  EXPECT_EQ(agent.exit_code(), 0) << agent.err();
  fs::remove_all(dir);
}

// --- what a binary loads ------------------------------------------------------

// A binary started in a directory that holds files named like the shared
// libraries it needs neither loads them nor fails: no binary's RUNPATH has
// an empty (current directory) or relative entry. CMake pads the build
// tree's RUNPATH of installed targets with ':', an empty entry, so the
// build tree's dfx-rank-agent once searched the directory it was started in
// for Cap'n Proto, libzmq, Open MPI and libstdc++ before the system's: a
// file there stopped it ("libcapnp-0.9.2.so: file too short") or, had it
// been a library, would have run inside it.
TEST(SecurityTest, NoBinaryLoadsALibraryFromTheDirectoryItStartsIn) {
  fs::path dir = TestDir("sec_runpath");
  for (const char* lib : {"libzmq.so.5", "libmpi.so.40", "libcapnp-0.9.2.so", "libfmt.so.9",
                          "libspdlog.so.1.10", "libstdc++.so.6"}) {
    std::ofstream(dir / lib) << "not a library";
  }
  for (const char* bin : {"dfx-coordinator", "dfx-rank-agent", "dfx-view"}) {
    auto r = RunCommand({"env", "-C", dir.string(), Bin(bin), "--version"}, dir, 60);
    EXPECT_EQ(r.exit_code, 0) << bin << ": " << r.err;
    EXPECT_EQ(r.err.find("error while loading shared libraries"), std::string::npos) << r.err;
  }
  fs::remove_all(dir);
}

// --- never delete or lose data silently ---------------------------------------------

// work_dir/dfx_outputs/rank0 is a link to a directory outside work_dir:
// nothing there is deleted or written, and the run says rank 0 failed.
TEST(SecurityTest, ALinkInTheOutputTreeIsNeverFollowed) {
  fs::path dir = TestDir("sec_symlink");
  const fs::path work = dir / "w";
  const fs::path outside = dir / "precious";
  fs::create_directories(outside / "d0");
  ASSERT_TRUE(WriteFileAtomic(outside / "d0/keep.txt", "mine").ok());
  fs::create_directories(work / "dfx_outputs");
  fs::create_directory_symlink(outside, work / "dfx_outputs/rank0");
  auto r = RunCommand({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "2",
                       "--launcher", "local", "--work-dir", work.string(), "--enable-dep-gen"},
                      dir, 180);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(Tree(outside), std::set<std::string>{"d0/keep.txt"}) << "outside work_dir: untouched";
  EXPECT_EQ(Slurp(outside / "d0/keep.txt"), "mine");
  EXPECT_TRUE(fs::is_symlink(work / "dfx_outputs/rank0"));
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  ASSERT_TRUE(m.is_object()) << r.err;
  EXPECT_EQ(m["status"], "failed");
  for (const auto& d : m["dispatches"]) {
    if (d["rank"] == 0) {
      EXPECT_EQ(d["status"], "failed") << d.dump();
      EXPECT_NE(d["error"].get<std::string>().find("symbolic link"), std::string::npos) << d.dump();
    } else {
      EXPECT_EQ(d["status"], "ok") << d.dump();
    }
  }
  EXPECT_TRUE(fs::exists(work / "dfx_outputs/rank1/d0/deps.json"));
  fs::remove_all(dir);
}

// A rerun into an old work dir whose bind fails (port in use) leaves the
// previous run's artifacts as they were.
TEST(SecurityTest, AFailedBindDeletesNothingOfThePreviousRun) {
  fs::path dir = TestDir("sec_failed_bind");
  const fs::path work = dir / "w";
  auto first = RunCommand({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "1",
                           "--launcher", "local", "--work-dir", work.string(), "--enable-dep-gen"},
                          dir, 180);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto before = Tree(work / "dfx_outputs");
  ASSERT_TRUE(before.count("rank0/d0/deps.json"));
  Context context;
  auto squatter = RouterChannel::Bind(context, "tcp://127.0.0.1:0");
  ASSERT_TRUE(squatter.ok());
  auto second = RunCommand(
      {Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "1", "--launcher", "local",
       "--bind", squatter->endpoint(), "--work-dir", work.string(), "--enable-dep-gen"},
      dir, 120);
  EXPECT_EQ(second.exit_code, 1) << second.err;
  EXPECT_NE(second.err.find("Address already in use"), std::string::npos) << second.err;
  auto after = Tree(work / "dfx_outputs");
  for (const auto& f : before) {
    if (f != "run_manifest.json" && f != ".session.json") {
      EXPECT_TRUE(after.count(f)) << f;
    }
  }
  fs::remove_all(dir);
}

// `gather` against a live coordinator of the same run is refused, naming
// the holder; it touches nothing.
TEST(SecurityTest, GatherRefusesALiveRun) {
  fs::path dir = TestDir("sec_gather_live");
  const fs::path work = dir / "w";
  Process coordinator({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "1", "--attach",
                       "--work-dir", work.string(), "--enable-dep-gen", "--startup-timeout", "120"},
                      dir);
  ASSERT_TRUE(WaitSession(work, coordinator).is_object()) << coordinator.err();
  auto g = RunCommand({Bin("dfx-coordinator"), "gather", "--work-dir", work.string()}, dir, 60);
  EXPECT_EQ(g.exit_code, 1) << g.err;
  EXPECT_NE(g.err.find("is in use by pid " + std::to_string(coordinator.pid())), std::string::npos)
      << g.err;
  EXPECT_FALSE(coordinator.Wait(0)) << "the live run goes on";
  coordinator.Signal(SIGTERM);
  ASSERT_TRUE(coordinator.Wait(60));
  fs::remove_all(dir);
}

// After a coordinator crash, `gather` records what it recovered and says
// the run, and what it left unfinished, was interrupted.
TEST(SecurityTest, GatherMarksACrashedRunInterrupted) {
  DFX_SKIP_WITHOUT_FAULT_HOOKS();
  fs::path dir = TestDir("sec_interrupted");
  const fs::path work = dir / "w";
  Process coordinator(
      {Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "2", "--launcher", "local",
       "--work-dir", work.string(), "--enable-dep-gen", "--enable-chip-swimlane",
       "--heartbeat-interval", "0.1", "--heartbeat-timeout", "2"},
      dir, {"DFX_FAULT_COORDINATOR_KILL_AFTER_CHUNKS=2"});
  ASSERT_TRUE(coordinator.Wait(120));
  ASSERT_EQ(coordinator.term_signal(), SIGKILL) << coordinator.err();
  const std::string hex = LoadJson(work / "dfx_outputs/.session.json")["session"];
  ASSERT_TRUE(WaitFor([&] { return FindProcesses({"dfx-rank-agent", hex}).empty(); }, 120));
  auto g = RunCommand({Bin("dfx-coordinator"), "gather", "--work-dir", work.string()}, dir, 120);
  ASSERT_EQ(g.exit_code, 0) << g.err;
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  EXPECT_EQ(m["status"], "interrupted");
  for (const auto& r : m["ranks"]) EXPECT_NE(r["status"], "waiting") << r.dump();
  for (const auto& d : m["dispatches"]) {
    EXPECT_NE(d["status"], "pending") << d.dump();
    EXPECT_NE(d["status"], "running") << d.dump();
    EXPECT_NE(d["status"], "sent") << d.dump();
  }
  EXPECT_FALSE(m["gather"]["recovered"].empty());
  fs::remove_all(dir);
}

// --- sessions do not leak into each other -------------------------------------------

// One serve agent, three successive jobs of a +1 counter on a resident
// tensor: each job starts from an empty chip (1, 1, 1 — not 1, 2, 3).
TEST(SecurityTest, ServeAgentsResetChipStateBetweenSessions) {
  fs::path dir = TestDir("sec_reset");
  Context context;
  // A free loopback port for the successive coordinators, below the
  // kernel's ephemeral range: no port-0 bind or outgoing connection of a
  // test running beside this one can take it while no coordinator holds it.
  // With a port-0 probe the test failed once under ctest -j2 after 30 ms,
  // the time a coordinator takes to fail with "Address already in use".
  int ephemeral_low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low;
  std::string endpoint;
  std::mt19937 pick(std::random_device{}());
  for (int attempt = 0; attempt < 100 && endpoint.empty(); ++attempt) {
    const int port = std::uniform_int_distribution<int>(std::max(1024, ephemeral_low - 10000),
                                                        std::max(1025, ephemeral_low) - 1)(pick);
    const std::string candidate = "tcp://127.0.0.1:" + std::to_string(port);
    if (RouterChannel::Bind(context, candidate).ok()) endpoint = candidate;
  }
  ASSERT_FALSE(endpoint.empty()) << "no free loopback port below " << ephemeral_low;
  Process agent({Bin("dfx-rank-agent"), "serve", "--coordinator", endpoint, "--rank", "0",
                 "--spool", (dir / "spool").string(), "--heartbeat-timeout", "3"},
                dir);
  for (int job = 0; job < 3; ++job) {
    // (Not "w" + std::to_string(job): GCC 12 with LTO warns -Wrestrict on
    // that operator+, a false positive of GCC 12's std::string.)
    const fs::path work = dir / fmt::format("w{}", job);
    auto r = RunCommand(
        {Bin("dfx-coordinator"), "run", kCounter.string(), "--ranks", "1", "--attach", "--bind",
         endpoint, "--work-dir", work.string(), "--dump-args", "2", "--startup-timeout", "60"},
        dir, 120);
    ASSERT_EQ(r.exit_code, 0) << "job " << job << ": " << r.err << agent.err();
    const std::string bin = Slurp(work / "dfx_outputs/rank0/d0/args_dump/args.bin");
    Json manifest = LoadJson(work / "dfx_outputs/rank0/d0/args_dump/args_dump.json");
    std::vector<float> after;
    for (const auto& a : manifest["args"]) {
      if (a["arg_index"] != 0 || a["stage"] != "after_completion" || a["kind"] != "tensor") {
        continue;
      }
      const size_t off = a["bin_offset"].get<size_t>(), size = a["bin_size"].get<size_t>();
      ASSERT_LE(off + size, bin.size());
      after.resize(size / sizeof(float));
      std::memcpy(after.data(), bin.data() + off, after.size() * sizeof(float));
      break;
    }
    EXPECT_EQ(after, std::vector<float>({1, 1, 1, 1})) << "job " << job;
  }
  agent.Signal(SIGTERM);
  ASSERT_TRUE(agent.Wait(60));
  fs::remove_all(dir);
}

// Two serve agents claim rank 0: the second is told why and backs off
// instead of looping HELLO → refusal thousands of times a second.
TEST(SecurityTest, ASecondAgentForARankBacksOffAndIsToldWhy) {
  fs::path dir = TestDir("sec_duplicate");
  const fs::path work = dir / "w";
  Process coordinator({Bin("dfx-coordinator"), "run", kBusy.string(), "--ranks", "1", "--attach",
                       "--work-dir", work.string(), "--enable-dep-gen", "--startup-timeout", "120"},
                      dir);
  Json session = WaitSession(work, coordinator);
  ASSERT_TRUE(session.is_object()) << coordinator.err();
  const std::string endpoint = session["endpoint"];
  Process first({Bin("dfx-rank-agent"), "serve", "--coordinator", endpoint, "--rank", "0",
                 "--spool", (dir / "spool1").string()},
                dir);
  ASSERT_TRUE(
      WaitFor([&] { return fs::exists(work / "dfx_outputs/rank0/d0/dispatch_program.json"); }, 60))
      << coordinator.err();
  Process second({Bin("dfx-rank-agent"), "serve", "--coordinator", endpoint, "--rank", "0",
                  "--spool", (dir / "spool2").string()},
                 dir);
  std::this_thread::sleep_for(std::chrono::seconds(6));
  const std::string err = second.err();
  size_t refusals = 0;
  for (size_t at = err.find("rejected this agent"); at != std::string::npos;
       at = err.find("rejected this agent", at + 1)) {
    ++refusals;
  }
  EXPECT_GE(refusals, 1u) << err;
  EXPECT_LE(refusals, 5u) << "backoff: 1 s, 2 s, 4 s ...\n" << err;
  EXPECT_NE(err.find("already served by another agent"), std::string::npos) << err;
  EXPECT_NE(err.find("saying HELLO again in"), std::string::npos) << err;
  EXPECT_LT(coordinator.err().size(), 20000u) << "the coordinator's log does not flood";
  second.Signal(SIGTERM);
  first.Signal(SIGTERM);
  coordinator.Signal(SIGTERM);
  ASSERT_TRUE(coordinator.Wait(60));
  ASSERT_TRUE(first.Wait(60));
  ASSERT_TRUE(second.Wait(60));
  fs::remove_all(dir);
}

// --- operational -------------------------------------------------------------------

TEST(SecurityTest, RanksNotAMultipleOfChipsPerAgentAllRun) {
  fs::path dir = TestDir("sec_chips");
  const fs::path work = dir / "w";
  auto r = RunCommand(
      {Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "4", "--chips-per-agent", "3",
       "--launcher", "local", "--work-dir", work.string(), "--enable-dep-gen"},
      dir, 180);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_TRUE(fs::exists(work / "dfx_outputs" / ("rank" + std::to_string(rank)) / "d0/deps.json"))
        << rank;
  }
  fs::remove_all(dir);
}

TEST(SecurityTest, BadFlagValuesAreRefusedNamingWhatIsAllowed) {
  fs::path dir = TestDir("sec_flags");
  const std::string work = (dir / "w").string();
  auto banana = RunCommand({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "1",
                            "--work-dir", work, "--agent-log-level", "banana"},
                           dir, 60);
  EXPECT_EQ(banana.exit_code, 2) << banana.err;
  EXPECT_NE(banana.err.find("warn"), std::string::npos) << banana.err;
  auto agent_banana = RunCommand({Bin("dfx-rank-agent"), "serve", "--coordinator",
                                  "tcp://127.0.0.1:1", "--rank", "0", "--log-level", "banana"},
                                 dir, 60);
  EXPECT_EQ(agent_banana.exit_code, 2) << agent_banana.err;
  EXPECT_NE(agent_banana.err.find("trace"), std::string::npos) << agent_banana.err;
  auto tiny = RunCommand({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "1",
                          "--work-dir", work, "--heartbeat-timeout", "0.000001"},
                         dir, 60);
  EXPECT_EQ(tiny.exit_code, 2) << tiny.err;
  EXPECT_NE(tiny.err.find("--heartbeat-timeout"), std::string::npos) << tiny.err;
  EXPECT_NE(tiny.err.find("expected at least"), std::string::npos) << tiny.err;
  auto pmu = RunCommand(
      {Bin("dfx-coordinator"), "run", "--enable-pmu", "abc", kVector.string(), "--work-dir", work},
      dir, 60);
  EXPECT_EQ(pmu.exit_code, 2) << pmu.err;
  EXPECT_NE(pmu.err.find("--enable-pmu abc: not an integer; allowed:"), std::string::npos)
      << pmu.err;
  EXPECT_FALSE(fs::exists(work)) << "nothing is created for a refused command line";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dfx::e2e
