#include "coordinator/report.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/subprocess.h"

namespace dfx::coordinator {
namespace {

std::string Capture(const std::vector<std::string>& files, const config::RunConfig& c,
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
  config::RunConfig c;
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

TEST(ReportTest, MakespanLineCountsOnlyFinishedDispatchesThatReportedOne) {
  std::vector<collectors::DispatchEntry> ds(4);
  for (size_t i = 0; i < ds.size(); ++i) {
    ds[i].rank = static_cast<int32_t>(i);
    ds[i].program = "p";
    ds[i].status = collectors::DispatchState::kOk;
  }
  EXPECT_EQ(MakespanSummary(ds), "");  // nobody reported one (an older agent)
  ds[0].makespan_ns = 1000;
  ds[1].makespan_ns = 3000;
  ds[1].agent_wall_ns = 2000000;
  ds[2].makespan_ns = 2000;
  ds[3].makespan_ns = 9000000;
  ds[3].status = collectors::DispatchState::kFailed;  // not a makespan of the program
  EXPECT_EQ(MakespanSummary(ds),
            "makespan (chip clock, the emulator's own accounting): 3 dispatch(es), median 2.000 "
            "us, longest 3.000 us (rank 1 d0 p), sum 6.000 us; agent run wall median 2.000 ms\n");
}

TEST(ReportTest, DepsHintOnlyWhenAsked) {
  config::RunConfig c;  // dep_gen off (the graph pass made deps.json)
  std::string out = Capture({"deps.json"}, c, "/w/dfx_outputs");
  EXPECT_EQ(out.find("dfx-view deps"), std::string::npos);
}

TEST(ReportTest, ReadmeNamesTheRunReportFirst) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dfx_readme_report_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  config::RunConfig c;
  ASSERT_TRUE(WriteArtifactsReadme(dir, {"rank0/d0/chip_swimlane_records.json", "report.html"}, c,
                                   "dfx-view")
                  .ok());
  std::ifstream in(dir / "README.txt");
  std::string first, second, third;
  std::getline(in, first);
  std::getline(in, second);
  std::getline(in, third);
  EXPECT_EQ(first, "The run report, to open in a browser: " + (dir / "report.html").string());
  EXPECT_EQ(second, "  (written again by: dfx-view report " + dir.string() + ")");
  EXPECT_EQ(third.rfind("The artifacts of this run (1 file)", 0), 0u) << third;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dfx::coordinator
