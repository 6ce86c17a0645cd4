#include "config/pass_plan.h"

#include <gtest/gtest.h>

namespace dfx::config {
namespace {

TEST(PassPlanTest, OnboardSwimlaneRunsTwoPasses) {
  RunConfig c;
  c.execution_mode = ExecutionMode::kOnboard;
  c.enable_chip_swimlane = 4;
  c.enable_pmu = 2;
  auto passes = PlanPasses(c, true);
  ASSERT_EQ(passes.size(), 2u);
  EXPECT_EQ(passes[0].kind, PassKind::kGraph);
  EXPECT_TRUE(passes[0].config.enable_dep_gen);
  EXPECT_EQ(passes[0].config.enable_chip_swimlane, 0);
  EXPECT_EQ(passes[0].config.enable_pmu, 0);
  EXPECT_EQ(passes[1].kind, PassKind::kTiming);
  EXPECT_FALSE(passes[1].config.enable_dep_gen);
  EXPECT_EQ(passes[1].config.enable_pmu, 2);
  c.execution_mode = ExecutionMode::kSim;
  EXPECT_EQ(PlanPasses(c, false).size(), 1u);
  EXPECT_FALSE(PlanPasses(c, false)[0].config.enable_dep_gen);
  EXPECT_TRUE(PlanPasses(c, true)[0].config.enable_dep_gen);
}

TEST(PassPlanTest, NamesRoundTrip) {
  for (PassKind p : {PassKind::kSingle, PassKind::kGraph, PassKind::kTiming}) {
    EXPECT_EQ(ParsePassKind(PassKindName(p)), p);
  }
  EXPECT_FALSE(ParsePassKind("both").has_value());
}

TEST(RunConfigFlagsTest, FlagsRoundTripThroughTheParser) {
  RunConfig c;
  c.backend_type = BackendType::kA5;
  c.enable_chip_swimlane = 2;
  c.enable_dump_args = 3;
  c.enable_pmu = 4;
  c.enable_scope_stats = true;
  c.aicpu_thread_num = 3;
  c.rings.task_window = {1024, 0, 0, 0};
  c.Normalize();
  std::vector<std::string> flags = RunConfigToFlags(c);
  auto back = ParseRunConfigFlags(flags);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(flags.empty());
  EXPECT_EQ(back->config.backend_type, c.backend_type);
  EXPECT_EQ(back->config.enable_chip_swimlane, 2);
  EXPECT_EQ(back->config.enable_dump_args, 3);
  EXPECT_EQ(back->config.enable_pmu, 4);
  EXPECT_TRUE(back->config.enable_scope_stats);
  EXPECT_EQ(back->config.aicpu_thread_num, 3);
  EXPECT_EQ(back->config.rings.task_window, c.rings.task_window);
  EXPECT_EQ(back->config, c);
}

}  // namespace
}  // namespace dfx::config
