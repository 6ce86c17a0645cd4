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

TEST(SchedOverheadTest, PercentilesTakeTheReferencesIndex) {
  // The reference's vals[min(int(n*p/100), n-1)] of 1..10: P10 = v[1] = 2,
  // P25 = v[2] = 3, P50 = v[5] = 6, P75 = v[7] = 8, P90 = P95 = P99 = v[9] =
  // 10. Nearest rank (ceil(p*n/100)-th) would give 1, 3, 5, 8, 9, 10, 10.
  std::vector<double> v = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  EXPECT_EQ(ReferencePercentile(v, 10), 2);
  EXPECT_EQ(ReferencePercentile(v, 25), 3);
  EXPECT_EQ(ReferencePercentile(v, 50), 6);
  EXPECT_EQ(ReferencePercentile(v, 75), 8);
  EXPECT_EQ(ReferencePercentile(v, 90), 10);
  EXPECT_EQ(ReferencePercentile(v, 95), 10);
  EXPECT_EQ(ReferencePercentile(v, 99), 10);
  // N = 22 (the example): P50 is v[11], the 12th value, not the 11th.
  std::vector<double> w;
  for (int i = 1; i <= 22; ++i) w.push_back(i);
  EXPECT_EQ(ReferencePercentile(w, 50), 12);
  EXPECT_EQ(ReferencePercentile(w, 10), 3);  // int(2.2) = 2
  EXPECT_EQ(ReferencePercentile({4.5}, 10), 4.5);
  EXPECT_EQ(ReferencePercentile({}, 50), 0);
}

}  // namespace
}  // namespace dfx::view
