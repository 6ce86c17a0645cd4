// A whole attach-mode session in one process: the coordinator (RunSession)
// and its rank agents (rank_agent::RankAgent in serve mode) in threads,
// sharing one ZeroMQ context on an inproc:// endpoint and one FakeClock.
// The clock only moves when the test advances it, in small steps, so the
// live agents heartbeat on time while a silent one runs out of its
// heartbeat timeout.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

#include "collectors/artifact_layout.h"
#include "collectors/run_manifest.h"
#include "common/clock.h"
#include "common/file_util.h"
#include "common/testing/temp_dirs.h"
#include "coordinator/gather.h"
#include "coordinator/plan.h"
#include "coordinator/session.h"
#include "coordinator/testing/loopback.h"
#include "rank_agent/agent.h"

namespace dfx::coordinator {
namespace {

namespace fs = std::filesystem;
using collectors::RankState;

constexpr uint64_t kMs = 1000000;

fs::path Program() { return fs::path(DFX_SOURCE_DIR) / "examples/vector_pipeline.json"; }

Timeouts TestTimeouts() {
  Timeouts t;
  t.heartbeat_interval = Seconds(0.1);
  t.heartbeat_timeout = Seconds(5);
  return t;
}

// A serve agent of `rank` in a thread of its own.
class AgentThread {
 public:
  AgentThread(protocol::Context& context, const std::string& endpoint, int32_t rank,
              const fs::path& spool, const Clock& clock) {
    rank_agent::AgentOptions o;
    o.coordinator = endpoint;
    o.mode = protocol::AgentMode::kServe;
    o.first_rank = rank;
    o.spool_root = spool;
    o.timeouts = TestTimeouts();
    o.chip.virtual_clock = true;
    o.clock = &clock;
    agent_ = std::make_unique<rank_agent::RankAgent>(context, o);
    thread_ = std::thread([this] { (void)agent_->Run(); });
  }
  ~AgentThread() {
    agent_->Stop();
    thread_.join();
  }

 private:
  std::unique_ptr<rank_agent::RankAgent> agent_;
  std::thread thread_;
};

// Advances `clock` by `step_ns` every few real milliseconds until `done`
// is ready, and returns its value.
template <typename T>
T Drive(FakeClock& clock, std::future<T>& done, uint64_t step_ns = 50 * kMs) {
  while (done.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready) {
    clock.AdvanceNs(step_ns);
  }
  return done.get();
}

class SessionInprocTest : public ::testing::Test {
 protected:
  SessionInprocTest()
      : dir_(FreshTestDir("session_inproc_" + std::to_string(::getpid()) + "_" +
                          ::testing::UnitTest::GetInstance()->current_test_info()->name())),
        endpoint_(testing::UniqueInproc("session")) {}

  SessionOptions Options() {
    SessionOptions o;
    o.work_dir = dir_ / "work";
    o.config.enable_dep_gen = true;
    o.ranks = 2;
    o.launcher = Launcher::kAttach;
    o.bind = endpoint_;
    o.timeouts = TestTimeouts();
    o.clock = &clock_;
    o.context = &context_;
    return o;
  }
  std::future<Result<SessionOutcome>> StartSession(const Plan& plan, const SessionOptions& o) {
    return std::async(std::launch::async, [&plan, o] { return RunSession(plan, o); });
  }
  fs::path DfxDir() const { return collectors::DfxOutputsDir(dir_ / "work"); }

  fs::path dir_;
  std::string endpoint_;
  FakeClock clock_{1000 * kMs};
  protocol::Context context_;
};

TEST_F(SessionInprocTest, TwoServeAgentsRunThePlanAndTheArtifactsLandPerRankAndDispatch) {
  auto plan = PlanForProgram(Program());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const SessionOptions options = Options();
  auto session = StartSession(*plan, options);
  AgentThread rank0(context_, endpoint_, 0, dir_ / "spool0", clock_);
  AgentThread rank1(context_, endpoint_, 1, dir_ / "spool1", clock_);
  Result<SessionOutcome> out = Drive(clock_, session);

  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->success) << out->summary;
  for (int rank : {0, 1}) {
    EXPECT_TRUE(fs::exists(DfxDir() / collectors::DispatchDirPath(rank, 0) / collectors::kDepsFile))
        << "rank " << rank;
  }
  auto manifest = collectors::ReadRunManifest(out->manifest_path);
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(manifest->status, collectors::RunState::kOk);
  EXPECT_EQ(manifest->launcher, "attach");
  ASSERT_EQ(manifest->ranks.size(), 2u);
  for (const collectors::RankEntry& r : manifest->ranks) EXPECT_EQ(r.status, RankState::kOk);
}

// Rank 1's agent says HELLO and READY, takes its dispatch and falls silent:
// once the clock passed the heartbeat timeout it is dead, its dispatch
// failed and named, while rank 0 finishes. What it had spooled comes back
// with a gather its serve agent attaches to.
TEST_F(SessionInprocTest, ASilentAgentIsDeclaredDeadAndAGatherRecoversItsSpool) {
  auto plan = PlanForProgram(Program());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const SessionOptions options = Options();
  auto session = StartSession(*plan, options);
  auto rank0 = std::make_unique<AgentThread>(context_, endpoint_, 0, dir_ / "spool0", clock_);

  auto connected = protocol::DealerChannel::Connect(context_, endpoint_, "silent-rank-1");
  ASSERT_TRUE(connected.ok()) << connected.status().ToString();
  std::optional<protocol::DealerChannel> dealer(std::move(*connected));
  auto send = [&](uint64_t session_id, protocol::Body body) {
    static uint64_t sequence = 0;
    ASSERT_TRUE(dealer
                    ->Send(protocol::Message{
                        protocol::Header{protocol::kProtocolVersion, session_id, 1, ++sequence},
                        std::move(body)})
                    .ok());
  };
  // The next message of type T from the coordinator, with its header.
  auto expect = [&](auto tag) -> std::optional<protocol::Message> {
    using T = decltype(tag);
    for (int i = 0; i < 3000; ++i) {
      auto r = dealer->Receive(10);
      if (!r.ok() || !r->frame) continue;
      auto m = protocol::Decode(r->frame->bytes);
      if (m.ok() && std::holds_alternative<T>(m->body)) return std::move(*m);
    }
    return std::nullopt;
  };
  send(0,
       testing::MakeHello({1}, static_cast<uint32_t>(::getpid()), 0, protocol::AgentMode::kServe));
  auto welcome = expect(protocol::Heartbeat{});
  ASSERT_TRUE(welcome.has_value()) << "the coordinator answers HELLO with a heartbeat";
  const uint64_t session_id = welcome->header.session_id;
  send(session_id, protocol::Ready{{"silent chip"}});
  auto dispatch = expect(protocol::Dispatch{});
  ASSERT_TRUE(dispatch.has_value());
  EXPECT_EQ(std::get<protocol::Dispatch>(dispatch->body).rank, 1);

  // From here rank 1 says nothing; the clock runs past its heartbeat timeout.
  Result<SessionOutcome> out = Drive(clock_, session);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_FALSE(out->success);
  EXPECT_NE(out->summary.find("rank 1 failed: its agent"), std::string::npos) << out->summary;
  EXPECT_NE(out->summary.find("rank 1 d0 (vector_pipeline) failed"), std::string::npos)
      << out->summary;
  EXPECT_EQ(out->summary.find("rank 0"), std::string::npos) << out->summary;
  EXPECT_TRUE(fs::exists(DfxDir() / collectors::DispatchDirPath(0, 0) / collectors::kDepsFile));
  auto manifest = collectors::ReadRunManifest(out->manifest_path);
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(manifest->status, collectors::RunState::kFailed);
  ASSERT_EQ(manifest->ranks.size(), 2u);
  EXPECT_EQ(manifest->ranks[0].status, RankState::kOk);
  EXPECT_EQ(manifest->ranks[1].status, RankState::kFailed);

  // What rank 1's agent had spooled before it fell silent: the file it
  // would have streamed, kept until acknowledged.
  const fs::path spool1 = dir_ / "spool1";
  const fs::path spooled = collectors::SessionSpoolDir(spool1, session_id) /
                           collectors::DispatchDirPath(1, 0) / collectors::kDepsFile;
  ASSERT_TRUE(MakeDirs(spooled.parent_path()).ok());
  ASSERT_TRUE(WriteFileAtomic(spooled, R"({"tasks": []})"
                                       "\n")
                  .ok());
  dealer.reset();

  // The gather listens where the run did. A DEALER on inproc:// does not
  // reconnect to a later bind of the same name, so both ranks get fresh
  // serve agents: rank 0's spool is empty, rank 1's offers its file.
  rank0.reset();
  GatherOptions g;
  g.work_dir = dir_ / "work";
  g.attach = true;
  g.bind = endpoint_;
  g.timeouts = TestTimeouts();
  g.bulk_transport = "curve";
  g.clock = &clock_;
  g.context = &context_;
  auto gather = std::async(std::launch::async, [g] { return RunGather(g); });
  AgentThread rank0_again(context_, endpoint_, 0, dir_ / "spool0", clock_);
  AgentThread rank1(context_, endpoint_, 1, spool1, clock_);
  Result<GatherOutcome> recovered = Drive(clock_, gather);
  ASSERT_TRUE(recovered.ok()) << recovered.status().ToString();
  EXPECT_TRUE(recovered->success);
  EXPECT_EQ(recovered->session_id, session_id);
  const std::string rel = collectors::DispatchDirPath(1, 0) + "/" + collectors::kDepsFile;
  EXPECT_EQ(recovered->recovered, std::vector<std::string>{rel});
  auto text = ReadFile(DfxDir() / rel);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "{\"tasks\": []}\n");
  EXPECT_FALSE(fs::exists(spooled)) << "an acknowledged file leaves the spool";
}

}  // namespace
}  // namespace dfx::coordinator
