// The request layer in-process: what each subcommand finds when given no
// input, the exit status and the text of a usage error and of a bad input,
// and the report of a command that did its job.
#include "view/commands.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "collectors/artifact_layout.h"
#include "collectors/testing/test_util.h"

namespace dfx::view {
namespace {

namespace fs = std::filesystem;
using collectors::testing::ViewFixture;

// A fresh temporary directory as the current directory, for the defaults;
// the previous one again at the end.
class CommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    previous_ = fs::current_path();
    fs::current_path(dir_.path());
  }
  void TearDown() override { fs::current_path(previous_); }
  // Copies fixture `name` (a directory) to `to` under the current directory.
  static void CopyFixture(const std::string& name, const fs::path& to) {
    fs::create_directories(to);
    fs::copy(ViewFixture(name), to, fs::copy_options::recursive);
  }

  collectors::testing::TempDir dir_;
  fs::path previous_;
  std::ostringstream out_, err_;
};

TEST_F(CommandsTest, SwimlaneConvertsTheNewestRecordsUnderOutputsWhenGivenNone) {
  CopyFixture("l2", "outputs/case_a");
  const CommandResult<SwimlaneReport> r = RunSwimlaneCommand({}, out_, err_);
  ASSERT_TRUE(r.ok()) << r.error().text;
  EXPECT_EQ(r.exit_code(), ExitCode::kOk);
  EXPECT_EQ(r.report().trace, fs::path("outputs/case_a") / collectors::kMergedSwimlaneFile);
  EXPECT_FALSE(r.report().up_to_date);
  EXPECT_TRUE(fs::is_regular_file(r.report().trace));
  EXPECT_NE(out_.str().find("Wrote outputs/case_a/merged_swimlane.json"), std::string::npos)
      << out_.str();
}

TEST_F(CommandsTest, SwimlaneWithNoRecordsAnywhereSaysWhereItLookedAndExitsOne) {
  const CommandResult<SwimlaneReport> r = RunSwimlaneCommand({}, out_, err_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.exit_code(), ExitCode::kError);
  const std::string& text = r.error().text;
  EXPECT_EQ(text.rfind("Error: No outputs/*/chip_swimlane_records.json found under " +
                           fs::current_path().string() + " (looked in ",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find(")\nRun a test with --enable-chip-swimlane first, or specify an explicit "
                      "input.\n"),
            std::string::npos)
      << text;
}

TEST_F(CommandsTest, SwimlaneNamesTheMissingInputFile) {
  SwimlaneRequest request;
  request.input = "missing.json";
  const CommandResult<SwimlaneReport> r = RunSwimlaneCommand(request, out_, err_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.exit_code(), ExitCode::kError);
  EXPECT_EQ(r.error().text, "Error: Input file not found: missing.json\n");
}

TEST_F(CommandsTest, SwimlaneFlagsThatDoNotGoTogetherOrDoNotParseAreUsageErrors) {
  SwimlaneRequest ranks;
  ranks.input = "missing.json";
  ranks.ranks = "0,1";
  CommandResult<SwimlaneReport> r = RunSwimlaneCommand(ranks, out_, err_);
  EXPECT_EQ(r.exit_code(), ExitCode::kUsage);
  EXPECT_EQ(r.error().text,
            "error: --ranks selects within a run: it is only valid with --run W/dfx_outputs\n");

  SwimlaneRequest window;
  window.window = "500:100";
  r = RunSwimlaneCommand(window, out_, err_);
  EXPECT_EQ(r.exit_code(), ExitCode::kUsage);
  EXPECT_EQ(r.error().text.rfind("Error: --window 500:100: expected T0:T1", 0), 0u)
      << r.error().text;

  SwimlaneRequest list;
  list.run = "anywhere";
  list.dispatch = "1,x";
  r = RunSwimlaneCommand(list, out_, err_);
  EXPECT_EQ(r.exit_code(), ExitCode::kUsage);
  EXPECT_NE(r.error().text.find("--dispatch 1,x: expected a comma-separated list"),
            std::string::npos)
      << r.error().text;

  SwimlaneRequest format;
  format.format = "xml";
  r = RunSwimlaneCommand(format, out_, err_);
  EXPECT_EQ(r.exit_code(), ExitCode::kUsage);
  EXPECT_EQ(r.error().text, "Error: --format xml: expected json or proto\n");
}

TEST_F(CommandsTest, SwimlaneRunOfADispatchDirectoryPointsAtTheFileToConvert) {
  CopyFixture("l2", "d");
  SwimlaneRequest request;
  request.run = "d";
  const CommandResult<SwimlaneReport> r = RunSwimlaneCommand(request, out_, err_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.exit_code(), ExitCode::kError);
  EXPECT_NE(r.error().text.find("convert it with `dfx-view swimlane d/chip_swimlane_records.json`"),
            std::string::npos)
      << r.error().text;
}

TEST_F(CommandsTest, DepsHtmlOnlyFlagsAndDepthWithoutAroundAreUsageErrors) {
  CopyFixture("dag", "dfx_outputs");
  DepsRequest engine;
  engine.engine = "sfdp";
  CommandResult<DepsReport> r = RunDepsCommand(engine, out_, err_);
  EXPECT_EQ(r.exit_code(), ExitCode::kUsage);
  EXPECT_EQ(r.error().text, "error: --engine is only valid with --format html\n");

  DepsRequest depth;
  depth.depth = 3;
  r = RunDepsCommand(depth, out_, err_);
  EXPECT_EQ(r.exit_code(), ExitCode::kUsage);
  EXPECT_EQ(r.error().text, "error: --depth is only valid with --around TASK\n");
}

TEST_F(CommandsTest, DepsFindsDepsJsonUnderDfxOutputsAndWritesItsReportBesideIt) {
  CopyFixture("dag", "dfx_outputs");
  const CommandResult<DepsReport> r = RunDepsCommand({}, out_, err_);
  ASSERT_TRUE(r.ok()) << r.error().text;
  EXPECT_EQ(r.report().input, fs::path("dfx_outputs") / collectors::kDepsFile);
  EXPECT_TRUE(fs::is_regular_file("dfx_outputs/deps_viewer.txt"));
}

TEST_F(CommandsTest, ViewersWithNothingToReadNameWhatTheyLookedFor) {
  const auto deps = RunDepsCommand({}, out_, err_);
  EXPECT_EQ(deps.exit_code(), ExitCode::kError);
  EXPECT_EQ(deps.error().text.rfind("Error: No deps.json given and no candidate found under "
                                    "./outputs/ (looked in ",
                                    0),
            0u)
      << deps.error().text;
  const auto pmu = RunPmuCommand({}, out_, err_);
  EXPECT_EQ(pmu.exit_code(), ExitCode::kError);
  EXPECT_EQ(pmu.error().text.rfind("Error: no pmu.csv given and none found (looked in ", 0), 0u)
      << pmu.error().text;
  const auto scope = RunScopeStatsCommand({}, out_, err_);
  EXPECT_EQ(scope.exit_code(), ExitCode::kError);
  EXPECT_NE(scope.error().text.find("scope_stats.jsonl given and none found"), std::string::npos)
      << scope.error().text;
  const auto dump = RunDumpCommand({}, out_, err_);
  EXPECT_EQ(dump.exit_code(), ExitCode::kError);
  EXPECT_EQ(dump.error().text.rfind("Error: no outputs/*/args_dump directory found", 0), 0u)
      << dump.error().text;
  const auto sched = RunSchedOverheadCommand({}, out_, err_);
  EXPECT_EQ(sched.exit_code(), ExitCode::kError);
  EXPECT_EQ(sched.error().text.rfind("Error: No outputs/*/chip_swimlane_records.json found", 0), 0u)
      << sched.error().text;
  const auto summary = RunSummaryCommand({}, out_, err_);
  EXPECT_EQ(summary.exit_code(), ExitCode::kError);
  EXPECT_EQ(summary.error().text, "Error: no run directory given and neither ./dfx_outputs nor " +
                                      fs::current_path().string() +
                                      " holds one; pass W/dfx_outputs of a run\n");
}

TEST_F(CommandsTest, PmuAndDumpFindTheirInputUnderDfxOutputs) {
  CopyFixture("pmu", "dfx_outputs");
  const auto pmu = RunPmuCommand({}, out_, err_);
  ASSERT_TRUE(pmu.ok()) << pmu.error().text;
  EXPECT_EQ(pmu.report().input, fs::path("dfx_outputs") / collectors::kPmuFile);

  CopyFixture("args_dump", fs::path("outputs/case/") / collectors::kArgsDumpDir);
  std::ostringstream out;
  const auto dump = RunDumpCommand({}, out, err_);
  ASSERT_TRUE(dump.ok()) << dump.error().text;
  EXPECT_EQ(dump.report().dump_dir, fs::path("outputs/case") / collectors::kArgsDumpDir);
  EXPECT_EQ(out.str().rfind("Using latest dump directory: outputs/case/args_dump\n", 0), 0u)
      << out.str();
}

TEST_F(CommandsTest, SummaryTakesTheRunOnceAndItsThresholdAsAPercentage) {
  CopyFixture("run/dfx_outputs", "dfx_outputs");
  SummaryRequest twice;
  twice.input = "dfx_outputs";
  twice.run = "elsewhere";
  auto r = RunSummaryCommand(twice, out_, err_);
  EXPECT_EQ(r.exit_code(), ExitCode::kError);
  EXPECT_EQ(r.error().text, "Error: give the run directory once (positional or --run), not both\n");

  SummaryRequest threshold;
  threshold.straggler_threshold = "lots";
  r = RunSummaryCommand(threshold, out_, err_);
  EXPECT_EQ(r.exit_code(), ExitCode::kUsage);
  EXPECT_NE(r.error().text.find("lots"), std::string::npos) << r.error().text;

  std::ostringstream out;
  r = RunSummaryCommand({}, out, err_);  // ./dfx_outputs, found
  ASSERT_TRUE(r.ok()) << r.error().text;
  EXPECT_EQ(r.report().input, fs::path("dfx_outputs"));
  EXPECT_FALSE(r.report().ranks.empty());
  EXPECT_FALSE(out.str().empty());
}

TEST_F(CommandsTest, ExportWritesTheTaskTableAndSaysWhere) {
  CopyFixture("run/dfx_outputs", "dfx_outputs");
  ExportRequest request;
  request.output = "tasks.csv";
  std::ostringstream out;
  const auto r = RunExportCommand(request, out, err_);
  ASSERT_TRUE(r.ok()) << r.error().text;
  EXPECT_EQ(r.report().output, fs::path("tasks.csv"));
  EXPECT_GT(r.report().rows, 0u);
  EXPECT_TRUE(fs::is_regular_file("tasks.csv"));
  EXPECT_EQ(out.str().rfind("Wrote tasks.csv (", 0), 0u) << out.str();
}

}  // namespace
}  // namespace dfx::view
