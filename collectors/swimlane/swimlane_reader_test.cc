#include "collectors/swimlane/swimlane_reader.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>

#include <tuple>
#include "collectors/testing/test_util.h"

namespace dfx::collectors {
namespace {

using testing::ViewFixture;

TEST(ReadSwimlaneRecordsTest, JoinsLevel4RowsOnCoreAndRegIdAndSortsByTaskId) {
  auto d = ReadSwimlaneRecords(ViewFixture("l4/chip_swimlane_records.json"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->level, 4);
  EXPECT_EQ(d->clock_freq_hz, 50000000u);
  EXPECT_EQ(d->base_cycles, 900u);  // earliest orchestrator record
  ASSERT_EQ(d->tasks.size(), 5u);
  EXPECT_EQ(d->TaskId(d->tasks[0]), 1u);
  EXPECT_EQ(d->TaskId(d->tasks[1]), 2u);
  EXPECT_EQ(d->TaskId(d->tasks[2]), 2u);
  EXPECT_EQ(d->TaskId(d->tasks[4]), (uint64_t{1} << 32) | 4);
  // Task 3 ran on core 0 with reg 2: its AICPU row is dispatch 1212 / finish 1310.
  EXPECT_NEAR(d->DispatchUs(d->tasks[3]), (1212 - 900) * 0.02, 1e-9);
  EXPECT_NEAR(d->FinishUs(d->tasks[3]), (1310 - 900) * 0.02, 1e-9);
  EXPECT_NEAR(d->ReceiveUs(d->tasks[3]), (1220 - 8 - 900) * 0.02, 1e-9);
  EXPECT_EQ(d->core_to_thread, (std::vector<int>{0, 0, 1}));
  ASSERT_EQ(d->sched_phases.size(), 2u);
  EXPECT_EQ(d->sched_phases[0][1].kind, PhaseKind::kResolve);
  EXPECT_EQ(d->sched_phases[0][8].task_id, 5);
  ASSERT_EQ(d->orch_phases.size(), 1u);
  EXPECT_EQ(d->orch_phases[0].size(), 6u);
  EXPECT_EQ(UnmatchedWarning(*d), "");
}

TEST(ReadSwimlaneRecordsTest, Level1SynthesisesTasksAndAcceptsLegacyRows) {
  auto d = ReadSwimlaneRecords(ViewFixture("l1/chip_swimlane_records.json"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->tasks.size(), 3u);
  EXPECT_EQ(d->TaskId(d->tasks[2]), 8u);
  EXPECT_EQ(d->ReceiveToStart(d->tasks[2]), 0u);  // 5-column legacy row
  EXPECT_EQ(d->DispatchUs(d->tasks[0]), 0.0);
}

TEST(ReadSwimlaneRecordsTest, CountsUnmatchedAicpuRowsPerCore) {
  auto d = ReadSwimlaneRecords(ViewFixture("l2/chip_swimlane_records.json"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->tasks.size(), 2u);
  EXPECT_EQ(d->unmatched_aicpu_rows, 1u);
  EXPECT_NE(UnmatchedWarning(*d).find("(top offenders: core 1: 1)"), std::string::npos);
}

TEST(ReadSwimlaneRecordsTest, RejectsUnsupportedLevelAndMissingClock) {
  auto d = ReadSwimlaneRecords(ViewFixture("bad_level/chip_swimlane_records.json"));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "Unsupported chip_swimlane_level: 7 (expected 1, 2, 3, or 4)");
  auto p =
      std::filesystem::temp_directory_path() / ("noclock" + std::to_string(getpid()) + ".json");
  std::ofstream(p)
      << R"({"chip_swimlane_level": 2, "metadata": {"num_cores": 1}, "aicore_tasks": []})";
  d = ReadSwimlaneRecords(p);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "metadata missing/zero clock_freq_hz: 0");
  std::filesystem::remove(p);
}

std::filesystem::path WriteTemp(const std::string& name, const std::string& text) {
  auto p = std::filesystem::temp_directory_path() / (name + std::to_string(getpid()) + ".json");
  std::ofstream(p) << text;
  return p;
}

TEST(ReadSwimlaneRecordsTest, RowsBeyondTheCompactEncodingKeepExactValues) {
  // Task 2 runs 2^33 cycles after task 1 (beyond 32-bit offsets) and task
  // 0x30000000005 has a 42-bit id: both become wide rows with exact values.
  const uint64_t late = 1000 + (uint64_t{1} << 33);
  const uint64_t big_id = (uint64_t{3} << 40) | 5;
  auto p = WriteTemp("wide", fmt::format(R"({{"chip_swimlane_level": 2,
    "metadata": {{"clock_freq_hz": 1000000000, "num_cores": 2, "core_types": ["aic", "aiv"]}},
    "aicpu_tasks": [[0, 1, 990, 71050], [1, 1, {}, {}], [1, 2, 29000, 100060]],
    "aicore_tasks": [[0, 1, 1, 1000, 1050, 0], [1, 2, 1, {}, {}, 7], [1, {}, 2, 100000, 100050, 70000]]}})",
                                         late - 10, late + 100, late, late + 50, big_id));
  auto d = ReadSwimlaneRecords(p);
  std::filesystem::remove(p);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->tasks.size(), 3u);
  EXPECT_EQ(d->base_cycles, 990u);
  EXPECT_EQ(d->TaskId(d->tasks[0]), 1u);
  EXPECT_EQ(d->TaskId(d->tasks[1]), 2u);
  EXPECT_EQ(d->TaskId(d->tasks[2]), big_id);
  EXPECT_TRUE(d->tasks[1].wide());
  EXPECT_EQ(d->Start(d->tasks[1]), late);
  EXPECT_EQ(d->End(d->tasks[1]), late + 50);
  EXPECT_EQ(d->Dispatch(d->tasks[1]), late - 10);
  EXPECT_EQ(d->Finish(d->tasks[1]), late + 100);
  EXPECT_DOUBLE_EQ(d->StartUs(d->tasks[1]), static_cast<double>(late - 990) / 1000.0);
  EXPECT_EQ(d->Start(d->tasks[2]), 100000u);
  EXPECT_EQ(d->Finish(d->tasks[2]), 100060u);
  EXPECT_EQ(d->ReceiveToStart(d->tasks[2]), 70000u);  // beyond the 16-bit compact field
  EXPECT_DOUBLE_EQ(d->ReceiveUs(d->tasks[2]), (30000.0 - 990.0) / 1000.0);
  // Tail of 70000 cycles: too long for the 16-bit delta, kept exactly.
  EXPECT_TRUE(d->tasks[0].wide());
  EXPECT_EQ(d->Dispatch(d->tasks[0]), 990u);
  EXPECT_EQ(d->Finish(d->tasks[0]), 71050u);
  EXPECT_EQ(d->End(d->tasks[0]), 1050u);
}

TEST(ReadSwimlaneRecordsTest, StreamedSchedulerPhasesMatchTheKeptOnes) {
  SwimlaneReadOptions streamed;
  streamed.stream_sched_phases = true;
  auto a = ReadSwimlaneRecords(ViewFixture("l4/chip_swimlane_records.json"));
  auto b = ReadSwimlaneRecords(ViewFixture("l4/chip_swimlane_records.json"), streamed);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(b->sched_phases.empty());
  EXPECT_EQ(b->num_sched_threads, 2u);
  std::vector<std::tuple<size_t, int, uint64_t, int64_t>> pa, pb;
  auto collect = [](auto* v) {
    return [v](size_t t, const SchedPhase& p) {
      v->emplace_back(t, static_cast<int>(p.kind), p.start, p.task_id);
    };
  };
  ASSERT_TRUE(a->ForEachSchedPhase(collect(&pa)).ok());
  ASSERT_TRUE(b->ForEachSchedPhase(collect(&pb)).ok());
  EXPECT_EQ(pa, pb);
  EXPECT_EQ(pa.size(), a->sched_phases[0].size() + a->sched_phases[1].size());
  EXPECT_EQ(a->base_cycles, b->base_cycles);
}

// The first pass reads streamed phases with the fast reader and goes on
// after them; a phase outside its subset sends it to the generic reader.
// Either way the counts, the base time and what follows the phases are
// those of a read that keeps the phases.
TEST(ReadSwimlaneRecordsTest, TheFirstPassCountsStreamedPhasesAsAKeepingReadDoes) {
  for (const std::string extra : {"", R"(, "note": "outside the fast subset")"}) {
    auto p = WriteTemp("fastpass", R"({"chip_swimlane_level": 3,
      "aicpu_scheduler_phases": [
        [{"kind": "dispatch", "start_cycles": 500, "end_cycles": 600, "loop_iter": 1,
          "tasks_processed": 0)" + extra +
                                       R"(}],
        [{"kind": "complete", "start_cycles": 700, "end_cycles": 800, "loop_iter": 2,
          "tasks_processed": 1}, {"kind": "idle", "start_cycles": 800, "end_cycles": 900,
          "loop_iter": 3, "tasks_processed": 0}],
        []],
      "metadata": {"clock_freq_hz": 50000000, "core_types": ["aic"], "core_to_thread": [1]},
      "aicore_tasks": [[0, 1, 1, 1000, 1100, 0]], "aicpu_tasks": [[0, 1, 990, 1150]]})");
    SwimlaneReadOptions streamed;
    streamed.stream_sched_phases = true;
    auto kept = ReadSwimlaneRecords(p);
    auto fast = ReadSwimlaneRecords(p, streamed);
    std::filesystem::remove(p);
    ASSERT_TRUE(kept.ok()) << kept.status().message();
    ASSERT_TRUE(fast.ok()) << fast.status().message();
    EXPECT_EQ(fast->num_sched_threads, 3u) << "the empty third lane counts";
    EXPECT_EQ(kept->num_sched_threads, 3u);
    EXPECT_EQ(fast->num_sched_phases, 3u);
    EXPECT_EQ(fast->base_cycles, 500u) << "the earliest time is a phase's";
    EXPECT_EQ(kept->base_cycles, 500u);
    ASSERT_EQ(fast->tasks.size(), 1u) << "the rows after the phases are read";
    EXPECT_EQ(fast->Start(fast->tasks[0]), 1000u);
    EXPECT_EQ(fast->Finish(fast->tasks[0]), 1150u);
    EXPECT_EQ(kept->tasks.size(), 1u);
    EXPECT_EQ(fast->core_types, kept->core_types);
  }
}

// A caller that asks to see the scheduler phases during the first pass
// (the converter's digest) sees each phase of the value the read keeps
// once, in file order: when the fast reader stops at a phase outside its
// subset, or a second value replaces the first, it is told to start over.
TEST(ReadSwimlaneRecordsTest, TheFirstPassShowsEveryPhaseOnceToACallerThatAsks) {
  const std::string lanes = R"([
        [{"kind": "dispatch", "start_cycles": 500, "end_cycles": 600, "loop_iter": 1,
          "tasks_processed": 0}],
        [{"kind": "complete", "start_cycles": 700, "end_cycles": 800, "loop_iter": 2,
          "tasks_processed": 1}, {"kind": "dummy_task", "task_id": 5, "start_cycles": 800,
          "end_cycles": 900, "loop_iter": 3, "tasks_processed": 0LAST}],
        []])";
  const auto with = [&](const std::string& last) {
    std::string v = lanes;
    v.replace(v.find("LAST"), 4, last);
    return v;
  };
  struct Case {
    std::string phases;  // the value(s) of aicpu_scheduler_phases
    bool fast;           // the first pass reads them all with the fast reader
    int restarts;        // when streamed
  };
  const Case cases[] = {
      {with(""), true, 0},
      {with(R"(, "note": "outside the fast subset")"), false, 1},
      {R"([[{"kind": "idle", "start_cycles": 1, "end_cycles": 2}]], "aicpu_scheduler_phases": )" +
           with(""),
       true, 1},
  };
  using Seen = std::vector<std::tuple<size_t, int, uint64_t, int64_t>>;
  for (const Case& c : cases) {
    auto p = WriteTemp("seephases", R"({"chip_swimlane_level": 3,
      "aicpu_scheduler_phases": )" + c.phases +
                                        R"(,
      "metadata": {"clock_freq_hz": 50000000, "core_types": ["aic"], "core_to_thread": [1]},
      "aicore_tasks": [[0, 1, 1, 1000, 1100, 0]], "aicpu_tasks": [[0, 1, 990, 1150]]})");
    for (bool stream : {true, false}) {
      Seen seen;
      int restarts = 0;
      SwimlaneReadOptions options;
      options.stream_sched_phases = stream;
      options.see_sched_phase = [&](size_t t, const SchedPhase& ph) {
        seen.emplace_back(t, static_cast<int>(ph.kind), ph.start, ph.task_id);
      };
      options.restart_sched_phases = [&] {
        seen.clear();
        ++restarts;
      };
      auto d = ReadSwimlaneRecords(p, options);
      ASSERT_TRUE(d.ok()) << d.status().message();
      Seen want;
      ASSERT_TRUE(d->ForEachSchedPhase([&](size_t t, const SchedPhase& ph) {
                     want.emplace_back(t, static_cast<int>(ph.kind), ph.start, ph.task_id);
                   }).ok());
      ASSERT_EQ(want.size(), 3u);
      EXPECT_EQ(seen, want) << c.phases << " streamed " << stream;
      EXPECT_EQ(d->sched_phases_fast, stream && c.fast) << c.phases;
      if (stream) {
        EXPECT_EQ(restarts, c.restarts) << c.phases;
      }
    }
    std::filesystem::remove(p);
  }
}

// The same for streamed orchestrator phases: the first pass reads them with
// the fast reader (FastScanOrchPhases) and goes on after them, or with the
// generic reader when a phase is outside its subset (a key it does not
// know, a negative task id). Either way the counts, the base time, whether
// the phases are in task order and the phases the converter streams are
// those of a read that keeps them.
TEST(ReadSwimlaneRecordsTest, TheFirstPassCountsStreamedOrchestratorPhasesAsAKeepingReadDoes) {
  // Lane 0: the collector's shape over several 1 MiB windows; lane 1: task
  // ids out of order; lane 2: empty.
  std::string lane0;
  for (int i = 0; i < 40000; ++i) {
    lane0 += fmt::format(
        R"({}{{"submit_idx": {}, "task_id": {}, "start_cycles": {}, "end_cycles": {}}})",
        i > 0 ? ",\n      " : "", i, i, 2000 + 10 * i, 2005 + 10 * i);
  }
  for (const std::string extra :
       {"", R"(, "note": "outside the fast subset")", R"(, "task_id": -1)"}) {
    auto p = WriteTemp("fastorch", R"({"chip_swimlane_level": 3,
      "aicpu_orchestrator_phases": [
        [)" + lane0 + R"(],
        [{"submit_idx": 7, "task_id": 9, "end_cycles": 640, "start_cycles": 450},
         {"task_id": 3, "submit_idx": 8, "start_cycles": 700, "end_cycles": 800)" +
                                       extra + R"(}],
        []],
      "metadata": {"clock_freq_hz": 50000000, "core_types": ["aic"], "core_to_thread": [1]},
      "aicore_tasks": [[0, 1, 1, 1000, 1100, 0]], "aicpu_tasks": [[0, 1, 990, 1150]]})");
    SwimlaneReadOptions streamed;
    streamed.stream_orch_phases = true;
    auto kept = ReadSwimlaneRecords(p);
    auto fast = ReadSwimlaneRecords(p, streamed);
    ASSERT_TRUE(kept.ok()) << kept.status().message();
    ASSERT_TRUE(fast.ok()) << fast.status().message();
    EXPECT_TRUE(fast->orch_phases_streamed);
    EXPECT_EQ(fast->num_streamed_orch_pools, 3u) << "the empty third lane counts";
    EXPECT_EQ(kept->orch_phases.size(), 3u);
    EXPECT_EQ(fast->num_streamed_orch_phases, 40002u);
    EXPECT_EQ(fast->base_cycles, 450u) << "the earliest time is a phase's";
    EXPECT_EQ(kept->base_cycles, 450u);
    EXPECT_FALSE(fast->orch_phases_sorted_by_task);
    EXPECT_FALSE(kept->orch_phases_sorted_by_task);
    ASSERT_EQ(fast->tasks.size(), 1u) << "the rows after the phases are read";
    EXPECT_EQ(fast->Finish(fast->tasks[0]), 1150u);
    std::vector<std::tuple<size_t, int64_t, int64_t, uint64_t, uint64_t>> a, b;
    auto collect = [](auto* v) {
      return [v](size_t t, const OrchPhase& o) {
        v->emplace_back(t, o.submit_idx, o.task_id, o.start, o.end);
      };
    };
    ASSERT_TRUE(kept->ForEachOrchPhase(collect(&a)).ok());
    ASSERT_TRUE(fast->ForEachOrchPhase(collect(&b)).ok());
    EXPECT_EQ(a.size(), 40002u);
    EXPECT_EQ(b, a) << extra;
    std::filesystem::remove(p);
  }
}

TEST(ReadSwimlaneRecordsTest, RejectsCoreIdsBeyondSixteenBits) {
  auto p = WriteTemp("bigcore", R"({"chip_swimlane_level": 1,
    "metadata": {"clock_freq_hz": 50000000}, "aicore_tasks": [[70000, 1, 1, 10, 20, 0]]})");
  auto d = ReadSwimlaneRecords(p);
  std::filesystem::remove(p);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("core_id 70000, expected 0..65535"), std::string::npos)
      << d.status().message();
}

}  // namespace
}  // namespace dfx::collectors
