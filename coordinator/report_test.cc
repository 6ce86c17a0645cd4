#include "coordinator/report.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "coordinator/process.h"

namespace dfx::coordinator {
namespace {

std::string Capture(const std::vector<std::string>& files, const collectors::RunConfig& c,
                    const std::string& dir) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  PrintArtifacts(f, dir, files, c);
  std::fclose(f);
  std::string out(buf, size);
  std::free(buf);
  return out;
}

TEST(ReportTest, PrintsRenderCommandsWithQuotedPaths) {
  collectors::RunConfig c;
  c.enable_dep_gen = true;
  std::string out = Capture({"rank0/d0/deps.json", "rank0/d0/chip_swimlane_records.json",
                             "rank0/d0/args_dump/args_dump.json", "rank1/d0/pmu.csv",
                             "rank1/d0/scope_stats/scope_stats.jsonl"},
                            c, "/tmp/my work/dfx_outputs");
  EXPECT_NE(out.find("dfx-view deps '/tmp/my work/dfx_outputs/rank0/d0/deps.json'"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("--format html --engine sfdp"), std::string::npos);
  EXPECT_NE(
      out.find("dfx-view swimlane '/tmp/my work/dfx_outputs/rank0/d0/chip_swimlane_records.json'"),
      std::string::npos);
  EXPECT_NE(out.find("dfx-view dump '/tmp/my work/dfx_outputs/rank0/d0/args_dump'"),
            std::string::npos);
  EXPECT_NE(out.find("dfx-view scope-stats"), std::string::npos);
  EXPECT_NE(out.find("pmu counters: '/tmp/my work/dfx_outputs/rank1/d0/pmu.csv'"),
            std::string::npos);
}

TEST(ReportTest, DepsHintOnlyWhenAsked) {
  collectors::RunConfig c;  // dep_gen off (the graph pass made deps.json)
  std::string out = Capture({"deps.json"}, c, "/w/dfx_outputs");
  EXPECT_EQ(out.find("dfx-view deps"), std::string::npos);
}

TEST(ReportTest, ShellQuoteMatchesShlex) {
  EXPECT_EQ(ShellQuote("/a/b.json"), "/a/b.json");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\"'\"'s'");
  EXPECT_EQ(ShellQuote(""), "''");
}

TEST(ReportTest, OnboardSwimlaneRunsTwoPasses) {
  collectors::RunConfig c;
  c.execution_mode = collectors::ExecutionMode::kOnboard;
  c.enable_chip_swimlane = 4;
  c.enable_pmu = 2;
  auto passes = PlanPasses(c, true);
  ASSERT_EQ(passes.size(), 2u);
  EXPECT_EQ(passes[0].kind, protocol::PassKind::kGraph);
  EXPECT_TRUE(passes[0].config.enable_dep_gen);
  EXPECT_EQ(passes[0].config.enable_chip_swimlane, 0);
  EXPECT_EQ(passes[0].config.enable_pmu, 0);
  EXPECT_EQ(passes[1].kind, protocol::PassKind::kTiming);
  EXPECT_FALSE(passes[1].config.enable_dep_gen);
  EXPECT_EQ(passes[1].config.enable_pmu, 2);
  c.execution_mode = collectors::ExecutionMode::kSim;
  EXPECT_EQ(PlanPasses(c, false).size(), 1u);
  EXPECT_FALSE(PlanPasses(c, false)[0].config.enable_dep_gen);
  EXPECT_TRUE(PlanPasses(c, true)[0].config.enable_dep_gen);
}

TEST(ReportTest, FlagsRoundTripThroughTheParser) {
  collectors::RunConfig c;
  c.backend_type = collectors::BackendType::kA5;
  c.enable_chip_swimlane = 2;
  c.enable_dump_args = 3;
  c.enable_pmu = 4;
  c.enable_scope_stats = true;
  c.aicpu_thread_num = 3;
  c.rings.task_window = {1024, 0, 0, 0};
  c.Normalize();
  std::vector<std::string> flags = RunConfigToFlags(c);
  auto back = collectors::ParseRunConfigFlags(flags);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(flags.empty());
  EXPECT_EQ(back->config.backend_type, c.backend_type);
  EXPECT_EQ(back->config.enable_chip_swimlane, 2);
  EXPECT_EQ(back->config.enable_dump_args, 3);
  EXPECT_EQ(back->config.enable_pmu, 4);
  EXPECT_TRUE(back->config.enable_scope_stats);
  EXPECT_EQ(back->config.aicpu_thread_num, 3);
  EXPECT_EQ(back->config.rings.task_window, c.rings.task_window);
}

}  // namespace
}  // namespace dfx::coordinator
