#include "view/dispatch_converter.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "collectors/name_map.h"
#include "collectors/testing/test_util.h"

namespace dfx::view {
namespace {

using collectors::OrchPhase;
using collectors::ReadNameMap;
using collectors::ReadSwimlaneRecords;
using collectors::ReadTaskGraph;
using collectors::SwimlaneReadOptions;
using collectors::SwimlaneRecords;
using collectors::testing::Slurp;
using collectors::testing::TempDir;
using collectors::testing::ViewFixture;

// The level-4 fixture's records with the orchestrator phases replaced.
std::string WithOrchPhases(const std::string& phases) {
  std::string text = Slurp(ViewFixture("l4/chip_swimlane_records.json"));
  const std::string key = "\"aicpu_orchestrator_phases\":";
  const size_t at = text.find(key);
  EXPECT_NE(at, std::string::npos);
  const size_t begin = text.find('[', at);
  const size_t end = text.rfind('}');  // the key is the file's last: its array ends before
  return text.substr(0, begin) + phases + "\n" + text.substr(end);
}

std::string Phase(int submit, int64_t task, int start, int end) {
  return fmt::format(R"({{"submit_idx": {}, "task_id": {}, "start_cycles": {}, "end_cycles": {}}})",
                     submit, task, start, end);
}

// Converts `records` read with or without stream_orch_phases; with
// `digest`, the scheduler phases' first look is the records' first pass.
std::string Convert(const std::filesystem::path& records, bool stream_orch,
                    const std::filesystem::path& out, SwimlaneRecords* read = nullptr,
                    bool digest = false, TraceFormat format = TraceFormat::kJson) {
  SwimlaneReadOptions options;
  options.stream_sched_phases = true;
  options.stream_orch_phases = stream_orch;
  SchedPhaseDigest first_pass;
  if (digest) first_pass.Attach(&options);
  auto data = ReadSwimlaneRecords(records, options);
  EXPECT_TRUE(data.ok()) << data.status().ToString();
  if (!data.ok()) return "";
  auto deps = ReadTaskGraph(ViewFixture("l4/deps.json"));
  auto names = ReadNameMap(ViewFixture("l4/name_map_Demo_case.json"));
  EXPECT_TRUE(deps.ok() && names.ok());
  TraceWriter trace;
  EXPECT_TRUE(trace.Open(out, {}, format).ok());
  std::ostringstream err;
  DispatchConverter conv(*data, &*deps, *names, false, false, trace, err,
                         digest ? &first_pass : nullptr);
  EXPECT_TRUE(conv.Run().ok());
  EXPECT_TRUE(trace.Finish(data->timeline_metadata).ok());
  if (read != nullptr) *read = std::move(*data);
  return Slurp(out);
}

// Streamed orchestrator phases (re-read from the file; in task order, the
// submit->dispatch arrows find each task's first submit by a second read
// beside the rows) give the trace of the phases kept in memory: in order,
// out of order, over two pools, with a task submitted twice and a submit
// without a task.
TEST(DispatchConverterTest, StreamedOrchestratorPhasesGiveTheSameTrace) {
  TempDir dir;
  const int64_t graph_task = (int64_t{1} << 32) | 4;
  const std::vector<std::pair<std::string, bool>> cases = {
      // in task order, two pools: task 2 is submitted in both, task 3 twice
      {"[[" + Phase(0, 0, 900, 910) + ", " + Phase(1, 1, 920, 930) + ", " + Phase(2, 2, 940, 950) +
           "], [" + Phase(3, 2, 945, 952) + ", " + Phase(-1, -1, 950, 955) + ", " +
           Phase(4, 3, 960, 970) + ", " + Phase(5, 3, 961, 971) + ", " + Phase(6, 5, 995, 998) +
           ", " + Phase(7, graph_task, 980, 990) + "]]",
       true},
      // the fixture's order: a Graph node id before task 5
      {"[[" + Phase(0, 0, 900, 910) + ", " + Phase(1, 1, 920, 930) + ", " + Phase(2, 2, 940, 950) +
           ", " + Phase(3, 3, 960, 970) + ", " + Phase(4, graph_task, 980, 990) + ", " +
           Phase(5, 5, 995, 998) + "]]",
       false},
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto& [phases, sorted] = cases[k];
    const auto records = dir.path() / fmt::format("records_{}.json", k);
    std::ofstream(records) << WithOrchPhases(phases);
    SwimlaneRecords streamed, kept;
    const std::string a = Convert(records, true, dir.path() / "a.json", &streamed);
    const std::string b = Convert(records, false, dir.path() / "b.json", &kept);
    EXPECT_TRUE(streamed.orch_phases_streamed);
    EXPECT_TRUE(streamed.orch_phases.empty());
    EXPECT_FALSE(kept.orch_phases_streamed);
    EXPECT_EQ(streamed.orch_phases_sorted_by_task, sorted) << k;
    EXPECT_EQ(streamed.NumOrchPools(), kept.orch_phases.size()) << k;
    EXPECT_TRUE(streamed.HasOrchPhases());
    std::vector<std::string> seen[2];
    for (const SwimlaneRecords* d : {&streamed, &kept}) {
      auto& out = seen[d == &kept ? 1 : 0];
      ASSERT_TRUE(d->ForEachOrchPhase([&](size_t pool, const OrchPhase& p) {
                     out.push_back(fmt::format("{} {} {} {} {}", pool, p.submit_idx, p.task_id,
                                               p.start, p.end));
                   }).ok());
    }
    EXPECT_EQ(seen[0], seen[1]) << k;
    EXPECT_NE(a.find("submit\u2192dispatch"), std::string::npos) << k;
    EXPECT_EQ(a, b) << k;
  }
}

// What the converter needs of the scheduler phases (complete bars, the
// resolve lane, the dummy_task marker), gathered by the records' first pass,
// gives the trace its own pass gives, JSON and proto: with the fast reader,
// and when a phase outside its subset sends both to the generic reader.
TEST(DispatchConverterTest, TheFirstPassDigestGivesTheTraceOfAPassOfItsOwn) {
  TempDir dir;
  const std::string fixture = Slurp(ViewFixture("l4/chip_swimlane_records.json"));
  std::string generic = fixture;
  const size_t first = generic.find("{", generic.find("\"aicpu_scheduler_phases\""));
  ASSERT_NE(first, std::string::npos);
  generic.insert(first + 1, R"("note": "outside the fast subset", )");
  int k = 0;
  for (const std::string& text : {fixture, generic}) {
    const auto records = dir.path() / fmt::format("records_{}.json", k++);
    std::ofstream(records) << text;
    for (TraceFormat format : {TraceFormat::kJson, TraceFormat::kProto}) {
      SwimlaneRecords read;
      const std::string a = Convert(records, true, dir.path() / "a", &read, true, format);
      const std::string b = Convert(records, true, dir.path() / "b", nullptr, false, format);
      EXPECT_EQ(read.sched_phases_fast, text == fixture);
      EXPECT_NE(a.find("complete"), std::string::npos);
      EXPECT_NE(a.find("dummy"), std::string::npos);
      EXPECT_FALSE(a.empty());
      EXPECT_TRUE(a == b) << "records " << k << ", format " << static_cast<int>(format);
    }
  }
}

}  // namespace
}  // namespace dfx::view
