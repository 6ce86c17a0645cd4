#include "coordinator/idle_collectors.h"

#include <gtest/gtest.h>

namespace dfx::coordinator {
namespace {

collectors::DispatchEntry Dispatch(
    int rank, std::vector<std::string> files,
    collectors::DispatchState status = collectors::DispatchState::kOk) {
  collectors::DispatchEntry d;
  d.rank = rank;
  d.status = status;
  for (std::string& f : files) {
    collectors::ArtifactEntry a;
    a.path = std::move(f);
    d.artifacts.push_back(a);
  }
  return d;
}

TEST(IdleCollectorsTest, CountsTheOkDispatchesWhoseArmedCollectorWroteNothing) {
  config::RunConfig c;
  c.enable_dump_args = 1;
  c.enable_chip_swimlane = 4;
  std::vector<collectors::DispatchEntry> ds = {
      Dispatch(0, {"rank0/d0/args_dump/args_dump.json", "rank0/d0/chip_swimlane_records.json"}),
      Dispatch(1, {"rank1/d0/chip_swimlane_records.json"}),
      Dispatch(2, {"rank2/d0/chip_swimlane_records.json"}),
      // A failed dispatch is reported as failed, not as idle.
      Dispatch(3, {}, collectors::DispatchState::kFailed),
  };
  EXPECT_EQ(
      IdleCollectorLines(ds, c, /*l3=*/true),
      std::vector<std::string>{"args dump: no tensor tagged for dump in 2 of 3 dispatch(es)"});
  // An L2 run's paths are flat; a collector that is off is not counted.
  c.enable_dump_args = 0;
  EXPECT_TRUE(IdleCollectorLines({Dispatch(0, {"chip_swimlane_records.json"})}, c, false).empty());
  c.enable_pmu = 2;
  EXPECT_EQ(IdleCollectorLines({Dispatch(0, {"chip_swimlane_records.json"})}, c, false),
            std::vector<std::string>{"PMU: no counter row in 1 of 1 dispatch(es)"});
}

}  // namespace
}  // namespace dfx::coordinator
