#include "view/run_report.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "collectors/testing/test_util.h"
#include "view/run_report_manifest.h"

namespace dfx::view {
namespace {

using collectors::testing::Slurp;
using collectors::testing::TempDir;
using collectors::testing::ViewFixture;

TEST(RunReportTest, ScriptSafeJsonLeavesNoScriptEndOrCommentOpen) {
  const Json j = {{"program", "</script><!-- & \"x\" -->"}};
  const std::string text = ScriptSafeJson(j);
  EXPECT_EQ(text.find('<'), std::string::npos);
  EXPECT_EQ(text.find('>'), std::string::npos);
  EXPECT_EQ(text.find('&'), std::string::npos);
  EXPECT_EQ(Json::parse(text), j);  // still the same JSON
}

TEST(RunReportTest, FixtureRunGivesEveryRankAndTheirSteps) {
  std::ostringstream err;
  auto s = SummarizeRun(ViewFixture("run/dfx_outputs"), 5, err);
  ASSERT_TRUE(s.ok()) << s.status().message();
  RunReportOptions o;
  const Json d = RunReportData(*s, o, err);
  EXPECT_FALSE(d["aggregated"].get<bool>());
  ASSERT_EQ(d["rows"].size(), 2u);
  EXPECT_EQ(d["rows"][0]["rank"], 0);
  EXPECT_EQ(d["rows"][0]["span"].size(), d["steps"].size());
  EXPECT_EQ(d["rows"][1]["span"][1], nullptr) << "rank 1 ran no d1";
  EXPECT_EQ(d["commands"]["list"].size(), 3u);
  EXPECT_NE(d["commands"]["list"][0]["command"].get<std::string>().find("dfx-view swimlane "),
            std::string::npos);
  // No manifest beside the fixture: the manifest parts say why they are empty.
  EXPECT_NE(d["host"]["note"].get<std::string>().find("no run_manifest.json"), std::string::npos);
}

TEST(RunReportTest, AboveMaxRowsAggregatesPlusOutliers) {
  std::ostringstream err;
  auto s = SummarizeRun(ViewFixture("run/dfx_outputs"), 5, err);
  ASSERT_TRUE(s.ok());
  RunReportOptions o;
  o.max_rows = 1;
  const Json d = RunReportData(*s, o, err);
  EXPECT_TRUE(d["aggregated"].get<bool>());
  EXPECT_EQ(d["rows"][0]["label"], "min of 2 ranks");
  EXPECT_EQ(d["rows"][3]["label"], "max of 2 ranks");
  EXPECT_EQ(d["rows"][3]["kind"], "aggregate");
}

// 1,000 ranks x 100 dispatch steps (a summary built in memory: the browser
// test reads real files at 1,000 x 10): aggregates plus outliers, under 5 MB.
TEST(RunReportTest, ThousandRanksHundredStepsPageStaysUnderFiveMegabytes) {
  TempDir tmp;
  RunSummary s;
  s.input = tmp.path() / "dfx_outputs";
  constexpr int kRanks = 1000, kSteps = 100, kSlow = 777;
  for (int r = 0; r < kRanks; ++r) {
    RankSummary rank;
    rank.rank = r;
    rank.dispatches = kSteps;
    for (int k = 0; k < kSteps; ++k) {
      DispatchSummary d;
      d.rank = r;
      d.k = static_cast<uint32_t>(k);
      d.program = "layered";
      d.has_records = true;
      d.level = 2;
      d.rows = 64;
      d.cores = 2;
      d.span_us = (100 + (r * 7 + k * 13) % 5) * (r == kSlow ? 3.0 : 1.0);
      d.busy_us = d.span_us * 0.8;
      d.idle_us = d.span_us * 0.15;
      d.sched_us = d.span_us * 0.05;
      d.kernels = {{"matmul", 32, d.busy_us * 0.7}, {"add", 32, d.busy_us * 0.3}};
      rank.span_us += d.span_us;
      rank.busy_us += d.busy_us;
      s.dispatches.push_back(std::move(d));
    }
    rank.straggler_steps = r == kSlow ? kSteps : 0;
    s.ranks.push_back(rank);
  }
  for (int k = 0; k < kSteps; ++k) {
    StepSummary step;
    step.k = static_cast<uint32_t>(k);
    step.ranks = kRanks;
    step.slowest_rank = kSlow;
    step.slowest_span_us = 300;
    step.median_span_us = 102;
    step.straggler = true;
    s.steps.push_back(step);
  }
  s.stragglers = {kSlow};
  std::ostringstream err;
  RunReportOptions o;
  o.output = tmp.path() / "report.html";
  ASSERT_TRUE(WriteRunReport(s, o, err).ok()) << err.str();
  const Json d = RunReportData(s, o, err);
  EXPECT_TRUE(d["aggregated"].get<bool>());
  EXPECT_LT(d["rows"].size(), 100u);
  EXPECT_LT(std::filesystem::file_size(o.output), 5u << 20);
}

TEST(RunReportTest, PageHoldsLibraryDataAndAStrictPolicy) {
  TempDir tmp;
  std::ostringstream err;
  auto s = SummarizeRun(ViewFixture("run/dfx_outputs"), 5, err);
  ASSERT_TRUE(s.ok());
  RunReportOptions o;
  o.output = tmp.path() / "report.html";
  ASSERT_TRUE(WriteRunReport(*s, o, err).ok());
  const std::string html = Slurp(o.output);
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(html.find("connect-src 'none'"), std::string::npos);
  EXPECT_EQ(html.find("%DATA%"), std::string::npos);
  EXPECT_EQ(html.find("%NONCE%"), std::string::npos);
  EXPECT_NE(html.find(std::string(ChartJsLibrary().substr(0, 200))), std::string::npos);
  EXPECT_EQ(html.find("<script src"), std::string::npos);
}

TEST(RunReportTest, ManifestIsFoundFromTheRunOrOneDispatch) {
  TempDir tmp;
  const auto run = tmp.path() / "dfx_outputs";
  std::filesystem::create_directories(run / "rank3" / "d1");
  EXPECT_FALSE(RunManifestFor(run));
  std::ofstream(run / "run_manifest.json") << "{}";
  EXPECT_EQ(RunManifestFor(run), run / "run_manifest.json");
  EXPECT_EQ(RunManifestFor(run / "rank3" / "d1")->lexically_normal(),
            (run / "run_manifest.json").lexically_normal());
  EXPECT_EQ(ListedDispatchDir(run, 3, 1), run / "rank3" / "d1");
  EXPECT_EQ(ListedDispatchDir(run / "rank3" / "d1", 3, 1), run / "rank3" / "d1");
}

}  // namespace
}  // namespace dfx::view
