#include "device/emulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/file_util.h"
#include "common/json.h"
#include "device/generators.h"
#include "device/lowering.h"
#include "device/program_loader.h"

namespace dfx::device {
namespace {

namespace fs = std::filesystem;

class EmulatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dfx_emulator_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

config::RunConfig AllFlags(int swimlane = 4, int dump = 2) {
  config::RunConfig c;
  c.enable_chip_swimlane = swimlane;
  c.enable_dep_gen = true;
  c.enable_dump_args = dump;
  c.enable_pmu = 2;
  c.enable_scope_stats = true;
  return c;
}

ChipOptions Virtual() {
  ChipOptions o;
  o.virtual_clock = true;
  return o;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Json ReadJson(const fs::path& p) {
  auto j = ReadJsonFile(p);
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  return j.ok() ? *j : Json();
}

void ExpectVectorPipelineResult(const RunReport& r) {
  ASSERT_TRUE(r.tensors.count("f"));
  for (float v : r.tensors.at("f")) ASSERT_EQ(v, 42.0f);  // (2+3+1)*(2+3+2)
}

TEST_F(EmulatorTest, VectorPipelineComputesTheRightValuesInBothClockModes) {
  Program p = GenerateVectorPipeline();
  for (bool virtual_clock : {true, false}) {
    ChipOptions o;
    o.virtual_clock = virtual_clock;
    EmulatedChip chip(o);
    RunReport report;
    DispatchResult r = chip.Run(p, {}, dir_, &report, /*collect_tensors=*/true);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.tasks_executed, 5u);
    ExpectVectorPipelineResult(report);
    EXPECT_FALSE(fs::exists(dir_)) << "no DFX flag: nothing may be created";
    EXPECT_TRUE(r.artifacts.empty());
  }
}

TEST_F(EmulatorTest, ResidentTensorsLiveInTheChipsMemoryAcrossDispatches) {
  auto parsed = ParseProgram(Json::parse(R"({"name": "counter",
    "kernels": [{"func_id": 0, "name": "inc", "core_type": "aiv", "op": "add"}],
    "tensors": [{"name": "counter", "shape": [2], "dtype": "FLOAT32", "resident": true},
                {"name": "plain", "shape": [2], "dtype": "FLOAT32"},
                {"name": "ones", "shape": [2], "dtype": "FLOAT32", "init": {"range": [1, 0]}}],
    "orchestration": [
      {"submit": "inc", "args": [{"tensor": "counter", "type": "INOUT"},
                                 {"tensor": "ones", "type": "INPUT"}]},
      {"submit": "inc", "args": [{"tensor": "plain", "type": "INOUT"},
                                 {"tensor": "ones", "type": "INPUT"}]}]})"),
                             "counter.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(parsed->tensors[0].resident);
  EXPECT_EQ(ProgramToJson(*parsed)["tensors"][0]["resident"], true);
  EmulatedChip chip(Virtual());
  for (float expected : {1.0f, 2.0f, 3.0f}) {
    RunReport report;
    DispatchResult r = chip.Run(*parsed, {}, dir_, &report, /*collect_tensors=*/true);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(report.tensors["counter"], std::vector<float>({expected, expected}));
    EXPECT_EQ(report.tensors["plain"], std::vector<float>({1, 1}))
        << "not resident: re-initialised";
  }
  // Another chip has its own memory; the L2 state file round-trips it.
  const fs::path state = dir_ / "device_state/chip0.json";
  ASSERT_TRUE(SaveResidentState(state, chip.resident_state()).ok());
  EmulatedChip other(Virtual());
  auto loaded = LoadResidentState(state);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  other.resident_state() = *loaded;
  RunReport report;
  ASSERT_TRUE(other.Run(*parsed, {}, dir_, &report, true).status.ok());
  EXPECT_EQ(report.tensors["counter"], std::vector<float>({4, 4}));
  EXPECT_TRUE(LoadResidentState(dir_ / "missing.json")->empty());
  // A different shape under the same name is an error that names the fix.
  auto bigger = ParseProgram(Json::parse(R"({"name": "counter8",
    "kernels": [{"func_id": 0, "name": "inc", "core_type": "aiv", "op": "add"}],
    "tensors": [{"name": "counter", "shape": [8], "dtype": "FLOAT32", "resident": true},
                {"name": "ones", "shape": [8], "dtype": "FLOAT32"}],
    "orchestration": [{"submit": "inc", "args": [{"tensor": "counter", "type": "INOUT"},
                                                 {"tensor": "ones", "type": "INPUT"}]}]})"),
                             "counter8.json");
  ASSERT_TRUE(bigger.ok());
  DispatchResult bad = chip.Run(*bigger, {}, dir_, nullptr);
  EXPECT_FALSE(bad.status.ok());
  EXPECT_NE(bad.status.message().find("resident tensor \"counter\""), std::string::npos)
      << bad.status.message();
  EXPECT_NE(bad.status.message().find("give it another name"), std::string::npos);
  // "resident" must be a boolean.
  auto wrong = ParseProgram(Json::parse(R"({"name": "x",
    "kernels": [{"func_id": 0, "name": "inc", "core_type": "aiv", "op": "add"}],
    "tensors": [{"name": "c", "shape": [2], "dtype": "FLOAT32", "resident": "yes"}],
    "orchestration": []})"),
                            "x.json");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("$.tensors[0].resident"), std::string::npos)
      << wrong.status().message();
}

TEST_F(EmulatorTest, AttentionDecodeMatchesAHostReference) {
  AttentionDecodeOptions o;
  o.layers = 1;
  o.heads = 1;
  o.batch = 2;
  o.seq = 4;
  o.head_dim = 3;
  Program p = GenerateAttentionDecode(o);
  ChipOptions opt;
  EmulatedChip chip(opt);
  RunReport before, after;
  // x before the run = its init; compute the reference on the host.
  config::RunConfig none;
  Program zero_layers = p;
  zero_layers.orchestration.clear();
  ASSERT_TRUE(chip.Run(zero_layers, none, dir_, &before, true).status.ok());
  DispatchResult r = chip.Run(p, none, dir_, &after, true);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  const auto& x = before.tensors.at("x");
  const auto& kt = before.tensors.at("k_cache_t0");
  const auto& v = before.tensors.at("v_cache0");
  std::vector<double> attn(2 * 3);
  for (int b = 0; b < 2; ++b) {
    std::vector<double> s(4);
    double mx = -1e9, sum = 0;
    for (int j = 0; j < 4; ++j) {
      for (int d = 0; d < 3; ++d) s[j] += x[b * 3 + d] * kt[d * 4 + j];
      mx = std::max(mx, s[j]);
    }
    for (double& e : s) sum += (e = std::exp(e - mx));
    for (int d = 0; d < 3; ++d)
      for (int j = 0; j < 4; ++j) attn[b * 3 + d] += s[j] / sum * v[j * 3 + d];
  }
  for (int b = 0; b < 2; ++b) {
    double ss = 0;
    for (int d = 0; d < 3; ++d) ss += attn[b * 3 + d] * attn[b * 3 + d];
    double inv = 1 / std::sqrt(ss / 3 + 1e-6);
    for (int d = 0; d < 3; ++d)
      EXPECT_NEAR(after.tensors.at("x")[b * 3 + d], x[b * 3 + d] + attn[b * 3 + d] * inv, 1e-4);
  }
}

// A layered DAG of 600 tasks, 8 wide.
Program SixHundredTaskDag() {
  LayeredDagOptions o;
  o.tasks = 600;
  o.width = 8;
  return GenerateLayeredDag(o);
}

TEST_F(EmulatorTest, EveryTaskRunsOnceAndDependenciesAreRespected) {
  Program p = SixHundredTaskDag();
  auto lp = Lower(p, GetChipModel(config::BackendType::kA2A3).ring_defaults);
  ASSERT_TRUE(lp.ok());
  for (bool virtual_clock : {false, true}) {
    ChipOptions opt;
    opt.virtual_clock = virtual_clock;
    EmulatedChip chip(opt);
    config::RunConfig c;
    c.aicpu_thread_num = 3;  // two scheduler threads in real mode
    RunReport report;
    DispatchResult r = chip.Run(p, c, dir_, &report);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    ASSERT_EQ(report.blocks.size(), lp->tasks.size());
    std::vector<const BlockTiming*> by_task(lp->tasks.size(), nullptr);
    for (const BlockTiming& b : report.blocks) {
      ASSERT_EQ(by_task[b.task_index], nullptr) << "task ran twice";
      by_task[b.task_index] = &b;
      EXPECT_LE(b.dispatch_cycles, b.start_cycles);
      EXPECT_LE(b.start_cycles, b.end_cycles);
      EXPECT_LE(b.end_cycles, b.finish_cycles);
    }
    for (size_t t = 0; t < lp->tasks.size(); ++t)
      for (int pred : lp->tasks[t].preds)
        ASSERT_GE(by_task[t]->start_cycles, by_task[pred]->end_cycles)
            << "task " << t << " started before its producer " << pred << " ended";
  }
}

// Real threads on fewer host threads than emulated cores (one, and three
// for six cores): the values are the virtual clock's, every emulated core
// ran blocks and has its swimlane rows, a core never runs two blocks at once,
// every AICore row joins its AICPU row, and each scheduler thread's phases
// follow one another as one thread's would.
TEST_F(EmulatorTest, AFewHostThreadsPlayEveryEmulatedCore) {
  Program p = SixHundredTaskDag();
  auto lp = Lower(p, GetChipModel(config::BackendType::kA2A3).ring_defaults);
  ASSERT_TRUE(lp.ok());
  RunReport reference;
  {
    EmulatedChip chip(Virtual());
    ASSERT_TRUE(chip.Run(p, {}, dir_ / "virtual", &reference, true).status.ok());
  }
  for (int host_threads : {1, 3}) {
    SCOPED_TRACE("host_threads " + std::to_string(host_threads));
    ChipOptions opt;
    opt.host_threads = host_threads;
    EmulatedChip chip(opt);
    config::RunConfig c = AllFlags(4, 0);
    c.enable_dump_args = 0;
    c.aicpu_thread_num = 3;  // two scheduler threads
    const fs::path out = dir_ / ("pool" + std::to_string(host_threads));
    RunReport report;
    DispatchResult r = chip.Run(p, c, out, &report, true);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.tasks_executed, lp->tasks.size());
    EXPECT_GT(r.makespan_cycles, 0u);
    EXPECT_EQ(report.tensors, reference.tensors);

    Json j = ReadJson(out / "chip_swimlane_records.json");
    ASSERT_EQ(j["metadata"]["num_cores"], 6);
    EXPECT_EQ(j["metadata"]["core_to_thread"], Json::parse("[0, 1, 0, 1, 0, 1]"));
    ASSERT_EQ(j["aicore_tasks"].size(), lp->core_executions);
    ASSERT_EQ(j["aicpu_tasks"].size(), lp->core_executions);
    std::map<std::pair<int, uint32_t>, std::pair<uint64_t, uint64_t>> dispatch_finish;
    for (const Json& row : j["aicpu_tasks"])
      dispatch_finish[{row[0].get<int>(), row[1].get<uint32_t>()}] = {row[2].get<uint64_t>(),
                                                                      row[3].get<uint64_t>()};
    std::map<int, uint64_t> last_end;  // per core
    for (const Json& row : j["aicore_tasks"]) {
      const int core = row[0].get<int>();
      const uint64_t start = row[3].get<uint64_t>(), end = row[4].get<uint64_t>();
      auto joined = dispatch_finish.find({core, row[2].get<uint32_t>()});
      ASSERT_NE(joined, dispatch_finish.end()) << row.dump();
      EXPECT_LE(joined->second.first, start) << row.dump();
      EXPECT_LE(end, joined->second.second) << row.dump();
      EXPECT_LE(start, end) << row.dump();
      if (last_end.count(core)) {
        EXPECT_GE(start, last_end[core]) << "core " << core << " overlaps";
      }
      last_end[core] = end;
    }
    EXPECT_EQ(last_end.size(), 6u) << "every emulated core ran blocks";

    std::set<uint64_t> dispatch_times;
    for (const auto& [key, times] : dispatch_finish) dispatch_times.insert(times.first);
    ASSERT_EQ(j["aicpu_scheduler_phases"].size(), 2u);
    for (const Json& thread : j["aicpu_scheduler_phases"]) {
      EXPECT_FALSE(thread.empty());
      uint64_t prev_end = 0;
      const Json* prev = nullptr;
      for (const Json& ph : thread) {
        EXPECT_GE(ph["start_cycles"].get<uint64_t>(), prev_end) << ph.dump();
        // One pass's phases tile: each starts where the one before it in
        // the same loop iteration ended, and a dispatch phase ends at the
        // last dispatch it made.
        if (prev != nullptr && (*prev)["loop_iter"] == ph["loop_iter"]) {
          EXPECT_EQ(ph["start_cycles"], (*prev)["end_cycles"]) << prev->dump() << ph.dump();
        }
        if (ph["kind"] == "dispatch") {
          EXPECT_TRUE(dispatch_times.count(ph["end_cycles"].get<uint64_t>())) << ph.dump();
        }
        prev_end = ph["end_cycles"].get<uint64_t>();
        prev = &ph;
      }
    }
    ASSERT_EQ(j["aicpu_orchestrator_phases"].size(), 1u);
    const Json& submits = j["aicpu_orchestrator_phases"][0];
    EXPECT_EQ(submits.size(), lp->tasks.size());
    for (size_t i = 1; i < submits.size(); ++i)
      EXPECT_GE(submits[i]["start_cycles"], submits[i - 1]["end_cycles"]) << submits[i].dump();
  }
}

TEST_F(EmulatorTest, TinyRingsBlockTheOrchestratorButGiveTheSameResult) {
  // A chain (width 1): each value stays bound for three layers, so with a
  // 4-slot window the orchestrator can only run one task ahead.
  LayeredDagOptions o;
  o.tasks = 300;
  o.width = 1;
  Program p = GenerateLayeredDag(o);
  for (bool virtual_clock : {false, true}) {
    ChipOptions opt;
    opt.virtual_clock = virtual_clock;
    EmulatedChip chip(opt);
    RunReport roomy, tiny;
    ASSERT_TRUE(chip.Run(p, {}, dir_, &roomy, true).status.ok());
    config::RunConfig c;
    c.rings.task_window = {4, 4, 4, 4};
    c.rings.heap = {1024, 1024, 1024, 1024};  // exactly four 256-byte values
    c.rings.dep_pool = {4, 4, 4, 4};
    DispatchResult r = chip.Run(p, c, dir_, &tiny, true);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.tasks_executed, 300u);
    // 300 tasks through 4 slots: reclamation had to work. Whether the real
    // threads ever found the ring full depends on timing; the virtual clock
    // (a submit is cheaper than a kernel) always does.
    if (virtual_clock) {
      EXPECT_GT(tiny.orchestrator_stalls, 0u);
    }
    EXPECT_EQ(tiny.tensors.at("out"), roomy.tensors.at("out"));
    for (float v : tiny.tensors.at("out")) EXPECT_TRUE(std::isfinite(v));
  }
}

TEST_F(EmulatorTest, RingsThatCanNeverFitAreClearErrorsNotHangs) {
  Program p = GenerateVectorPipeline(32, 32);  // 4 KiB outputs
  EmulatedChip chip(ChipOptions{});
  config::RunConfig c;
  c.rings.heap = {1024, 1024, 1024, 1024};
  DispatchResult r = chip.RunProgram(p, c, dir_);
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("ring_heap >= 4096"), std::string::npos) << r.status.message();

  // Six live values in the root scope, a 4-slot task window: a real deadlock.
  LayeredDagOptions o;
  o.tasks = 12;
  o.width = 6;
  Program dag = GenerateLayeredDag(o);
  for (bool virtual_clock : {false, true}) {
    ChipOptions opt;
    opt.virtual_clock = virtual_clock;
    EmulatedChip small(opt);
    config::RunConfig w;
    w.rings.task_window = {4, 4, 4, 4};
    DispatchResult d = small.RunProgram(dag, w, dir_);
    ASSERT_FALSE(d.status.ok());
    EXPECT_NE(d.status.message().find("ring deadlock"), std::string::npos) << d.status.message();
    EXPECT_NE(d.status.message().find("ring 0 task window (4 slots)"), std::string::npos);
    // The chip stays usable.
    EXPECT_TRUE(small.RunProgram(GenerateVectorPipeline(), {}, dir_).status.ok());
  }
}

TEST_F(EmulatorTest, AicpuThreadNumIsCheckedAgainstTheChipModel) {
  EmulatedChip chip(ChipOptions{});
  config::RunConfig c;
  c.aicpu_thread_num = 5;  // a2a3 has 4
  DispatchResult r = chip.RunProgram(GenerateVectorPipeline(), c, dir_);
  ASSERT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("aicpu_thread_num"), std::string::npos) << r.status.message();
  // The same chip runs an a5 dispatch: the RunConfig selects the model.
  EmulatedChip& big = chip;
  c.backend_type = config::BackendType::kA5;
  c.enable_chip_swimlane = 3;
  DispatchResult ok = big.RunProgram(GenerateVectorPipeline(), c, dir_);
  ASSERT_TRUE(ok.status.ok()) << ok.status.ToString();
  Json j = ReadJson(dir_ / "chip_swimlane_records.json");
  EXPECT_EQ(j["metadata"]["clock_freq_hz"], 1000000000);
  // Four scheduler threads (one AICPU thread orchestrates) own the six cores round-robin.
  EXPECT_EQ(j["metadata"]["core_to_thread"], Json::parse("[0,1,2,3,0,1]"));
}

TEST_F(EmulatorTest, KernelFailureFailsOnlyThatDispatch) {
  Program p = GenerateVectorPipeline();
  Kernel bad;
  bad.func_id = 9;
  bad.name = "exploder";
  bad.core_type = CoreType::kAiv;
  bad.op = KernelOp::kFail;
  bad.message = "boom";
  p.kernels.push_back(bad);
  Statement st = p.orchestration[2];
  st.submit.kernel = 3;
  st.submit.args = {{0, ArgType::kInput}};
  st.submit.scalars.clear();
  st.json_path = "$.orchestration[2]";
  p.orchestration[2] = st;
  for (bool virtual_clock : {false, true}) {
    ChipOptions opt;
    opt.virtual_clock = virtual_clock;
    EmulatedChip chip(opt);
    DispatchResult r = chip.RunProgram(p, AllFlags(), dir_ / "fail");
    ASSERT_FALSE(r.status.ok());
    EXPECT_NE(r.status.message().find("kernel \"exploder\""), std::string::npos)
        << r.status.message();
    EXPECT_NE(r.status.message().find("task t2"), std::string::npos) << r.status.message();
    EXPECT_NE(r.status.message().find("boom"), std::string::npos);
    EXPECT_FALSE(fs::exists(dir_ / "fail" / "deps.json")) << "dep_gen is skipped on failure";
    RunReport report;
    DispatchResult ok = chip.Run(GenerateVectorPipeline(), {}, dir_, &report, true);
    ASSERT_TRUE(ok.status.ok()) << ok.status.ToString();
    ExpectVectorPipelineResult(report);
  }
}

TEST_F(EmulatorTest, VirtualClockArtifactsAreByteIdenticalAcrossRuns) {
  Program p = GenerateAttentionDecode({});
  std::vector<std::string> names[2];
  for (int i = 0; i < 2; ++i) {
    EmulatedChip chip(Virtual());
    DispatchResult r = chip.RunProgram(p, AllFlags(), dir_ / std::to_string(i));
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    names[i] = r.artifacts;
  }
  ASSERT_EQ(names[0], names[1]);
  ASSERT_GE(names[0].size(), 5u);
  for (const std::string& f : names[0])
    EXPECT_EQ(Slurp(dir_ / "0" / f), Slurp(dir_ / "1" / f)) << f << " differs between runs";
}

TEST_F(EmulatorTest, ASharedProgramIsLoweredOnceAndItsKeptLoweringRunsTheSame) {
  LayeredDagOptions o;
  o.tasks = 60;
  o.width = 6;
  auto p = std::make_shared<const Program>(GenerateLayeredDag(o));
  EmulatedChip chip(Virtual());
  // Run twice from one lowering, and once by a chip of its own: the same
  // artifacts, byte for byte (the virtual clock is deterministic).
  DispatchResult first = chip.RunShared(p, AllFlags(), dir_ / "first");
  DispatchResult again = chip.RunShared(p, AllFlags(), dir_ / "again");
  ASSERT_TRUE(first.status.ok()) << first.status.ToString();
  ASSERT_TRUE(again.status.ok()) << again.status.ToString();
  EXPECT_EQ(chip.lowerings(), 1u);
  EmulatedChip fresh(Virtual());
  DispatchResult alone = fresh.RunProgram(*p, AllFlags(), dir_ / "alone");
  ASSERT_TRUE(alone.status.ok()) << alone.status.ToString();
  ASSERT_GE(alone.artifacts.size(), 5u);
  ASSERT_EQ(again.artifacts, alone.artifacts);
  EXPECT_EQ(again.tasks_executed, 60u);
  for (const std::string& f : alone.artifacts) {
    EXPECT_EQ(Slurp(dir_ / "again" / f), Slurp(dir_ / "alone" / f)) << f;
    EXPECT_EQ(Slurp(dir_ / "first" / f), Slurp(dir_ / "alone" / f)) << f;
  }

  // Other ring sizes are another lowering (and here a deadlock the kept one
  // would not have): six live values in the root scope, four task slots.
  config::RunConfig narrow = AllFlags();
  narrow.rings.task_window = {4, 4, 4, 4};
  DispatchResult stuck = chip.RunShared(p, narrow, dir_ / "narrow");
  ASSERT_FALSE(stuck.status.ok());
  EXPECT_NE(stuck.status.message().find("ring deadlock"), std::string::npos)
      << stuck.status.message();
  EXPECT_EQ(chip.lowerings(), 2u);
  // Back to the defaults: lowered again (one lowering is kept per chip).
  ASSERT_TRUE(chip.RunShared(p, AllFlags(), dir_ / "back").status.ok());
  EXPECT_EQ(chip.lowerings(), 3u);
  // The same program text in another object is another program; a run of a
  // program the caller does not share is lowered and leaves the kept one.
  auto copy = std::make_shared<const Program>(*p);
  ASSERT_TRUE(chip.RunShared(copy, AllFlags(), dir_ / "copy").status.ok());
  EXPECT_EQ(chip.lowerings(), 4u);
  ASSERT_TRUE(chip.RunProgram(*copy, AllFlags(), dir_ / "unshared").status.ok());
  ASSERT_TRUE(chip.RunShared(copy, AllFlags(), dir_ / "copy2").status.ok());
  EXPECT_EQ(chip.lowerings(), 5u);
  // A session's end lets go of it.
  chip.ReleaseShared();
  ASSERT_TRUE(chip.RunShared(copy, AllFlags(), dir_ / "copy3").status.ok());
  EXPECT_EQ(chip.lowerings(), 6u);
}

TEST_F(EmulatorTest, DepsJsonOfTheVectorPipelineHasExactlySixEdges) {
  EmulatedChip chip(ChipOptions{});
  config::RunConfig c;
  c.enable_dep_gen = true;
  DispatchResult r = chip.RunProgram(GenerateVectorPipeline(), c, dir_);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  Json deps = ReadJson(dir_ / "deps.json");
  ASSERT_EQ(deps["edges"].size(), 6u);
  ASSERT_EQ(deps["tasks"].size(), 5u);
  EXPECT_EQ(deps["tasks"][0]["kernel_ids"], Json::parse("[-1,0,-1]"));
  int creator = 0;
  for (const Json& e : deps["edges"]) creator += e["source"] == "creator";
  EXPECT_EQ(creator, 1);
}

TEST_F(EmulatorTest, SwimlaneLevelsAreRealGuardsEndToEnd) {
  Program p = GenerateAttentionDecode({});
  auto lp = Lower(p, GetChipModel(config::BackendType::kA2A3).ring_defaults);
  ASSERT_TRUE(lp.ok());
  for (int level = 1; level <= 4; ++level) {
    EmulatedChip chip(Virtual());
    config::RunConfig c;
    c.enable_chip_swimlane = level;
    fs::path out = dir_ / ("l" + std::to_string(level));
    DispatchResult r = chip.RunProgram(p, c, out);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    Json j = ReadJson(out / "chip_swimlane_records.json");
    EXPECT_EQ(j["chip_swimlane_level"], level);
    EXPECT_EQ(j["aicore_tasks"].size(), lp->core_executions) << "level " << level;
    EXPECT_EQ(j["aicpu_tasks"].empty(), level < 2) << "level " << level;
    EXPECT_EQ(j.contains("aicpu_scheduler_phases"), level >= 3) << "level " << level;
    EXPECT_EQ(j["metadata"].contains("core_to_thread"), level >= 3) << "level " << level;
    EXPECT_EQ(j.contains("aicpu_orchestrator_phases"), level >= 4) << "level " << level;
    if (level >= 3) {
      std::set<std::string> kinds;
      for (const Json& thread : j["aicpu_scheduler_phases"])
        for (const Json& ph : thread) kinds.insert(ph["kind"].get<std::string>());
      EXPECT_EQ(kinds, (std::set<std::string>{"complete", "dispatch", "release"}));
    }
    EXPECT_EQ(j["metadata"]["clock_freq_hz"], 50000000);
    EXPECT_EQ(j["metadata"]["num_cores"], 6);
    EXPECT_FALSE(fs::exists(out / "deps.json"));
    EXPECT_FALSE(fs::exists(out / "pmu.csv"));
  }
}

TEST_F(EmulatorTest, PartialDumpCapturesOnlyMarkedValues) {
  Program p = GenerateAttentionDecode({});  // dump_tag x, attn_out; dumps=[scores]
  auto lp = Lower(p, GetChipModel(config::BackendType::kA2A3).ring_defaults);
  ASSERT_TRUE(lp.ok());
  EmulatedChip chip(Virtual());
  config::RunConfig c;
  c.enable_dump_args = 1;
  DispatchResult r = chip.RunProgram(p, c, dir_);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  Json m = ReadJson(dir_ / "args_dump" / "args_dump.json");
  // Expected entries: one per marked arg and stage.
  size_t want = 0;
  for (const LoweredTask& t : lp->tasks)
    for (const LoweredArg& a : t.args)
      if (a.dump) want += a.type == ArgType::kInout ? 2 : 1;
  ASSERT_GT(want, 0u);
  EXPECT_EQ(m["args"].size(), want);
  for (const Json& e : m["args"]) EXPECT_GT(e["bin_size"].get<int64_t>(), 0);
}

TEST_F(EmulatorTest, HybridDumpRecordsAllMetadataButOnlyMarkedPayload) {
  Program p = GenerateAttentionDecode({});
  auto lp = Lower(p, GetChipModel(config::BackendType::kA2A3).ring_defaults);
  ASSERT_TRUE(lp.ok());
  EmulatedChip chip(Virtual());
  config::RunConfig c;
  c.enable_dump_args = 3;
  DispatchResult r = chip.RunProgram(p, c, dir_);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  Json m = ReadJson(dir_ / "args_dump" / "args_dump.json");
  size_t all = 0, marked = 0;
  for (const LoweredTask& t : lp->tasks)
    for (const LoweredArg& a : t.args) {
      size_t stages = a.type == ArgType::kInout ? 2 : 1;
      all += stages;
      if (a.dump) marked += stages;
    }
  EXPECT_EQ(m["args"].size(), all);
  size_t with_payload = 0;
  for (const Json& e : m["args"]) with_payload += e["bin_size"].get<int64_t>() > 0;
  EXPECT_EQ(with_payload, marked);
}

TEST_F(EmulatorTest, AFailedDumpCaptureFailsTheDispatchWithItsError) {
  ChipOptions opt = Virtual();
  opt.dump_arena_bytes = 2048;         // two 1 KiB tensors
  opt.dump_drain_bytes_per_sec = 100;  // a host that cannot keep up
  opt.dump_timeout_ms = 50;
  EmulatedChip chip(opt);
  config::RunConfig c;
  c.enable_dump_args = 2;
  DispatchResult r = chip.RunProgram(GenerateVectorPipeline(), c, dir_);
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.code(), Code::kDeadlineExceeded) << r.status.ToString();
  EXPECT_NE(r.status.message().find("args dump of task t"), std::string::npos)
      << r.status.message();
  EXPECT_NE(r.status.message().find("enable_dump_args=1"), std::string::npos) << r.status.message();
  EXPECT_LT(r.tasks_executed, 5u);
  opt.dump_arena_bytes = 0;
  EmulatedChip roomy(opt);
  EXPECT_TRUE(roomy.RunProgram(GenerateVectorPipeline(), c, dir_ / "ok").status.ok());
}

TEST_F(EmulatorTest, PmuAndScopeStatsCoverEveryBlockAndScope) {
  Program p = GenerateAttentionDecode({});
  auto lp = Lower(p, GetChipModel(config::BackendType::kA2A3).ring_defaults);
  ASSERT_TRUE(lp.ok());
  EmulatedChip chip(Virtual());
  config::RunConfig c;
  c.enable_pmu = 4;
  c.enable_scope_stats = true;
  DispatchResult r = chip.RunProgram(p, c, dir_);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  std::string csv = Slurp(dir_ / "pmu.csv");
  size_t lines = std::count(csv.begin(), csv.end(), '\n');
  EXPECT_EQ(lines, 1 + lp->core_executions);
  EXPECT_EQ(
      csv.substr(0, csv.find('\n')),
      "thread_id,core_id,task_id,func_id,core_type,pmu_total_cycles,ub_read_req,ub_write_req,"
      "l1_read_req,l1_write_req,l2_read_req,l2_write_req,main_read_req,main_write_req,event_type");
  std::string jsonl = Slurp(dir_ / "scope_stats" / "scope_stats.jsonl");
  size_t records = std::count(jsonl.begin(), jsonl.end(), '\n');
  EXPECT_EQ(records, 1 + 2 * lp->scopes.size());  // metadata + begin/end per scope (root too)
  EXPECT_NE(jsonl.find("\"depth\": 0"), std::string::npos);
}

}  // namespace
}  // namespace dfx::device

namespace dfx::device {
namespace {

size_t ThreadsOfThisProcess() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& t : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// A chip's host threads are made by its first real-threads dispatch and
// reused by the next ones (a dispatch used to create and join 7), and every
// dispatch still computes the same values and counts its makespan.
TEST(EmulatorThreadsTest, DispatchesReuseTheChipsThreads) {
  const fs::path dir =
      fs::temp_directory_path() / ("emulator_threads_" + std::to_string(::getpid()));
  Program p = GenerateVectorPipeline(8, 64);
  EmulatedChip chip(ChipOptions{});
  RunReport first;
  ASSERT_TRUE(chip.Run(p, {}, dir, &first, true).status.ok());
  const size_t threads = ThreadsOfThisProcess();
  for (int i = 0; i < 50; ++i) {
    RunReport again;
    DispatchResult r = chip.Run(p, {}, dir, &again, true);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.tasks_executed, first.tasks_completed);
    EXPECT_GT(r.makespan_cycles, 0u);
    EXPECT_EQ(again.tensors, first.tensors);
  }
  EXPECT_EQ(ThreadsOfThisProcess(), threads);
  fs::remove_all(dir);
}

// A program of one block has nothing to run in parallel: the calling thread
// runs it (no pool thread is made or woken), with the same values, task
// count, makespan and records as through the pool.
TEST(EmulatorThreadsTest, OneBlockRunsOnTheCallingThread) {
  const fs::path dir =
      fs::temp_directory_path() / ("emulator_one_block_" + std::to_string(::getpid()));
  auto json = ParseJson(R"({"name": "one",
    "kernels": [{"func_id": 0, "name": "add", "core_type": "aiv", "op": "add"}],
    "tensors": [{"name": "a", "shape": [16], "dtype": "FLOAT32", "init": {"range": [1.0, 1.0]}},
                {"name": "b", "shape": [16], "dtype": "FLOAT32"}],
    "orchestration": [{"submit": "add", "args": [{"tensor": "a", "type": "INPUT"},
                       {"tensor": "a", "type": "INPUT"}, {"tensor": "b", "type": "OUTPUT"}]}]})",
                        "one.json");
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  auto p = ParseProgram(*json, "one.json");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EmulatedChip chip(ChipOptions{});
  const size_t threads = ThreadsOfThisProcess();
  for (int i = 0; i < 3; ++i) {
    RunReport report;
    DispatchResult r = chip.Run(*p, {}, dir, &report, true);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.tasks_executed, 1u);
    EXPECT_GT(r.makespan_cycles, 0u);
    ASSERT_EQ(report.tensors.count("b"), 1u);
    for (size_t e = 0; e < report.tensors.at("b").size(); ++e) {
      EXPECT_EQ(report.tensors.at("b")[e], 2.0f * (1.0f + static_cast<float>(e)));
    }
  }
  EXPECT_EQ(ThreadsOfThisProcess(), threads) << "the pool was started for one block";
  // Its records are those of a pooled run: one block dispatched and run.
  DispatchResult recorded = chip.RunProgram(*p, AllFlags(4, 0), dir);
  ASSERT_TRUE(recorded.status.ok()) << recorded.status.ToString();
  Json j = ReadJson(dir / "chip_swimlane_records.json");
  EXPECT_EQ(j["aicore_tasks"].size(), 1u) << j.dump();
  EXPECT_EQ(j["aicpu_tasks"].size(), 1u) << j.dump();
  // More than one block goes to the pool, as before.
  RunReport pipeline;
  ASSERT_TRUE(chip.Run(GenerateVectorPipeline(), {}, dir, &pipeline, true).status.ok());
  ExpectVectorPipelineResult(pipeline);
  EXPECT_GT(ThreadsOfThisProcess(), threads);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dfx::device
