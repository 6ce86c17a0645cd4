#include "coordinator/dispatch_scheduler.h"

#include <gtest/gtest.h>

namespace dfx::coordinator {
namespace {

using collectors::DispatchState;
using collectors::RankState;

std::vector<PlannedDispatch> TwoRanksTwoEach() {
  return {{0, 0, "a"}, {1, 0, "a"}, {0, 1, "b"}, {1, 1, "b"}};
}

// Both ranks ready, pass 0 begun: sends each rank's first dispatch and
// returns their indices in send order.
std::vector<size_t> SendFirstPassToBothRanks(DispatchScheduler& s) {
  s.MarkReady(0);
  s.MarkReady(1);
  std::vector<size_t> sent;
  s.BeginPass(0);
  s.SendReady([&](size_t index, const config::PassPlan&) {
    sent.push_back(index);
    return Status::Ok();
  });
  return sent;
}

struct Sent {
  size_t index;
  config::PassKind pass;
};

TEST(DispatchSchedulerTest, OneInFlightPerRankInPlanOrderRanksInParallel) {
  FakeClock clock(100);
  DispatchScheduler s(2, config::PlanPasses({}, true), TwoRanksTwoEach(), clock);
  ASSERT_EQ(s.dispatches().size(), 4u);
  EXPECT_TRUE(s.AnyWaiting());
  s.MarkReady(0);
  s.MarkReady(1);
  EXPECT_FALSE(s.AnyWaiting());
  std::vector<Sent> sent;
  auto send = [&](size_t index, const config::PassPlan& pass) {
    sent.push_back({index, pass.kind});
    return Status::Ok();
  };
  s.BeginPass(0);
  s.SendReady(send);
  ASSERT_EQ(sent.size(), 2u);  // d0 of both ranks, nothing more
  EXPECT_EQ(s.dispatches()[sent[0].index].k, 0u);
  EXPECT_EQ(s.dispatches()[sent[1].index].k, 0u);
  EXPECT_EQ(s.dispatches()[sent[0].index].status, DispatchState::kSent);
  s.SendReady(send);
  EXPECT_EQ(sent.size(), 2u) << "one dispatch in flight per chip";
  s.OnAccepted(0, 0);
  EXPECT_EQ(*s.InFlight(0, 0), sent[0].index);
  EXPECT_EQ(s.dispatches()[sent[0].index].status, DispatchState::kRunning);
  clock.AdvanceNs(50);
  EXPECT_TRUE(s.OnDone(protocol::DispatchDone{0, 0, protocol::DispatchStatus::kOk, "", 12}));
  EXPECT_FALSE(s.OnDone(protocol::DispatchDone{0, 0, protocol::DispatchStatus::kOk}))
      << "not in flight any more";
  EXPECT_EQ(s.dispatches()[sent[0].index].tasks_executed, 12u);
  EXPECT_EQ(s.dispatches()[sent[0].index].end_ns, 150u);
  s.SendReady(send);
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(s.dispatches()[sent[2].index].rank, 0);
  EXPECT_EQ(s.dispatches()[sent[2].index].k, 1u);
  EXPECT_TRUE(s.Busy());
}

// An agent may hold DispatchAccepted back until its DispatchDone: the
// acceptance is dated when the agent says it was, never before the send.
TEST(DispatchSchedulerTest, AHeldAcceptanceIsDatedWhenTheAgentAccepted) {
  FakeClock clock(100);
  DispatchScheduler s(2, config::PlanPasses({}, true), TwoRanksTwoEach(), clock);
  const std::vector<size_t> sent = SendFirstPassToBothRanks(s);
  ASSERT_EQ(sent.size(), 2u);
  clock.AdvanceNs(50);
  s.OnAccepted(0, 0, 30);
  s.OnAccepted(1, 0, 1000);  // claims to predate the send
  EXPECT_EQ(s.dispatches()[sent[0]].accepted_ns, 120u);
  EXPECT_EQ(s.dispatches()[sent[0]].status, DispatchState::kRunning);
  EXPECT_EQ(s.dispatches()[sent[1]].accepted_ns, 100u);
  ASSERT_TRUE(s.OnDone(protocol::DispatchDone{0, 0, protocol::DispatchStatus::kOk, ""}));
  EXPECT_EQ(s.dispatches()[sent[0]].end_ns, 150u);
}

// A failed dispatch is "failed": the record says it once ("failed:
// failed: rank 0 d0: ..." before; the agent now sends the reason alone); a
// rejection keeps its word. The host-lane times follow the clock.
TEST(DispatchSchedulerTest, ADispatchErrorSaysFailedAndNamesTheDispatchOnce) {
  FakeClock clock(100);
  DispatchScheduler s(2, config::PlanPasses({}, true), TwoRanksTwoEach(), clock);
  const std::vector<size_t> sent = SendFirstPassToBothRanks(s);
  ASSERT_EQ(sent.size(), 2u);
  clock.AdvanceNs(10);
  s.OnAccepted(0, 0);
  clock.AdvanceNs(10);
  s.OnStreamBegun(sent[0]);
  clock.AdvanceNs(10);
  s.OnArtifactVerified(sent[0]);
  const auto& d0 = s.dispatches()[sent[0]];
  EXPECT_EQ(d0.start_ns, 100u);
  EXPECT_EQ(d0.accepted_ns, 110u);
  EXPECT_EQ(d0.stream_ns, 120u);
  EXPECT_EQ(d0.verified_ns, 130u);
  ASSERT_TRUE(s.OnDone(
      protocol::DispatchDone{0, 0, protocol::DispatchStatus::kFailed, "kernel \"boom\" failed"}));
  EXPECT_EQ(s.dispatches()[sent[0]].status, DispatchState::kFailed);
  EXPECT_EQ(s.dispatches()[sent[0]].error, "kernel \"boom\" failed");
  ASSERT_TRUE(s.OnDone(protocol::DispatchDone{1, 0, protocol::DispatchStatus::kRejected,
                                              "the program does not parse"}));
  EXPECT_EQ(s.dispatches()[sent[1]].error, "rejected: the program does not parse");
}

TEST(DispatchSchedulerTest, AFailedRankFailsWhatIsInFlightAndSkipsTheRest) {
  FakeClock clock;
  config::RunConfig onboard;
  onboard.execution_mode = config::ExecutionMode::kOnboard;
  onboard.enable_chip_swimlane = 4;
  DispatchScheduler s(2, config::PlanPasses(onboard, true), TwoRanksTwoEach(), clock);
  ASSERT_EQ(s.dispatches().size(), 8u) << "graph + timing pass";
  std::vector<std::pair<size_t, std::string>> finished;
  s.set_on_finished([&](size_t i, const std::string& e) { finished.push_back({i, e}); });
  s.MarkReady(0);
  s.MarkReady(1);
  s.BeginPass(0);
  s.SendReady([](size_t, const config::PassPlan&) { return Status::Ok(); });
  s.FailRank(1, "agent rank-1 died: killed");
  EXPECT_EQ(s.ranks()[1].status, RankState::kFailed);
  // Its in-flight d0 failed, its queued d1 did not run.
  ASSERT_EQ(finished.size(), 2u);
  EXPECT_EQ(s.dispatches()[finished[0].first].status, DispatchState::kFailed);
  EXPECT_NE(s.dispatches()[finished[0].first].error.find("in flight when agent rank-1 died"),
            std::string::npos);
  EXPECT_EQ(s.dispatches()[finished[1].first].status, DispatchState::kNotRun);
  // The next pass skips the failed rank entirely.
  s.OnDone(protocol::DispatchDone{0, 0, protocol::DispatchStatus::kOk});
  s.SendReady([](size_t, const config::PassPlan&) { return Status::Ok(); });
  s.OnDone(protocol::DispatchDone{0, 1, protocol::DispatchStatus::kOk});
  EXPECT_FALSE(s.Busy());
  s.BeginPass(1);
  size_t not_run = 0;
  for (const auto& d : s.dispatches()) {
    if (d.pass == config::PassKind::kTiming && d.rank == 1) {
      not_run += d.status == DispatchState::kNotRun;
    }
  }
  EXPECT_EQ(not_run, 2u);
  s.CompleteRanks();
  EXPECT_EQ(s.ranks()[0].status, RankState::kOk);
  EXPECT_EQ(s.ranks()[1].status, RankState::kFailed) << "a failed rank stays failed";
}

// A dispatch whose files its agent kept in its spool is "in_spool", not
// failed: after a pause (FailRank with a spool check) and after a stop
// signal (Interrupt), which also leaves nothing pending in any pass.
TEST(DispatchSchedulerTest, WhatASpoolHoldsIsInSpoolNotFailed) {
  FakeClock clock;
  config::RunConfig onboard;
  onboard.execution_mode = config::ExecutionMode::kOnboard;
  onboard.enable_chip_swimlane = 4;
  DispatchScheduler s(2, config::PlanPasses(onboard, true), TwoRanksTwoEach(), clock);
  SendFirstPassToBothRanks(s);
  const DispatchScheduler::SpoolCheck rank1_spooled = [](int32_t rank, uint32_t k) {
    return rank == 1 && k == 0;
  };
  s.FailRank(1, "its agent gave up while this coordinator was paused", rank1_spooled);
  EXPECT_EQ(s.dispatches()[1].status, DispatchState::kInSpool);
  EXPECT_NE(s.dispatches()[1].error.find("in the agent's spool"), std::string::npos);
  EXPECT_EQ(s.dispatches()[3].status, DispatchState::kNotRun);
  EXPECT_TRUE(s.AnyInFlight()) << "rank 0's d0";
  s.Interrupt("the coordinator was stopped by SIGINT", {});
  EXPECT_FALSE(s.AnyInFlight());
  EXPECT_EQ(s.ranks()[0].status, RankState::kInterrupted);
  EXPECT_EQ(s.ranks()[1].status, RankState::kFailed) << "a failed rank stays failed";
  EXPECT_EQ(s.dispatches()[0].status, DispatchState::kInterrupted) << "no file of it arrived";
  EXPECT_EQ(s.dispatches()[2].status, DispatchState::kNotRun);
  for (size_t i = 4; i < s.dispatches().size(); ++i) {
    EXPECT_EQ(s.dispatches()[i].status, DispatchState::kNotRun) << "timing pass, " << i;
  }
  // An ok dispatch missing artifacts that a spool holds is "in_spool" too.
  DispatchScheduler t(1, config::PlanPasses(config::RunConfig{}, true), {{0, 0, "a"}}, clock);
  t.MarkReady(0);
  t.BeginPass(0);
  t.SendReady([](size_t, const config::PassPlan&) { return Status::Ok(); });
  protocol::DispatchDone done{0, 0, protocol::DispatchStatus::kOk};
  done.artifact_count = 2;
  t.OnDone(done);
  t.ReconcileArtifacts([](int32_t, uint32_t) { return true; });
  EXPECT_EQ(t.dispatches()[0].status, DispatchState::kInSpool);
  EXPECT_NE(t.dispatches()[0].error.find("0 of the 2"), std::string::npos);
}

TEST(DispatchSchedulerTest, ADispatchPastItsBudgetFailsItsRankOnTheFakeClock) {
  FakeClock clock;
  DispatchScheduler s(2, config::PlanPasses({}, true), TwoRanksTwoEach(), clock);
  s.MarkReady(0);
  s.MarkReady(1);
  s.BeginPass(0);
  s.SendReady([](size_t, const config::PassPlan&) { return Status::Ok(); });
  clock.AdvanceNs(5);
  s.OnDone(protocol::DispatchDone{1, 0, protocol::DispatchStatus::kOk});
  s.SendReady([](size_t, const config::PassPlan&) { return Status::Ok(); });
  EXPECT_TRUE(s.ExpireInFlight(10, "exceeded --dispatch-timeout").empty());
  clock.AdvanceNs(8);  // rank 0's d0 is 13 ns old, rank 1's d1 only 8
  auto expired = s.ExpireInFlight(10, "exceeded --dispatch-timeout");
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0], std::make_pair(0, 0u));
  EXPECT_EQ(s.ranks()[0].status, RankState::kFailed);
  EXPECT_NE(s.ranks()[0].error.find("dispatch d0 exceeded --dispatch-timeout"), std::string::npos);
  EXPECT_EQ(s.ranks()[1].status, RankState::kReady);
}

TEST(DispatchSchedulerTest, ASendErrorFailsThatDispatch) {
  FakeClock clock;
  DispatchScheduler s(1, config::PlanPasses({}, true), {{0, 0, "a"}}, clock);
  s.MarkReady(0);
  s.BeginPass(0);
  s.SendReady(
      [](size_t, const config::PassPlan&) { return Unavailable("rank has no live agent"); });
  EXPECT_EQ(s.dispatches()[0].status, DispatchState::kFailed);
  EXPECT_EQ(s.dispatches()[0].error, "rank has no live agent");
  EXPECT_FALSE(s.Busy());
}

// The manifest's rows come from one snapshot: the rank and dispatch records
// as the transitions left them, the artifacts the receiver recorded, and
// the passes.
TEST(DispatchSchedulerTest, TheSnapshotCarriesRanksDispatchesArtifactsAndPasses) {
  FakeClock clock(100);
  DispatchScheduler s(2, config::PlanPasses({}, true), TwoRanksTwoEach(), clock);
  const std::vector<size_t> sent = SendFirstPassToBothRanks(s);
  ASSERT_EQ(sent.size(), 2u);
  collectors::ArtifactEntry deps;
  deps.path = "rank0/d0/deps.json";
  const size_t a = s.BeginArtifact(sent[0], deps);
  s.SettleArtifact(sent[0], a, {collectors::ArtifactState::kOk, "", 42});
  s.FailRank(1, "its agent rank-1 died: silent");

  collectors::RunManifest m;
  s.Snapshot(m);
  ASSERT_EQ(m.ranks.size(), 2u);
  EXPECT_EQ(m.ranks[0].status, RankState::kReady);
  EXPECT_EQ(m.ranks[1].status, RankState::kFailed);
  ASSERT_EQ(m.dispatches.size(), 4u);
  ASSERT_EQ(m.dispatches[sent[0]].artifacts.size(), 1u);
  EXPECT_EQ(m.dispatches[sent[0]].artifacts[0].path, "rank0/d0/deps.json");
  EXPECT_EQ(m.dispatches[sent[0]].artifacts[0].status, collectors::ArtifactState::kOk);
  EXPECT_EQ(m.dispatches[sent[0]].artifacts[0].checksum, 42u);
  EXPECT_EQ(m.dispatches[sent[1]].status, DispatchState::kFailed);
  EXPECT_EQ(m.passes, std::vector<config::PassKind>{s.passes()[0].kind});
  EXPECT_EQ(s.rank_status(1), RankState::kFailed);
  EXPECT_EQ(&s.dispatch(sent[0]), &s.dispatches()[sent[0]]);
}

}  // namespace
// A second pass rewrites the files of the first into the same rank<N>/d<K>/:
// one entry per path in a dispatch record, the last stream's outcome; a
// refused stream is recorded failed beside them, and a settled failure
// drops the checksum of an earlier verified one.
TEST(DispatchSchedulerTest, ArtifactEntriesOnePerPathLastOutcomeWins) {
  FakeClock clock(100);
  DispatchScheduler s(2, config::PlanPasses({}, true), TwoRanksTwoEach(), clock);
  const std::vector<size_t> sent = SendFirstPassToBothRanks(s);
  collectors::ArtifactEntry deps;
  deps.path = "rank0/d0/deps.json";
  const size_t first = s.BeginArtifact(sent[0], deps);
  s.SettleArtifact(sent[0], first, {collectors::ArtifactState::kOk, "", 7});
  const size_t again = s.BeginArtifact(sent[0], deps);
  EXPECT_EQ(again, first);
  s.SettleArtifact(sent[0], again, {collectors::ArtifactState::kFailed, "checksum mismatch", {}});
  collectors::ArtifactEntry refused;
  refused.path = "rank0/d0/../x";
  refused.status = collectors::ArtifactState::kFailed;
  refused.error = "refused: a path outside the dispatch";
  s.RefuseArtifact(sent[0], refused);

  const auto& artifacts = s.dispatch(sent[0]).artifacts;
  ASSERT_EQ(artifacts.size(), 2u);
  EXPECT_EQ(artifacts[0].status, collectors::ArtifactState::kFailed);
  EXPECT_EQ(artifacts[0].error, "checksum mismatch");
  EXPECT_FALSE(artifacts[0].checksum.has_value());
  EXPECT_EQ(artifacts[1].error, "refused: a path outside the dispatch");
  EXPECT_TRUE(s.dispatch(sent[1]).artifacts.empty());
}

// A gather's list keeps every stream, even of the same path, and records
// refusals only up to its bound.
TEST(ListLedgerTest, KeepsEveryStreamAndBoundsRefusals) {
  ListLedger ledger;
  collectors::ArtifactEntry e;
  e.path = "rank0/d0/pmu.csv";
  EXPECT_EQ(ledger.BeginArtifact(std::nullopt, e), 0u);
  EXPECT_EQ(ledger.BeginArtifact(std::nullopt, e), 1u);
  ledger.SettleArtifact(std::nullopt, 1, {collectors::ArtifactState::kRecovered, "", 9});
  EXPECT_EQ(ledger.Artifact(std::nullopt, 1).status, collectors::ArtifactState::kRecovered);
  EXPECT_EQ(ledger.Artifact(std::nullopt, 1).checksum, 9u);
  for (size_t i = 0; i < kMaxRefusedEntries + 10; ++i) ledger.RefuseArtifact(std::nullopt, e);
  EXPECT_EQ(ledger.entries().size(), kMaxRefusedEntries);
}

}  // namespace dfx::coordinator
