#include "coordinator/post_run.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <thread>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/json.h"

namespace dfx::coordinator {
namespace {

namespace fs = std::filesystem;

// The real dfx-view converts real records (a level-2 fixture of the viewer
// tests); one dispatch's records are broken, so its conversion fails.
class ConvertSwimlanesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("DFX_VIEW", (std::string(DFX_BINARY_DIR) + "/bin/dfx-view").c_str(), 1);
    dir_ = fs::temp_directory_path() / ("dfx_post_run_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A dfx_outputs/ with rank<r>/d<k>/ for r in {0, 1, 2, 10}, k in {0, 1}:
  // the records of rank1/d1 and rank10/d0 are not JSON. Returns its files,
  // listed out of order.
  std::vector<std::string> MakeRun(const fs::path& dfx_dir) {
    const auto records =
        ReadFile(fs::path(DFX_SOURCE_DIR) / "tests/view/fixtures/l2/chip_swimlane_records.json");
    EXPECT_TRUE(records.ok());
    std::vector<std::string> files;
    for (int r : {10, 2, 1, 0}) {
      for (int k : {1, 0}) {
        const std::string rel = collectors::DispatchDirPath(r, k);
        const bool broken = (r == 1 && k == 1) || (r == 10 && k == 0);
        EXPECT_TRUE(WriteFileAtomic(dfx_dir / rel / collectors::kSwimlaneRecordsFile,
                                    broken ? std::string("{\"chip_swimlane_level\": ") : *records)
                        .ok());
        files.push_back(rel + "/" + collectors::kSwimlaneRecordsFile);
        files.push_back(rel + "/pmu.csv");  // not converted
      }
    }
    return files;
  }

  struct Outcome {
    std::vector<std::string> written;
    std::string printed;  // with the dfx_outputs path and the trace name made neutral
  };
  Outcome Convert(const fs::path& dfx_dir, unsigned jobs) {
    char* buf = nullptr;
    size_t size = 0;
    std::FILE* out = open_memstream(&buf, &size);
    Outcome o;
    o.written = ConvertSwimlanes(out, dfx_dir, MakeRun(dfx_dir), std::chrono::seconds(120), jobs);
    std::fclose(out);
    o.printed.assign(buf, size);
    std::free(buf);
    for (size_t at; (at = o.printed.find(dfx_dir.string())) != std::string::npos;) {
      o.printed.replace(at, dfx_dir.string().size(), "<D>");
    }
    o.printed = std::regex_replace(o.printed, std::regex("merged_swimlane_[0-9_]+\\.json"), "<T>");
    for (auto& w : o.written) {
      w = std::regex_replace(w, std::regex("merged_swimlane_[0-9_]+\\.json"), "<T>");
    }
    return o;
  }

  fs::path dir_;
};

TEST_F(ConvertSwimlanesTest, ParallelConversionsReportInDirectoryOrderLikeSerialOnes) {
  const Outcome serial = Convert(dir_ / "serial", 1);
  const Outcome parallel = Convert(dir_ / "parallel", 4);
  const std::vector<std::string> expected = {"rank0/d0/<T>",  "rank0/d1/<T>", "rank1/d0/<T>",
                                             "rank10/d1/<T>", "rank2/d0/<T>", "rank2/d1/<T>"};
  EXPECT_EQ(serial.written, expected);
  EXPECT_EQ(parallel.written, expected);
  // Both failures, each once with its records and re-run command, in order.
  EXPECT_EQ(parallel.printed, serial.printed);
  const size_t first = parallel.printed.find(
      "the swimlane converter failed for <D>/rank1/d1/chip_swimlane_records.json");
  const size_t second = parallel.printed.find(
      "the swimlane converter failed for <D>/rank10/d0/chip_swimlane_records.json");
  ASSERT_NE(first, std::string::npos) << parallel.printed;
  ASSERT_NE(second, std::string::npos) << parallel.printed;
  EXPECT_LT(first, second);
  EXPECT_LT(parallel.printed.find("Re-run:", first), second);
  EXPECT_EQ(parallel.printed.find("the swimlane converter failed", second + 1), std::string::npos);
}

TEST_F(ConvertSwimlanesTest, EveryTraceIsCompleteAndFailuresLeaveNoneUnderTheFinalName) {
  const fs::path dfx_dir = dir_ / "run";
  const Outcome o = Convert(dfx_dir, 3);
  ASSERT_EQ(o.written.size(), 6u);
  size_t traces = 0, others = 0;
  for (const auto& e : fs::recursive_directory_iterator(dfx_dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("merged_swimlane_", 0) == 0) {
      ++traces;
      auto trace = ReadJsonFile(e.path());
      ASSERT_TRUE(trace.ok()) << e.path() << ": " << trace.status().message();
      EXPECT_FALSE((*trace)["traceEvents"].empty()) << e.path();
      const std::string dir = e.path().parent_path().filename().string();
      const std::string rank = e.path().parent_path().parent_path().filename().string();
      EXPECT_FALSE(rank == "rank1" && dir == "d1");
      EXPECT_FALSE(rank == "rank10" && dir == "d0");
    } else if (e.is_regular_file() && name != collectors::kSwimlaneRecordsFile) {
      ++others;  // a temporary name left behind
    }
  }
  EXPECT_EQ(traces, 6u);
  EXPECT_EQ(others, 0u);
}

TEST(ConvertJobsTest, DefaultsToTheCoresAndNeverExceedsTheWork) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_EQ(ConvertJobs(0, 1000), cores);
  EXPECT_EQ(ConvertJobs(0, 1), 1u);
  EXPECT_EQ(ConvertJobs(0, 0), 1u);
  EXPECT_EQ(ConvertJobs(5, 100), 5u);
  EXPECT_EQ(ConvertJobs(8, 3), 3u);
}

}  // namespace
}  // namespace dfx::coordinator
