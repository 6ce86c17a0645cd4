#include "view/pmu_summary.h"

#include <gtest/gtest.h>

#include <fstream>

#include "collectors/testing/test_util.h"

namespace dfx::view {
namespace {

using collectors::testing::ViewFixture;

TEST(PmuSummaryTest, SumsCountersPerFunctionAndCoreType) {
  auto s = SummarizePmuCsv(ViewFixture("pmu/pmu.csv"));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->rows, 3u);
  EXPECT_EQ(s->counters.front(), "pmu_total_cycles");
  EXPECT_EQ(s->counters.size(), 9u);
  const PmuGroup& aic = s->groups.at({0, 0});
  EXPECT_EQ(aic.count, 2u);
  EXPECT_DOUBLE_EQ(aic.sums[0], 4000);
  EXPECT_DOUBLE_EQ(aic.sums[2], 2400);  // cube_busy_cycles
  EXPECT_EQ(s->pipes.size(), 6u);
}

TEST(PmuSummaryTest, RejectsWrongHeader) {
  auto p = std::filesystem::temp_directory_path() / ("pmu_bad" + std::to_string(getpid()) + ".csv");
  std::ofstream(p) << "a,b,c\n";
  auto s = SummarizePmuCsv(p);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("line 1: expected header thread_id,core_id"),
            std::string::npos);
  std::filesystem::remove(p);
}

}  // namespace
}  // namespace dfx::view
