// A dropped connection is not a dead agent (docs/design.md §9), end to end:
// the real coordinator, real agents (serve agents attached, and agents the
// local launcher starts), each connection through a TCP proxy the test cuts
// and restores (tests/l3/tcp_proxy.h). A cut of 1 s while the agent is idle,
// while a dispatch runs and while an artifact streams ends in a complete,
// verified run whose manifest records the reconnect; a cut longer than
// --reconnect-window fails only that rank, named. The only time bounds are
// generous waits.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/l3/e2e_util.h"
#include "tests/l3/fault_hooks.h"
#include "tests/l3/raw_client.h"
#include "tests/l3/tcp_proxy.h"

namespace dfx::e2e {
namespace {

const fs::path kVector = Source("examples/vector_pipeline.json");
const fs::path kBusy = Source("tests/l3/testdata/busy.json");  // 2 s on its chip
const fs::path kLargeDag = Source("examples/large_dag_2k.json");

// Where the connection is cut.
enum class CutAt { kIdle, kDispatch, kStream };

// A plan: `rank0` then `rank1`, the programs by name ("busy", "vec", "dag").
fs::path WritePlan(const fs::path& dir, const std::vector<std::string>& rank0,
                   const std::vector<std::string>& rank1) {
  std::string steps;
  for (int r = 0; r < 2; ++r) {
    for (const std::string& p : r == 0 ? rank0 : rank1) {
      if (!steps.empty()) steps += ", ";
      steps += fmt::format(R"({{"program": "{}", "rank": {}}})", p, r);
    }
  }
  const fs::path plan = dir / "plan.json";
  EXPECT_TRUE(WriteFileAtomic(
                  plan, fmt::format(R"({{"programs": {{"busy": "{}", "vec": "{}",
      "dag": "{}"}}, "steps": [{}]}})",
                                    kBusy.string(), kVector.string(), kLargeDag.string(), steps))
                  .ok());
  return plan;
}

int PortOf(const std::string& endpoint) {
  return std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
}

std::string DispatchState(const fs::path& work, const std::string& dir) {
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  if (!m.is_object()) return "";
  for (const auto& d : m["dispatches"]) {
    if (d["dir"] == dir) return d["status"].get<std::string>();
  }
  return "";
}

// Files of rank<N>/d<K>/ arriving (a temporary name counts).
bool Streaming(const fs::path& work, const std::string& dir) {
  for (const std::string& f : Tree(work / "dfx_outputs" / dir)) {
    if (f != "dispatch_program.json") return true;
  }
  return false;
}

// Every dispatch ok, every artifact on disk with the manifest's size and
// XXH64, nothing under a temporary name.
void ExpectVerifiedRun(const fs::path& work) {
  const fs::path out = work / "dfx_outputs";
  Json m = LoadJson(out / "run_manifest.json");
  ASSERT_TRUE(m.is_object());
  EXPECT_EQ(m["status"], "ok");
  for (const auto& d : m["dispatches"]) {
    EXPECT_EQ(d["status"], "ok") << d.dump();
    EXPECT_EQ(d["artifacts"].size(), d["artifact_count"].get<size_t>()) << d.dump();
    for (const auto& a : d["artifacts"]) {
      const fs::path p = out / a["path"].get<std::string>();
      EXPECT_EQ(a["status"], "ok") << a.dump();
      ASSERT_TRUE(fs::exists(p)) << p;
      EXPECT_EQ(a["size"].get<uint64_t>(), fs::file_size(p)) << p;
      auto sum = ChecksumFile(p);
      ASSERT_TRUE(sum.ok());
      EXPECT_EQ(a["checksum"], "xxh64:" + Hex64(*sum)) << p;
    }
  }
  for (const auto& f : Tree(out)) EXPECT_EQ(f.find(".tmp."), std::string::npos) << f;
}

struct Cut {
  CutAt at = CutAt::kDispatch;
  int seconds = 1;
};

// The plan and coordinator environment of a cut at `at` (on rank 1).
std::vector<std::string> Rank1Steps(CutAt at) {
  switch (at) {
    case CutAt::kIdle:
      return {"vec"};  // done long before rank 0's three busy dispatches are
    case CutAt::kDispatch:
      return {"busy", "busy", "busy"};
    case CutAt::kStream:
      return {"dag", "dag", "dag"};
  }
  return {};
}

// Waits until rank 1 is where `at` says, then cuts its proxy for `seconds`.
void CutRank1(const fs::path& work, Process& coordinator, TcpProxy& proxy, const Cut& cut) {
  const auto ready = [&] {
    switch (cut.at) {
      case CutAt::kIdle:
        return DispatchState(work, "rank1/d0") == "ok";
      case CutAt::kDispatch:
        return fs::exists(work / "dfx_outputs/rank1/d1/dispatch_program.json");
      case CutAt::kStream:
        return Streaming(work, "rank1/d1");
    }
    return false;
  };
  ASSERT_TRUE(WaitFor(ready, 120)) << coordinator.err();
  if (cut.at == CutAt::kDispatch) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  proxy.Cut();
  std::this_thread::sleep_for(std::chrono::seconds(cut.seconds));
  ASSERT_TRUE(proxy.Restore()) << "the proxy's port was taken meanwhile";
}

// Two serve agents, each through its own proxy; rank 1's is cut.
void AttachedCut(const std::string& name, const Cut& cut, const std::string& window) {
  fs::path dir = TestDir(name);
  const fs::path work = dir / "w";
  const fs::path plan = WritePlan(dir, {"busy", "busy", "busy"}, Rank1Steps(cut.at));
  std::vector<std::string> env;
  std::vector<std::string> argv_extra;
  // A slow disk on the coordinator's side: each chunk write takes 300 ms,
  // so rank 1's artifacts are still streaming when the cut comes.
  if (cut.at == CutAt::kStream) env.push_back("DFX_FAULT_COORDINATOR_WRITE_DELAY_MS=300");
  // Full args dumps: files of several chunks, so the cut comes inside one.
  if (cut.at == CutAt::kStream) argv_extra = {"--dump-args", "2"};
  std::vector<std::string> argv = {Bin("dfx-coordinator"),
                                   "run",
                                   plan.string(),
                                   "--ranks",
                                   "2",
                                   "--attach",
                                   "--work-dir",
                                   work.string(),
                                   "--enable-dep-gen",
                                   "--enable-chip-swimlane",
                                   "--enable-pmu",
                                   "--startup-timeout",
                                   "120"};
  if (!window.empty()) argv.insert(argv.end(), {"--reconnect-window", window});
  argv.insert(argv.end(), argv_extra.begin(), argv_extra.end());
  Process coordinator(argv, dir, env);
  Json session = WaitSession(work, coordinator);
  ASSERT_TRUE(session.is_object()) << coordinator.err();
  const int port = PortOf(session["endpoint"].get<std::string>());
  std::vector<std::unique_ptr<TcpProxy>> proxies;
  std::vector<std::unique_ptr<Process>> agents;
  for (int r = 0; r < 2; ++r) {
    proxies.push_back(std::make_unique<TcpProxy>(port));
    ASSERT_NE(proxies.back()->port(), 0);
    agents.push_back(std::make_unique<Process>(
        std::vector<std::string>{Bin("dfx-rank-agent"), "serve", "--coordinator",
                                 proxies.back()->endpoint(), "--rank", std::to_string(r), "--spool",
                                 (dir / fmt::format("spool{}", r)).string(), "--log-level", "info"},
        dir));
  }
  CutRank1(work, coordinator, *proxies[1], cut);
  ASSERT_TRUE(coordinator.Wait(240)) << coordinator.err();
  const std::string err = coordinator.err();
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  ASSERT_TRUE(m.is_object()) << err;
  if (cut.seconds <= 1) {
    EXPECT_EQ(coordinator.exit_code(), 0) << err << agents[1]->err();
    ExpectVerifiedRun(work);
    ASSERT_TRUE(m["ranks"][1]["reconnects"].is_array()) << m["ranks"][1].dump() << err;
    ASSERT_GE(m["ranks"][1]["reconnects"].size(), 1u);
    EXPECT_GT(m["ranks"][1]["reconnects"][0]["gap_ns"].get<uint64_t>(), 0u);
    // The figure README "Networks and failures" quotes: cut to resumed.
    std::printf("%s: rank 1 was away %.3f s for a %d s cut\n", name.c_str(),
                m["ranks"][1]["reconnects"][0]["gap_ns"].get<uint64_t>() / 1e9, cut.seconds);
    EXPECT_FALSE(m["ranks"][0].contains("reconnects")) << m["ranks"][0].dump();
    EXPECT_NE(err.find("is back after"), std::string::npos) << err;
    if (cut.at == CutAt::kStream) {
      // The stream under way went on from where the coordinator held it.
      EXPECT_EQ(err.find("resuming 0 stream(s)"), std::string::npos) << err;
      EXPECT_EQ(err.find("(0 open with"), std::string::npos) << err;
    }
    if (cut.at == CutAt::kDispatch) {
      EXPECT_NE(err.find("and 1 dispatch(es)"), std::string::npos) << err;
    }
    // Nothing ran twice: each of rank 1's dispatches finished once on its agent.
    const std::string agent_log = agents[1]->err();
    for (size_t k = 0; k < Rank1Steps(cut.at).size(); ++k) {
      const std::string line = fmt::format("rank 1 d{}: done", k);
      size_t count = 0;
      for (size_t at = agent_log.find(line); at != std::string::npos;
           at = agent_log.find(line, at + 1)) {
        ++count;
      }
      EXPECT_EQ(count, 1u) << line << "\n" << agent_log;
    }
    // Nothing lost: every acknowledged file left the spools.
    const std::string hex = session["session"];
    for (int r = 0; r < 2; ++r) {
      EXPECT_TRUE(SpooledArtifacts(dir / fmt::format("spool{}", r) / hex).empty()) << r;
    }
  } else {
    EXPECT_EQ(coordinator.exit_code(), 1) << err;
    EXPECT_EQ(m["status"], "failed");
    EXPECT_EQ(m["ranks"][0]["status"], "ok") << m["ranks"][0].dump();
    EXPECT_EQ(m["ranks"][1]["status"], "failed");
    const std::string why = m["ranks"][1]["error"].get<std::string>();
    EXPECT_NE(why.find("rank 1"), std::string::npos) << why;
    EXPECT_NE(why.find("did not come back within " + window + " s"), std::string::npos) << why;
    for (const auto& d : m["dispatches"]) {
      if (d["rank"] == 0) EXPECT_EQ(d["status"], "ok") << d.dump();
    }
  }
  for (auto& a : agents) {
    a->Signal(SIGTERM);
    EXPECT_TRUE(a->Wait(60));
  }
  fs::remove_all(dir);
}

// A free loopback port for the coordinator, which the local launcher's
// agents reach only through the proxy (--advertise).
int FreePort() {
  TcpProxy probe(0);
  return probe.port();
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Agents the local launcher starts, dialling the coordinator through one
// proxy (--advertise): a 1 s cut mid-dispatch drops both; both come back.
TEST(ReconnectTest, LaunchedAgentsComeBackAfterAOneSecondCut) {
  fs::path dir = TestDir("rc_local");
  const fs::path work = dir / "w";
  const int port = FreePort();
  ASSERT_NE(port, 0);
  TcpProxy proxy(port);
  ASSERT_NE(proxy.port(), 0);
  const fs::path plan = WritePlan(dir, {"busy", "busy", "busy"}, {"busy", "busy", "busy"});
  Process coordinator({Bin("dfx-coordinator"), "run", plan.string(), "--ranks", "2", "--launcher",
                       "local", "--bind", fmt::format("tcp://127.0.0.1:{}", port), "--advertise",
                       proxy.endpoint(), "--work-dir", work.string(), "--enable-dep-gen",
                       "--enable-chip-swimlane", "--enable-pmu", "--agent-log-level", "info"},
                      dir);
  Json session = WaitSession(work, coordinator);
  ASSERT_TRUE(session.is_object()) << coordinator.err();
  CutRank1(work, coordinator, proxy, {CutAt::kDispatch, 1});
  ASSERT_TRUE(coordinator.Wait(240)) << coordinator.err();
  const std::string err = coordinator.err();
  EXPECT_EQ(coordinator.exit_code(), 0) << err;
  ExpectVerifiedRun(work);
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(m["ranks"][r]["reconnects"].is_array()) << m["ranks"][r].dump() << err;
    EXPECT_GE(m["ranks"][r]["reconnects"].size(), 1u);
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(Count(err, fmt::format("rank {} d{}: done", r, k)), 1u) << r << k << "\n" << err;
    }
  }
  fs::remove_all(dir);
}

// The proof: a reconnect HELLO as an admitted agent (same identity, pid,
// session, ranks) but without the token of its first Resume is turned away
// with a bare reason; with the token the agent is taken back and told where
// things stand.
TEST(ReconnectTest, AReconnectWithoutTheTokenIsRefused) {
  fs::path dir = TestDir("rc_token");
  const fs::path work = dir / "w";
  Process coordinator({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "1", "--attach",
                       "--work-dir", work.string(), "--enable-dep-gen", "--startup-timeout", "30"},
                      dir);
  Json session = WaitSession(work, coordinator);
  ASSERT_TRUE(session.is_object()) << coordinator.err();
  const std::string endpoint = session["endpoint"];
  protocol::Context context;
  const std::string identity = "rank-0.test";
  auto first = protocol::DealerChannel::Connect(context, endpoint, identity, {});
  ASSERT_TRUE(first.ok());
  protocol::Hello hello;
  hello.ranks = {0};
  hello.chips = 1;
  hello.pid = 4242;
  hello.host = "raw";
  hello.mode = protocol::AgentMode::kServe;
  ASSERT_TRUE(
      first->Send(protocol::Message{protocol::Header{protocol::kProtocolVersion, 0, 0, 1}, hello})
          .ok());
  auto token = ReceiveA<protocol::Resume>(*first, 30);
  ASSERT_TRUE(token.has_value()) << coordinator.err();
  EXPECT_FALSE(token->second.token.empty());
  const uint64_t sid = token->first.session_id;
  *first = protocol::DealerChannel();  // the connection drops

  const auto reconnect = [&](const std::string& with) {
    auto again = protocol::DealerChannel::Connect(context, endpoint, identity, {});
    EXPECT_TRUE(again.ok());
    protocol::Hello back = hello;
    back.session_id = sid;
    back.reconnect = true;
    back.resume_token = with;
    EXPECT_TRUE(
        again
            ->Send(protocol::Message{protocol::Header{protocol::kProtocolVersion, sid, 0, 2}, back})
            .ok());
    return ReceiveMessage(*again, 30);
  };
  auto refused = reconnect(std::string(token->second.token.size(), '0'));
  ASSERT_TRUE(refused.has_value());
  ASSERT_TRUE(std::holds_alternative<protocol::Error>(refused->body));
  EXPECT_EQ(std::get<protocol::Error>(refused->body).code, protocol::ErrorCode::kDuplicateRank);
  EXPECT_EQ(refused->header.session_id, 0u) << "a refused peer learns nothing of the run";
  auto taken = reconnect(token->second.token);
  ASSERT_TRUE(taken.has_value());
  ASSERT_TRUE(std::holds_alternative<protocol::Resume>(taken->body)) << coordinator.err();
  EXPECT_TRUE(std::get<protocol::Resume>(taken->body).reconnected);
  coordinator.Signal(SIGTERM);
  EXPECT_TRUE(coordinator.Wait(60));
  fs::remove_all(dir);
}

TEST(ReconnectTest, OneSecondCutWhileIdleResumes) { AttachedCut("rc_idle", {CutAt::kIdle, 1}, ""); }

TEST(ReconnectTest, OneSecondCutMidDispatchResumes) {
  AttachedCut("rc_dispatch", {CutAt::kDispatch, 1}, "");
}

TEST(ReconnectTest, OneSecondCutMidStreamResumes) {
  DFX_SKIP_WITHOUT_FAULT_HOOKS();  // the stream is slowed by DFX_FAULT_COORDINATOR_WRITE_DELAY_MS
  AttachedCut("rc_stream", {CutAt::kStream, 1}, "");
}

TEST(ReconnectTest, CutLongerThanTheWindowFailsOnlyThatRank) {
  AttachedCut("rc_long", {CutAt::kDispatch, 6}, "2");
}

}  // namespace
}  // namespace dfx::e2e
