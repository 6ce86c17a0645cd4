// Fidelity to the reference viewers around SPMD tasks (docs/formats.md §4.7,
// §4.8, §5, §11.2), on a real run of an SPMD program: prep → spin (SPMD,
// block_num 2) → finish inside scope "tail", all on AIV cores, virtual clock
// (one worker: the two spin blocks run one after the other, so the earliest
// block and the last-finishing block differ).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "tests/dfx/dfx_test_util.h"

namespace dfx::e2e {
namespace {

const fs::path kSpmd = Data("straggler/spin_fast.json");

struct SpmdRun {
  fs::path work;
  Json trace;  // dfx-view swimlane --overhead of the run's records
};

const SpmdRun& SpmdRunOnce() {
  static const SpmdRun run = [] {
    SpmdRun r;
    fs::path dir = TestDir("fidelity");
    r.work = dir / "w";
    auto c = Coordinator(kSpmd, r.work,
                         {"--virtual-clock", "--enable-chip-swimlane", "4", "--enable-dep-gen",
                          "--enable-scope-stats"});
    EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
    auto v = RunCommand(
        {Bin("dfx-view"), "swimlane", (r.work / "dfx_outputs/chip_swimlane_records.json").string(),
         "--overhead", "-o", (dir / "trace.json").string()},
        dir / "logs");
    EXPECT_EQ(v.exit_code, 0) << v.err;
    r.trace = LoadJson(dir / "trace.json");
    return r;
  }();
  return run;
}

// The X events of `pid` whose name starts with `prefix`, by ts.
std::vector<Json> Slices(const Json& trace, int pid, const std::string& prefix) {
  std::vector<Json> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["pid"] == pid && e["name"].get<std::string>().rfind(prefix, 0) == 0) {
      out.push_back(e);
    }
  }
  std::sort(out.begin(), out.end(), [](const Json& a, const Json& b) {
    return a["ts"].get<double>() < b["ts"].get<double>();
  });
  return out;
}

// "s" events of flows named `name`, by the slice id they bind to.
std::multimap<uint64_t, Json> FlowStarts(const Json& trace, const std::string& name) {
  std::multimap<uint64_t, Json> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "s" && e["name"] == name) out.emplace(e.value("bind_id", uint64_t{0}), e);
  }
  return out;
}

TEST(FidelityTest, SubmitToDispatchIsOneArrowPerTaskRow) {
  const Json& t = SpmdRunOnce().trace;
  ASSERT_TRUE(t.is_object());
  // prep, spin x2 (one per SPMD block), finish: four rows, four arrows.
  EXPECT_EQ(FlowStarts(t, "submit\u2192dispatch").size(), 4u);
  // The two spin arrows end at each block's own dispatch.
  std::set<double> ends;
  for (const auto& e : t["traceEvents"]) {
    if (e.value("name", "") == "submit\u2192dispatch" && e["ph"] == "f")
      ends.insert(e["ts"].get<double>());
  }
  std::set<double> dispatches;
  for (const auto& s : Slices(t, 3, "spin")) dispatches.insert(s["ts"].get<double>());
  ASSERT_EQ(dispatches.size(), 2u);
  for (double d : dispatches) EXPECT_TRUE(ends.count(d)) << d;
}

TEST(FidelityTest, CompleteFlowsOfAnSpmdTaskStartOnItsEarliestBlock) {
  const Json& t = SpmdRunOnce().trace;
  auto worker = Slices(t, 4, "spin");  // by receive time (ts)
  auto sched = Slices(t, 3, "spin");   // by dispatch time (ts)
  ASSERT_EQ(worker.size(), 2u);
  ASSERT_EQ(sched.size(), 2u);
  auto complete = FlowStarts(t, "complete");
  EXPECT_EQ(complete.count(worker[0]["id"].get<uint64_t>()), 1u) << "earliest block";
  EXPECT_EQ(complete.count(worker[1]["id"].get<uint64_t>()), 0u) << "not the last-finishing one";
  EXPECT_EQ(complete.count(sched[0]["id"].get<uint64_t>()), 1u);
  EXPECT_EQ(complete.count(sched[1]["id"].get<uint64_t>()), 0u);
  // It leaves just before that block's end (worker) / finish (scheduler).
  const Json& w = complete.find(worker[0]["id"].get<uint64_t>())->second;
  EXPECT_NEAR(w["ts"].get<double>(),
              worker[0]["ts"].get<double>() + worker[0]["dur"].get<double>() - 0.01, 1e-3);
}

TEST(FidelityTest, OverheadTracksOnlyForEnginesPresent) {
  std::set<std::string> counters;
  for (const auto& e : SpmdRunOnce().trace["traceEvents"]) {
    if (e["ph"] == "C" && e["cat"] == "overhead") counters.insert(e["name"].get<std::string>());
  }
  EXPECT_TRUE(counters.count("oh_aiv_idle")) << ::testing::PrintToString(counters);
  EXPECT_TRUE(counters.count("oh_has_overhead"));
  for (const auto& c : counters) EXPECT_EQ(c.find("oh_aic_"), std::string::npos) << c;
}

TEST(FidelityTest, ScopeStatsSitesAreFileAndLineOfTheScopeStatement) {
  const std::string jsonl = Slurp(SpmdRunOnce().work / "dfx_outputs/scope_stats/scope_stats.jsonl");
  // The root scope at the "orchestration" key (line 9), scope "tail" at its
  // statement (line 12) of spin_fast.json.
  EXPECT_EQ(Count(jsonl, R"("site": "spin_fast.json:9")"), 2u) << jsonl;
  EXPECT_EQ(Count(jsonl, R"("site": "spin_fast.json:12")"), 2u) << jsonl;
}

// Nearest-rank percentiles (§5): view/overhead_test.cc, on exact values.

}  // namespace
}  // namespace dfx::e2e
