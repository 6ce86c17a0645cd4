#include "view/overhead.h"

#include <gtest/gtest.h>

#include "view/sched_overhead.h"

namespace dfx::view {

using collectors::SwimlaneRecords;
using collectors::TaskGraph;
using collectors::TaskRow;
namespace {

// 1 GHz clock: cycles == ns; µs = cycles / 1000.
SwimlaneRecords TwoAivCores() {
  SwimlaneRecords d;
  d.level = 3;
  d.clock_freq_hz = 1000000000;
  d.core_types = {"aiv", "aiv"};
  d.base_cycles = 1000;
  d.epoch = 999;
  return d;
}

TaskRow Row(SwimlaneRecords& d, uint64_t id, int core, uint64_t dispatch, uint64_t start,
            uint64_t end) {
  return d.MakeRow(id, core, start, end, dispatch, end + 10, 0);
}

TEST(OverheadTest, ConsumerReadyButUndispatchedWhileCoreIdleIsOverhead) {
  SwimlaneRecords d = TwoAivCores();
  // t1 on core 0 [1000, 3000]; t2 depends on t1, ready at 3000 but dispatched
  // at 4000 while core 1 is idle → 1 µs of AIV overhead out of a 4 µs makespan.
  d.tasks = {Row(d, 1, 0, 1000, 1000, 3000), Row(d, 2, 1, 4000, 4000, 5000)};
  TaskGraph deps;
  deps.AddEdge(1, 2);
  deps.Finalize();
  OverheadResult r = ComputeOverhead(d, deps);
  EXPECT_DOUBLE_EQ(r.Makespan(), 4.0);
  EXPECT_DOUBLE_EQ(r.overhead_us[1], 1.0);
  EXPECT_DOUBLE_EQ(r.has_overhead_us, 1.0);
  EXPECT_DOUBLE_EQ(r.all_overhead_us, 1.0);
  EXPECT_DOUBLE_EQ(r.Pct(r.has_overhead_us), 25.0);
  EXPECT_FALSE(r.engine_present[0]);
}

TEST(OverheadTest, NoProducerMeansNoReadyWindow) {
  SwimlaneRecords d = TwoAivCores();
  d.tasks = {Row(d, 1, 0, 1000, 1000, 3000), Row(d, 2, 1, 4000, 4000, 5000)};
  OverheadResult r = ComputeOverhead(d, TaskGraph{});
  EXPECT_DOUBLE_EQ(r.has_overhead_us, 0.0);
}

TEST(OverheadTest, VerdictThresholds) {
  EXPECT_STREQ(OverheadVerdict(25.0), OverheadVerdict(90.0));
  EXPECT_NE(std::string(OverheadVerdict(25.0)).find("SCHEDULER-BOUND"), std::string::npos);
  EXPECT_NE(std::string(OverheadVerdict(8.0)).find("PARTIALLY SCHEDULER-LIMITED"),
            std::string::npos);
  EXPECT_NE(std::string(OverheadVerdict(7.99)).find("COMPUTE/DEPENDENCY-BOUND"), std::string::npos);
}

TEST(SchedOverheadTest, PercentilesAreNearestRankAsTheReference) {
  // Nearest rank of 1..10: P10 = 1, P25 = 3 (rank ceil(2.5)), P50 = 5, P75 = 8,
  // P90 = 9, P95 = P99 = 10. Linear interpolation would give 1.9, 3.25, 5.5, ...
  std::vector<double> v = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  EXPECT_EQ(NearestRankPercentile(v, 10), 1);
  EXPECT_EQ(NearestRankPercentile(v, 25), 3);
  EXPECT_EQ(NearestRankPercentile(v, 50), 5);
  EXPECT_EQ(NearestRankPercentile(v, 75), 8);
  EXPECT_EQ(NearestRankPercentile(v, 90), 9);
  EXPECT_EQ(NearestRankPercentile(v, 95), 10);
  EXPECT_EQ(NearestRankPercentile(v, 99), 10);
  EXPECT_EQ(NearestRankPercentile({4.5}, 10), 4.5);
  EXPECT_EQ(NearestRankPercentile({}, 50), 0);
}

}  // namespace
}  // namespace dfx::view
