// The onboard two-pass protocol (spec §2.6–§2.7) end to end: graph pass
// then timing pass into the same directories, device-resident state not
// restored between them, best-effort graph pass, the automatic merged trace,
// wall-clock honesty and distributed namespacing.
#include <gtest/gtest.h>

#include "tests/dfx/dfx_test_util.h"
#include "tests/l3/fault_hooks.h"

namespace dfx::e2e {
namespace {

const std::vector<std::string> kOnboard = {"--execution-mode", "onboard"};

std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(OnboardTest, L2RunsGraphPassThenTimingPassAndTheInPlaceUpdateHappensTwice) {
  fs::path dir = TestDir("dfx_l2_onboard");
  auto r = Coordinator(Data("counter.json"), dir / "w", With(kOnboard, {"--enable-chip-swimlane"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Banners, in order.
  const size_t twice = r.out.find("chip swimlane enabled, running the kernel twice");
  const size_t run1 = r.out.find("run 1/2: capturing deps.json");
  const size_t run2 = r.out.find("run 2/2: measuring clean per-task timing");
  ASSERT_NE(twice, std::string::npos) << r.out;
  ASSERT_NE(run1, std::string::npos) << r.out;
  ASSERT_NE(run2, std::string::npos) << r.out;
  EXPECT_LT(twice, run1);
  EXPECT_LT(run1, run2);
  const fs::path out = dir / "w/dfx_outputs";
  EXPECT_TRUE(fs::exists(out / "deps.json")) << "graph pass";
  EXPECT_TRUE(fs::exists(out / "chip_swimlane_records.json")) << "timing pass";
  // Mutable arguments are not restored between the passes: +1 twice.
  EXPECT_EQ(ResidentValues(dir / "w", "counter"), std::vector<double>({2, 2, 2, 2}));
  // The merged trace is produced automatically, with real kernel names
  // (deps.json from the graph pass + the name map).
  auto merged = MergedTraces(out);
  ASSERT_EQ(merged.size(), 1u) << ::testing::PrintToString(Tree(out));
  const std::string trace = Slurp(merged[0]);
  EXPECT_NE(trace.find("increment(t0)"), std::string::npos) << trace.substr(0, 2000);
  EXPECT_NE(r.out.find("merged trace: " + merged[0].string()), std::string::npos) << r.out;
  // Wall-clock honesty; dep_gen was not asked for, so no deps viewer hint.
  EXPECT_NE(r.out.find("do not read wall-clock from this run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--bench"), std::string::npos);
  EXPECT_EQ(r.out.find("dfx-view deps"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("save_kernels: forced on"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST(OnboardTest, SimIsOnePassSoTheUpdateHappensOnceAndStillGetsAMergedTrace) {
  fs::path dir = TestDir("dfx_l2_sim");
  auto r = Coordinator(Data("counter.json"), dir / "w", {"--enable-chip-swimlane"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("run 1/2"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("wall-clock"), std::string::npos) << r.out;
  EXPECT_EQ(ResidentValues(dir / "w", "counter"), std::vector<double>({1, 1, 1, 1}));
  const fs::path out = dir / "w/dfx_outputs";
  EXPECT_FALSE(fs::exists(out / "deps.json")) << "sim at L2 runs the flags as given";
  auto merged = MergedTraces(out);
  ASSERT_EQ(merged.size(), 1u);
  // Without deps.json the lanes are anonymous.
  const std::string trace = Slurp(merged[0]);
  EXPECT_NE(trace.find("task(t0)"), std::string::npos);
  EXPECT_EQ(trace.find("increment("), std::string::npos);
  // A second run is a new session: the device memory starts empty again.
  auto again = Coordinator(Data("counter.json"), dir / "w", {"--enable-chip-swimlane"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(ResidentValues(dir / "w", "counter"), std::vector<double>({1, 1, 1, 1}));
  fs::remove_all(dir);
}

TEST(OnboardTest, ExplicitDepGenChangesNothingButTheViewerHint) {
  fs::path dir = TestDir("dfx_l2_depgen");
  auto r = Coordinator(Data("counter.json"), dir / "w",
                       With(kOnboard, {"--enable-chip-swimlane", "--enable-dep-gen"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Count(r.out, "run 1/2"), 1u);
  EXPECT_EQ(Count(r.out, "run 2/2"), 1u);
  EXPECT_EQ(ResidentValues(dir / "w", "counter"), std::vector<double>({2, 2, 2, 2}));
  const fs::path out = dir / "w/dfx_outputs";
  EXPECT_NE(r.out.find("dfx-view deps " + (out / "deps.json").string()), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("--engine sfdp"), std::string::npos);
  fs::remove_all(dir);
}

TEST(OnboardTest, GraphPassFailureIsAWarningAndLanesFallBackToAnonymous) {
  DFX_SKIP_WITHOUT_FAULT_HOOKS();
  fs::path dir = TestDir("dfx_l2_graphfail");
  auto r = Coordinator(Data("counter.json"), dir / "w", With(kOnboard, {"--enable-chip-swimlane"}),
                       {"DFX_FAULT_GRAPH_PASS=1"});
  ASSERT_EQ(r.exit_code, 0) << "the timing pass still runs\n" << r.out << r.err;
  const fs::path out = dir / "w/dfx_outputs";
  // What failed (the fault), and where deps.json was expected.
  EXPECT_NE(r.err.find("DFX_FAULT_GRAPH_PASS=1"), std::string::npos) << r.err;
  // The same warning as at L3 (coordinator/post_run.h GraphPassWarning).
  EXPECT_NE(r.out.find("warning: graph pass (dep_gen capture) failed for"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("deps.json expected at " + (out / "deps.json").string()), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("--enable-dep-gen reruns nothing"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out / "deps.json"));
  EXPECT_TRUE(fs::exists(out / "chip_swimlane_records.json"));
  // The failed graph pass never ran: the counter was incremented once.
  EXPECT_EQ(ResidentValues(dir / "w", "counter"), std::vector<double>({1, 1, 1, 1}));
  auto merged = MergedTraces(out);
  ASSERT_EQ(merged.size(), 1u);
  const std::string trace = Slurp(merged[0]);
  EXPECT_NE(trace.find("task(t0)"), std::string::npos);
  EXPECT_EQ(trace.find("increment("), std::string::npos);
  fs::remove_all(dir);
}

TEST(OnboardTest, BenchDoesASeparatePlainRunAndReportsItsWallTime) {
  fs::path dir = TestDir("dfx_l2_bench");
  auto r = Coordinator(Data("counter.json"), dir / "w",
                       With(kOnboard, {"--enable-chip-swimlane", "--bench"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("bench: a separate plain run (no DFX flags"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("s wall-clock"), std::string::npos) << r.out;
  // The plain run neither wrote artifacts nor touched this run's device state.
  EXPECT_EQ(ResidentValues(dir / "w", "counter"), std::vector<double>({2, 2, 2, 2}));
  EXPECT_FALSE(fs::exists(dir / "w/.bench_unused"));
  fs::remove_all(dir);
}

TEST(OnboardTest, L3RunsBothPassesOverEveryRankWithMarkersAndMergedTraces) {
  fs::path dir = TestDir("dfx_l3_onboard");
  auto r = Coordinator(Data("counter.json"), dir / "w",
                       With(kOnboard, {"--ranks", "2", "--launcher", "local",
                                       "--enable-chip-swimlane", "--dump-args", "2", "--bench"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t gb = r.err.find("l3_swimlane_pass=graph event=begin");
  const size_t ge = r.err.find("l3_swimlane_pass=graph event=end");
  const size_t tb = r.err.find("l3_swimlane_pass=timing event=begin");
  const size_t te = r.err.find("l3_swimlane_pass=timing event=end");
  ASSERT_TRUE(gb != std::string::npos && ge != std::string::npos && tb != std::string::npos &&
              te != std::string::npos)
      << r.err;
  EXPECT_LT(gb, ge);
  EXPECT_LT(ge, tb);
  EXPECT_LT(tb, te);
  EXPECT_NE(r.out.find("do not read wall-clock from this run"), std::string::npos) << r.out;
  // --bench at L3: a separate plain session in a scratch dir, then removed.
  EXPECT_NE(r.out.find("bench: a separate plain run (no DFX flags"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "w/.bench"));
  const fs::path out = dir / "w/dfx_outputs";
  for (int rank = 0; rank < 2; ++rank) {
    const fs::path d = out / ("rank" + std::to_string(rank)) / "d0";
    EXPECT_TRUE(fs::exists(d / "deps.json")) << d;
    EXPECT_TRUE(fs::exists(d / "chip_swimlane_records.json")) << d;
    auto merged = MergedTraces(d);
    ASSERT_EQ(merged.size(), 1u) << d;
    EXPECT_NE(Slurp(merged[0]).find("increment(t0)"), std::string::npos) << d;
    // The timing pass saw the graph pass's in-place update on the chip: the
    // resident counter entered it at 1 and left it at 2.
    EXPECT_EQ(DumpedFloats(d / "args_dump", 0, "before_dispatch"), std::vector<float>({1, 1, 1, 1}))
        << d;
    EXPECT_EQ(DumpedFloats(d / "args_dump", 0, "after_completion"),
              std::vector<float>({2, 2, 2, 2}))
        << d;
  }
  Json m = LoadJson(out / "run_manifest.json");
  EXPECT_EQ(m["passes"], Json::parse(R"(["graph", "timing"])"));
  EXPECT_EQ(m["merged_swimlane"].size(), 2u);
  fs::remove_all(dir);
}

TEST(OnboardTest, L3GraphPassFailureIsAWarningAndTheRunSucceeds) {
  DFX_SKIP_WITHOUT_FAULT_HOOKS();
  fs::path dir = TestDir("dfx_l3_graphfail");
  auto r =
      Coordinator(Data("counter.json"), dir / "w",
                  With(kOnboard, {"--ranks", "2", "--launcher", "local", "--enable-chip-swimlane"}),
                  {"DFX_FAULT_GRAPH_PASS=1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const fs::path out = dir / "w/dfx_outputs";
  EXPECT_NE(r.out.find("warning: graph pass (dep_gen capture) failed for rank 0 d0"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("DFX_FAULT_GRAPH_PASS=1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("deps.json expected at " + (out / "rank1/d0/deps.json").string()),
            std::string::npos)
      << r.out;
  for (int rank = 0; rank < 2; ++rank) {
    const fs::path d = out / ("rank" + std::to_string(rank)) / "d0";
    EXPECT_FALSE(fs::exists(d / "deps.json")) << d;
    EXPECT_TRUE(fs::exists(d / "chip_swimlane_records.json")) << d;
    auto merged = MergedTraces(d);
    ASSERT_EQ(merged.size(), 1u) << d;
    EXPECT_NE(Slurp(merged[0]).find("task(t0)"), std::string::npos) << d;
  }
  fs::remove_all(dir);
}

TEST(OnboardTest, SeveralDispatchesToOneChipNeverOverwriteEachOther) {
  fs::path dir = TestDir("dfx_l3_namespacing");
  auto r = Coordinator(
      Data("namespacing_plan.json"), dir / "w",
      {"--ranks", "2", "--launcher", "local", "--enable-chip-swimlane", "--enable-dep-gen",
       "--dump-args", "2", "--enable-pmu", "--enable-scope-stats", "--swimlane-traces", "eager"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path out = dir / "w/dfx_outputs";
  const std::vector<std::string> leaves = {"rank0/d0", "rank0/d1", "rank0/d2", "rank1/d0"};
  for (const auto& leaf : leaves) {
    for (const char* f : {"chip_swimlane_records.json", "deps.json", "pmu.csv",
                          "scope_stats/scope_stats.jsonl", "args_dump/args_dump.json",
                          "args_dump/args.bin", "name_map.json", "dispatch_program.json"}) {
      EXPECT_TRUE(fs::exists(out / leaf / f)) << leaf << "/" << f;
    }
    EXPECT_EQ(MergedTraces(out / leaf).size(), 1u) << leaf;
  }
  EXPECT_FALSE(fs::exists(out / "rank1/d1"));
  // Distinct content per d<K>: the same program twice on one chip saw the
  // chip's resident counter at 0 then at 1; the third dispatch is another program.
  EXPECT_EQ(DumpedFloats(out / "rank0/d0/args_dump", 0, "before_dispatch"),
            std::vector<float>({0, 0, 0, 0}));
  EXPECT_EQ(DumpedFloats(out / "rank0/d1/args_dump", 0, "before_dispatch"),
            std::vector<float>({1, 1, 1, 1}));
  EXPECT_NE(Slurp(out / "rank0/d0/args_dump/args.bin"), Slurp(out / "rank0/d1/args_dump/args.bin"));
  EXPECT_EQ(LoadJson(out / "rank0/d1/dispatch_program.json")["program"], "counter");
  EXPECT_EQ(LoadJson(out / "rank0/d2/dispatch_program.json")["program"], "vec");
  EXPECT_EQ(LoadJson(out / "rank0/d2/name_map.json")["orchestrator_name"], "vector_pipeline");
  EXPECT_NE(Slurp(out / "rank0/d1/deps.json"), Slurp(out / "rank0/d2/deps.json"));
  // rank 1's chip is another chip: its counter starts at 0.
  EXPECT_EQ(DumpedFloats(out / "rank1/d0/args_dump", 0, "before_dispatch"),
            std::vector<float>({0, 0, 0, 0}));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dfx::e2e
