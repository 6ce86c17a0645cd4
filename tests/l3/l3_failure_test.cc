// L3 failures and recovery end to end: a SIGKILLed agent, agents with the
// wrong session / protocol version, bad messages from raw ZeroMQ clients on
// both sides, and `dfx-coordinator gather` after a coordinator crash.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

#include "protocol/channel.h"
#include "protocol/codec.h"
#include "tests/l3/fault_hooks.h"
#include "tests/l3/raw_client.h"

namespace dfx::e2e {
namespace {

using namespace dfx::protocol;

const fs::path kVector = Source("examples/vector_pipeline.json");
const fs::path kBusy = Source("tests/l3/testdata/busy.json");

TEST(L3FailureTest, KilledAgentFailsItsRankWhileOthersAreGathered) {
  fs::path dir = TestDir("l3_sigkill");
  ASSERT_TRUE(WriteFileAtomic(dir / "plan.json", R"({"programs": {"vec": ")" + kVector.string() +
                                                     R"(", "busy": ")" + kBusy.string() + R"("},
    "steps": [{"program": "vec", "rank": 0}, {"program": "busy", "rank": 1},
              {"program": "vec", "rank": 0}, {"program": "vec", "rank": 1},
              {"program": "vec", "rank": 0}]})")
                  .ok());
  const fs::path work = dir / "w";
  Process coordinator(
      {Bin("dfx-coordinator"), "run", (dir / "plan.json").string(), "--ranks", "2", "--launcher",
       "local", "--work-dir", work.string(), "--enable-dep-gen", "--heartbeat-timeout", "3"},
      dir);
  Json session = WaitSession(work, coordinator);
  ASSERT_TRUE(session.is_object()) << coordinator.err();
  // Once rank 1's long dispatch is in flight, SIGKILL its agent.
  ASSERT_TRUE(
      WaitFor([&] { return fs::exists(work / "dfx_outputs/rank1/d0/dispatch_program.json"); }, 120))
      << coordinator.err();
  auto pids = FindProcesses({"dfx-rank-agent", "--rank 1 ", session["session"].get<std::string>()});
  ASSERT_EQ(pids.size(), 1u);
  ::kill(pids[0], SIGKILL);

  ASSERT_TRUE(coordinator.Wait(180)) << "the coordinator must finish despite the dead agent";
  EXPECT_EQ(coordinator.exit_code(), 1) << coordinator.err();
  const std::string err = coordinator.err();
  EXPECT_NE(err.find("declared dead"), std::string::npos) << err;

  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  ASSERT_TRUE(m.is_object());
  EXPECT_EQ(m["status"], "failed");
  EXPECT_EQ(m["ranks"][0]["status"], "ok");
  EXPECT_EQ(m["ranks"][1]["status"], "failed");
  const std::string why = m["ranks"][1]["error"].get<std::string>();
  EXPECT_TRUE(why.find("signal 9") != std::string::npos || why.find("closed") != std::string::npos)
      << why;
  std::map<std::string, Json> by_dir;
  for (const auto& d : m["dispatches"]) by_dir[d["dir"].get<std::string>()] = d;
  EXPECT_EQ(by_dir["rank1/d0"]["status"], "failed");
  EXPECT_NE(by_dir["rank1/d0"]["error"].get<std::string>().find("in flight"), std::string::npos);
  EXPECT_EQ(by_dir["rank1/d1"]["status"], "not_run");
  for (const char* d : {"rank0/d0", "rank0/d1", "rank0/d2"}) {
    EXPECT_EQ(by_dir[d]["status"], "ok") << d;
    EXPECT_TRUE(fs::exists(work / "dfx_outputs" / d / "deps.json")) << d;
  }
  // No half-written file under a final (or temporary) name.
  for (const auto& f : Tree(work / "dfx_outputs")) {
    EXPECT_EQ(f.find(".tmp."), std::string::npos) << f;
  }
  fs::remove_all(dir);
}

// The rank whose process environment says OMPI_COMM_WORLD_RANK=<rank>.
std::vector<pid_t> MpiRankProcesses(const std::vector<pid_t>& pids, int rank) {
  std::vector<pid_t> out;
  const std::string needle = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  for (pid_t pid : pids) {
    std::string env = Slurp(fs::path("/proc") / std::to_string(pid) / "environ");
    size_t start = 0;
    while (start < env.size()) {
      size_t end = env.find('\0', start);
      if (end == std::string::npos) end = env.size();
      if (env.compare(start, end - start, needle) == 0) out.push_back(pid);
      start = end + 1;
    }
  }
  return out;
}

// Under mpirun (Open MPI 4.1 aborts every rank when one dies unless it runs
// with --enable-recovery): a SIGKILLed agent fails its rank only, at once
// (its connection closed), not at the heartbeat deadline.
TEST(L3FailureTest, KilledAgentUnderMpirunFailsOnlyItsRank) {
  fs::path dir = TestDir("l3_sigkill_mpi");
  ASSERT_TRUE(WriteFileAtomic(dir / "plan.json", R"({"programs": {"vec": ")" + kVector.string() +
                                                     R"(", "busy": ")" + kBusy.string() + R"("},
    "steps": [{"program": "vec", "rank": 0}, {"program": "busy", "rank": 1},
              {"program": "vec", "rank": 2}, {"program": "vec", "rank": 1},
              {"program": "busy", "rank": 0}, {"program": "vec", "rank": 2}]})")
                  .ok());
  const fs::path work = dir / "w";
  Process coordinator({Bin("dfx-coordinator"), "run", (dir / "plan.json").string(), "--ranks", "3",
                       "--launcher", "mpirun", "--work-dir", work.string(), "--enable-dep-gen",
                       "--heartbeat-timeout", "100", "--reconnect-window", "2"},
                      dir);
  Json session = WaitSession(work, coordinator);
  ASSERT_TRUE(session.is_object()) << coordinator.err();
  ASSERT_TRUE(
      WaitFor([&] { return fs::exists(work / "dfx_outputs/rank1/d0/dispatch_program.json"); }, 120))
      << coordinator.err();
  auto pids = GuardedAgents(MpiRankProcesses(
      FindProcesses({"dfx-rank-agent", session["session"].get<std::string>()}), 1));
  ASSERT_EQ(pids.size(), 1u);
  ::kill(pids[0], SIGKILL);

  // Long before --heartbeat-timeout 100 s: the transport saw the connection
  // close, and the agent did not come back within --reconnect-window 2 s.
  ASSERT_TRUE(coordinator.Wait(60)) << "the coordinator must finish despite the dead agent";
  EXPECT_EQ(coordinator.exit_code(), 1) << coordinator.err();
  const std::string err = coordinator.err();
  EXPECT_NE(err.find("declared dead"), std::string::npos) << err;

  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  ASSERT_TRUE(m.is_object());
  EXPECT_EQ(m["status"], "failed");
  EXPECT_EQ(m["ranks"][0]["status"], "ok") << m["ranks"][0].dump();
  EXPECT_EQ(m["ranks"][2]["status"], "ok") << m["ranks"][2].dump();
  EXPECT_EQ(m["ranks"][1]["status"], "failed");
  // Whichever comes first: the connection's close, or mpirun's word that
  // the rank's process ended (coordinator/launcher_report.h).
  const std::string why = m["ranks"][1]["error"].get<std::string>();
  EXPECT_TRUE(why.find("connection from 127.0.0.1 closed") != std::string::npos ||
              why.find("mpirun reports its process (launcher rank 1 on ") != std::string::npos)
      << why;
  EXPECT_EQ(why.find("mpirun exited"), std::string::npos) << why;
  // Said once, not once per message that could not be sent.
  size_t dead_lines = 0;
  for (size_t at = err.find("declared dead"); at != std::string::npos;
       at = err.find("declared dead", at + 1)) {
    ++dead_lines;
  }
  EXPECT_EQ(dead_lines, 1u) << err;
  EXPECT_EQ(err.find("peer not connected"), std::string::npos) << err;
  std::map<std::string, Json> by_dir;
  for (const auto& d : m["dispatches"]) by_dir[d["dir"].get<std::string>()] = d;
  EXPECT_EQ(by_dir["rank1/d0"]["status"], "failed");
  EXPECT_NE(by_dir["rank1/d0"]["error"].get<std::string>().find("in flight"), std::string::npos);
  EXPECT_EQ(by_dir["rank1/d1"]["status"], "not_run");
  for (const char* d : {"rank0/d0", "rank0/d1", "rank2/d0", "rank2/d1"}) {
    EXPECT_EQ(by_dir[d]["status"], "ok") << d;
    EXPECT_TRUE(fs::exists(work / "dfx_outputs" / d / "deps.json")) << d;
  }
  for (const auto& f : Tree(work / "dfx_outputs")) {
    EXPECT_EQ(f.find(".tmp."), std::string::npos) << f;
  }
  EXPECT_TRUE(
      WaitFor([&] { return FindProcesses({session["session"].get<std::string>()}).empty(); }, 60))
      << "mpirun and the surviving agents exit";
  fs::remove_all(dir);
}

TEST(L3FailureTest, WrongSessionAndWrongVersionAreTurnedAway) {
  fs::path dir = TestDir("l3_session");
  const fs::path work = dir / "w";
  Process coordinator({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "1", "--attach",
                       "--work-dir", work.string(), "--enable-dep-gen", "--startup-timeout", "120"},
                      dir);
  Json session = WaitSession(work, coordinator);
  ASSERT_TRUE(session.is_object()) << coordinator.err();
  const std::string endpoint = session["endpoint"];

  // An agent started for another session is rejected and says why.
  auto rogue =
      RunCommand({Bin("dfx-rank-agent"), "--coordinator", endpoint, "--session", "123456789abc",
                  "--rank", "0", "--spool", (dir / "spool").string(), "--connect-timeout", "60"},
                 dir, 120);
  EXPECT_NE(rogue.exit_code, 0);
  EXPECT_NE(rogue.err.find("session_mismatch"), std::string::npos) << rogue.err;
  EXPECT_NE(rogue.err.find("123456789abc"), std::string::npos) << rogue.err;

  // A peer speaking another protocol version is rejected too.
  Context context;
  auto raw = DealerChannel::Connect(context, endpoint, "rank-0");
  ASSERT_TRUE(raw.ok());
  Hello hello{{0}, 1, kProtocolVersion + 1, 0, "test", 1};
  ASSERT_TRUE(raw->Send(Message{Header{kProtocolVersion + 1, 0, 0, 1}, hello}).ok());
  auto error = ReceiveA<Error>(*raw);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->second.code, ErrorCode::kVersionMismatch);
  EXPECT_NE(error->second.message.find("protocol version"), std::string::npos);

  // The right agent (serve mode: it adopts the session) completes the run.
  Process agent({Bin("dfx-rank-agent"), "serve", "--coordinator", endpoint, "--rank", "0",
                 "--spool", (dir / "spool").string()},
                dir);
  ASSERT_TRUE(coordinator.Wait(180));
  EXPECT_EQ(coordinator.exit_code(), 0) << coordinator.err();
  const std::string err = coordinator.err();
  EXPECT_NE(err.find("turned away rank-0"), std::string::npos) << err;
  EXPECT_NE(err.find("was started for session 0000123456789abc"), std::string::npos) << err;
  EXPECT_NE(err.find("speaks protocol version"), std::string::npos) << err;
  EXPECT_TRUE(fs::exists(work / "dfx_outputs/rank0/d0/deps.json"));
  // A serve agent survives the end of the run; it stops on SIGTERM.
  EXPECT_FALSE(agent.Wait(0));
  agent.Signal(SIGTERM);
  ASSERT_TRUE(agent.Wait(60));
  EXPECT_EQ(agent.exit_code(), 0) << agent.err();
  fs::remove_all(dir);
}

TEST(L3FailureTest, CoordinatorRejectsBadMessagesAndNeverWritesOutsideTheWorkDir) {
  fs::path dir = TestDir("l3_badmsg_coord");
  const fs::path work = dir / "w";
  Process coordinator(
      {Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "1", "--attach", "--work-dir",
       work.string(), "--enable-dep-gen", "--startup-timeout", "120", "--heartbeat-timeout", "60"},
      dir);
  Json session_json = WaitSession(work, coordinator);
  ASSERT_TRUE(session_json.is_object()) << coordinator.err();
  const std::string endpoint = session_json["endpoint"];
  const uint64_t session = std::stoull(session_json["session"].get<std::string>(), nullptr, 16);
  Context context;

  // Garbage, truncated and oversized frames from an unregistered peer.
  {
    auto evil = DealerChannel::Connect(context, endpoint, "evil");
    ASSERT_TRUE(evil.ok());
    ASSERT_TRUE(evil->SendRaw(std::string(104, '\xab')).ok());
    auto good = Encode(Message{Header{kProtocolVersion, session, 0, 1}, Ready{}});
    ASSERT_TRUE(good.ok());
    ASSERT_TRUE(evil->SendRaw(good->substr(0, good->size() / 2)).ok());
    ASSERT_TRUE(evil->SendRaw(*good).ok());  // valid, but no HELLO first
    auto hello_unknown = Message{Header{kProtocolVersion, session, 5, 1},
                                 Hello{{5}, 1, kProtocolVersion, session, "t", 1}};
    ASSERT_TRUE(evil->Send(hello_unknown).ok());
    auto err = ReceiveA<Error>(*evil);
    ASSERT_TRUE(err.has_value());
    auto unknown = ReceiveA<Error>(*evil);
    ASSERT_TRUE(unknown.has_value());
    EXPECT_EQ(unknown->second.code, ErrorCode::kUnknownRank);
    Context big_context;
    auto big = DealerChannel::Connect(big_context, endpoint, "big");
    ASSERT_TRUE(big.ok());
    ASSERT_TRUE(big->SendRaw(std::string(kMaxFrameBytes + 4096, '\0')).ok());
  }

  // A peer that registers as rank 0 and then misbehaves while streaming.
  auto ch = DealerChannel::Connect(context, endpoint, "rank-0");
  ASSERT_TRUE(ch.ok());
  uint64_t seq = 0;
  auto send = [&](int32_t rank, Body body) {
    ASSERT_TRUE(
        ch->Send(Message{Header{kProtocolVersion, session, rank, ++seq}, std::move(body)}).ok());
  };
  send(0, Hello{{0}, 1, kProtocolVersion, session, "test-host", 4242});
  ASSERT_TRUE(ReceiveA<Heartbeat>(*ch).has_value());
  send(0, Ready{{"raw test client"}});
  auto dispatch = ReceiveA<Dispatch>(*ch);
  ASSERT_TRUE(dispatch.has_value());
  EXPECT_EQ(dispatch->second.rank, 0);
  EXPECT_EQ(dispatch->second.program_name, "vector_pipeline");
  const uint32_t k = dispatch->second.k;
  const std::string escape = "escape_" + std::to_string(::getpid()) + ".txt";
  send(0, ArtifactBegin{1, 0, k, "../../../" + escape, 4});
  send(0, ArtifactBegin{2, 0, k, (dir / escape).string(), 4});
  send(3, ArtifactBegin{3, 3, k, "x.txt", 4});  // a rank this peer does not own
  send(0, ArtifactChunk{99, 0, "data"});        // a stream that was never begun
  send(0, ArtifactBegin{4, 0, k, "bad_sum.txt", 4});
  send(0, ArtifactChunk{4, 0, "abcd"});
  send(0, ArtifactEnd{4, 12345});  // wrong checksum
  Checksum64 sum;
  sum.Update("hello", 5);
  send(0, ArtifactBegin{5, 0, k, "sub/hello.txt", 5});
  send(0, ArtifactChunk{5, 0, "hello"});
  send(0, ArtifactEnd{5, sum.Digest()});
  send(0, DispatchDone{0, k, DispatchStatus::kOk, "", 1, 2, 1});
  // Acks: 4 rejected, 5 accepted.
  std::map<uint64_t, ArtifactAck> acks;
  for (int i = 0; i < 50 && !(acks.count(4) && acks.count(5)); ++i) {
    auto ack = ReceiveA<ArtifactAck>(*ch);
    if (!ack) break;
    acks[ack->second.transfer_id] = ack->second;
  }
  ASSERT_TRUE(acks.count(4) && acks.count(5));
  EXPECT_FALSE(acks[4].ok);
  EXPECT_NE(acks[4].error.find("checksum mismatch"), std::string::npos);
  EXPECT_TRUE(acks[5].ok);
  EXPECT_TRUE(ReceiveA<Shutdown>(*ch).has_value());

  ASSERT_TRUE(coordinator.Wait(120));
  EXPECT_EQ(coordinator.exit_code(), 1) << "an artifact failed its checksum";
  const std::string err = coordinator.err();
  EXPECT_NE(err.find("rejected a message from evil: malformed"), std::string::npos) << err;
  EXPECT_NE(err.find("never said HELLO"), std::string::npos) << err;
  EXPECT_NE(err.find("\"..\" component"), std::string::npos) << err;
  EXPECT_NE(err.find("it is absolute"), std::string::npos) << err;
  EXPECT_NE(err.find("names rank 3, which this peer does not own"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown stream 99"), std::string::npos) << err;
  const fs::path out = work / "dfx_outputs";
  EXPECT_EQ(Slurp(out / "rank0" / ("d" + std::to_string(k)) / "sub/hello.txt"), "hello");
  EXPECT_FALSE(fs::exists(out / "rank0" / ("d" + std::to_string(k)) / "bad_sum.txt"));
  for (const fs::path& p : {dir / escape, dir.parent_path() / escape, work / escape,
                            fs::path("/") / escape, out / escape}) {
    EXPECT_FALSE(fs::exists(p)) << p;
  }
  Json m = LoadJson(out / "run_manifest.json");
  bool saw_bad_sum = false;
  for (const auto& a : m["dispatches"][0]["artifacts"]) {
    if (a["path"].get<std::string>().find("bad_sum.txt") != std::string::npos) {
      saw_bad_sum = true;
      EXPECT_EQ(a["status"], "failed");
    }
  }
  EXPECT_TRUE(saw_bad_sum);
  fs::remove_all(dir);
}

TEST(L3FailureTest, AgentRejectsBadMessagesAndKeepsWorking) {
  fs::path dir = TestDir("l3_badmsg_agent");
  Context context;
  auto router = RouterChannel::Bind(context, "tcp://127.0.0.1:0");
  ASSERT_TRUE(router.ok());
  const uint64_t session = 0xaa;
  Process agent({Bin("dfx-rank-agent"), "--coordinator", router->endpoint(), "--session", "aa",
                 "--rank", "2", "--spool", (dir / "spool").string(), "--heartbeat-timeout", "60"},
                dir);
  std::string id;  // the agent's routing identity ("rank-2.<nonce>"), from its messages
  auto receive = [&]() -> std::optional<Message> {
    for (int i = 0; i < 600; ++i) {
      auto r = router->Receive(50);
      if (r.ok() && r->frame) {
        auto m = Decode(r->frame->bytes);
        id = r->frame->identity;
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
  auto hello = receive_a(Body(Hello{}).index());
  ASSERT_TRUE(hello.has_value()) << agent.err();
  EXPECT_EQ(std::get<Hello>(hello->body).ranks, std::vector<int32_t>{2});
  EXPECT_EQ(id.rfind("rank-2.", 0), 0u) << id;
  uint64_t seq = 0;
  auto send = [&](uint64_t s, int32_t rank, Body body) {
    ASSERT_TRUE(
        router->Send(id, Message{Header{kProtocolVersion, s, rank, ++seq}, std::move(body)}).ok());
  };
  ASSERT_TRUE(router->SendRaw(id, std::string(64, '\x7f')).ok());  // garbage
  ASSERT_TRUE(router->SendRaw(id, std::string(13, '\0')).ok());    // truncated
  send(0xbb, 2, Heartbeat{1, 0, true});                            // wrong session
  send(session, 2, Heartbeat{1, 0, true});                         // the real coordinator
  ASSERT_TRUE(receive_a(Body(Ready{}).index()).has_value());
  send(session, 2, Credit{8});
  send(session, 7, Dispatch{session, 7, 0, "x", "{}", {}, PassKind::kSingle});  // not its rank
  send(session, 2, Dispatch{session, 2, 0, "bad", "{not json", {}, PassKind::kSingle});
  auto rejected1 = receive_a(Body(DispatchDone{}).index());
  ASSERT_TRUE(rejected1.has_value());
  auto rejected2 = receive_a(Body(DispatchDone{}).index());
  ASSERT_TRUE(rejected2.has_value());
  EXPECT_EQ(std::get<DispatchDone>(rejected2->body).status, DispatchStatus::kRejected);
  EXPECT_NE(std::get<DispatchDone>(rejected2->body).error.find("bad"), std::string::npos);

  // A good dispatch still runs and streams.
  config::RunConfig run_config;
  run_config.enable_dep_gen = true;
  run_config.save_kernels = true;
  send(session, 2, Dispatch{session, 2, 1, "vec", Slurp(kVector), run_config, PassKind::kSingle});
  std::map<uint64_t, std::string> names;
  std::map<uint64_t, std::string> data;
  std::optional<DispatchDone> done;
  while (!done) {
    auto m = receive();
    ASSERT_TRUE(m.has_value()) << agent.err();
    if (auto* b = std::get_if<ArtifactBegin>(&m->body)) names[b->transfer_id] = b->path;
    if (auto* c = std::get_if<ArtifactChunk>(&m->body)) {
      data[c->transfer_id] += c->data;
      send(session, 2, Credit{1});
    }
    if (auto* e = std::get_if<ArtifactEnd>(&m->body)) {
      send(session, 2, ArtifactAck{e->transfer_id, true, ""});
    }
    if (auto* d = std::get_if<DispatchDone>(&m->body)) done = *d;
  }
  EXPECT_EQ(done->status, DispatchStatus::kOk) << done->error;
  std::set<std::string> got;
  for (const auto& [tid, name] : names) got.insert(name);
  EXPECT_TRUE(got.count("deps.json"));
  EXPECT_TRUE(got.count("name_map.json"));
  send(session, 2, Shutdown{"test over"});
  ASSERT_TRUE(agent.Wait(60));
  EXPECT_EQ(agent.exit_code(), 0) << agent.err();
  const std::string err = agent.err();
  EXPECT_NE(err.find("rejected a message from the coordinator"), std::string::npos) << err;
  EXPECT_NE(err.find("expected session"), std::string::npos) << err;
  // Every file was acknowledged, so the spool is empty again.
  EXPECT_TRUE(Tree(dir / "spool").empty()) << ::testing::PrintToString(Tree(dir / "spool"));
  fs::remove_all(dir);
}

TEST(L3FailureTest, AgentExitsClearlyWhenNoCoordinatorAnswers) {
  fs::path dir = TestDir("l3_noconn");
  auto r =
      RunCommand({Bin("dfx-rank-agent"), "--coordinator", "tcp://127.0.0.1:1", "--session", "1",
                  "--rank", "0", "--spool", (dir / "spool").string(), "--connect-timeout", "1"},
                 dir, 60);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("could not reach the coordinator at tcp://127.0.0.1:1"), std::string::npos)
      << r.err;
  fs::remove_all(dir);
}

TEST(L3FailureTest, GatherRecoversTheSpoolAfterACoordinatorCrash) {
  DFX_SKIP_WITHOUT_FAULT_HOOKS();
  fs::path dir = TestDir("l3_gather");
  const fs::path work = dir / "w";
  Process coordinator(
      {Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "2", "--launcher", "local",
       "--work-dir", work.string(), "--enable-dep-gen", "--enable-chip-swimlane", "--enable-pmu",
       "--heartbeat-interval", "0.1", "--heartbeat-timeout", "2"},
      dir, {"DFX_FAULT_COORDINATOR_KILL_AFTER_CHUNKS=2"});
  ASSERT_TRUE(coordinator.Wait(120));
  ASSERT_EQ(coordinator.term_signal(), SIGKILL) << coordinator.err();
  Json session = LoadJson(work / "dfx_outputs/.session.json");
  ASSERT_TRUE(session.is_object());
  const std::string hex = session["session"];
  // The orphaned agents notice the silence and exit, keeping their spool.
  ASSERT_TRUE(WaitFor([&] { return FindProcesses({"dfx-rank-agent", hex}).empty(); }, 120));
  const fs::path spool = work / ".dfx_spool" / hex;
  auto spooled = SpooledArtifacts(spool);
  ASSERT_FALSE(spooled.empty()) << "nothing left to recover";

  auto r = RunCommand({Bin("dfx-coordinator"), "gather", "--work-dir", work.string()}, dir, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("recovered"), std::string::npos);
  // The recovery agents run on this host: every byte came over the local
  // bulk path (ipc, admitted by uid, pid and token), none over CURVE.
  EXPECT_NE(r.err.find("over the local bulk path (ipc), 0 over CURVE"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("received: 0 over the local bulk path"), std::string::npos) << r.err;
  for (const auto& f : spooled) {
    const fs::path p = work / "dfx_outputs" / f;
    EXPECT_TRUE(fs::exists(p)) << f << " was spooled but not recovered";
    EXPECT_NE(r.out.find(p.string()), std::string::npos) << r.out;
  }
  EXPECT_TRUE(Tree(spool).empty()) << "acknowledged files leave the spool";
  for (const auto& f : Tree(work / "dfx_outputs"))
    EXPECT_EQ(f.find(".tmp."), std::string::npos) << f;
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  EXPECT_EQ(m["gather"]["status"], "ok");
  EXPECT_EQ(m["gather"]["recovered"].size(), spooled.size());
  for (const auto& a : m["gather"]["recovered"]) {
    auto sum = ChecksumFile(work / "dfx_outputs" / a["path"].get<std::string>());
    ASSERT_TRUE(sum.ok());
    EXPECT_EQ(a["checksum"], "xxh64:" + Hex64(*sum));
  }
  // A second gather finds nothing left and succeeds.
  auto again =
      RunCommand({Bin("dfx-coordinator"), "gather", "--work-dir", work.string()}, dir, 120);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  fs::remove_all(dir);
}

// Hash once, at write: the agent keeps each artifact's checksum beside it
// in the spool, so a spool copy damaged at rest (here: one byte flipped
// after the coordinator crashed) is caught by the gather, which names it,
// leaves it in the spool and does not put it under its final name.
TEST(L3FailureTest, GatherReportsASpoolCorruptedAtRest) {
  DFX_SKIP_WITHOUT_FAULT_HOOKS();
  fs::path dir = TestDir("l3_gather_corrupt");
  const fs::path work = dir / "w";
  Process coordinator({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "2",
                       "--launcher", "local", "--work-dir", work.string(), "--enable-dep-gen",
                       "--heartbeat-interval", "0.1", "--heartbeat-timeout", "2"},
                      dir, {"DFX_FAULT_COORDINATOR_KILL_AFTER_CHUNKS=1"});
  ASSERT_TRUE(coordinator.Wait(120));
  ASSERT_EQ(coordinator.term_signal(), SIGKILL) << coordinator.err();
  const std::string hex = LoadJson(work / "dfx_outputs/.session.json")["session"];
  ASSERT_TRUE(WaitFor([&] { return FindProcesses({"dfx-rank-agent", hex}).empty(); }, 120));
  const fs::path spool = work / ".dfx_spool" / hex;
  std::string victim;
  for (const std::string& f : SpooledArtifacts(spool)) {
    if (fs::file_size(spool / f) > 0) victim = f;
  }
  ASSERT_FALSE(victim.empty()) << "nothing left to corrupt";
  // rank<R>/d<K>/<rel>: its kept checksum is rank<R>/d<K>/.xxh64/<rel>.
  const size_t slash = victim.find('/', victim.find('/') + 1);
  EXPECT_TRUE(fs::exists(spool / (victim.substr(0, slash) + "/.xxh64" + victim.substr(slash))))
      << victim;
  {
    std::fstream f(spool / victim, std::ios::in | std::ios::out | std::ios::binary);
    char c = 0;
    f.seekg(0);
    f.get(c);
    f.seekp(0);
    f.put(static_cast<char>(c ^ 0x5a));
  }
  auto r = RunCommand({Bin("dfx-coordinator"), "gather", "--work-dir", work.string()}, dir, 120);
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  const std::string all = r.out + r.err;
  EXPECT_NE(all.find(victim + ": checksum mismatch"), std::string::npos) << all;
  EXPECT_NE(all.find("the spool copy changed since"), std::string::npos) << all;
  EXPECT_FALSE(fs::exists(work / "dfx_outputs" / victim));
  EXPECT_TRUE(fs::exists(spool / victim)) << "a rejected file stays in the spool";
  fs::remove_all(dir);
}

// A spool made by hand: `files` of rank r's dispatch 0, gathered later.
uint64_t FakeSpool(const fs::path& work, int ranks, const std::string& content) {
  const uint64_t session = 0x5eed00000000abcdull;
  for (int r = 0; r < ranks; ++r) {
    const fs::path d = work / ".dfx_spool" / Hex64(session) / fmt::format("rank{}/d0/args_dump", r);
    fs::create_directories(d);
    std::ofstream(d / "args.bin", std::ios::binary) << content << r;
  }
  Json record;
  record["session"] = Hex64(session);
  record["spool"] = (work / ".dfx_spool").string();
  EXPECT_TRUE(WriteJsonFileAtomic(work / "dfx_outputs/.session.json", record, 2).ok());
  return session;
}

// --bulk-transport curve (or DFX_BULK_TRANSPORT=curve) keeps every byte on
// the CURVE connection, as before the local bulk path existed.
TEST(L3FailureTest, GatherOverCurveWhenAskedTo) {
  fs::path dir = TestDir("l3_gather_curve");
  for (int variant = 0; variant < 2; ++variant) {
    const fs::path work = dir / fmt::format("w{}", variant);
    FakeSpool(work, 2, std::string(3 << 20, 'x'));
    std::vector<std::string> argv = {Bin("dfx-coordinator"), "gather", "--work-dir", work.string()};
    std::vector<std::string> env;
    if (variant == 0) {
      argv.insert(argv.end(), {"--bulk-transport", "curve"});
    } else {
      env.push_back("DFX_BULK_TRANSPORT=curve");
    }
    auto r = RunCommand(argv, dir, 120, env);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_NE(r.err.find("received: 0 over the local bulk path (ipc), 6291458 over CURVE"),
              std::string::npos)
        << r.err;
    for (int rank = 0; rank < 2; ++rank) {
      EXPECT_EQ(fs::file_size(work / fmt::format("dfx_outputs/rank{}/d0/args_dump/args.bin", rank)),
                (3u << 20) + 1);
    }
  }
  // The same spool by default: all of it over ipc.
  const fs::path work = dir / "w2";
  FakeSpool(work, 2, std::string(3 << 20, 'x'));
  auto r = RunCommand({Bin("dfx-coordinator"), "gather", "--work-dir", work.string()}, dir, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.err.find("received: 6291458 over the local bulk path (ipc), 0 over CURVE"),
            std::string::npos)
      << r.err;
  auto bad = RunCommand({Bin("dfx-coordinator"), "gather", "--work-dir", work.string()}, dir, 60,
                        {"DFX_BULK_TRANSPORT=plain"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("DFX_BULK_TRANSPORT=plain: expected auto or curve"), std::string::npos)
      << bad.err;
  fs::remove_all(dir);
}

// Serve agents on hosts whose spool the coordinator cannot read: after a
// coordinator crash, `gather --attach --bind` sends them a GatherRequest and
// they stream what their spool still holds; they keep serving afterwards.
// An agent whose handshake on the local bulk path is refused after it took
// the offer (here a wrong token; in life, e.g. an agent in another pid
// namespace, whose pid is not the one its HELLO named) streams over CURVE
// instead, at once: the gather neither stalls until --timeout nor loses a byte.
TEST(L3FailureTest, GatherFallsBackToCurveWhenTheBulkPathRefusesTheAgent) {
  DFX_SKIP_WITHOUT_FAULT_HOOKS();
  fs::path dir = TestDir("l3_gather_bulk_refused");
  const fs::path work = dir / "w";
  FakeSpool(work, 2, std::string(3 << 20, 'x'));
  auto r =
      RunCommand({Bin("dfx-coordinator"), "gather", "--work-dir", work.string(), "--timeout", "60"},
                 dir, 120, {"DFX_FAULT_WRONG_BULK_TOKEN=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.err.find("received: 0 over the local bulk path (ipc), 6291458 over CURVE"),
            std::string::npos)
      << r.err;
  // Both sides say why.
  EXPECT_NE(r.err.find("turned away"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("artifacts go over CURVE instead"), std::string::npos) << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(fs::file_size(work / fmt::format("dfx_outputs/rank{}/d0/args_dump/args.bin", rank)),
              (3u << 20) + 1);
  }
  fs::remove_all(dir);
}

TEST(L3FailureTest, GatherAttachCollectsTheSpoolsOfServeAgents) {
  DFX_SKIP_WITHOUT_FAULT_HOOKS();
  fs::path dir = TestDir("l3_gather_attach");
  const fs::path work = dir / "w";
  Process coordinator({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "2", "--attach",
                       "--work-dir", work.string(), "--enable-dep-gen", "--enable-chip-swimlane",
                       "--enable-pmu", "--startup-timeout", "120"},
                      dir, {"DFX_FAULT_COORDINATOR_KILL_AFTER_CHUNKS=2"});
  Json session = WaitSession(work, coordinator);
  ASSERT_TRUE(session.is_object()) << coordinator.err();
  const std::string endpoint = session["endpoint"];
  // Two "hosts": each agent spools where only it can see.
  std::vector<std::unique_ptr<Process>> agents;
  for (int r = 0; r < 2; ++r) {
    agents.push_back(std::make_unique<Process>(
        std::vector<std::string>{
            Bin("dfx-rank-agent"), "serve", "--coordinator", endpoint, "--rank", std::to_string(r),
            "--spool", (dir / ("host" + std::to_string(r))).string(), "--heartbeat-timeout", "2"},
        dir));
  }
  ASSERT_TRUE(coordinator.Wait(120));
  ASSERT_EQ(coordinator.term_signal(), SIGKILL) << coordinator.err();
  const std::string hex = session["session"];
  std::set<std::string> spooled;
  for (int r = 0; r < 2; ++r) {
    for (const auto& f : SpooledArtifacts(dir / ("host" + std::to_string(r)) / hex)) {
      spooled.insert(f);
    }
  }
  ASSERT_FALSE(spooled.empty()) << "nothing left to recover";

  auto g = RunCommand({Bin("dfx-coordinator"), "gather", "--work-dir", work.string(), "--attach",
                       "--bind", endpoint, "--timeout", "60"},
                      dir, 120);
  ASSERT_EQ(g.exit_code, 0) << g.err << g.out;
  for (const auto& f : spooled) {
    // Files still spooled when the gather ran (the agents may have finished
    // streaming some of them to the crashed coordinator's temp names only).
    EXPECT_TRUE(fs::exists(work / "dfx_outputs" / f)) << f << " was spooled but not recovered";
  }
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(Tree(dir / ("host" + std::to_string(r)) / hex).empty())
        << "acknowledged files leave host " << r << "'s spool";
  }
  for (const auto& f : Tree(work / "dfx_outputs"))
    EXPECT_EQ(f.find(".tmp."), std::string::npos) << f;
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  EXPECT_EQ(m["gather"]["status"], "ok");
  for (const auto& a : m["gather"]["recovered"]) {
    auto sum = ChecksumFile(work / "dfx_outputs" / a["path"].get<std::string>());
    ASSERT_TRUE(sum.ok());
    EXPECT_EQ(a["checksum"], "xxh64:" + Hex64(*sum));
  }
  // Serve agents survive the gather; they stop on SIGTERM.
  for (auto& a : agents) {
    EXPECT_FALSE(a->Wait(0));
    a->Signal(SIGTERM);
    ASSERT_TRUE(a->Wait(60));
    EXPECT_EQ(a->exit_code(), 0) << a->err();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dfx::e2e
