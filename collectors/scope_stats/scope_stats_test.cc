#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include "collectors/recorders.h"
#include "collectors/scope_stats/scope_stats_reader.h"
#include "collectors/testing/test_util.h"

namespace dfx::collectors {
namespace {

using testing::Keys;
using testing::Slurp;
using testing::TempDir;

ChipLayout Layout() {
  ChipLayout l;
  l.task_window_max = {16, 16, 8, 8};
  l.heap_max = {1048576, 1048576, 524288, 524288};
  l.dep_pool_max = {256, 256, 128, 128};
  l.tensormap_max = 4096;
  return l;
}

ScopeSample Sample(bool begin, int depth, int64_t tw_end, uint64_t heap_end) {
  ScopeSample s;
  std::strcpy(s.site, "orch.cpp:42");
  s.begin = begin;
  s.depth = static_cast<int16_t>(depth);
  s.ring = static_cast<int16_t>(std::min(depth, 3));
  s.task_window_start = 2;
  s.task_window_end = tw_end;
  s.heap_start = 0;
  s.heap_end = heap_end;
  s.dep_pool_start = 3;
  s.dep_pool_end = begin ? 3 : 11;
  s.tensormap = begin ? 1 : 8;
  return s;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) out.push_back(line);
  return out;
}

TEST(ScopeStats, MatchesSpecExampleByteForByte) {
  TempDir dir;
  ScopeStatsRecorder r(Layout(), CapacityHint{.scope_samples = 4});
  r.Record(Sample(true, 1, 2, 4096));
  r.Record(Sample(false, 1, 9, 36864));
  auto path = dir.path() / "scope_stats" / "scope_stats.jsonl";
  ASSERT_TRUE(r.Export(path).ok());
  auto lines = Lines(Slurp(path));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(
      lines[0],
      R"({"version": 6, "fatal": false, "dropped": 0, "total": 2, "task_window_max": [16, 16, 8, 8], "heap_max": [1048576, 1048576, 524288, 524288], "dep_pool_max": [256, 256, 128, 128], "tensormap_max": 4096})");
  EXPECT_EQ(
      lines[1],
      R"({"site": "orch.cpp:42", "phase": "begin", "depth": 1, "ring": 1, "task_window_start": 2, "task_window_end": 2, "heap_start": 0, "heap_end": 4096, "dep_pool_start": 3, "dep_pool_end": 3, "tensormap": 1})");
  EXPECT_EQ(
      lines[2],
      R"({"site": "orch.cpp:42", "phase": "end", "depth": 1, "ring": 1, "task_window_start": 2, "task_window_end": 9, "heap_start": 0, "heap_end": 36864, "dep_pool_start": 3, "dep_pool_end": 11, "tensormap": 8})");
  Json meta = Json::parse(lines[0]);
  EXPECT_EQ(Keys(meta),
            (std::vector<std::string>{"version", "fatal", "dropped", "total", "task_window_max",
                                      "heap_max", "dep_pool_max", "tensormap_max"}));
}

TEST(ScopeStats, DeepScopesIgnoredOverflowCountedFatalLatched) {
  TempDir dir;
  ScopeStatsRecorder r(Layout(), CapacityHint{.scope_samples = 1});  // floor 2048
  r.Record(Sample(true, 65, 0, 0));  // deeper than 64: ignored, not counted
  for (int i = 0; i < 2049; ++i) r.Record(Sample(i % 2 == 0, 0, i, i));
  r.SetFatal();
  auto path = dir.path() / "s.jsonl";
  ASSERT_TRUE(r.Export(path).ok());
  auto lines = Lines(Slurp(path));
  ASSERT_EQ(lines.size(), 1u + 2048u);
  Json meta = Json::parse(lines[0]);
  EXPECT_EQ(meta["fatal"], true);
  EXPECT_EQ(meta["dropped"], 1);
  EXPECT_EQ(meta["total"], 2049);
}

TEST(ScopeStats, AlwaysWrittenWhenEnabled) {
  TempDir dir;
  ScopeStatsRecorder r(Layout(), CapacityHint{});
  auto path = dir.path() / "scope_stats" / "scope_stats.jsonl";
  ASSERT_TRUE(r.Export(path).ok());
  auto lines = Lines(Slurp(path));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(Json::parse(lines[0])["total"], 0);
}

TEST(ScopeStats, ReaderReadsBackWhatTheWriterWrote) {
  TempDir dir;
  ScopeStatsRecorder r(Layout(), CapacityHint{.scope_samples = 4});
  r.Record(Sample(true, 1, 2, 4096));
  r.Record(Sample(false, 5, 9, 36864));
  r.SetFatal();
  auto path = dir.path() / "scope_stats.jsonl";
  ASSERT_TRUE(r.Export(path).ok());
  auto file = ReadScopeStats(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_TRUE(file->metadata.fatal);
  EXPECT_EQ(file->metadata.dropped, 0u);
  EXPECT_EQ(file->metadata.Capacity("task_window", 1), 16);
  EXPECT_EQ(file->metadata.Capacity("heap", 3), 524288);
  EXPECT_EQ(file->metadata.Capacity("dep_pool", 7), 0);      // beyond the four rings
  EXPECT_EQ(file->metadata.Capacity("tensormap", 2), 4096);  // one value for every ring
  ASSERT_EQ(file->samples.size(), 2u);
  const ScopeStatsSample& end = file->samples[1];
  EXPECT_EQ(end.site, "orch.cpp:42");
  EXPECT_FALSE(end.begin);
  EXPECT_EQ(end.depth, 5);
  EXPECT_EQ(end.ring, 3);
  EXPECT_EQ(end.task_window_end, 9);
  EXPECT_EQ(end.heap_end, 36864);
  EXPECT_EQ(end.dep_pool_end, 11);
  EXPECT_EQ(end.tensormap, 8);
  EXPECT_TRUE(file->samples[0].begin);
}

TEST(ScopeStats, ReaderRequiresTheMetadataLineAndAPhase) {
  TempDir dir;
  auto path = dir.path() / "s.jsonl";
  ASSERT_TRUE(WriteFileAtomic(path, "\n{\"site\": \"a:1\"}\n").ok());
  auto file = ReadScopeStats(path);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("at line 1: expected the metadata object"),
            std::string::npos)
      << file.status().message();
  ASSERT_TRUE(WriteFileAtomic(path, "{\"version\": 6}\n{\"phase\": \"middle\"}\n").ok());
  file = ReadScopeStats(path);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("at line 2: $.phase: expected \"begin\" or \"end\""),
            std::string::npos)
      << file.status().message();
}

// Hostile types are refused by name: never thrown, never an undefined cast
// (a depth of 1e300 as an int).
TEST(ScopeStats, ReaderRefusesFieldsOfAnotherTypeByName) {
  TempDir dir;
  auto path = dir.path() / "s.jsonl";
  const std::pair<const char*, const char*> cases[] = {
      {R"({"version": 6, "fatal": "yes"})", "at line 1: $.fatal: expected true or false"},
      {R"({"version": 6, "dropped": -1})", "at line 1: $.dropped: expected an integer"},
      {"{\"version\": 6}\n{\"phase\": \"begin\", \"depth\": 1e300}",
       "at line 2: $.depth: expected an integer"},
      {"{\"version\": 6}\n{\"phase\": \"begin\", \"ring\": \"1\"}",
       "at line 2: $.ring: expected an integer"},
      {"{\"version\": 6}\n{\"phase\": \"end\", \"tensormap\": [1]}",
       "at line 2: $.tensormap: expected a number"},
      {"{\"version\": 6}\n{\"phase\": 1}", "at line 2: $.phase: expected a string"},
  };
  for (const auto& [text, expected] : cases) {
    ASSERT_TRUE(WriteFileAtomic(path, std::string(text) + "\n").ok());
    auto file = ReadScopeStats(path);
    ASSERT_FALSE(file.ok()) << text;
    EXPECT_NE(file.status().message().find(expected), std::string::npos)
        << text << ": " << file.status().message();
  }
}

}  // namespace
}  // namespace dfx::collectors
