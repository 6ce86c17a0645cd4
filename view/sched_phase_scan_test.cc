#include "collectors/swimlane/sched_phase_scan.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "collectors/testing/test_util.h"
#include "view/swimlane.h"

namespace dfx::view {
namespace {

using collectors::FastForEachSchedPhase;
using collectors::kFastSchedPhaseWindow;
using collectors::kMaxFastSchedPhase;
using collectors::ReadSwimlaneRecords;
using collectors::SchedPhase;
using collectors::SwimlaneReadOptions;
using collectors::SwimlaneRecords;
using collectors::testing::TempDir;
using collectors::testing::ViewFixture;

std::string Describe(size_t t, const SchedPhase& p) {
  return fmt::format("{} {} {} {} {} {} {} {} {} {} [{} {} {}] [{} {} {}]", t,
                     static_cast<int>(p.kind), p.has_depths, p.start, p.end, p.loop_iter,
                     p.tasks_processed, p.pop_hit, p.pop_miss, p.task_id, p.shared_at_start[0],
                     p.shared_at_start[1], p.shared_at_start[2], p.shared_at_end[0],
                     p.shared_at_end[1], p.shared_at_end[2]);
}

// A level-3 records file whose aicpu_scheduler_phases value is `phases`.
std::filesystem::path WriteRecords(const TempDir& dir, const std::string& phases) {
  auto path = dir.path() / "chip_swimlane_records.json";
  std::ofstream(path) << R"({"chip_swimlane_level": 3,
  "metadata": {"clock_freq_hz": 50000000, "num_cores": 2, "core_types": ["aic", "aiv"], "core_to_thread": [0, 1]},
  "aicore_tasks": [],
  "aicpu_tasks": [],
  "aicpu_scheduler_phases": )"
                      << phases << "\n}\n";
  return path;
}

struct Both {
  std::vector<std::string> generic, fast;
  bool whole = false;
};

// The phases as the generic reader and as the fast reader read them.
Both ReadBoth(const std::filesystem::path& path) {
  SwimlaneReadOptions options;
  options.stream_sched_phases = true;
  auto records = ReadSwimlaneRecords(path, options);
  EXPECT_TRUE(records.ok()) << records.status().message();
  Both b;
  if (!records.ok()) return b;
  EXPECT_TRUE(records
                  ->ForEachSchedPhase(
                      [&](size_t t, const SchedPhase& p) { b.generic.push_back(Describe(t, p)); })
                  .ok());
  auto whole = FastForEachSchedPhase(
      *records, [&](size_t t, const SchedPhase& p) { b.fast.push_back(Describe(t, p)); });
  EXPECT_TRUE(whole.ok()) << whole.status().message();
  b.whole = whole.ok() && *whole;
  return b;
}

// Phases in the collector's own shape, `n` per lane.
std::string CollectorPhases(int lanes, int n) {
  std::string s = "[";
  for (int t = 0; t < lanes; ++t) {
    s += t > 0 ? ",\n    [" : "\n    [";
    for (int i = 0; i < n; ++i) {
      const uint64_t start = 3694187494749ull + static_cast<uint64_t>(i) * 1000;
      s += fmt::format(
          R"({}
      {{"kind": "{}", "start_cycles": {}, "end_cycles": {}, "loop_iter": {}, "tasks_processed": {})",
          i > 0 ? "," : "", i % 3 == 0 ? "dispatch" : (i % 3 == 1 ? "complete" : "dummy_task"),
          start, start + 500 + i % 7, i, i % 5);
      if (i % 3 == 0) s += fmt::format(R"(, "pop_hit": {}, "pop_miss": {})", i % 4, i % 2);
      if (i % 3 == 2) s += fmt::format(R"(, "task_id": {})", (uint64_t{1} << 32) + i);
      s += fmt::format(R"(, "shared_at_start": [{}, {}, 0], "shared_at_end": [{}, 0, {}]}})", i % 9,
                       i % 11, i % 13, i % 3);
    }
    s += n > 0 ? "\n    ]" : "]";
  }
  return s + "\n  ]";
}

TEST(FastSchedPhaseScanTest, ReadsTheCollectorsShapeAsTheGenericReaderAcrossWindows) {
  TempDir dir;
  // 3 lanes of 12000 phases (about 7 MiB: several 1 MiB windows) and an empty lane.
  auto path = WriteRecords(dir, CollectorPhases(3, 12000).insert(1, "\n    [],"));
  Both b = ReadBoth(path);
  EXPECT_TRUE(b.whole);
  EXPECT_EQ(b.generic.size(), 36000u);
  EXPECT_EQ(b.fast, b.generic);
}

TEST(FastSchedPhaseScanTest, ReadsOtherBlanksKeyOrdersAndEmptyArraysAsTheGenericReader) {
  for (const std::string& phases : {
           std::string("[]"),
           std::string("[[],[]]"),
           std::string(R"([[{}],[{"kind":"complete","start_cycles":5,"end_cycles":9}]])"),
           std::string("[\r\n\t[ {\t\"end_cycles\" :\r\n 9 , \"phase\" : \"fanout\", "
                       "\"start_cycles\":5,\"shared_at_end\":[ ],\"shared_at_start\":[1,2,3,4]"
                       "} ] ]"),
           std::string(
               R"([[{"kind": "dispatch", "kind": "release", "start_cycles": 9999999999999999999,
             "end_cycles": 0, "loop_iter": 4294967297, "task_id": 0}]])"),
           std::string(R"([[{"kind": "no_such_phase", "start_cycles": 1, "end_cycles": 2}]])"),
       }) {
    TempDir dir;
    Both b = ReadBoth(WriteRecords(dir, phases));
    EXPECT_TRUE(b.whole) << phases;
    EXPECT_EQ(b.fast, b.generic) << phases;
  }
  Both fixture =
      ReadBoth(ViewFixture("l4/chip_swimlane_records.json"));  // indented, one key a line
  EXPECT_TRUE(fixture.whole);
  EXPECT_FALSE(fixture.generic.empty());
  EXPECT_EQ(fixture.fast, fixture.generic);
}

// Valid JSON outside the subset: the fast reader stops (what it read until
// then agrees with the generic reader) and the generic reader reads it all.
TEST(FastSchedPhaseScanTest, StopsAtTheFirstByteOutsideItsSubset) {
  const std::string ok = R"({"kind": "complete", "start_cycles": 5, "end_cycles": 9})";
  for (const std::string& bad : {
           std::string(R"({"kind": "complete", "note": "x", "start_cycles": 5})"),
           std::string(R"({"kind": "comp\u006cete", "start_cycles": 5})"),
           std::string(R"({"ki\u006ed": "complete", "start_cycles": 5})"),
           std::string(R"({"kind": "complete", "shared_at_start": [-1, 0, 0]})"),
           std::string(R"({"kind": "complete", "start_cycles": 5.0})"),
           std::string(R"({"kind": "complete", "start_cycles": 5e3})"),
           std::string(R"({"kind": "complete", "start_cycles": 18446744073709551615})"),
           std::string(R"({"kind": "complete", "start_cycles": null})"),
           std::string(R"({"kind": "complete", "pop_hit": true})"),
           std::string(R"({"kind": "dummy_task", "task_id": -1})"),
       }) {
    TempDir dir;
    Both b = ReadBoth(WriteRecords(dir, "[[" + ok + ", " + ok + "], [" + bad + ", " + ok + "]]"));
    EXPECT_FALSE(b.whole) << bad;
    EXPECT_EQ(b.generic.size(), 4u) << bad;
    ASSERT_EQ(b.fast.size(), 2u) << bad;
    EXPECT_EQ(b.fast[0], b.generic[0]);
    EXPECT_EQ(b.fast[1], b.generic[1]);
  }
}

// A phase longer than the lookahead that starts near the end of a window.
TEST(FastSchedPhaseScanTest, StopsAtAPhaseLongerThanItsLookaheadAtTheEndOfAWindow) {
  const auto phase = [](size_t size) {
    const std::string head = R"({"kind": "complete",)", tail = R"("start_cycles": 5})";
    return head + std::string(size - head.size() - tail.size(), ' ') + tail;
  };
  // "[[" pad "], [" long: the long phase starts kMaxFastSchedPhase + 400
  // bytes before the end of the first window.
  const size_t long_at = kFastSchedPhaseWindow - kMaxFastSchedPhase - 400;
  const std::string text =
      "[[" + phase(long_at - 6) + "], [" + phase(kMaxFastSchedPhase + 1000) + "]]";
  TempDir dir;
  Both b = ReadBoth(WriteRecords(dir, text));
  EXPECT_FALSE(b.whole);
  ASSERT_EQ(b.generic.size(), 2u);
  ASSERT_EQ(b.fast.size(), 1u);
  EXPECT_EQ(b.fast[0], b.generic[0]);
}

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A phase the fast reader cannot read (an extra key) makes the converter
// read every phase with the generic reader: the trace is the one of the same
// records without the extra key.
TEST(FastSchedPhaseScanTest, TheConverterFallsBackToTheGenericReaderWithTheSameTrace) {
  TempDir dir;
  const std::string records = Slurp(ViewFixture("l4/chip_swimlane_records.json"));
  std::string extra = records;
  const size_t last_kind = extra.rfind("\"kind\":");
  ASSERT_NE(last_kind, std::string::npos);
  extra.insert(last_kind, "\"note\": \"not a phase field\", ");
  std::vector<std::string> traces;
  for (const std::string* text : std::vector<const std::string*>{&records, &extra}) {
    auto in = dir.path() / fmt::format("records_{}.json", traces.size());
    std::ofstream(in) << *text;
    SwimlaneOptions options;
    options.input = in;
    options.output = dir.path() / fmt::format("trace_{}.json", traces.size());
    options.deps_json = ViewFixture("l4/deps.json");
    options.func_names = ViewFixture("l4/name_map_Demo_case.json");
    options.print_statistics = false;
    std::ostringstream out, err;
    ASSERT_TRUE(RunSwimlane(options, out, err).ok()) << err.str();
    traces.push_back(Slurp(*options.output));
  }
  EXPECT_NE(traces[0].find("\"cat\":\"scheduler\""), std::string::npos);
  EXPECT_EQ(traces[0], traces[1]);
}

}  // namespace
}  // namespace dfx::view
