// End-to-end tests: every test copies tests/view/fixtures into a fresh
// temporary directory, runs the real `dfx-view` binary there and checks what a
// user would see: the files written, their structure, stdout/stderr and the
// exit code. Browser tests render the HTML pages in headless Chromium.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "collectors/run_manifest.h"
#include "common/file_util.h"
#include "common/json.h"

namespace fs = std::filesystem;
using dfx::Json;
namespace collectors = dfx::collectors;
namespace config = dfx::config;

namespace {

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + 1))
    ++n;
  return n;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           (std::string("dfx_view_e2e_") + info->name() + "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::copy(fs::path(DFX_SOURCE_DIR) / "tests/view/fixtures", dir_, fs::copy_options::recursive);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  // Runs dfx-view with `args` (shell words) in the fixture copy.
  RunResult Run(const std::string& args, const std::string& env = "") {
    std::string cmd = "cd '" + dir_.string() + "' && " + env + " '" + DFX_VIEW_BIN + "' " + args +
                      " > _stdout.txt 2> _stderr.txt";
    int rc = std::system(cmd.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    r.out = Slurp(dir_ / "_stdout.txt");
    r.err = Slurp(dir_ / "_stderr.txt");
    return r;
  }
  Json ReadJson(const fs::path& rel) {
    auto j = dfx::ReadJsonFile(dir_ / rel);
    EXPECT_TRUE(j.ok()) << j.status().ToString();
    return j.ok() ? *j : Json();
  }
  fs::path dir_;
};

struct TraceSummary {
  std::map<int, std::string> process_names;
  std::set<std::pair<int, int>> threads;
  std::map<std::pair<int, int>, std::string> thread_names;
  std::multiset<std::string> slice_names;
  std::multiset<std::string> flow_names;
  std::set<uint64_t> slice_ids;
  bool flows_paired = true;
  bool binds_resolve = true;
  std::set<std::string> counters;
};

TraceSummary Summarize(const Json& trace) {
  TraceSummary s;
  std::map<uint64_t, std::pair<int, int>> flow_phases;
  std::vector<uint64_t> binds;
  for (const auto& e : trace.at("traceEvents")) {
    std::string ph = e.at("ph");
    if (ph == "M") {
      if (e["name"] == "process_name") s.process_names[e["pid"].get<int>()] = e["args"]["name"];
      if (e["name"] == "thread_name")
        s.thread_names[std::make_pair(e["pid"].get<int>(), e["tid"].get<int>())] =
            e["args"]["name"];
    } else if (ph == "X") {
      s.slice_names.insert(e["name"].get<std::string>());
      s.threads.insert(std::make_pair(e["pid"].get<int>(), e["tid"].get<int>()));
      if (e.contains("id")) s.slice_ids.insert(e["id"].get<uint64_t>());
    } else if (ph == "s" || ph == "f") {
      if (ph == "s") s.flow_names.insert(e["name"].get<std::string>());
      auto& c = flow_phases[e["id"].get<uint64_t>()];
      (ph == "s" ? c.first : c.second)++;
      if (e.contains("bind_id")) binds.push_back(e["bind_id"]);
      if (ph == "f" && e.value("bp", "") != "e") s.flows_paired = false;
    } else if (ph == "C") {
      s.counters.insert(e["name"].get<std::string>());
    }
  }
  for (const auto& [id, c] : flow_phases) {
    if (c.first != 1 || c.second != 1) s.flows_paired = false;
  }
  for (uint64_t b : binds) {
    if (!s.slice_ids.count(b)) s.binds_resolve = false;
  }
  return s;
}

TEST_F(ViewTest, SwimlaneLevel4HasDocumentedProcessesThreadsLabelsAndFlows) {
  RunResult r = Run("swimlane l4/chip_swimlane_records.json --overhead");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json trace = ReadJson("l4/merged_swimlane.json");
  TraceSummary s = Summarize(trace);
  EXPECT_EQ(s.process_names[1], "AICPU Attn");  // orchestrator_name from the sibling name map
  EXPECT_EQ(s.process_names[2], "AICPU Scheduler");
  EXPECT_EQ(s.process_names[3], "Scheduler View");
  EXPECT_EQ(s.process_names[4], "Worker View");
  EXPECT_EQ((s.thread_names[{4, 10000}]), "AIC_0");
  EXPECT_EQ((s.thread_names[{4, 10010}]), "AIV_1");
  EXPECT_EQ((s.thread_names[{2, 30000}]), "Sched_0");
  EXPECT_EQ((s.thread_names[{2, 30001}]), "Sched_0");  // resolve sub-lane
  EXPECT_EQ((s.thread_names[{2, 30010}]), "Sched_1");
  EXPECT_EQ((s.thread_names[{2, 3999}]), "shared_ready_queue (global)");
  EXPECT_EQ((s.thread_names[{1, 4000}]), "Orch_0");
  EXPECT_EQ((s.thread_names[{4, 19002}]), "AICPU_2");
  // Labels: name map hit, SPMD suffix, func_<n>_<letters> fallback, ring display, markers.
  EXPECT_EQ(s.slice_names.count("qk(t1)"), 2u);  // Worker View + Scheduler View
  EXPECT_EQ(s.slice_names.count("softmax_spmd(t2)"), 4u);
  EXPECT_EQ(s.slice_names.count("func_5_f(t3)"), 2u);
  EXPECT_EQ(s.slice_names.count("func_7_h(r1t4)"), 2u);
  EXPECT_EQ(s.slice_names.count("dummy(t5)"), 1u);
  EXPECT_EQ(s.slice_names.count("alloc(t0)"), 1u);
  EXPECT_EQ(s.slice_names.count("submit(r1t4)"), 1u);
  EXPECT_EQ(s.slice_names.count("complete(1)"), 5u);
  EXPECT_TRUE(s.threads.count({4, 19002}));  // alloc lane after 2 sched threads
  for (const char* flow :
       {"dependency", "complete", "complete\u2192ready", "dispatch", "submit\u2192dispatch"}) {
    EXPECT_GT(s.flow_names.count(flow), 0u) << flow;
  }
  EXPECT_EQ(s.flow_names.count("hb_violation"), 0u);
  EXPECT_TRUE(s.flows_paired);
  EXPECT_TRUE(s.binds_resolve);
  EXPECT_TRUE(s.counters.count("shared_ready_queue"));
  EXPECT_TRUE(s.counters.count("oh_aiv_ready"));
  EXPECT_TRUE(s.counters.count("oh_has_overhead"));
  // Worker View bar of t1: ts = receive (start - receive_to_start), µs from base (900 cycles @ 50
  // MHz).
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["pid"] == 4 && e["name"] == "qk(t1)") {
      EXPECT_NEAR(e["ts"].get<double>(), (1000 - 900) * 0.02, 1e-9);
      EXPECT_NEAR(e["dur"].get<double>(), (1100 - 1000) * 0.02, 1e-9);
      EXPECT_EQ(e["args"]["event-hint"], "Task:t1, FuncId:0, CoreId:0");
      EXPECT_EQ(e["args"]["fanout-hint"], "2: [t2, t3]");
    }
  }
  EXPECT_NE(r.out.find("Task Statistics by Function"), std::string::npos);
  EXPECT_NE(r.out.find("softmax"), std::string::npos);
  EXPECT_NE(r.out.find("Total Test Time: 7.300 us"), std::string::npos);
}

TEST_F(ViewTest, ViewersFindTheirInputUnderDfxOutputsAndTheCurrentDirectory) {
  // Runs dfx-view in `sub` (relative to the fixture copy); its exit code.
  auto run_in = [&](const std::string& sub, const std::string& args) {
    const std::string cmd = "cd '" + (dir_ / sub).string() + "' && '" + DFX_VIEW_BIN + "' " + args +
                            " > '" + (dir_ / "_in.out").string() + "' 2>&1";
    const int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  // Inside one rank<N>/d<K>/: the records there.
  EXPECT_EQ(run_in("run/dfx_outputs/rank0/d1", "swimlane"), 0) << Slurp(dir_ / "_in.out");
  EXPECT_TRUE(fs::exists(dir_ / "run/dfx_outputs/rank0/d1/merged_swimlane.json"));
  // In a work dir: its dfx_outputs/ (flat, as at L2).
  fs::create_directories(dir_ / "work/dfx_outputs");
  for (const char* f : {"deps.json", "chip_swimlane_records.json", "name_map_Demo_case.json"}) {
    fs::copy_file(dir_ / "l4" / f, dir_ / "work/dfx_outputs" / f);
  }
  fs::copy_file(dir_ / "pmu/pmu.csv", dir_ / "work/dfx_outputs/pmu.csv");
  EXPECT_EQ(run_in("work", "deps"), 0) << Slurp(dir_ / "_in.out");
  EXPECT_TRUE(fs::exists(dir_ / "work/dfx_outputs/deps_viewer.txt"));
  EXPECT_EQ(run_in("work", "pmu"), 0) << Slurp(dir_ / "_in.out");
  EXPECT_NE(Slurp(dir_ / "_in.out").find("func_id 0 (qk) on AIC"), std::string::npos);
  EXPECT_EQ(run_in("work/dfx_outputs", "sched-overhead"), 0) << Slurp(dir_ / "_in.out");
  // Nowhere to look: the error says where it looked.
  fs::create_directories(dir_ / "empty");
  EXPECT_EQ(run_in("empty", "deps"), 1);
  EXPECT_NE(Slurp(dir_ / "_in.out").find("./dfx_outputs/ and its rank<N>/d<K>/"), std::string::npos)
      << Slurp(dir_ / "_in.out");
}

TEST_F(ViewTest, SwimlaneDoesNotWriteASecondCopyOfTheRunsOwnConversion) {
  // The run converted the records into merged_swimlane_<ts>.json after they
  // were written: the default invocation points at it instead of copying it.
  std::ofstream(dir_ / "l4/merged_swimlane_20260101_000000.json") << "{\"traceEvents\": []}\n";
  RunResult r = Run("swimlane l4/chip_swimlane_records.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Up to date: l4/merged_swimlane_20260101_000000.json"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Task Statistics by Function"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "l4/merged_swimlane.json"));
  // Any option that changes the trace writes it.
  r = Run("swimlane l4/chip_swimlane_records.json --no-flows");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "l4/merged_swimlane.json"));
  // Records newer than the conversion are converted again.
  fs::last_write_time(
      dir_ / "l4/merged_swimlane_20260101_000000.json",
      fs::last_write_time(dir_ / "l4/chip_swimlane_records.json") - std::chrono::hours(1));
  fs::remove(dir_ / "l4/merged_swimlane.json");
  r = Run("swimlane l4/chip_swimlane_records.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "l4/merged_swimlane.json"));
}

TEST_F(ViewTest, SwimlaneFlagsHappensBeforeViolations) {
  // Make t2 start before t1 ends on the Worker View: dependency t1 -> t2 is violated.
  Json rec = ReadJson("l4/chip_swimlane_records.json");
  rec["aicore_tasks"][2][3] = 1050;  // core 1, t2 start (receive 1045) < t1 end 1100
  ASSERT_TRUE(dfx::WriteJsonFileAtomic(dir_ / "l4/chip_swimlane_records.json", rec).ok());
  RunResult r = Run("swimlane l4/chip_swimlane_records.json -o out.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TraceSummary s = Summarize(ReadJson("out.json"));
  EXPECT_GT(s.flow_names.count("hb_violation"), 0u);
}

// --overhead writes what the reference writes (docs/formats.md §4.8): the
// counter tracks have no thread_name, the state at the window's end is not
// sampled (the reference stops at len(order) - 1), and below level 3 pid 2
// gets no process_name / process_sort_index.
TEST_F(ViewTest, SwimlaneOverheadCountersAreTheReferences) {
  RunResult r = Run("swimlane l4/chip_swimlane_records.json --overhead");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json trace = ReadJson("l4/merged_swimlane.json");
  double window_end = 0, last_sample = -1;
  size_t samples = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == 2) {
      const int tid = e["tid"].get<int>();
      EXPECT_FALSE(tid >= 9101 && tid <= 9122) << e.dump();  // no counter track named
    }
    if (e["ph"] == "X" && e["pid"] == 4) {
      window_end = std::max(window_end, e["ts"].get<double>() + e["dur"].get<double>());
    }
    if (e["ph"] == "C" && e["cat"] == "overhead") {
      ++samples;
      last_sample = std::max(last_sample, e["ts"].get<double>());
    }
  }
  EXPECT_GT(samples, 0u);
  EXPECT_LT(last_sample, window_end - 1e-6);  // no sample at the window's end
  // The reference's slice args: no pop_hit / pop_miss on the scheduler's
  // dispatch slices; hints in deps.json's edge order (t3's producers are
  // listed t2 then t1 there).
  size_t t3_bars = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_FALSE(e["args"].contains("pop_hit")) << e.dump();
    EXPECT_FALSE(e["args"].contains("pop_miss")) << e.dump();
    if (e["pid"] == 4 && e["name"] == "func_5_f(t3)") {
      ++t3_bars;
      EXPECT_EQ(e["args"]["fanin-hint"], "2: [t2, t1]");
    }
  }
  EXPECT_GT(t3_bars, 0u);

  // Level 2 (no scheduler phases): the counters, but pid 2 stays unnamed.
  fs::copy_file(dir_ / "l4/deps.json", dir_ / "l2/deps.json");
  r = Run("swimlane l2/chip_swimlane_records.json --overhead");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  trace = ReadJson("l2/merged_swimlane.json");
  TraceSummary s = Summarize(trace);
  EXPECT_TRUE(s.counters.count("oh_has_overhead"));
  EXPECT_EQ(s.process_names.count(2), 0u);
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M") EXPECT_NE(e["pid"], 2) << e.dump();
  }
}

TEST_F(ViewTest, SwimlaneWithoutDepsWarnsAndDrawsNoArrows) {
  RunResult r = Run("swimlane l3/chip_swimlane_records.json --overhead -v");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("Warning: no usable deps.json at l3/deps.json; Perfetto trace will have no "
                       "dependency arrows."),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("Warning: --overhead needs deps.json for task readiness"),
            std::string::npos);
  EXPECT_NE(r.out.find("Flow events: 0 (no deps.json"), std::string::npos);
  TraceSummary s = Summarize(ReadJson("l3/merged_swimlane.json"));
  EXPECT_EQ(s.flow_names.count("dependency"), 0u);
  EXPECT_GT(s.flow_names.count("dispatch"), 0u);
  EXPECT_EQ(s.process_names.count(1), 0u);         // no orchestrator at level 3
  EXPECT_EQ(s.slice_names.count("task(t1)"), 2u);  // no deps → func_id unknown
}

TEST_F(ViewTest, SwimlaneLevel1DetectsSpmdWithoutDepsAndHasNoSchedulerView) {
  RunResult r = Run("swimlane l1/chip_swimlane_records.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TraceSummary s = Summarize(ReadJson("l1/merged_swimlane.json"));
  EXPECT_EQ(s.slice_names.count("task_spmd(t7)"), 2u);
  EXPECT_EQ(s.slice_names.count("task(t8)"), 1u);
  EXPECT_EQ(s.process_names.count(3), 0u);
  EXPECT_NE(r.out.find("AICore Observed Span"), std::string::npos);
}

TEST_F(ViewTest, SwimlaneLevel2WarnsAboutUnmatchedRows) {
  RunResult r = Run("swimlane l2/chip_swimlane_records.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("Warning: 1 aicpu_task(s) had no matching AICore record (top offenders: "
                       "core 1: 1)"),
            std::string::npos)
      << r.err;
}

TEST_F(ViewTest, SwimlaneErrorsExitOneWithMessage) {
  RunResult r = Run("swimlane bad_level/chip_swimlane_records.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "Error: Unsupported chip_swimlane_level: 7 (expected 1, 2, 3, or 4)\n");
  r = Run("swimlane missing.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "Error: Input file not found: missing.json\n");
  std::ofstream(dir_ / "l1/truncated.json")
      << R"({"chip_swimlane_level": 1, "aicore_tasks": [[1, 2)";
  r = Run("swimlane l1/truncated.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("l1/truncated.json: at byte"), std::string::npos) << r.err;
  r = Run("swimlane", "");  // no input, no ./outputs
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("No outputs/*/chip_swimlane_records.json found under"), std::string::npos);
}

TEST_F(ViewTest, SwimlaneWarnsOnSeveralSiblingNameMaps) {
  fs::copy_file(dir_ / "l4/name_map_Demo_case.json", dir_ / "l4/name_map_Other.json");
  RunResult r = Run("swimlane l4/chip_swimlane_records.json");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("multiple sibling name maps found next to l4/chip_swimlane_records.json; "
                       "pass --func-names explicitly."),
            std::string::npos);
  TraceSummary s = Summarize(ReadJson("l4/merged_swimlane.json"));
  EXPECT_EQ(s.slice_names.count("func_0_a(t1)"), 2u);  // default labels
}

TEST_F(ViewTest, SwimlaneHostOrchestratedRunPlacesDeviceAfterHostTimeline) {
  RunResult r = Run("swimlane hbg/chip_swimlane_records.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json trace = ReadJson("hbg/merged_swimlane.json");
  std::vector<std::string> pid1_names;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name" && e["pid"] == 1)
      pid1_names.push_back(e["args"]["name"]);
  }
  // Uploads first, orchestrator second, both on pid 1 (§4.3).
  EXPECT_EQ(pid1_names, (std::vector<std::string>{"Host Prepare", "Host Orchestrator"}));
  TraceSummary s = Summarize(trace);
  EXPECT_EQ((s.thread_names[{1, 4000}]), "Host_0");
  EXPECT_EQ((s.thread_names[{1, 4100}]), "H2D");
  EXPECT_EQ(s.slice_names.count("graph_upload"), 1u);
  EXPECT_EQ(trace["metadata"]["layout"], "causal_composite");
  EXPECT_EQ(trace["metadata"]["trace_status"], "complete");
  double seam = trace["metadata"]["logical_seam_us"];
  EXPECT_DOUBLE_EQ(seam, 6.0);  // last host timestamp 5 006 000 ns - origin 5 000 000 ns
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["pid"] == 4) {
      EXPECT_GE(e["ts"].get<double>(), seam);
    }
  }
  EXPECT_EQ(s.flow_names.count("submit\u2192dispatch"), 0u);  // uncalibrated cross-domain
}

TEST_F(ViewTest, SwimlaneGraphExecutionEnvelopeJoinsRing1NodeRows) {
  RunResult r = Run("swimlane graph/chip_swimlane_records.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json trace = ReadJson("graph/merged_swimlane.json");
  TraceSummary s = Summarize(trace);
  EXPECT_EQ(s.process_names[5], "Graph Execution");
  EXPECT_EQ((s.thread_names[{5, 5000}]), "Graph_0");
  EXPECT_EQ(s.slice_names.count("GraphExecution(t3, 2 visible nodes)"), 1u);
  EXPECT_EQ(s.slice_names.count("graph_prepare(2)"), 1u);
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["pid"] == 5) {
      EXPECT_NEAR(e["ts"].get<double>(), 0.14,
                  1e-9);  // prepare start 1220 - base 1080 cycles @ 1 GHz
      EXPECT_NEAR(e["dur"].get<double>(), 0.24, 1e-9);  // to last node finish 1460
      EXPECT_EQ(e["args"]["visible_node_max"], 5);
    }
  }
}

TEST_F(ViewTest, RunTimelineGivesEachRankItsOwnPidRange) {
  RunResult r = Run("swimlane --run run/dfx_outputs");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json trace = ReadJson("run/dfx_outputs/merged_run_swimlane.json");
  TraceSummary s = Summarize(trace);
  EXPECT_EQ(s.process_names[104], "Rank 0 \u00b7 Worker View");
  EXPECT_EQ(s.process_names[204], "Rank 1 \u00b7 Worker View");
  EXPECT_TRUE(s.flows_paired);
  // Without a manifest rank 0's second dispatch follows its first end to end.
  double d0_end = 0, d1_start = 1e18;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["pid"] != 104 || e["tid"] >= 19000) continue;
    double ts = e["ts"], end = ts + e["dur"].get<double>();
    if (e["args"]["taskId"].get<uint64_t>() >= 10)
      d1_start = std::min(d1_start, ts);
    else
      d0_end = std::max(d0_end, end);
  }
  EXPECT_GT(d1_start, d0_end);
}

collectors::DispatchEntry Dispatch(int32_t rank, uint32_t k, config::PassKind pass,
                                   uint64_t start_ns) {
  collectors::DispatchEntry d;
  d.rank = rank;
  d.k = k;
  d.pass = pass;
  d.status = collectors::DispatchState::kOk;
  d.start_ns = start_ns;
  return d;
}

TEST_F(ViewTest, RunTimelineAlignsDispatchesWithManifestOffsets) {
  // Starts on the coordinator clock, as the run manifest records them (rank
  // 1's agent clock runs 0.25 ms ahead; its start is already converted).
  collectors::RunManifest m;
  m.session = 1;
  m.ranks = {{0, "h", 1, collectors::RankState::kOk, "", 0, 1000, 2},
             {1, "h", 2, collectors::RankState::kOk, "", 250000, 1000, 1}};
  m.dispatches = {Dispatch(0, 0, config::PassKind::kSingle, 1000000),
                  Dispatch(0, 1, config::PassKind::kSingle, 1500000),
                  Dispatch(1, 0, config::PassKind::kSingle, 1350000 - 250000)};
  ASSERT_TRUE(collectors::WriteRunManifest(dir_ / "run/dfx_outputs", m).ok());
  RunResult r = Run("swimlane --run run/dfx_outputs -o merged.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json trace = ReadJson("merged.json");
  double r0d1 = 1e18, r1d0 = 1e18;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || !e.contains("args") || !e["args"].contains("taskId")) continue;
    if (e["pid"] == 104 && e["args"]["taskId"] == 10) r0d1 = std::min(r0d1, e["ts"].get<double>());
    if (e["pid"] == 204 && e["args"]["taskId"] == 10) r1d0 = std::min(r1d0, e["ts"].get<double>());
  }
  // Task 10 starts 0.03 µs (receive 1980 - base 1950 cycles @ 1 GHz) after its dispatch origin.
  EXPECT_NEAR(r0d1, 500.0 + 0.03, 1e-6);  // 1.5 ms - 1.0 ms on the coordinator clock
  EXPECT_NEAR(r1d0, 100.0 + 0.03, 1e-6);  // 1.35 ms agent - 0.25 ms offset - 1.0 ms
}

TEST_F(ViewTest, RunTimelineReadsTheManifestTheCoordinatorWrites) {
  // The manifest the coordinator writes (collectors::WriteRunManifest), with a
  // graph-pass entry to skip: the records on disk are the timing pass's.
  collectors::RunManifest m;
  m.session = 2;
  m.ranks = {{0, "h", 1, collectors::RankState::kOk, "", 0, 1000, 2},
             {1, "h", 2, collectors::RankState::kOk, "", 250000, 1000, 1}};
  m.dispatches = {Dispatch(0, 0, config::PassKind::kSingle, 1000000),
                  Dispatch(0, 1, config::PassKind::kGraph, 9000000),
                  Dispatch(0, 1, config::PassKind::kTiming, 1500000),
                  Dispatch(1, 0, config::PassKind::kSingle, 1100000)};
  ASSERT_TRUE(collectors::WriteRunManifest(dir_ / "run/dfx_outputs", m).ok());
  RunResult r = Run("swimlane --run run/dfx_outputs -o merged.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json trace = ReadJson("merged.json");
  double r0d1 = 1e18, r1d0 = 1e18;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || !e.contains("args") || !e["args"].contains("taskId")) continue;
    if (e["pid"] == 104 && e["args"]["taskId"] == 10) r0d1 = std::min(r0d1, e["ts"].get<double>());
    if (e["pid"] == 204 && e["args"]["taskId"] == 10) r1d0 = std::min(r1d0, e["ts"].get<double>());
  }
  EXPECT_NEAR(r0d1, 500.0 + 0.03, 1e-6);  // the timing pass's start, not the graph pass's
  EXPECT_NEAR(r1d0, 100.0 + 0.03, 1e-6);  // start_ns is already on the coordinator clock
}

// The events of a trace file, plain or gzip-compressed (.json.gz).
Json ReadTrace(const fs::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files as they are
  std::string text;
  char buf[65536];
  int n = 0;
  while (f != nullptr && (n = gzread(f, buf, sizeof buf)) > 0)
    text.append(buf, static_cast<size_t>(n));
  if (f != nullptr) gzclose(f);
  return Json::parse(text);
}

TEST_F(ViewTest, RunTimelineFiltersCutTheTraceByRankDispatchWindowAndFlows) {
  collectors::RunManifest m;
  m.session = 3;
  m.ranks = {{0, "h", 1, collectors::RankState::kOk, "", 0, 1000, 2},
             {1, "h", 2, collectors::RankState::kOk, "", 250000, 1000, 1}};
  m.dispatches = {Dispatch(0, 0, config::PassKind::kSingle, 1000000),
                  Dispatch(0, 1, config::PassKind::kSingle, 1500000),
                  Dispatch(1, 0, config::PassKind::kSingle, 1100000)};
  m.dispatches[0].program = "attn";
  m.dispatches[1].program = "vec";
  m.dispatches[2].program = "vec";
  for (auto& d : m.dispatches) d.end_ns = d.start_ns + 50000;
  ASSERT_TRUE(collectors::WriteRunManifest(dir_ / "run/dfx_outputs", m).ok());
  ASSERT_EQ(Run("swimlane --run run/dfx_outputs -o all.json").exit_code, 0);
  Json all = ReadTrace(dir_ / "all.json");
  TraceSummary s_all = Summarize(all);
  // Each dispatch has its boundary slice on its rank, the coordinator its host lane.
  EXPECT_EQ(s_all.slice_names.count("d0: attn"), 1u);
  EXPECT_EQ(s_all.slice_names.count("d1: vec"), 1u);
  EXPECT_EQ(s_all.slice_names.count("d0 attn: sent \u2192 done"), 1u);
  EXPECT_EQ(s_all.process_names[99], "Coordinator (host)");
  EXPECT_EQ(s_all.process_names[100], "Rank 0 \u00b7 Dispatches");
  EXPECT_EQ(all["metadata"]["session"], "0000000000000003");
  EXPECT_EQ(all["metadata"]["ranks"]["1"]["clock_offset_ns"], 250000);
  EXPECT_GT(s_all.flow_names.size(), 0u);

  // --ranks 1: rank 1's pids (and the coordinator's lane for it) only.
  RunResult r = Run("swimlane --run run/dfx_outputs --ranks 1 -o r1.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json r1 =
      ReadTrace(dir_ / "r1.json");  // kept: a range-for over a temporary's member dangles
  for (const auto& e : r1["traceEvents"]) {
    const int pid = e["pid"];
    EXPECT_TRUE(pid == 99 || (pid >= 200 && pid < 300)) << e.dump();
  }
  // --dispatch 1: rank 0's d1 only.
  ASSERT_EQ(Run("swimlane --run run/dfx_outputs --dispatch 1 -o d1.json").exit_code, 0);
  TraceSummary s_d1 = Summarize(ReadTrace(dir_ / "d1.json"));
  EXPECT_EQ(s_d1.slice_names.count("d1: vec"), 1u);
  EXPECT_EQ(s_d1.slice_names.count("d0: attn"), 0u);
  EXPECT_EQ(s_d1.slice_names.count("d0: vec"), 0u);
  // --no-flows: the same slices, no arrows.
  ASSERT_EQ(Run("swimlane --run run/dfx_outputs --no-flows -o nf.json").exit_code, 0);
  TraceSummary s_nf = Summarize(ReadTrace(dir_ / "nf.json"));
  EXPECT_TRUE(s_nf.flow_names.empty());
  EXPECT_EQ(s_nf.slice_names, s_all.slice_names);
  // --window: every timed event overlaps it; flows have both ends in it.
  ASSERT_EQ(Run("swimlane --run run/dfx_outputs --window 90:200 -o w.json").exit_code, 0);
  Json w = ReadTrace(dir_ / "w.json");
  size_t timed = 0;
  for (const auto& e : w["traceEvents"]) {
    if (!e.contains("ts")) continue;
    ++timed;
    const double ts = e["ts"], end = ts + e.value("dur", 0.0);
    EXPECT_TRUE(end >= 90 && ts <= 200) << e.dump();
  }
  EXPECT_GT(timed, 0u);
  EXPECT_LT(timed, all["traceEvents"].size());
  EXPECT_TRUE(Summarize(w).flows_paired);
  // .json.gz: the same trace, compressed.
  ASSERT_EQ(Run("swimlane --run run/dfx_outputs -o all.json.gz").exit_code, 0);
  EXPECT_EQ(ReadTrace(dir_ / "all.json.gz")["traceEvents"].size(), all["traceEvents"].size());
  EXPECT_LT(fs::file_size(dir_ / "all.json.gz"), fs::file_size(dir_ / "all.json") / 3);
  // Timestamps are rounded to the nanosecond.
  for (const auto& e : all["traceEvents"]) {
    if (!e.contains("ts")) continue;
    const double ts = e["ts"];
    EXPECT_NEAR(ts * 1000.0, std::round(ts * 1000.0), 1e-6) << e.dump();
  }
  // Past the size threshold: a warning with the size and the filters to use.
  r = Run("swimlane --run run/dfx_outputs --size-warning-bytes 1000 -o big.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("Warning: the trace has passed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--ranks R,.. / --dispatch K,.. / --window T0:T1"), std::string::npos);
  EXPECT_NE(r.err.find("-o big.json.gz"), std::string::npos) << r.err;
  // Bad filters are usage errors naming the flag; --ranks needs --run.
  r = Run("swimlane --run run/dfx_outputs --window 5");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--window 5: expected T0:T1"), std::string::npos) << r.err;
  r = Run("swimlane --run run/dfx_outputs --ranks 1,x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--ranks 1,x: expected a comma-separated list"), std::string::npos);
  r = Run("swimlane run/dfx_outputs/rank0/d0/chip_swimlane_records.json --ranks 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("only valid with --run"), std::string::npos) << r.err;
  r = Run("swimlane --run run/dfx_outputs/rank0/d0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("this is one dispatch's directory"), std::string::npos) << r.err;
}

TEST_F(ViewTest, DepsTextReportIsByteExact) {
  RunResult r = Run("deps l4/deps.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "Wrote l4/deps_viewer.txt (6 tasks, 6 unique edges, 7 annotated edges, format=text)\n");
  EXPECT_EQ(Slurp(dir_ / "l4/deps_viewer.txt"), Slurp(dir_ / "golden/l4_deps_viewer.txt"));
}

TEST_F(ViewTest, DepsReductionModesOnKnownDag) {
  RunResult r = Run("deps dag/deps.json --edge-mode reduced");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "Transitive reduction: removed 2 redundant edge(s) of 7 (5 kept)\n"
            "  - 1 -> 3\n  - 1 -> 4\n"
            "Wrote dag/deps_viewer_reduced.txt (5 tasks, 5 unique edges, 5 annotated edges, "
            "format=text)\n");
  EXPECT_EQ(Slurp(dir_ / "dag/deps_viewer_reduced.txt"),
            Slurp(dir_ / "golden/dag_deps_viewer_reduced.txt"));
  r = Run("deps dag/deps.json --edge-mode omitted");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Redundant edges only: showing 2 redundant edge(s) of 7"),
            std::string::npos);
  std::string omitted = Slurp(dir_ / "dag/deps_viewer_omitted.txt");
  EXPECT_NE(omitted.find("  unique_task_edges: 2\n"), std::string::npos);
  EXPECT_NE(omitted.find("TASK 0 kind=alloc func_id=none fanin=0 fanout=0\n"), std::string::npos);
  r = Run("deps dag/deps.json --edge-mode reduced_dataflow");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Dataflow-verified transitive reduction: removed 2"), std::string::npos);
  r = Run("deps cycle/deps.json --edge-mode reduced");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.err.find("warning: dependency graph has a cycle; transitive reduction skipped, "
                       "emitting full graph (--edge-mode reduced ignored)"),
            std::string::npos);
}

TEST_F(ViewTest, DepsUsageAndEnvironmentErrors) {
  RunResult r = Run("deps dag/deps.json --engine sfdp");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: --engine is only valid with --format html\n");
  r = Run("deps dag/deps.json --show-tensor-info");
  EXPECT_EQ(r.exit_code, 2);
  r = Run("deps nothere/deps.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "Error: nothere/deps.json not found.\n");
  fs::create_directories(dir_ / "emptybin");
  r = Run("deps dag/deps.json --format html", "PATH=" + (dir_ / "emptybin").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(
      r.err.find("Graphviz 'dot' not found on PATH. Install graphviz: brew install graphviz / "
                 "apt install graphviz"),
      std::string::npos)
      << r.err;
}

// A chain of `n` tasks as deps.json.
void WriteChain(const fs::path& path, int n) {
  Json tasks = Json::array(), edges = Json::array();
  for (int i = 0; i < n; ++i) {
    tasks.push_back(
        {{"task_id", std::to_string(i)}, {"kernel_ids", {i % 3, -1, -1}}, {"block_num", 1}});
    if (i > 0)
      edges.push_back({{"pred", std::to_string(i - 1)},
                       {"succ", std::to_string(i)},
                       {"arg", 0},
                       {"source", "tensormap"}});
  }
  fs::create_directories(path.parent_path());
  ASSERT_TRUE(dfx::WriteJsonFileAtomic(
                  path, Json{{"tasks", tasks}, {"tensors", Json::array()}, {"edges", edges}})
                  .ok());
}

TEST_F(ViewTest, DepsLargeGraphWithDotAdvisesSfdpAndLayoutTimeoutIsBounded) {
  WriteChain(dir_ / "big/deps.json", 600);
  RunResult r = Run("deps big/deps.json --format html --layout-timeout 0.001");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("use --engine sfdp"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("timed out"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("terminate"), std::string::npos);
}

// Decodes the PNG's image data and counts distinct byte values: a blank page
// compresses to a handful of values, a rendered graph to many.
size_t DistinctPngBytes(const fs::path& png) {
  std::string data = Slurp(png);
  if (data.size() < 8 || data.compare(1, 3, "PNG") != 0) return 0;
  std::string idat;
  size_t pos = 8;
  while (pos + 8 <= data.size()) {
    uint32_t len = (uint32_t(uint8_t(data[pos])) << 24) | (uint32_t(uint8_t(data[pos + 1])) << 16) |
                   (uint32_t(uint8_t(data[pos + 2])) << 8) | uint32_t(uint8_t(data[pos + 3]));
    std::string type = data.substr(pos + 4, 4);
    if (type == "IDAT") idat += data.substr(pos + 8, len);
    pos += 12 + len;
  }
  std::vector<unsigned char> raw(32 << 20);
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) !=
      Z_OK) {
    return 0;
  }
  std::set<unsigned char> distinct(raw.begin(), raw.begin() + static_cast<long>(raw_len));
  return distinct.size();
}

// Renders `page` in headless Chromium: returns the dumped DOM and writes a screenshot.
std::string RenderInChromium(const fs::path& page, const fs::path& png, const fs::path& profile) {
  std::string common =
      "timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-quic "
      "--no-first-run --disable-background-networking --disable-component-update "
      "--disable-sync --user-data-dir='" +
      profile.string() + "' ";
  std::string dom_file = png.string() + ".dom";
  std::string cmd =
      common + "--dump-dom 'file://" + page.string() + "' > '" + dom_file + "' 2>/dev/null";
  int rc = std::system(cmd.c_str());
  (void)rc;
  cmd = common + "--screenshot='" + png.string() + "' --window-size=1200,800 'file://" +
        page.string() + "' > /dev/null 2>&1";
  rc = std::system(cmd.c_str());
  return Slurp(dom_file);
}

bool HaveChromium() { return std::system("command -v chromium > /dev/null 2>&1") == 0; }

TEST_F(ViewTest, DepsHtmlRendersInHeadlessChromium) {
  if (!HaveChromium()) GTEST_SKIP() << "chromium not installed (scripts/setup.sh installs it)";
  RunResult r = Run("deps l4/deps.json --format html --edge-mode reduced --show-tensor-info");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      r.out.find(
          "HTML layout preserves all 6 edge(s); 1 unselected edge(s) are colored as background"),
      std::string::npos);
  fs::path page = dir_ / "l4/deps_viewer_reduced.html";
  std::string html = Slurp(page);
  EXPECT_NE(html.find("<title>deps.json \u2014 6 nodes, 5 edges</title>"), std::string::npos);
  EXPECT_NE(html.find("hidden&#45;edge"), std::string::npos);
  std::string dom = RenderInChromium(page, dir_ / "deps.png", dir_ / "chrome-profile");
  EXPECT_NE(dom.find("data-viewer-ready=\"1\""), std::string::npos) << "page script did not finish";
  EXPECT_GT(DistinctPngBytes(dir_ / "deps.png"), 16u);
}

TEST_F(ViewTest, DepsLargeGraphAdvisesAroundAndAroundKeepsTheNeighbourhood) {
  WriteChain(dir_ / "big/deps.json", 6000);
  RunResult r = Run("deps big/deps.json --format html --engine sfdp --layout-timeout 0.001");
  EXPECT_NE(r.err.find("Note: 6000 nodes: a layout of that many takes minutes"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--around TASK --depth N"), std::string::npos) << r.err;
  // Two edges either way of task 100 on a chain: 98..102.
  r = Run("deps big/deps.json --around t100 --depth 2 -o big/around.txt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Around 100: 5 task(s) within 2 edge(s)"), std::string::npos) << r.out;
  const std::string text = Slurp(dir_ / "big/around.txt");
  EXPECT_NE(text.find("  tasks: 5\n  unique_task_edges: 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("TASK 98 "), std::string::npos);
  EXPECT_EQ(text.find("TASK 97 "), std::string::npos);
  r = Run("deps big/deps.json --around t6000");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--around t6000: no such task"), std::string::npos) << r.err;
  r = Run("deps big/deps.json --around x1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--around x1: expected a task as t<local>"), std::string::npos) << r.err;
  r = Run("deps big/deps.json --depth 3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--depth is only valid with --around"), std::string::npos) << r.err;
}

// --collapse kernel: a 6000-task chain of kernels f0, f1, f2 in turn is
// three groups in a cycle, each edge counting the task edges it stands for.
TEST_F(ViewTest, DepsCollapseByKernelGroupsTasksAndCountsTheirEdges) {
  WriteChain(dir_ / "big/deps.json", 6000);
  RunResult r = Run("deps big/deps.json --collapse kernel");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Collapsed by kernel: 6000 task(s) into 3 group(s), 3 edge(s) between "
                       "groups"),
            std::string::npos)
      << r.out;
  const std::string text = Slurp(dir_ / "big/deps_viewer_by_kernel.txt");
  EXPECT_NE(text.find("  collapsed_by: kernel (6000 tasks in 3 groups;"), std::string::npos)
      << text;
  EXPECT_NE(text.find("func_name=f0 \u00d72000"), std::string::npos) << text;
  EXPECT_NE(text.find("  -> 1 (2000 task edge(s))"), std::string::npos) << text;
  EXPECT_NE(text.find("  -> 0 (1999 task edge(s))"), std::string::npos) << text;  // f2 -> f0
  // By ring: every task is in ring 0, so one group, every edge inside it.
  r = Run("deps big/deps.json --collapse ring -o big/ring.txt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(Slurp(dir_ / "big/ring.txt").find("func_name=ring 0 \u00d76000, 5999 edge(s) inside"),
            std::string::npos);
  // The HTML page of the collapsed graph: three nodes, no "too many nodes" note.
  r = Run("deps big/deps.json --collapse kernel --format html --engine sfdp -o big/k.html");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("Note: 6000 nodes"), std::string::npos) << r.err;
  const std::string html = Slurp(dir_ / "big/k.html");
  EXPECT_NE(html.find("3 nodes, 3 edges (collapsed by kernel from 6000 tasks)"), std::string::npos);
  EXPECT_NE(html.find(">2000</text>"), std::string::npos);  // the edge label, laid out by sfdp
  r = Run("deps big/deps.json --collapse kernel --critical-path");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--collapse and --critical-path do not combine"), std::string::npos)
      << r.err;
  r = Run("deps big/deps.json --collapse scope");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--collapse"), std::string::npos) << r.err;
}

TEST_F(ViewTest, DepsHtmlSearchMarksMatchesInHeadlessChromium) {
  if (!HaveChromium()) GTEST_SKIP() << "chromium not installed (scripts/setup.sh installs it)";
  WriteChain(dir_ / "big/deps.json", 300);
  RunResult r = Run(
      "deps big/deps.json --format html --engine sfdp --around t100 --depth 3 -o big/around.html");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = Slurp(dir_ / "big/around.html");
  EXPECT_NE(html.find("<title>deps.json \u2014 7 nodes, 6 edges</title>"), std::string::npos);
  EXPECT_NE(html.find("id=\"search\""), std::string::npos);
  // "#search=101" fills the box on load: one node (task 101) is marked and centred.
  fs::path page = dir_ / "big/around.html";
  std::string dom = RenderInChromium(fs::path(page.string() + "#search=101"), dir_ / "search.png",
                                     dir_ / "chrome-profile");
  EXPECT_NE(dom.find("data-viewer-ready=\"1\""), std::string::npos) << "page script did not finish";
  EXPECT_EQ(Count(dom, "class=\"node hit\""), 1u) << dom.substr(0, 4000);
  EXPECT_NE(dom.find("<span id=\"hits\">1 match</span>"), std::string::npos);
  EXPECT_GT(DistinctPngBytes(dir_ / "search.png"), 16u);
  // Without a match nothing is marked.
  dom = RenderInChromium(fs::path(page.string() + "#search=nothing"), dir_ / "none.png",
                         dir_ / "chrome-profile");
  EXPECT_EQ(Count(dom, "class=\"node hit\""), 0u);
  EXPECT_NE(dom.find("<span id=\"hits\">0 matches</span>"), std::string::npos);
}

TEST_F(ViewTest, ScopeStatsHtmlReportsPeaksAndRendersInHeadlessChromium) {
  RunResult r = Run("scope-stats scope_stats/scope_stats.jsonl --out-dir report");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ring 3 site stray.cpp:1: end without matching begin"), std::string::npos);
  EXPECT_NE(r.out.find("danger: tensormap ring_depth global real_occupancy peak 15 of 16 (93.75%)"),
            std::string::npos)
      << r.out;
  fs::path page = dir_ / "report/scope_stats.html";
  std::string html = Slurp(page);
  EXPECT_NE(html.find("Healthy: no fatal, no dropped"), std::string::npos);
  EXPECT_NE(html.find("Top Peaks"), std::string::npos);
  EXPECT_NE(html.find("87.50%"), std::string::npos);  // task_window ring 1: 14 of 16
  // The heap axis (MiB) has the decimals its range needs: a 1 KiB peak tops
  // the axis at 1.1 x 0.000977 = 0.00107 MiB (two decimals made every tick 0.00).
  const size_t heap = html.find("<h2>Heap <small>(MiB)</small></h2>");
  ASSERT_NE(heap, std::string::npos);
  EXPECT_NE(html.find(">0.00107</text>", heap), std::string::npos);
  EXPECT_NE(html.find(">0.00054</text>", heap), std::string::npos);
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);  // self-contained
  if (!HaveChromium()) GTEST_SKIP() << "chromium not installed (scripts/setup.sh installs it)";
  std::string dom = RenderInChromium(page, dir_ / "scope.png", dir_ / "chrome-profile");
  EXPECT_NE(dom.find("data-viewer-ready=\"1\""), std::string::npos);
  EXPECT_GT(DistinctPngBytes(dir_ / "scope.png"), 16u);
}

TEST_F(ViewTest, DumpListsFiltersExportsAndReportsErrors) {
  RunResult r = Run("dump args_dump -t 0x0000000000000003 -s before");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Filtered: 2/6 args"), std::string::npos);
  r = Run("dump args_dump --index 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(
      Slurp(dir_ / "args_dump/txt/task_0x0000000000000003_after_out1.txt"),
      "# task_id: 0x0000000000000003\n# role: output\n# stage: after_completion\n# arg_index: 1\n"
      "# dtype: INT32\n# kind: tensor\n# is_contiguous: true\n# shape: [2,3]\n# strides: [3,1]\n"
      "# start_offset: 0\n# Overview:\n 1 -2  3\n-4  5 -6\n# Detail:\n[0, 0] 1\n[0, 1] -2\n"
      "[0, 2] 3\n[1, 0] -4\n[1, 1] 5\n[1, 2] -6\n");
  r = Run("dump args_dump --export");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("Exported 6 arg(s) to args_dump/txt/"), std::string::npos);
  EXPECT_NE(Slurp(dir_ / "args_dump/txt/task_0x0000000100000005_after_inout0.txt")
                .find("# DATA OVERWRITTEN (host too slow)\n"),
            std::string::npos);
  EXPECT_NE(
      Slurp(dir_ / "args_dump/txt/task_0x0000000000000003_before_in2.txt").find("# value: 0.5\n"),
      std::string::npos);
  EXPECT_NE(
      Slurp(dir_ / "args_dump/txt/task_0x0000000100000005_before_inout0.txt").find("[3] 0x48\n"),
      std::string::npos);
  r = Run("dump args_dump -t 0xdead");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "Error: --task 0xdead not found.\nValid task_ids (showing first 2): "
            "0x0000000000000003, 0x0000000100000005\n");
  r = Run("dump args_dump -s middle");
  EXPECT_EQ(r.err, "Error: --stage must be 'before' or 'after', got 'middle'\n");
  r = Run("dump args_dump -r sideways");
  EXPECT_NE(r.err.find("Error: --role must be one of"), std::string::npos);
  r = Run("dump args_dump -i 6");
  EXPECT_EQ(r.err, "Error: --index 6 out of range (0-5)\n");
  r = Run("dump l4");
  EXPECT_EQ(r.err, "Error: args_dump.json not found in l4\n");
}

TEST_F(ViewTest, SchedOverheadPrintsAllSixPartsAndVerdict) {
  RunResult r =
      Run("sched-overhead --chip-swimlane-records-json l4/chip_swimlane_records.json --deps-json "
          "l4/deps.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* part : {"Part 1", "Part 2", "Part 3", "Part 4", "Part 5", "Part 6"}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part;
  }
  EXPECT_NE(r.out.find("has_overhead:   10.3%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Verdict: PARTIALLY SCHEDULER-LIMITED"), std::string::npos);
  r = Run("sched-overhead --chip-swimlane-records-json l3/chip_swimlane_records.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("Error: scheduler-overhead analysis needs the task DAG (deps.json)"),
            std::string::npos);
  r = Run("sched-overhead --chip-swimlane-records-json nope.json");
  EXPECT_EQ(r.err, "Error: Perf JSON not found: nope.json\n");
}

TEST_F(ViewTest, CriticalPathIsListedHopByHopAndDrawnRedInHeadlessChromium) {
  // sched-overhead part 6 lists the path hop by hop, root first.
  RunResult so =
      Run("sched-overhead --chip-swimlane-records-json l4/chip_swimlane_records.json --deps-json "
          "l4/deps.json");
  ASSERT_EQ(so.exit_code, 0) << so.err;
  const size_t part6 = so.out.find("== Part 6: critical path ==");
  ASSERT_NE(part6, std::string::npos);
  const std::string p6 = so.out.substr(part6);
  const size_t at = p6.find("hops: ");
  ASSERT_NE(at, std::string::npos);
  const int hops = std::stoi(p6.substr(at + 6));
  EXPECT_NE(p6.find("sched gap us"), std::string::npos) << p6;
  // The deps viewer lists the same path from the records beside deps.json ...
  RunResult r = Run("deps l4/deps.json --critical-path -o l4/cp.txt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = Slurp(dir_ / "l4/cp.txt");
  const size_t cp = text.find("\nCRITICAL PATH\n  hops: " + std::to_string(hops) + " ");
  ASSERT_NE(cp, std::string::npos) << text;
  EXPECT_EQ(Count(text.substr(cp), "\n  TASK "), static_cast<size_t>(hops + 1)) << text;
  // ... and without records it says what it needs.
  r = Run("deps dag/deps.json --critical-path");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--critical-path needs the timing beside deps.json"), std::string::npos)
      << r.err;
  // The HTML page draws the path's tasks and hops red (class "critical").
  r = Run("deps l4/deps.json --critical-path --format html -o l4/cp.html");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = Slurp(dir_ / "l4/cp.html");
  EXPECT_EQ(Count(html, "class=\"node critical\""), static_cast<size_t>(hops + 1)) << html;
  EXPECT_EQ(Count(html, "class=\"edge critical\""), static_cast<size_t>(hops));
  if (!HaveChromium()) GTEST_SKIP() << "chromium not installed (scripts/setup.sh installs it)";
  std::string dom = RenderInChromium(dir_ / "l4/cp.html", dir_ / "cp.png", dir_ / "chrome-profile");
  EXPECT_NE(dom.find("data-viewer-ready=\"1\""), std::string::npos) << "page script did not finish";
  EXPECT_EQ(Count(dom, "class=\"node critical\""), static_cast<size_t>(hops + 1));
  EXPECT_GT(DistinctPngBytes(dir_ / "cp.png"), 16u);
}

TEST_F(ViewTest, SchedOverheadOnLevel2PrintsPartsOneToFourThenThePhaseError) {
  // Parts 1-4 need only the joined rows; part 5 needs level >= 3 phase records.
  RunResult r =
      Run("sched-overhead --chip-swimlane-records-json l2/chip_swimlane_records.json --deps-json "
          "l4/deps.json");
  EXPECT_EQ(r.exit_code, 1);
  for (const char* part : {"Part 1", "Part 2", "Part 3", "Part 4"}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("Verdict: "), std::string::npos);
  EXPECT_NE(r.out.find("== Part 5: scheduler loop budget ==\n  not available: "
                       "chip_swimlane_level 2 records have no aicpu_scheduler_phases"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("Part 6"), std::string::npos);
  EXPECT_EQ(r.err,
            "Error: perf JSON has no aicpu_scheduler_phases \u2014 rerun the case with "
            "--enable-chip-swimlane so phase data is captured.\n");
}

TEST_F(ViewTest, DepsDataflowModesDropOnlyCreatorEdgesTheTensorRegionsProve) {
  // dataflow/deps.json: allocs 100..103 create T0..T3. Structurally every
  // alloc -> consumer edge below is redundant; `reduced` keeps them all
  // (creator edges). Dataflow proves 100 -> 2 (task 1 wrote all of T0 that 2
  // updates in place) and 102 -> 7 (tasks 5 and 6 each wrote half of T2), and
  // must keep 100 -> 8 (OUTPUT_EXISTING), 101 -> 4 (task 3 wrote only half of
  // T1) and 103 -> 10 (20 000 strided elements: over the 10 000-interval cap).
  RunResult r = Run("deps dataflow/deps.json --edge-mode reduced");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Transitive reduction: removed 0 redundant edge(s) of 16 (16 kept)"),
            std::string::npos)
      << r.out;
  r = Run("deps dataflow/deps.json --edge-mode reduced_dataflow");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "Dataflow-verified transitive reduction: removed 2 redundant edge(s) of 16 (14 kept)\n"
            "  - 100 -> 2\n  - 102 -> 7\n"
            "Wrote dataflow/deps_viewer_reduced_dataflow.txt (14 tasks, 14 unique edges, 14 "
            "annotated edges, format=text)\n");
  std::string report = Slurp(dir_ / "dataflow/deps_viewer_reduced_dataflow.txt");
  for (const char* kept : {"TASK 100 kind=alloc func_id=none fanin=0 fanout=2\n",
                           "TASK 101 kind=alloc func_id=none fanin=0 fanout=2\n",
                           "TASK 103 kind=alloc func_id=none fanin=0 fanout=2\n",
                           "TASK 102 kind=alloc func_id=none fanin=0 fanout=2\n"}) {
    EXPECT_NE(report.find(kept), std::string::npos) << kept;
  }
  EXPECT_NE(report.find("=== TASK 100 kind=alloc func_id=none ===\nFANIN 0\nFANOUT 2\n  -> 1\n"
                        "  -> 8\n"),
            std::string::npos)
      << report;
  r = Run("deps dataflow/deps.json --edge-mode omitted_dataflow");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Dataflow-verified redundant edges only: showing 2 redundant edge(s) of 16"),
            std::string::npos);
  EXPECT_NE(
      Slurp(dir_ / "dataflow/deps_viewer_omitted_dataflow.txt").find("  unique_task_edges: 2\n"),
      std::string::npos);
}

TEST_F(ViewTest, DepsTensorInfoMarksOutputTensorsInferredFromEdges) {
  // Tasks 1 and 3 record their OUTPUT arg without tensor info; the tensormap
  // edges they feed name T0 and T1, shown with the "?" marker and routed from
  // the producer's out_0 port.
  RunResult r = Run("deps dataflow/deps.json --format html --show-tensor-info -o t.html");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string html = Slurp(dir_ / "t.html");
  EXPECT_NE(html.find("arg0 OUTPUT T0?:FLOAT32 elems=64"), std::string::npos);
  EXPECT_NE(html.find("arg0 OUTPUT T1?:FLOAT32 elems=64"), std::string::npos);
  EXPECT_NE(html.find("arg0 OUTPUT T2:FLOAT32"), std::string::npos);  // recorded: no marker
  EXPECT_EQ(html.find("T2?"), std::string::npos);
  EXPECT_NE(html.find("T0_1:out_0&#45;&gt;T0_2:in_0"), std::string::npos);
}

TEST_F(ViewTest, SwimlaneKeepsExactTimesBeyondAThirtyTwoBitCycleSpan) {
  // Task 2 starts 2^33 cycles (8.6 s at 1 GHz) after the base: beyond the
  // compact 32-bit row encoding, so the row is stored wide and stays exact.
  std::ofstream(dir_ / "wide.json") << R"({"chip_swimlane_level": 2,
    "metadata": {"clock_freq_hz": 1000000000, "num_cores": 2, "core_types": ["aiv", "aiv"]},
    "aicore_tasks": [[0, 1, 1, 1000, 1100, 0], [1, 2, 1, 8589935592, 8589935692, 0]],
    "aicpu_tasks": [[0, 1, 990, 1110], [1, 1, 8589935582, 8589935702]]})";
  RunResult r = Run("swimlane wide.json -o wide_trace.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json trace = ReadJson("wide_trace.json");
  bool found = false;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("name", "") != "task(t2)" || e.value("pid", 0) != 4) continue;
    found = true;
    EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 8589934.602);
    EXPECT_NEAR(e["dur"].get<double>(), 0.1, 1e-6);  // µs doubles near 8.6e6
  }
  EXPECT_TRUE(found);
  EXPECT_NE(r.out.find("Total Test Time: 8589934.712 us"), std::string::npos) << r.out;
}

TEST_F(ViewTest, SwimlaneWithoutCoreToThreadVotesDispatchThreadsFromPhases) {
  // Without metadata.core_to_thread the dispatching thread of a core is voted
  // from the dispatch bars that contain its dispatches (re-read on demand).
  Json rec = ReadJson("l3/chip_swimlane_records.json");
  rec["metadata"].erase("core_to_thread");
  std::ofstream(dir_ / "l3/novote.json") << rec.dump();
  RunResult r = Run("swimlane l3/novote.json -o l3/novote_trace.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  TraceSummary s = Summarize(ReadJson("l3/novote_trace.json"));
  EXPECT_GT(s.flow_names.count("dispatch"), 0u);
  EXPECT_EQ(s.flow_names.count("complete"), 0u);  // complete flows need core_to_thread
}

TEST_F(ViewTest, PmuSummaryGroupsByFunctionAndDerivesPipeUtilisation) {
  RunResult r = Run("pmu pmu/pmu.csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("func_id 0 on AIC: 2 row(s)"), std::string::npos);
  EXPECT_NE(r.out.find("cube 60.0%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vec 75.0%"), std::string::npos);
  r = Run("pmu pmu/pmu_a5.csv");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("fixpipe 2.0%"), std::string::npos) << r.out;
  r = Run("pmu pmu/bad.csv");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "Error: pmu/bad.csv: line 2: column func_id: expected a number, got \"zero\"\n");
}

TEST_F(ViewTest, PmuSummaryAndDepsTextNameKernelsFromTheNameMap) {
  // The name map beside pmu.csv names its functions.
  std::ofstream(dir_ / "pmu/name_map.json")
      << R"({"level": 2, "orchestrator_name": "p", "callable_id_to_name": {"0": "mm", "1": "add"}})";
  RunResult r = Run("pmu pmu/pmu.csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("func_id 0 (mm) on AIC: 2 row(s)"), std::string::npos) << r.out;
  // The deps text report shows the name beside the ids when it says it has a name map.
  r = Run("deps l4/deps.json -o l4/named.txt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = Slurp(dir_ / "l4/named.txt");
  EXPECT_NE(text.find("func_name_map: yes"), std::string::npos);
  EXPECT_NE(text.find("TASK (0, 1) kind=submit func_id=[0,-1,-1] func_name=qk fanin=1"),
            std::string::npos)
      << text;
}

}  // namespace
