#include "view/run_summary.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "collectors/artifact_layout.h"
#include "collectors/testing/test_util.h"
#include "common/file_util.h"

namespace dfx::view {
namespace {

namespace fs = std::filesystem;
using collectors::testing::TempDir;
using collectors::testing::ViewFixture;

// The dispatches are read side by side (up to one per core): the summary and
// its warnings are the same, in dispatch order, however many read at once.
TEST(RunSummaryTest, SameSummaryAndWarningsInDispatchOrderWhateverTheJobs) {
  TempDir tmp;
  const fs::path run = tmp.path() / "dfx_outputs";
  fs::copy(ViewFixture("run/dfx_outputs"), run, fs::copy_options::recursive);
  // An unreadable pmu.csv in every dispatch: one warning each, naming it.
  const std::vector<fs::path> dirs = {run / "rank0/d0", run / "rank0/d1", run / "rank1/d0"};
  for (const fs::path& d : dirs) {
    ASSERT_TRUE(WriteFileAtomic(d / collectors::kPmuFile, "not,a,pmu,header\n").ok());
  }
  std::string texts[2], warnings[2];
  for (int i = 0; i < 2; ++i) {
    std::ostringstream err, out;
    auto s = SummarizeRun(run, 5, err, i == 0 ? 1 : 8);
    ASSERT_TRUE(s.ok()) << s.status().message();
    PrintSummary(*s, SummaryPrintOptions{}, out);
    texts[i] = out.str();
    warnings[i] = err.str();
  }
  EXPECT_EQ(texts[0], texts[1]);
  EXPECT_NE(texts[1].find("2 rank(s), 3 dispatch(es)"), std::string::npos) << texts[1];
  EXPECT_EQ(warnings[0], warnings[1]);
  size_t at = 0;
  for (const fs::path& d : dirs) {
    const std::string name = (d / collectors::kPmuFile).string();
    const size_t found = warnings[1].find("couldn't read " + name, at);
    ASSERT_NE(found, std::string::npos) << name << " not after the previous one in:\n"
                                        << warnings[1];
    at = found + 1;
  }
}

// The first dispatch whose records do not read is the error, whatever the jobs.
TEST(RunSummaryTest, FirstUnreadableRecordsIsTheError) {
  TempDir tmp;
  const fs::path run = tmp.path() / "dfx_outputs";
  fs::copy(ViewFixture("run/dfx_outputs"), run, fs::copy_options::recursive);
  for (const char* d : {"rank0/d1", "rank1/d0"}) {
    ASSERT_TRUE(WriteFileAtomic(run / d / collectors::kSwimlaneRecordsFile, "{\"broken\":").ok());
  }
  for (unsigned jobs : {1u, 8u}) {
    std::ostringstream err;
    auto s = SummarizeRun(run, 5, err, jobs);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("rank0/d1"), std::string::npos)
        << jobs << ": " << s.status().message();
  }
}

}  // namespace
}  // namespace dfx::view
