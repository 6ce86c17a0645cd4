#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include "collectors/internal/record_text.h"
#include "collectors/recorders.h"
#include "collectors/testing/test_util.h"
#include "common/file_util.h"
#include "common/json_stream.h"
#include "config/run_config.h"

namespace dfx::collectors {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

ChipLayout Layout() {
  ChipLayout l;
  l.core_types = {CoreKind::kAic, CoreKind::kAiv};
  return l;
}

TEST(DfxCollectors, BuildsOnlyEnabledRecorders) {
  TempDir dir;
  config::RunConfig c;
  c.enable_chip_swimlane = 2;
  c.enable_pmu = 4;
  DfxCollectors d(c, Layout(), CapacityHint{.tasks = 4, .core_executions = 4}, dir.path(), {});
  ASSERT_NE(d.swimlane(), nullptr);
  EXPECT_EQ(d.swimlane()->level(), 2);
  ASSERT_NE(d.pmu(), nullptr);
  EXPECT_EQ(d.pmu()->CounterColumns().front(), "ub_read_req");
  EXPECT_EQ(d.dep_gen(), nullptr);
  EXPECT_EQ(d.args_dump(), nullptr);
  EXPECT_EQ(d.scope_stats(), nullptr);
  std::vector<std::string> written;
  ASSERT_TRUE(d.ExportAll(true, &written).ok());
  EXPECT_TRUE(written.empty()) << "no records -> no files";
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(DfxCollectors, ExportsEveryArtifactInReferenceOrder) {
  TempDir dir;
  config::RunConfig c;
  c.enable_chip_swimlane = 4;
  c.enable_dep_gen = true;
  c.enable_dump_args = 2;
  c.enable_pmu = 2;
  c.enable_scope_stats = true;
  ArgsDumpOptions dump;
  dump.arena_bytes = 4096;
  DfxCollectors d(c, Layout(), CapacityHint{.tasks = 4, .core_executions = 4, .tensor_args = 4},
                  dir.path(), dump);
  EXPECT_EQ(d.args_dump()->level(), 2) << "level comes from the RunConfig";
  d.swimlane()->RecordAicoreTask(0, 1, 1, 10, 20, 1);
  DepGenTaskRecord t;
  t.task_id = 1;
  d.dep_gen()->RecordSubmit(t, {});
  DumpArgMeta m;
  m.task_id = 1;
  std::strcpy(m.dtype, "FLOAT32");
  uint8_t bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_TRUE(d.args_dump()->Capture(m, bytes).ok());
  d.pmu()->Record(0, 0, 1, 0, CoreKind::kAic, PmuWork{});
  std::vector<std::string> written;
  ASSERT_TRUE(d.ExportAll(true, &written).ok());
  EXPECT_EQ(written,
            (std::vector<std::string>{"chip_swimlane_records.json", "args_dump/args_dump.json",
                                      "args_dump/args.bin", "pmu.csv",
                                      "scope_stats/scope_stats.jsonl", "deps.json"}));
  for (const auto& rel : written) EXPECT_TRUE(fs::exists(dir.path() / rel)) << rel;
}

TEST(DfxCollectors, FailedRunSkipsDepGen) {
  TempDir dir;
  config::RunConfig c;
  c.enable_dep_gen = true;
  c.enable_scope_stats = true;
  DfxCollectors d(c, Layout(), CapacityHint{.tasks = 4}, dir.path(), {});
  DepGenTaskRecord t;
  d.dep_gen()->RecordSubmit(t, {});
  std::vector<std::string> written;
  ASSERT_TRUE(d.ExportAll(false, &written).ok());
  EXPECT_EQ(written, std::vector<std::string>{"scope_stats/scope_stats.jsonl"});
  EXPECT_FALSE(fs::exists(dir.path() / "deps.json"));
}

// The exporters' fixed-buffer rows (internal::RecordText) must write what the
// fmt form they replaced wrote, at the extremes of every integer type, and
// escape strings as ChunkedWriter::String does.
TEST(RecordText, WritesWhatFmtAndChunkedWriterWrite) {
  TempDir dir;
  const std::string big(internal::RecordText::kRoom + 10, 'x');
  const std::string odd = "a\"b\\c\n\x01";
  std::string expected;
  {
    ChunkedWriter w;
    ASSERT_TRUE(w.Open(dir.path() / "a.txt").ok());
    internal::RecordText x(w);
    for (int i = 0; i < 2000; ++i) {  // several buffers' worth
      x.Int(std::numeric_limits<int16_t>::min()).Char(',').Int(std::numeric_limits<int32_t>::min());
      x.Char(',').Int(std::numeric_limits<uint64_t>::max()).Char(',').Int(uint8_t{200});
      x.Lit(",0x").Hex16(0).Lit(",0x").Hex16(0x0123456789abcdefull).Char(',');
      x.Str("FLOAT32").Char(',').Str(odd).Char('\n');
      expected += fmt::format("{},{},{},{},0x{:016x},0x{:016x},\"FLOAT32\",", INT16_MIN, INT32_MIN,
                              UINT64_MAX, uint8_t{200}, 0, 0x0123456789abcdefull);
      AppendJsonString(&expected, odd);
      expected += '\n';
    }
    x.Lit(big);
    expected += big;
    x.Flush();
    ASSERT_TRUE(w.Commit().ok());
  }
  auto text = ReadFile(dir.path() / "a.txt");
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, expected);
}

}  // namespace
}  // namespace dfx::collectors
