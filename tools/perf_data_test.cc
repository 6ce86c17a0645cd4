#include "tools/perf_data.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tools/name_map.h"

namespace dfx::view {
namespace {

std::filesystem::path Fixture(const std::string& rel) {
  return std::filesystem::path(DFX_SOURCE_DIR) / "tests/view/fixtures" / rel;
}

TEST(ReadPerfDataTest, JoinsLevel4RowsOnCoreAndRegIdAndSortsByTaskId) {
  auto d = ReadPerfData(Fixture("l4/chip_swimlane_records.json"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->level, 4);
  EXPECT_EQ(d->clock_freq_hz, 50000000u);
  EXPECT_EQ(d->base_cycles, 900u);  // earliest orchestrator record
  ASSERT_EQ(d->tasks.size(), 5u);
  EXPECT_EQ(d->tasks[0].task_id, 1u);
  EXPECT_EQ(d->tasks[1].task_id, 2u);
  EXPECT_EQ(d->tasks[2].task_id, 2u);
  EXPECT_EQ(d->tasks[4].task_id, (uint64_t{1} << 32) | 4);
  // Task 3 ran on core 0 with reg 2: its AICPU row is dispatch 1212 / finish 1310.
  EXPECT_NEAR(d->DispatchUs(d->tasks[3]), (1212 - 900) * 0.02, 1e-9);
  EXPECT_NEAR(d->FinishUs(d->tasks[3]), (1310 - 900) * 0.02, 1e-9);
  EXPECT_NEAR(d->ReceiveUs(d->tasks[3]), (1220 - 8 - 900) * 0.02, 1e-9);
  EXPECT_EQ(d->core_to_thread, (std::vector<int>{0, 0, 1}));
  ASSERT_EQ(d->sched_phases.size(), 2u);
  EXPECT_EQ(d->sched_phases[0][1].kind, PhaseKind::kResolve);
  EXPECT_EQ(d->sched_phases[0][8].task_id, 5);
  ASSERT_EQ(d->orch_phases.size(), 1u);
  EXPECT_EQ(d->orch_phases[0].size(), 6u);
  EXPECT_EQ(UnmatchedWarning(*d), "");
}

TEST(ReadPerfDataTest, Level1SynthesisesTasksAndAcceptsLegacyRows) {
  auto d = ReadPerfData(Fixture("l1/chip_swimlane_records.json"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->tasks.size(), 3u);
  EXPECT_EQ(d->tasks[2].task_id, 8u);
  EXPECT_EQ(d->tasks[2].receive_to_start, 0u);  // 5-column legacy row
  EXPECT_EQ(d->DispatchUs(d->tasks[0]), 0.0);
}

TEST(ReadPerfDataTest, CountsUnmatchedAicpuRowsPerCore) {
  auto d = ReadPerfData(Fixture("l2/chip_swimlane_records.json"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->tasks.size(), 2u);
  EXPECT_EQ(d->unmatched_aicpu_rows, 1u);
  EXPECT_NE(UnmatchedWarning(*d).find("(top offenders: core 1: 1)"), std::string::npos);
}

TEST(ReadPerfDataTest, RejectsUnsupportedLevelAndMissingClock) {
  auto d = ReadPerfData(Fixture("bad_level/chip_swimlane_records.json"));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "Unsupported chip_swimlane_level: 7 (expected 1, 2, 3, or 4)");
  auto p =
      std::filesystem::temp_directory_path() / ("noclock" + std::to_string(getpid()) + ".json");
  std::ofstream(p)
      << R"({"chip_swimlane_level": 2, "metadata": {"num_cores": 1}, "aicore_tasks": []})";
  d = ReadPerfData(p);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "metadata missing/zero clock_freq_hz: 0");
  std::filesystem::remove(p);
}

TEST(LabelsTest, TaskDisplayAndBijectiveLetters) {
  EXPECT_EQ(FormatTaskDisplay(3), "t3");
  EXPECT_EQ(FormatTaskDisplay((uint64_t{2} << 32) | 10), "r2t10");
  EXPECT_EQ(FuncLetters(0), "a");
  EXPECT_EQ(FuncLetters(25), "z");
  EXPECT_EQ(FuncLetters(26), "aa");
  EXPECT_EQ(FuncLetters(27), "ab");
  EXPECT_EQ(FuncLetters(701), "zz");
  EXPECT_EQ(FuncLetters(702), "aaa");
}

TEST(NameMapTest, AcceptsSceneTestAndFlatShapes) {
  auto m = LoadNameMap(Fixture("l4/name_map_Demo_case.json"));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m->orchestrator_name, "Attn");
  EXPECT_EQ(*m->Find(2), "softmax");
  auto p = std::filesystem::temp_directory_path() / ("flat" + std::to_string(getpid()) + ".json");
  std::ofstream(p) << R"({"3": "gemm"})";
  m = LoadNameMap(p);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m->Find(3), "gemm");
  std::ofstream(p) << R"({"x": "gemm"})";
  m = LoadNameMap(p);
  EXPECT_FALSE(m.ok());
  std::filesystem::remove(p);
}

}  // namespace
}  // namespace dfx::view
