#include "collectors/artifact_layout.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "collectors/testing/test_util.h"
#include "common/file_util.h"

namespace dfx::collectors {
namespace {

namespace fs = std::filesystem;

TEST(ArtifactLayoutTest, DispatchDirectoriesFormatAndParseStrictly) {
  EXPECT_EQ(DispatchDirPath(3, 1), "rank3/d1");
  EXPECT_EQ(ParseDispatchDirPath("rank3/d1"), (DispatchDir{3, 1}));
  EXPECT_EQ(ParseRankDirName("rank0"), 0);
  EXPECT_EQ(ParseRankDirName("rank2147483647"), 2147483647);
  for (const char* bad : {"rank", "rank-1", "rank01", "rank1x", "Rank1", "rank2147483648", "r1"}) {
    EXPECT_FALSE(ParseRankDirName(bad).has_value()) << bad;
  }
  for (const char* bad : {"d", "d01", "d-1", "dx", "d1/", "rank1/d1/x", "rank1d1", "/rank1/d1"}) {
    EXPECT_FALSE(ParseDispatchDirPath(bad).has_value()) << bad;
  }
  EXPECT_EQ(DispatchDirOf("rank3/d1/args_dump/args.bin"), (DispatchDir{3, 1}));
  EXPECT_EQ(DispatchDirOf("rank3/d1/deps.json"), (DispatchDir{3, 1}));
  EXPECT_FALSE(DispatchDirOf("deps.json").has_value());
}

TEST(ArtifactLayoutTest, NamesOfDerivedFiles) {
  EXPECT_EQ(L2NameMapFileName("/runs/my case"), "name_map_my case.json");
  EXPECT_EQ(L2NameMapFileName("/runs/w/"), "name_map_w.json");
  EXPECT_TRUE(IsNameMapFileName("name_map.json"));
  EXPECT_TRUE(IsNameMapFileName("name_map_w.json"));
  EXPECT_FALSE(IsNameMapFileName("deps.json"));
  EXPECT_EQ(MergedSwimlaneFileName("20261201_101500"), "merged_swimlane_20261201_101500.json");
  EXPECT_TRUE(IsMergedSwimlaneFileName("merged_swimlane_20261201_101500.json"));
  EXPECT_FALSE(IsMergedSwimlaneFileName("chip_swimlane_records.json"));
  EXPECT_EQ(DfxOutputsDir("/w"), fs::path("/w/dfx_outputs"));
  EXPECT_EQ(RunRecordDir("/w", true), fs::path("/w/dfx_outputs"));
  EXPECT_EQ(RunRecordDir("/w", false), fs::path("/w"));
}

TEST(ArtifactLayoutTest, SpoolsAndDeviceState) {
  // The session directory is the id as the coordinator prints it (16 hex digits).
  EXPECT_EQ(SessionSpoolDir("/s", 0xab), fs::path("/s/00000000000000ab"));
  EXPECT_EQ(SessionSpoolDir("/s", 0xab) / DispatchDirPath(3, 1),
            fs::path("/s/00000000000000ab/rank3/d1"));
  EXPECT_EQ(DefaultSpoolDirName(1000), "dfx-spool-1000");
  EXPECT_EQ(fs::path("/w") / kDeviceStateDirName / kDeviceStateFile,
            fs::path("/w/device_state/chip0.json"));
}

TEST(ArtifactLayoutTest, ListingsSkipLinksAndTemporaries) {
  testing::TempDir tmp;
  const fs::path root = tmp.path() / "dfx_outputs";
  fs::create_directories(root / "rank0/d0/args_dump");
  fs::create_directories(root / "rank0/d1");
  fs::create_directories(root / "rank1/d0");
  fs::create_directories(root / "rank1/notadispatch");
  fs::create_directories(tmp.path() / "outside/d7");
  fs::create_directory_symlink(tmp.path() / "outside", root / "rank9");
  fs::create_directory_symlink(tmp.path() / "outside/d7", root / "rank1/d5");
  std::ofstream(root / "rank0/d0/deps.json") << "{}";
  std::ofstream(root / "rank0/d0/args_dump/args.bin") << "x";
  std::ofstream(TemporaryPathFor(root / "rank0/d0/pmu.csv")) << "partial";
  std::ofstream(root / "rank0/d0/.hidden") << "h";
  std::ofstream(tmp.path() / "outside/secret") << "s";
  fs::create_symlink(tmp.path() / "outside/secret", root / "rank0/d0/link");
  EXPECT_EQ(ListRankDirs(root), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(ListDispatchDirs(root), (std::vector<DispatchDir>{{0, 0}, {0, 1}, {1, 0}}));
  EXPECT_EQ(ListArtifactFiles(root / "rank0/d0", /*skip_hidden=*/true),
            (std::vector<std::string>{"args_dump/args.bin", "deps.json"}));
  EXPECT_EQ(ListArtifactFiles(root / "rank0/d0").size(), 3u);
  EXPECT_TRUE(IsTemporaryPath(TemporaryPathFor("a/pmu.csv").string()));
  EXPECT_FALSE(IsTemporaryPath("a/pmu.csv"));
}

}  // namespace
}  // namespace dfx::collectors
