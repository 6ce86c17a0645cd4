#include "coordinator/capture_policy.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/testing/temp_dirs.h"
#include "coordinator/capture_control.h"

namespace dfx::coordinator {
namespace {

TEST(IndexList, ParsesNumbersAndRanges) {
  auto list = ParseIndexList("--capture-ranks", "0,3-5,9");
  ASSERT_TRUE(list.ok()) << list.status().message();
  for (uint32_t i : {0u, 3u, 4u, 5u, 9u}) EXPECT_TRUE(list->Contains(i)) << i;
  for (uint32_t i : {1u, 2u, 6u, 8u, 10u}) EXPECT_FALSE(list->Contains(i)) << i;
  EXPECT_EQ(list->Max(), 9u);
  EXPECT_EQ(list->text, "0,3-5,9");
}

TEST(IndexList, ErrorsNameTheFlagAndTheBadPart) {
  auto backwards = ParseIndexList("--capture-ranks", "0,3-1");
  ASSERT_FALSE(backwards.ok());
  EXPECT_EQ(backwards.status().message(),
            "--capture-ranks: '3-1' is not a range (write LOW-HIGH with LOW <= HIGH)");
  for (const char* bad : {"", "1,,2", "x", "1-", "-3", "1 2", "-", "99999999999", "1,2,"}) {
    auto r = ParseIndexList("--capture-dispatches", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message().rfind("--capture-dispatches: ", 0), 0u) << r.status().message();
  }
  EXPECT_NE(ParseIndexList("--ranks", "x7").status().message().find("'x7'"), std::string::npos);
}

std::vector<PlannedDispatch> Planned(int ranks, uint32_t per_rank) {
  std::vector<PlannedDispatch> out;
  for (uint32_t k = 0; k < per_rank; ++k)
    for (int r = 0; r < ranks; ++r) out.push_back({r, k, "p", 0});
  return out;
}

TEST(CheckSelection, RefusesRanksAndDispatchesOutsideTheRun) {
  CaptureSelection s;
  s.ranks = *ParseIndexList("--capture-ranks", "1,7");
  Status st = CheckSelection(s, 4, Planned(4, 3));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("rank 7 does not exist in a run of --ranks 4"), std::string::npos);
  s.ranks = *ParseIndexList("--capture-ranks", "1,3");
  s.dispatches = *ParseIndexList("--capture-dispatches", "1-3");
  st = CheckSelection(s, 4, Planned(4, 3));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("d3 does not exist"), std::string::npos) << st.message();
  s.dispatches = *ParseIndexList("--capture-dispatches", "1-2");
  EXPECT_TRUE(CheckSelection(s, 4, Planned(4, 3)).ok());
}

config::RunConfig Swimlane(int level) {
  config::RunConfig c;
  c.enable_chip_swimlane = level;
  c.Normalize();
  return c;
}

TEST(CapturePolicy, SelectionTurnsCollectorsOffElsewhereAndSaysWhy) {
  CaptureSelection s;
  s.ranks = *ParseIndexList("--capture-ranks", "1,3");
  s.dispatches = *ParseIndexList("--capture-dispatches", "1-2");
  CapturePolicy policy(Swimlane(4), s, {std::nullopt}, 4, true);
  auto in = policy.Decide(1, 2, 0, config::PassKind::kSingle);
  EXPECT_TRUE(in.capture.captured);
  EXPECT_EQ(in.capture.by, "run");
  EXPECT_EQ(in.armed.enable_chip_swimlane, 4);
  EXPECT_TRUE(in.armed.enable_dep_gen);  // L3 sim co-enables dep_gen with the swimlane
  auto other_rank = policy.Decide(0, 1, 0, config::PassKind::kSingle);
  EXPECT_FALSE(other_rank.capture.captured);
  EXPECT_EQ(other_rank.capture.by, "--capture-ranks 1,3");
  EXPECT_FALSE(other_rank.armed.AnyDfx());
  auto other_k = policy.Decide(3, 0, 0, config::PassKind::kSingle);
  EXPECT_FALSE(other_k.capture.captured);
  EXPECT_EQ(other_k.capture.by, "--capture-dispatches 1-2");
}

TEST(CapturePolicy, StepConfigOverridesTheRunsAndPassesArmIt) {
  config::RunConfig run = Swimlane(4);
  run.execution_mode = config::ExecutionMode::kOnboard;
  config::RunConfig step = run;
  step.enable_pmu = 4;
  step.enable_chip_swimlane = 0;
  CapturePolicy policy(run, {}, {std::nullopt, StepConfig{step, "plan $.steps[1].run_config"}}, 2,
                       true);
  auto own = policy.Decide(0, 1, 1, config::PassKind::kTiming);
  EXPECT_EQ(own.capture.by, "plan $.steps[1].run_config");
  EXPECT_EQ(own.armed.enable_pmu, 4);
  EXPECT_EQ(own.armed.enable_chip_swimlane, 0);
  auto graph = policy.Decide(0, 0, 0, config::PassKind::kGraph);
  EXPECT_TRUE(graph.armed.enable_dep_gen);
  EXPECT_EQ(graph.armed.enable_chip_swimlane, 0);
}

TEST(CapturePolicy, ChangesApplyToTheirRanksForTheirNextDispatchesAndAreRecorded) {
  CapturePolicy policy(Swimlane(4), {}, {std::nullopt}, 4, true);
  CaptureRequest req;
  req.ranks = *ParseIndexList("--ranks", "0-1");
  req.next = 2;
  req.set = Json{{"enable_chip_swimlane", 2}};
  req.command = "dfx-coordinator capture W --ranks 0-1 --next 2 --enable-chip-swimlane 2";
  auto id = policy.Apply(req, {5, 1700000000000, 4242, 1000});
  ASSERT_TRUE(id.ok()) << id.status().message();
  EXPECT_EQ(*id, 1u);
  auto a = policy.Decide(0, 0, 0, config::PassKind::kSingle);
  EXPECT_EQ(a.armed.enable_chip_swimlane, 2);
  EXPECT_EQ(a.capture.by, "capture change 1");
  EXPECT_EQ(policy.Decide(2, 0, 0, config::PassKind::kSingle).armed.enable_chip_swimlane, 4);
  EXPECT_EQ(policy.Decide(0, 1, 0, config::PassKind::kSingle).armed.enable_chip_swimlane, 2);
  EXPECT_EQ(policy.Decide(0, 2, 0, config::PassKind::kSingle).armed.enable_chip_swimlane, 4);
  ASSERT_EQ(policy.changes().size(), 1u);
  const auto& c = policy.changes()[0];
  EXPECT_EQ(c.pid, 4242);
  EXPECT_EQ(c.uid, 1000);
  EXPECT_EQ(c.request, req.command);
  ASSERT_EQ(c.applied_to.size(), 2u);
  EXPECT_EQ(c.applied_to[1].k, 1u);

  CaptureRequest off;
  off.set = Json{{"enable_chip_swimlane", 0}, {"enable_dep_gen", false}};
  ASSERT_TRUE(policy.Apply(off, {}).ok());
  auto none = policy.Decide(3, 0, 0, config::PassKind::kSingle);
  EXPECT_FALSE(none.capture.captured);
  EXPECT_EQ(none.capture.by, "capture change 2");
  CaptureRequest reset;
  reset.reset = true;
  ASSERT_TRUE(policy.Apply(reset, {}).ok());
  EXPECT_TRUE(policy.Decide(3, 1, 0, config::PassKind::kSingle).capture.captured);
}

TEST(CapturePolicy, RefusesWhatTheRunCannotDo) {
  CapturePolicy plain(config::RunConfig{}, {}, {std::nullopt}, 2, /*may_capture=*/false);
  CaptureRequest on;
  on.set = Json{{"enable_pmu", 2}};
  auto r = plain.Apply(on, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no dfx_outputs/"), std::string::npos);
  CaptureRequest far;
  far.ranks = *ParseIndexList("--ranks", "0-5");
  far.set = Json{{"enable_pmu", 0}};
  EXPECT_NE(plain.Apply(far, {}).status().message().find("rank 5 does not exist"),
            std::string::npos);
  EXPECT_FALSE(plain.Apply(CaptureRequest{}, {}).ok());
}

TEST(CaptureRequest, RoundTripsAndIsParsedStrictly) {
  CaptureRequest req;
  req.ranks = *ParseIndexList("--ranks", "0-3");
  req.next = 3;
  req.set = Json{{"enable_chip_swimlane", 2}};
  req.command = "x";
  auto back = CaptureRequestFromJson(CaptureRequestToJson(req));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->ranks->text, "0-3");
  EXPECT_EQ(*back->next, 3u);
  EXPECT_EQ(back->set, req.set);
  EXPECT_FALSE(CaptureRequestFromJson(Json{{"bogus", 1}}).ok());
  EXPECT_FALSE(CaptureRequestFromJson(Json{{"set", {{"backend_type", "a5"}}}}).ok());
  EXPECT_FALSE(CaptureRequestFromJson(Json{{"set", {{"enable_pmu", 3}}}}).ok());
  EXPECT_FALSE(CaptureRequestFromJson(Json{{"next", 0}}).ok());
  EXPECT_FALSE(CaptureRequestFromJson(Json::array()).ok());
}

TEST(CaptureControl, AnswersTheOwnerAndSaysWhenNoRunIsGoing) {
  const auto dir = FreshTestDir("capture_control_test");
  auto none = SendControlRequest(dir, Json{{"status", true}}, 1000);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no run is going in"), std::string::npos);
  auto server = CaptureControlServer::Open(dir);
  ASSERT_TRUE(server.ok()) << server.status().message();
  // The client blocks until answered: serve from a thread meanwhile.
  std::atomic<bool> stop{false};
  std::thread serving([&] {
    while (!stop) {
      server->Poll([](const Json& request, const CaptureControlServer::Peer& peer) {
        return Json{{"ok", true}, {"echo", request}, {"uid", peer.uid}};
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  auto answer = SendControlRequest(dir, Json{{"status", true}}, 5000);
  stop = true;
  serving.join();
  ASSERT_TRUE(answer.ok()) << answer.status().message();
  EXPECT_EQ((*answer)["echo"]["status"], true);
  struct stat st {};
  ASSERT_EQ(::stat((dir / kControlDirName).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  server->Close();
  EXPECT_FALSE(std::filesystem::exists(dir / kControlDirName));
}

}  // namespace
}  // namespace dfx::coordinator
