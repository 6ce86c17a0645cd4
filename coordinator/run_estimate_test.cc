#include "coordinator/run_estimate.h"

#include <gtest/gtest.h>

#include "common/json.h"

namespace dfx::coordinator {
namespace {

RunEstimate TwoRanks() {
  RunEstimate e;
  e.l3 = true;
  e.ranks = 2;
  e.file = "plan.json";
  for (int rank = 0; rank < 2; ++rank) {
    RunEstimate::Dispatch d;
    d.rank = rank;
    d.program = "attn";
    d.bytes.deps = 1000;
    d.bytes.chip_swimlane = 3000;
    d.fixed = 19;
    e.dispatches.push_back(d);
    e.total_bytes += d.Total();
  }
  e.run_files = 500;
  e.total_bytes += e.run_files;
  e.places.push_back({"dfx_outputs", "/w/dfx_outputs", e.total_bytes, 1ull << 30, false});
  e.places.push_back({"spools", "/w/.dfx_spool", 8038, 1ull << 30, true});
  return e;
}

TEST(RunEstimateTest, TotalsAddUpPerCollectorAndInTheJson) {
  const RunEstimate e = TwoRanks();
  EXPECT_EQ(e.total_bytes, 2 * (1000 + 3000 + 19) + 500u);
  uint64_t sum = 0;
  for (const auto& [name, bytes] : e.ByCollector()) sum += bytes;
  EXPECT_EQ(sum, e.total_bytes);
  Json j = Json::parse(EstimateJson(e));
  EXPECT_EQ(j["total_bytes"], e.total_bytes);
  EXPECT_EQ(j["collectors"]["deps"], 2000);
  EXPECT_EQ(j["dispatches"].size(), 2u);
  EXPECT_EQ(j["dispatches"][1]["rank"], 1);
  EXPECT_EQ(j["lands_in"][1]["what"], "spools");
  const std::string text = EstimateText(e);
  EXPECT_NE(text.find("total: 8.3 KiB (8538 bytes)"), std::string::npos) << text;
  EXPECT_NE(EstimateLine(e).find("estimate: this run will write about 8.3 KiB"), std::string::npos);
}

TEST(RunEstimateTest, ABudgetBelowTheEstimateIsRefusedWithTheNumbersAndTheWaysOn) {
  const RunEstimate e = TwoRanks();
  EXPECT_TRUE(CheckEstimate(e, 0).ok());
  EXPECT_TRUE(CheckEstimate(e, e.total_bytes).ok());
  Status s = CheckEstimate(e, 4096);
  ASSERT_FALSE(s.ok());
  for (const char* part : {"8.3 KiB (8538 bytes)", "--max-run-bytes 4.0 KiB (4096 bytes)",
                           "--force", "--capture-ranks"}) {
    EXPECT_NE(s.message().find(part), std::string::npos) << part << ": " << s.message();
  }
}

TEST(RunEstimateTest, PlacesOnOneFileSystemAreCountedTogether) {
  RunEstimate e = TwoRanks();
  // dfx_outputs fits alone (8538 of 10000) but not with the spools beside it.
  e.places[0].free_bytes = 10000;
  e.places[1].free_bytes = 10000;
  Status s = CheckEstimate(e, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/w/.dfx_spool (with dfx_outputs/ on the same file system)"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("--spool DIR"), std::string::npos) << s.message();
  e.places[1].shares_with_previous = false;  // another file system: each fits
  EXPECT_TRUE(CheckEstimate(e, 0).ok());
  e.places[0].free_bytes = 100;
  s = CheckEstimate(e, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/w/dfx_outputs, but its file system has only 100 B (100 bytes)"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("--work-dir"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace dfx::coordinator
