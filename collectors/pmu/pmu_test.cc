#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sstream>

#include "collectors/pmu/pmu_reader.h"
#include "collectors/recorders.h"
#include "collectors/testing/test_util.h"

namespace dfx::collectors {
namespace {

using testing::Slurp;
using testing::TempDir;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) out.push_back(line);
  return out;
}

std::vector<std::string> Split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) out.push_back(cell);
  return out;
}

ChipLayout Layout(const char* backend, int threads = 2) {
  ChipLayout l;
  l.backend = backend;
  l.core_types = {CoreKind::kAic, CoreKind::kAiv, CoreKind::kAiv, CoreKind::kAiv};
  l.sched_threads = threads;
  return l;
}

PmuWork VectorWork() {
  PmuWork w;
  w.total_cycles = 9120;
  w.vec_cycles = 4000;
  w.scalar_cycles = 800;
  w.mte2_cycles = 1500;
  w.mte3_cycles = 700;
  w.bytes_read_gm = 4096;
  w.bytes_written_gm = 2048;
  w.bytes_read_ub = 8192;
  w.bytes_written_ub = 6144;
  w.vec_fp32_ops = 64 * 100;
  w.instructions = 320;
  return w;
}

TEST(Pmu, ColumnsPerEventTypeAndBackend) {
  struct Case {
    const char* backend;
    int type;
    size_t count;
    const char* first;
    const char* last;
  } cases[] = {
      {"a2a3", 1, 7, "cube_fp16_exec", "vec_misc_exec"},
      {"a2a3", 2, 8, "vec_busy_cycles", "icache_req"},
      {"a2a3", 4, 8, "ub_read_req", "main_write_req"},
      {"a2a3", 5, 6, "l0a_read_req", "l0c_write_req"},
      {"a2a3", 6, 3, "bankgroup_stall_cycles", "vec_resc_conflict_cycles"},
      {"a2a3", 7, 8, "ub_read_bw_mte", "ub_write_bw_scalar"},
      {"a2a3", 8, 6, "write_cache_hit", "r1_read_cache_miss_allocate"},
      {"a5", 1, 2, "cube_fp_instr_busy", "cube_int_instr_busy"},
      {"a5", 2, 9, "pmu_idc_aic_vec_busy_o", "pmu_fix_instr_busy"},
      {"a5", 4, 8, "bif_sc_pmu_read_main_instr_core", "pmu_wr_l1_instr"},
      {"a5", 5, 7, "cube_sc_pmu_read_l0a_instr", "cube_sc_pmu_write_l0c_instr"},
      {"a5", 6, 4, "stu_pmu_wctl_ub_cflt", "idu_pmu_ins_iss_cnt"},
      {"a5", 7, 7, "pmu_rd_acc_ub_instr_p", "ub_pmu_vec_wr_ub_acc"},
      {"a5", 8, 6, "bif_sc_pmu_ar_close_l2_hit_core", "bif_sc_pmu_aw_close_l2_victim_core"},
  };
  for (const auto& c : cases) {
    TempDir dir;
    PmuRecorder r(c.type, Layout(c.backend), CapacityHint{.core_executions = 4});
    auto cols = r.CounterColumns();
    ASSERT_EQ(cols.size(), c.count) << c.backend << " type " << c.type;
    EXPECT_EQ(cols.front(), c.first);
    EXPECT_EQ(cols.back(), c.last);
    r.Record(0, 1, 7, 2, CoreKind::kAiv, VectorWork());
    auto path = dir.path() / "pmu.csv";
    ASSERT_TRUE(r.Export(path).ok());
    auto lines = Lines(Slurp(path));
    ASSERT_EQ(lines.size(), 2u);
    auto header = Split(lines[0]);
    ASSERT_EQ(header.size(), 7 + c.count);
    EXPECT_EQ(std::vector<std::string>(header.begin(), header.begin() + 6),
              (std::vector<std::string>{"thread_id", "core_id", "task_id", "func_id", "core_type",
                                        "pmu_total_cycles"}));
    EXPECT_EQ(header.back(), "event_type");
    auto row = Split(lines[1]);
    ASSERT_EQ(row.size(), header.size());
    EXPECT_EQ(row.back(), std::to_string(c.type));
  }
}

TEST(Pmu, PipeUtilizationIsDerivedFromTheWork) {
  TempDir dir;
  PmuRecorder r(2, Layout("a2a3"), CapacityHint{.core_executions = 4});
  r.Record(1, 3, 0x100000007ull, 2, CoreKind::kAiv, VectorWork());
  r.Record(1, 3, 0x100000008ull, 2, CoreKind::kAiv, VectorWork());  // same func, warm icache
  auto path = dir.path() / "pmu.csv";
  ASSERT_TRUE(r.Export(path).ok());
  auto lines = Lines(Slurp(path));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "thread_id,core_id,task_id,func_id,core_type,pmu_total_cycles,vec_busy_cycles,"
            "cube_busy_cycles,scalar_busy_cycles,mte1_busy_cycles,mte2_busy_cycles,"
            "mte3_busy_cycles,icache_miss,icache_req,event_type");
  // 320 instructions = 20 distinct 16-instruction lines: all miss cold, 20/16 = 1 warm.
  EXPECT_EQ(lines[1], "1,3,0x0000000100000007,2,1,9120,4000,0,800,0,1500,700,20,320,2");
  EXPECT_EQ(lines[2], "1,3,0x0000000100000008,2,1,9120,4000,0,800,0,1500,700,1,320,2");
}

TEST(Pmu, MemoryRequestsAreBytesOver32) {
  TempDir dir;
  PmuRecorder r(4, Layout("a2a3"), CapacityHint{.core_executions = 4});
  r.Record(0, 1, 7, 2, CoreKind::kAiv, VectorWork());
  auto path = dir.path() / "pmu.csv";
  ASSERT_TRUE(r.Export(path).ok());
  auto row = Split(Lines(Slurp(path))[1]);
  // ub_read_req, ub_write_req, l1 r/w, l2 r/w, main r/w
  EXPECT_EQ(row[6], "256");  // 8192 / 32
  EXPECT_EQ(row[7], "192");  // 6144 / 32
  EXPECT_EQ(row[8], "0");
  EXPECT_EQ(row[10], "128");  // 4096 / 32
  EXPECT_EQ(row[11], "64");   // 2048 / 32
  EXPECT_EQ(row[12], "128");  // cold: every L2 line of the read misses to main memory
}

TEST(Pmu, ArithmeticCountsFromOps) {
  TempDir dir;
  PmuRecorder r(1, Layout("a2a3"), CapacityHint{.core_executions = 4});
  PmuWork w;
  w.cube_fp_ops = 4096 * 10;
  w.vec_fp16_ops = 128 * 3 + 64;
  r.Record(0, 0, 1, 0, CoreKind::kAic, w);
  auto path = dir.path() / "pmu.csv";
  ASSERT_TRUE(r.Export(path).ok());
  auto row = Split(Lines(Slurp(path))[1]);
  EXPECT_EQ(row[4], "0");   // core_type AIC
  EXPECT_EQ(row[6], "10");  // cube_fp16_exec
  EXPECT_EQ(row[9], "3");   // vec_fp16_128lane_exec
  EXPECT_EQ(row[10], "1");  // vec_fp16_64lane_exec
}

TEST(Pmu, ShardsConcatenatedInShardOrderAndNoRowsNoFile) {
  TempDir dir;
  PmuRecorder r(2, Layout("a5"), CapacityHint{.core_executions = 4});
  auto path = dir.path() / "pmu.csv";
  EXPECT_EQ(r.Export(path).code(), Code::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(path));
  r.Record(1, 0, 10, 0, CoreKind::kAic, VectorWork());
  r.Record(0, 1, 11, 1, CoreKind::kAiv, VectorWork());
  r.Record(1, 2, 12, 1, CoreKind::kAiv, VectorWork());
  ASSERT_TRUE(r.Export(path).ok());
  auto lines = Lines(Slurp(path));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(Split(lines[1])[2], "0x000000000000000b");
  EXPECT_EQ(Split(lines[2])[2], "0x000000000000000a");
  EXPECT_EQ(Split(lines[3])[2], "0x000000000000000c");
}

TEST(Pmu, L2CacheModelFirstTouchMissesThenHits) {
  TempDir dir;
  PmuRecorder r(8, Layout("a2a3"), CapacityHint{.core_executions = 4});
  PmuWork w;
  w.bytes_read_gm = 128 * 80;               // 80 lines
  w.bytes_written_gm = 128 * 16;            // 16 lines
  r.Record(0, 0, 1, 5, CoreKind::kAic, w);  // AIC: read port r0, cold
  r.Record(0, 0, 2, 5, CoreKind::kAic, w);  // same func again: warm
  r.Record(0, 1, 3, 5, CoreKind::kAiv, w);  // other core, AIV: port r1, cold there
  auto path = dir.path() / "pmu.csv";
  ASSERT_TRUE(r.Export(path).ok());
  auto lines = Lines(Slurp(path));
  ASSERT_EQ(lines.size(), 4u);
  auto counters = [&](int i) {
    auto row = Split(lines[i]);
    return std::vector<std::string>(row.begin() + 6, row.end() - 1);
  };
  // write_hit, write_miss_allocate, r0_hit, r0_miss, r1_hit, r1_miss
  EXPECT_EQ(counters(1), (std::vector<std::string>{"0", "16", "0", "80", "0", "0"}));
  EXPECT_EQ(counters(2), (std::vector<std::string>{"14", "2", "70", "10", "0", "0"}));
  EXPECT_EQ(counters(3), (std::vector<std::string>{"0", "16", "0", "0", "0", "80"}));
}

TEST(Pmu, SameWorkSameCounters) {
  // Nothing is random: two recorders fed the same stream write the same file.
  TempDir dir;
  std::string text[2];
  for (int k = 0; k < 2; ++k) {
    PmuRecorder r(6, Layout("a5"), CapacityHint{.core_executions = 8});
    for (uint32_t i = 0; i < 8; ++i)
      r.Record(i % 2, i % 4, i, static_cast<int32_t>(i % 3), CoreKind::kAiv, VectorWork());
    auto path = dir.path() / ("pmu" + std::to_string(k) + ".csv");
    ASSERT_TRUE(r.Export(path).ok());
    text[k] = Slurp(path);
  }
  EXPECT_EQ(text[0], text[1]);
  auto row = Split(Lines(text[0])[1]);
  // stu (bank) = overlap/16, ldu (bank group) = overlap/4; overlap = min(256, 192) requests.
  EXPECT_EQ(row[6], "12");
  EXPECT_EQ(row[7], "48");
  EXPECT_EQ(row[8], "4000");
  EXPECT_EQ(row[9], "320");
}

TEST(Pmu, InvalidTypeFallsBackToPipeUtilization) {
  PmuRecorder r(3, Layout("a2a3"), CapacityHint{});
  EXPECT_EQ(r.CounterColumns().front(), "vec_busy_cycles");
}

TEST(Pmu, ReaderReadsBackWhatTheWriterWrote) {
  TempDir dir;
  PmuRecorder r(2, Layout("a2a3"), CapacityHint{.core_executions = 4});
  r.Record(1, 0, 10, 4, CoreKind::kAic, VectorWork());
  r.Record(0, 1, 11, 7, CoreKind::kAiv, VectorWork());
  auto path = dir.path() / "pmu.csv";
  ASSERT_TRUE(r.Export(path).ok());
  PmuCsvHeader header;
  std::vector<PmuCsvRow> rows;
  ASSERT_TRUE(ReadPmuCsv(path, &header, [&](const PmuCsvRow& row) { rows.push_back(row); }).ok());
  EXPECT_EQ(header.columns.size(), header.counters.size() + 6);
  EXPECT_EQ(header.counters.front(), "pmu_total_cycles");
  std::vector<std::string> written = r.CounterColumns();
  written.insert(written.begin(), "pmu_total_cycles");
  EXPECT_EQ(header.counters, written);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].func_id, 7);  // shard 0 first
  EXPECT_EQ(rows[0].core_type, 1);
  EXPECT_EQ(rows[0].event_type, 2);
  EXPECT_EQ(rows[1].func_id, 4);
  EXPECT_EQ(rows[1].core_type, 0);
  ASSERT_EQ(rows[1].counters.size(), header.counters.size());
  EXPECT_EQ(rows[1].counters[0], 9120.0);  // pmu_total_cycles
}

TEST(Pmu, ReaderGivesEachRowsTaskAndCore) {
  TempDir dir;
  auto path = dir.path() / "pmu.csv";
  ASSERT_TRUE(WriteFileAtomic(path,
                              "thread_id,core_id,task_id,func_id,core_type,pmu_total_cycles,c,"
                              "event_type\n1,3,0x0000000100000007,2,1,10,4,2\n")
                  .ok());
  PmuCsvHeader header;
  std::vector<PmuCsvRow> rows;
  ASSERT_TRUE(ReadPmuCsv(path, &header, [&](const PmuCsvRow& r) { rows.push_back(r); }).ok());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].task_id, 0x100000007ull);
  EXPECT_EQ(rows[0].core_id, 3);
  auto only = ReadPmuCsvHeader(path);
  ASSERT_TRUE(only.ok());
  EXPECT_EQ(only->counters, (std::vector<std::string>{"pmu_total_cycles", "c"}));
  ASSERT_TRUE(WriteFileAtomic(path,
                              "thread_id,core_id,task_id,func_id,core_type,pmu_total_cycles,c,"
                              "event_type\n1,3,7,2,1,10,4,2\n")
                  .ok());
  Status s = ReadPmuCsv(path, &header, [](const PmuCsvRow&) {});
  EXPECT_EQ(s.message(),
            path.string() + ": line 2: column task_id: expected 0x<hex digits>, got \"7\"");
}

TEST(Pmu, ReaderNamesTheLineAndColumnOfABadCell) {
  TempDir dir;
  auto path = dir.path() / "pmu.csv";
  ASSERT_TRUE(WriteFileAtomic(path,
                              "thread_id,core_id,task_id,func_id,core_type,pmu_total_cycles,c,"
                              "event_type\n0,0,0x1,2,0,10,x,2\n")
                  .ok());
  PmuCsvHeader header;
  Status s = ReadPmuCsv(path, &header, [](const PmuCsvRow&) {});
  EXPECT_EQ(s.message(), path.string() + ": line 2: column c: expected a number, got \"x\"");
  EXPECT_EQ(ReadPmuCsv(dir.path() / "none.csv", &header, [](const PmuCsvRow&) {}).code(),
            Code::kNotFound);
}

// The reader splits lines itself (no getline per line): a row across its
// 64 KiB read blocks, CRLF endings, blank lines, a last line without '\n'
// and cells strtod takes but from_chars does not (" 5", "+5", "0x1p3") all
// read as before.
TEST(Pmu, ReaderReadsRowsAcrossBlocksAndLineEndings) {
  TempDir dir;
  auto path = dir.path() / "pmu.csv";
  std::string text =
      "thread_id,core_id,task_id,func_id,core_type,pmu_total_cycles,c,event_type\r\n";
  const int kRows = 5000;  // ~150 KiB: rows cross the block boundaries
  for (int i = 0; i < kRows; ++i) {
    text += fmt::format("0,{},0x{:016x},{},1,{}.5,{},2\r\n", i % 7, i, i % 3, i, 2 * i);
    if (i % 1000 == 0) text += "\r\n";
  }
  text += "0, 5,0x00000000000000ff,+1,0,0x1p3,7 ,2";  // no final newline
  ASSERT_TRUE(WriteFileAtomic(path, text).ok());
  PmuCsvHeader header;
  std::vector<PmuCsvRow> rows;
  ASSERT_TRUE(ReadPmuCsv(path, &header, [&](const PmuCsvRow& r) { rows.push_back(r); }).ok());
  EXPECT_EQ(header.columns.back(), "event_type");
  ASSERT_EQ(rows.size(), static_cast<size_t>(kRows + 1));
  double total = 0;
  for (int i = 0; i < kRows; ++i) {
    ASSERT_EQ(rows[i].task_id, static_cast<uint64_t>(i)) << i;
    ASSERT_EQ(rows[i].core_id, i % 7) << i;
    ASSERT_EQ(rows[i].counters.size(), 2u);
    ASSERT_EQ(rows[i].counters[1], 2.0 * i) << i;
    total += rows[i].counters[0];
  }
  EXPECT_EQ(total, kRows * (kRows - 1) / 2.0 + kRows * 0.5);
  const PmuCsvRow& last = rows.back();
  EXPECT_EQ(last.core_id, 5);
  EXPECT_EQ(last.task_id, 0xffu);
  EXPECT_EQ(last.func_id, 1);
  EXPECT_EQ(last.counters, (std::vector<double>{8.0, 7.0}));
  EXPECT_EQ(last.event_type, 2);
  // A trailing comma is one column more, as before.
  ASSERT_TRUE(WriteFileAtomic(path,
                              "thread_id,core_id,task_id,func_id,core_type,pmu_total_cycles,c,"
                              "event_type\n0,0,0x1,2,0,10,3,2,\n")
                  .ok());
  EXPECT_EQ(ReadPmuCsv(path, &header, [](const PmuCsvRow&) {}).message(),
            path.string() + ": line 2: 9 columns, expected 8");
}

}  // namespace
}  // namespace dfx::collectors
