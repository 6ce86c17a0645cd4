#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <thread>

#include "collectors/recorders.h"
#include "collectors/swimlane/swimlane_reader.h"
#include "collectors/testing/test_util.h"

namespace dfx::collectors {
namespace {

using testing::Keys;
using testing::ReadJson;
using testing::TempDir;

// The raw rows of a records file, in file order.
struct RawRows {
  std::vector<SwimlaneAicoreRow> aicore;
  std::vector<SwimlaneAicpuRow> aicpu;
};
RawRows ReadRawRows(const std::filesystem::path& path) {
  RawRows raw;
  Status s = ForEachTaskRecord(
      path, [&](const SwimlaneAicoreRow& r) { raw.aicore.push_back(r); },
      [&](const SwimlaneAicpuRow& r) { raw.aicpu.push_back(r); });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return raw;
}

ChipLayout TwoCores() {
  ChipLayout l;
  l.backend = "a2a3";
  l.clock_freq_hz = 50000000;
  l.core_types = {CoreKind::kAic, CoreKind::kAiv};
  l.sched_threads = 2;
  l.orch_threads = 1;
  return l;
}

// Drives every call of every level, as the device does for one task on core 1
// and one on core 0 (recorded in reverse core order).
void RecordAll(SwimlaneRecorder& r) {
  r.SetCoreToThread(0, 0);
  r.SetCoreToThread(1, 1);
  r.RecordOrchPhase(0, 0, 4294967298ull, 1000400, 1000450);
  r.RecordAicoreTask(1, 4294967298ull, 7, 1000500, 1001000, 12);
  r.RecordAicoreTask(0, 4294967299ull, 1, 1000600, 1000900, 5);
  r.RecordAicoreTask(1, 4294967300ull, 8, 1001100, 1001200, 3);
  r.RecordAicpuTask(1, 7, 1000470, 1001030);
  r.RecordAicpuTask(0, 1, 1000580, 1000930);
  r.RecordAicpuTask(1, 8, 1001050, 1001230);
  SchedPhaseRecord d;
  d.kind = SchedPhaseKind::kDispatch;
  d.start_cycles = 1000460;
  d.end_cycles = 1000475;
  d.loop_iter = 3;
  d.tasks_processed = 1;
  d.pop_hit = 1;
  d.shared_at_start[1] = 1;
  r.RecordSchedPhase(0, d);
  SchedPhaseRecord c;
  c.kind = SchedPhaseKind::kComplete;
  c.start_cycles = 1001025;
  c.end_cycles = 1001040;
  c.loop_iter = 9;
  c.tasks_processed = 1;
  r.RecordSchedPhase(0, c);
  SchedPhaseRecord dummy;
  dummy.kind = SchedPhaseKind::kDummyTask;
  dummy.task_id = 4294967301ull;
  r.RecordSchedPhase(0, dummy);
}

TEST(SwimlaneRecorder, LevelFourMatchesSpecKeysOrderAndTypes) {
  TempDir dir;
  SwimlaneRecorder r(4, TwoCores(), CapacityHint{.tasks = 8, .core_executions = 8});
  RecordAll(r);
  auto path = dir.path() / "chip_swimlane_records.json";
  ASSERT_TRUE(r.Export(path).ok());
  Json j = ReadJson(path);
  EXPECT_EQ(Keys(j), (std::vector<std::string>{"chip_swimlane_level", "metadata", "aicore_tasks",
                                               "aicpu_tasks", "aicpu_scheduler_phases",
                                               "aicpu_orchestrator_phases"}));
  EXPECT_EQ(j["chip_swimlane_level"], 4);
  EXPECT_EQ(Keys(j["metadata"]), (std::vector<std::string>{"clock_freq_hz", "num_cores",
                                                           "core_types", "core_to_thread"}));
  EXPECT_EQ(j["metadata"]["clock_freq_hz"], 50000000);
  EXPECT_EQ(j["metadata"]["num_cores"], 2);
  EXPECT_EQ(j["metadata"]["core_types"], Json::parse(R"(["aic","aiv"])"));
  EXPECT_EQ(j["metadata"]["core_to_thread"], Json::parse("[0,1]"));
  // Grouped by core in core order, collection order within a core.
  EXPECT_EQ(j["aicore_tasks"], Json::parse(R"([[0,4294967299,1,1000600,1000900,5],
                                               [1,4294967298,7,1000500,1001000,12],
                                               [1,4294967300,8,1001100,1001200,3]])"));
  EXPECT_EQ(j["aicpu_tasks"],
            Json::parse("[[0,1,1000580,1000930],[1,7,1000470,1001030],[1,8,1001050,1001230]]"));
  const Json& sched = j["aicpu_scheduler_phases"];
  ASSERT_EQ(sched.size(), 2u) << "one inner array per scheduler thread, even if empty";
  EXPECT_TRUE(sched[1].empty());
  ASSERT_EQ(sched[0].size(), 3u);
  EXPECT_EQ(Keys(sched[0][0]),
            (std::vector<std::string>{"kind", "start_cycles", "end_cycles", "loop_iter",
                                      "tasks_processed", "pop_hit", "pop_miss", "shared_at_start",
                                      "shared_at_end"}));
  EXPECT_EQ(sched[0][0]["kind"], "dispatch");
  EXPECT_EQ(sched[0][0]["shared_at_start"], Json::parse("[0,1,0]"));
  EXPECT_EQ(Keys(sched[0][1]),
            (std::vector<std::string>{"kind", "start_cycles", "end_cycles", "loop_iter",
                                      "tasks_processed", "shared_at_start", "shared_at_end"}));
  EXPECT_EQ(Keys(sched[0][2]), (std::vector<std::string>{"kind", "start_cycles", "end_cycles",
                                                         "loop_iter", "tasks_processed", "task_id",
                                                         "shared_at_start", "shared_at_end"}));
  EXPECT_EQ(sched[0][2]["task_id"].get<uint64_t>(), 4294967301ull);
  const Json& orch = j["aicpu_orchestrator_phases"];
  ASSERT_EQ(orch.size(), 1u);
  EXPECT_EQ(Keys(orch[0][0]),
            (std::vector<std::string>{"submit_idx", "task_id", "start_cycles", "end_cycles"}));
  EXPECT_EQ(orch[0][0]["task_id"].get<uint64_t>(), 4294967298ull);
}

TEST(SwimlaneRecorder, LevelGuardsHold) {
  for (int level = 1; level <= 4; ++level) {
    TempDir dir;
    SwimlaneRecorder r(level, TwoCores(), CapacityHint{.tasks = 8, .core_executions = 8});
    RecordAll(r);
    auto path = dir.path() / "records.json";
    ASSERT_TRUE(r.Export(path).ok()) << level;
    Json j = ReadJson(path);
    EXPECT_EQ(j["chip_swimlane_level"], level);
    EXPECT_EQ(j["aicore_tasks"].size(), 3u);
    EXPECT_EQ(j["aicpu_tasks"].size(), level >= 2 ? 3u : 0u) << "level " << level;
    EXPECT_TRUE(j["aicpu_tasks"].is_array());
    EXPECT_EQ(j.contains("aicpu_scheduler_phases"), level >= 3) << level;
    EXPECT_EQ(j["metadata"].contains("core_to_thread"), level >= 3) << level;
    EXPECT_EQ(j.contains("aicpu_orchestrator_phases"), level >= 4) << level;
  }
}

TEST(SwimlaneRecorder, NoRecordsNoFile) {
  TempDir dir;
  SwimlaneRecorder r(4, TwoCores(), CapacityHint{});
  auto path = dir.path() / "chip_swimlane_records.json";
  Status s = r.Export(path);
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "no temporary left behind";
}

TEST(SwimlaneRecorder, OrchPhasesKeyOnlyWithRecords) {
  TempDir dir;
  SwimlaneRecorder r(4, TwoCores(), CapacityHint{.tasks = 1, .core_executions = 1});
  r.RecordAicoreTask(0, 1, 1, 10, 20, 0);
  auto path = dir.path() / "r.json";
  ASSERT_TRUE(r.Export(path).ok());
  Json j = ReadJson(path);
  EXPECT_FALSE(j.contains("aicpu_orchestrator_phases"));
  EXPECT_TRUE(j.contains("aicpu_scheduler_phases"));
}

TEST(SwimlaneRecorder, OverflowIsDroppedAndCounted) {
  TempDir dir;
  ChipLayout l = TwoCores();
  SwimlaneRecorder r(2, l, CapacityHint{.tasks = 1, .core_executions = 1});
  // Capacity floors at 1024 rows, claimed per core in blocks of 64, plus
  // one block per core for the partly filled ones: 18 blocks, 1152 rows.
  const uint32_t kept = (1024 / 64 + 2) * 64;
  for (uint32_t i = 0; i < 1300; ++i) r.RecordAicoreTask(i % 2, i, i, i, i + 1, 0);
  r.RecordAicoreTask(5, 1, 1, 1, 2, 0);  // no such core
  EXPECT_EQ(r.dropped_records(), 1300u - kept + 1u);
  auto path = dir.path() / "r.json";
  // What the user reads: the reference's reconcile line (the pool's total,
  // the row of no such core included), then the drops per core (74 each).
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  spdlog::default_logger()->sinks().push_back(sink);
  Status exported = r.Export(path);
  spdlog::default_logger()->sinks().pop_back();
  ASSERT_TRUE(exported.ok()) << exported.message();
  EXPECT_NE(
      log.str().find("ChipSwimlane reconcile: AICORE_TASK 149 records dropped on device side."),
      std::string::npos)
      << log.str();
  EXPECT_NE(log.str().find("ChipSwimlane: AICORE_TASK rows dropped by core (pool full): core 0: "
                           "74, core 1: 74\n"),
            std::string::npos)
      << log.str();
  Json rows = ReadJson(path)["aicore_tasks"];
  ASSERT_EQ(rows.size(), kept);
  // Each core kept its first rows, in order (core 0: tokens 0, 2, 4, ...).
  for (uint32_t k = 0; k < kept / 2; ++k) ASSERT_EQ(rows[k][1].get<uint32_t>(), 2 * k) << k;
}

TEST(SwimlaneRecorder, ConcurrentCoresKeepPerCoreOrder) {
  TempDir dir;
  ChipLayout l;
  l.core_types.assign(4, CoreKind::kAiv);
  SwimlaneRecorder r(2, l, CapacityHint{.tasks = 4000, .core_executions = 4000});
  std::vector<std::thread> threads;
  for (uint32_t core = 0; core < 4; ++core) {
    threads.emplace_back([&r, core] {
      for (uint32_t i = 0; i < 1000; ++i) {
        r.RecordAicoreTask(core, (uint64_t{core} << 32) | i, i, 100 + i * 10, 105 + i * 10, 1);
        r.RecordAicpuTask(core, i, 99 + i * 10, 106 + i * 10);
      }
    });
  }
  for (auto& t : threads) t.join();
  auto path = dir.path() / "r.json";
  ASSERT_TRUE(r.Export(path).ok());
  RawRows raw = ReadRawRows(path);
  ASSERT_EQ(raw.aicore.size(), 4000u);
  for (size_t k = 0; k < raw.aicore.size(); ++k) {
    EXPECT_EQ(raw.aicore[k].core_id, k / 1000);
    EXPECT_EQ(raw.aicore[k].reg_task_id, k % 1000);
  }
  auto rec = ReadSwimlaneRecords(path);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(rec->tasks.size(), 4000u);
  EXPECT_EQ(rec->unmatched_aicpu_rows, 0u);
}

TEST(SwimlaneRecorder, LargeExportStreamsAcrossChunks) {
  TempDir dir;
  ChipLayout l;
  l.core_types.assign(8, CoreKind::kAiv);
  constexpr uint32_t kRows = 120000;  // ~7 MB: several 1 MiB writer chunks
  SwimlaneRecorder r(2, l, CapacityHint{.tasks = kRows, .core_executions = kRows});
  for (uint32_t i = 0; i < kRows; ++i) {
    r.RecordAicoreTask(i % 8, 0xFFFFFFFF00000000ull | i, i / 8, 1000000000ull + i,
                       1000000500ull + i, 7);
    r.RecordAicpuTask(i % 8, i / 8, 999999990ull + i, 1000000510ull + i);
  }
  auto path = dir.path() / "r.json";
  ASSERT_TRUE(r.Export(path).ok());
  EXPECT_GT(std::filesystem::file_size(path), 4u << 20);
  RawRows raw = ReadRawRows(path);
  ASSERT_EQ(raw.aicore.size(), kRows);
  ASSERT_EQ(raw.aicpu.size(), kRows);
  EXPECT_EQ(raw.aicore.back().core_id, 7u);
  EXPECT_EQ(raw.aicore.back().task_token_raw, 0xFFFFFFFF00000000ull | (kRows - 1));
  auto rec = ReadSwimlaneRecords(path);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(rec->tasks.size(), kRows);
  EXPECT_EQ(rec->unmatched_aicpu_rows, 0u);
}

TEST(SwimlaneReader, JoinsOnCoreAndRegTaskIdAndCountsUnmatched) {
  TempDir dir;
  SwimlaneRecorder r(4, TwoCores(), CapacityHint{.tasks = 8, .core_executions = 8});
  RecordAll(r);
  r.RecordAicpuTask(0, 99, 5, 6);  // no AICore row: dropped on rotation
  auto path = dir.path() / "r.json";
  ASSERT_TRUE(r.Export(path).ok());
  auto rec = ReadSwimlaneRecords(path);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(rec->level, 4);
  EXPECT_EQ(rec->top_level_keys.size(), 6u);
  ASSERT_EQ(rec->sched_phases.size(), 2u);
  EXPECT_EQ(rec->sched_phases[0].size(), 3u);
  ASSERT_EQ(rec->orch_phases.size(), 1u);
  EXPECT_EQ(rec->unmatched_aicpu_rows, 1u);
  ASSERT_EQ(rec->tasks.size(), 3u);
  const TaskRow& first = rec->tasks[0];
  EXPECT_EQ(rec->TaskId(first), 4294967298ull);  // sorted by task id
  EXPECT_EQ(first.core_id, 1u);
  EXPECT_EQ(rec->Dispatch(first), 1000470u);
  EXPECT_EQ(rec->Start(first), 1000500u);
}

TEST(SwimlaneReader, LevelOneSynthesisesTasksAndRejectsBadLevel) {
  TempDir dir;
  SwimlaneRecorder r(1, TwoCores(), CapacityHint{.tasks = 8, .core_executions = 8});
  RecordAll(r);
  auto path = dir.path() / "r.json";
  ASSERT_TRUE(r.Export(path).ok());
  auto rec = ReadSwimlaneRecords(path);
  ASSERT_TRUE(rec.ok());
  ASSERT_EQ(rec->tasks.size(), 3u);
  EXPECT_EQ(rec->Dispatch(rec->tasks[0]), 0u);

  ASSERT_TRUE(WriteFileAtomic(dir.path() / "bad.json",
                              R"({"chip_swimlane_level": 5, "metadata": {"clock_freq_hz": 1}})")
                  .ok());
  auto bad = ReadSwimlaneRecords(dir.path() / "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("Unsupported chip_swimlane_level: 5"), std::string::npos);
}

TEST(SwimlaneReader, AHostileDeepFileIsRefusedNotFollowedIntoTheStack) {
  TempDir dir;
  std::string deep = R"({"chip_swimlane_level": 4, "metadata": )";
  for (int i = 0; i < 100000; ++i) deep += "[";
  ASSERT_TRUE(WriteFileAtomic(dir.path() / "deep.json", deep).ok());
  auto rec = ReadSwimlaneRecords(dir.path() / "deep.json");
  ASSERT_FALSE(rec.ok());
  EXPECT_NE(rec.status().message().find("nested deeper than 256 levels"), std::string::npos)
      << rec.status().message();
}

}  // namespace
}  // namespace dfx::collectors
