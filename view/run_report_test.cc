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
