// The name map format (docs/formats.md §3): what the writer writes and what the
// reader accepts, both shapes, and the sibling discovery the viewers use.
#include "collectors/name_map.h"

#include <gtest/gtest.h>

#include <fstream>

#include "collectors/testing/test_util.h"

namespace dfx::collectors {
namespace {

using testing::Keys;
using testing::ReadJson;
using testing::Slurp;
using testing::TempDir;
using testing::ViewFixture;
namespace fs = std::filesystem;

TEST(NameMap, FormatIndentedWithStringKeys) {
  TempDir dir;
  NameMap map;
  map.level = 2;
  map.orchestrator_name = "Attn";
  map.callable_id_to_name = {{0, "qk"}, {3, "softmax"}};
  auto path = dir.path() / "name_map_case.json";
  ASSERT_TRUE(WriteNameMap(path, map).ok());
  EXPECT_EQ(Slurp(path),
            "{\n  \"level\": 2,\n  \"orchestrator_name\": \"Attn\",\n  \"callable_id_to_name\": "
            "{\n    \"0\": \"qk\",\n    \"3\": \"softmax\"\n  }\n}\n");
}

TEST(NameMap, NullOrchestratorAndEmptyMapOmitted) {
  TempDir dir;
  NameMap map;
  map.level = 3;
  auto path = dir.path() / "name_map.json";
  ASSERT_TRUE(WriteNameMap(path, map).ok());
  Json j = ReadJson(path);
  EXPECT_EQ(Keys(j), (std::vector<std::string>{"level", "orchestrator_name"}));
  EXPECT_TRUE(j["orchestrator_name"].is_null());
}

TEST(NameMap, ReaderAcceptsSceneTestAndFlatShapes) {
  auto m = ReadNameMap(ViewFixture("l4/name_map_Demo_case.json"));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m->orchestrator_name, "Attn");
  EXPECT_EQ(*m->Find(2), "softmax");
  auto p = fs::temp_directory_path() / ("flat" + std::to_string(getpid()) + ".json");
  std::ofstream(p) << R"({"3": "gemm"})";
  m = ReadNameMap(p);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m->Find(3), "gemm");
  std::ofstream(p) << R"({"x": "gemm"})";
  m = ReadNameMap(p);
  EXPECT_FALSE(m.ok());
  fs::remove(p);
}

TEST(NameMap, ReaderReadsBackWhatTheWriterWrote) {
  TempDir dir;
  NameMap map;
  map.orchestrator_name = "Attn";
  map.callable_id_to_name = {{0, "qk"}, {3, "softmax"}};
  auto path = dir.path() / "name_map_case.json";
  ASSERT_TRUE(WriteNameMap(path, map).ok());
  auto read = ReadNameMap(path);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->level, 2);
  EXPECT_EQ(read->orchestrator_name, map.orchestrator_name);
  EXPECT_EQ(read->callable_id_to_name, map.callable_id_to_name);
  EXPECT_EQ(read->Find(1), nullptr);
}

TEST(NameMap, SiblingDiscoveryListsNameMapsOnlyAndPicksTheNewest) {
  TempDir dir;
  ASSERT_TRUE(WriteNameMap(dir.path() / "name_map_b.json", NameMap{}).ok());
  ASSERT_TRUE(WriteNameMap(dir.path() / "name_map.json", NameMap{}).ok());
  ASSERT_TRUE(WriteFileAtomic(dir.path() / "deps.json", "{}").ok());
  ASSERT_TRUE(WriteFileAtomic(dir.path() / "name_map_a.txt", "{}").ok());
  EXPECT_EQ(SiblingNameMaps(dir.path()),
            (std::vector<fs::path>{dir.path() / "name_map.json", dir.path() / "name_map_b.json"}));
  fs::last_write_time(dir.path() / "name_map.json",
                      fs::last_write_time(dir.path() / "name_map_b.json") + std::chrono::hours(1));
  EXPECT_EQ(NewestNameMap(dir.path()), dir.path() / "name_map.json");
  EXPECT_EQ(NewestNameMap(dir.path() / "missing"), std::nullopt);
}

}  // namespace
}  // namespace dfx::collectors
