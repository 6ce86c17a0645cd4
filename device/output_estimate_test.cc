#include "device/output_estimate.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "device/chip.h"
#include "device/generators.h"

namespace dfx::device {
namespace {

namespace fs = std::filesystem;

uint64_t SizeOf(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

config::RunConfig Config(int swimlane, bool dep_gen, int dump, int pmu, bool scope) {
  config::RunConfig c;
  c.enable_chip_swimlane = swimlane;
  c.enable_dep_gen = dep_gen;
  c.enable_dump_args = dump;
  c.enable_pmu = pmu;
  c.enable_scope_stats = scope;
  return c;
}

class OutputEstimateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dfx_output_estimate_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Runs `p` on a real emulated chip into a fresh directory.
  fs::path Run(const Program& p, const config::RunConfig& c, const std::string& name) {
    ChipOptions o;
    auto chip = MakeEmulatedChip(o);
    const fs::path out = dir_ / name;
    DispatchResult r = chip->RunProgram(p, c, out);
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    return out;
  }
  fs::path dir_;
};

// deps.json and the args dump depend on the program only: the estimate is
// the byte count the writers produce, at every dump level.
TEST_F(OutputEstimateTest, DepsAndArgsDumpAreExactAtEveryDumpLevel) {
  AttentionDecodeOptions a;
  a.layers = 2;
  a.heads = 3;
  const Program programs[] = {GenerateVectorPipeline(), GenerateAttentionDecode(a)};
  int n = 0;
  for (const Program& p : programs) {
    for (int dump = 1; dump <= 3; ++dump) {
      const config::RunConfig c = Config(0, true, dump, 0, false);
      auto est = EstimateDispatchBytes(p, c);
      ASSERT_TRUE(est.ok()) << est.status().ToString();
      const fs::path out = Run(p, c, "run" + std::to_string(n++));
      EXPECT_EQ(est->deps, SizeOf(out / "deps.json")) << p.name;
      EXPECT_EQ(est->args_dump,
                SizeOf(out / "args_dump/args_dump.json") + SizeOf(out / "args_dump/args.bin"))
          << p.name << " dump level " << dump;
      EXPECT_EQ(est->chip_swimlane, 0u);
      EXPECT_EQ(est->tasks, p.submit_count);
    }
  }
}

// The timing-dependent files: within a quarter of what the chip writes.
TEST_F(OutputEstimateTest, SwimlanePmuAndScopeStatsAreWithinAQuarter) {
  LayeredDagOptions l;
  l.tasks = 200;
  l.width = 8;
  const Program p = GenerateLayeredDag(l);
  for (int level = 1; level <= 4; ++level) {
    const config::RunConfig c = Config(level, false, 0, level == 4 ? 4 : 2, true);
    auto est = EstimateDispatchBytes(p, c);
    ASSERT_TRUE(est.ok());
    const fs::path out = Run(p, c, "level" + std::to_string(level));
    for (auto [name, estimated, written] :
         {std::tuple{"chip_swimlane", est->chip_swimlane,
                     SizeOf(out / "chip_swimlane_records.json")},
          std::tuple{"pmu", est->pmu, SizeOf(out / "pmu.csv")},
          std::tuple{"scope_stats", est->scope_stats,
                     SizeOf(out / "scope_stats/scope_stats.jsonl")}}) {
      ASSERT_GT(written, 0u) << name;
      EXPECT_NEAR(static_cast<double>(estimated), static_cast<double>(written), 0.25 * written)
          << name << " at swimlane level " << level;
    }
  }
}

TEST_F(OutputEstimateTest, ACollectorThatIsOffOrHasNothingToWriteCountsZero) {
  const Program p = GenerateVectorPipeline();  // tags nothing for dump
  auto est = EstimateDispatchBytes(p, Config(0, false, 1, 0, false));
  ASSERT_TRUE(est.ok());
  EXPECT_EQ(est->args_dump, 0u);  // level 1 of a program without dump_tag: no files
  EXPECT_EQ(est->deps + est->chip_swimlane + est->pmu + est->scope_stats + est->name_map +
                est->merged_trace,
            0u);
  EXPECT_EQ(est->blocks, 5u);
}

}  // namespace
}  // namespace dfx::device
