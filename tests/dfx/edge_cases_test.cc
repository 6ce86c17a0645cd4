// Every row of the edge-cases table (docs/run-config.md §2.12), end to end: the documented
// symptom, and a message that points at the fix.
#include <gtest/gtest.h>

#include "tests/dfx/dfx_test_util.h"

namespace dfx::e2e {
namespace {

const fs::path kVector = Source("examples/vector_pipeline.json");

// Row 1: "No dfx_outputs/ at all" — no flag, or the run failed before dispatch.
TEST(EdgeCasesTest, NoDfxOutputsWithoutAFlagAtL2AndL3) {
  fs::path dir = TestDir("edge_noflag");
  auto l2 = Coordinator(kVector, dir / "l2", {});
  ASSERT_EQ(l2.exit_code, 0) << l2.err;
  EXPECT_FALSE(fs::exists(dir / "l2/dfx_outputs"));
  EXPECT_NE(l2.out.find("no DFX flag was on"), std::string::npos) << l2.out;
  EXPECT_EQ(l2.out.find("save_kernels"), std::string::npos) << "nothing is forced without a flag";
  auto l3 = Coordinator(kVector, dir / "l3", {"--ranks", "2", "--launcher", "local"});
  ASSERT_EQ(l3.exit_code, 0) << l3.err;
  EXPECT_FALSE(fs::exists(dir / "l3/dfx_outputs"));
  EXPECT_TRUE(fs::exists(dir / "l3/run_manifest.json")) << "the run is still accounted for";
  fs::remove_all(dir);
}

TEST(EdgeCasesTest, NoDfxOutputsWhenTheRunFailsBeforeDispatch) {
  fs::path dir = TestDir("edge_predispatch");
  ASSERT_TRUE(WriteFileAtomic(dir / "bad.json", R"({"name": "bad",
    "kernels": [{"func_id": 0, "name": "k", "core_type": "aiv", "op": "copy"}],
    "tensors": [{"name": "t", "shape": [4], "dtype": "FLOAT33"}], "orchestration": []})")
                  .ok());
  auto r = Coordinator(dir / "bad.json", dir / "w", {"--enable-chip-swimlane"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("bad.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("$.tensors[0].dtype"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "w/dfx_outputs")) << "the run never reached the device";
  fs::remove_all(dir);
}

// Row 2: wall-clock much worse than expected — swimlane onboard ran twice.
TEST(EdgeCasesTest, WallClockWarningOnlyOnSwimlaneOnboard) {
  fs::path dir = TestDir("edge_wallclock");
  auto onboard = Coordinator(kVector, dir / "a",
                             {"--execution-mode", "onboard", "--chip-swimlane-level", "1"});
  ASSERT_EQ(onboard.exit_code, 0) << onboard.err;
  EXPECT_NE(onboard.out.find("do not read wall-clock from this run"), std::string::npos);
  EXPECT_NE(onboard.out.find("measure in a separate plain run"), std::string::npos);
  auto pmu_only = Coordinator(kVector, dir / "b", {"--execution-mode", "onboard", "--enable-pmu"});
  ASSERT_EQ(pmu_only.exit_code, 0) << pmu_only.err;
  EXPECT_EQ(pmu_only.out.find("wall-clock"), std::string::npos) << "one pass: nothing to warn";
  fs::remove_all(dir);
}

// Row 3: "No merged_swimlane_*.json — simulator platform". Beyond the
// reference, the coordinator converts sim records too: a sim run gets one.
TEST(EdgeCasesTest, SimRunsGetAMergedTraceToo) {
  fs::path dir = TestDir("edge_sim_merged");
  auto r = Coordinator(kVector, dir / "w", {"--execution-mode", "sim", "--enable-chip-swimlane"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(MergedTraces(dir / "w/dfx_outputs").size(), 1u);
  EXPECT_TRUE(fs::exists(dir / "w/dfx_outputs/chip_swimlane_records.json"));
  fs::remove_all(dir);
}

// A converter failure is printed, not fatal, and the raw records are kept.
TEST(EdgeCasesTest, ConverterFailureIsPrintedAndRecordsAreKept) {
  fs::path dir = TestDir("edge_converter_fail");
  auto r = Coordinator(kVector, dir / "w", {"--enable-chip-swimlane"}, {"DFX_VIEW=/bin/false"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("warning: the swimlane converter failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the raw records are kept"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Re-run: /bin/false swimlane"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir / "w/dfx_outputs/chip_swimlane_records.json"));
  EXPECT_TRUE(MergedTraces(dir / "w/dfx_outputs").empty());
  fs::remove_all(dir);
}

// Row 4: anonymous task(rXtY) lanes when the graph pass failed — see
// OnboardTest.GraphPassFailureIsAWarningAndLanesFallBackToAnonymous (L2) and
// OnboardTest.L3GraphPassFailureIsAWarningAndTheRunSucceeds (L3).

// Row 5: enable_dump_args=2 on a large workload stops the dispatch (the
// STARS timeout analogue) with advice to drop to level 1 and tag.
TEST(EdgeCasesTest, FullDumpOverloadStopsTheDispatchWithAdvice) {
  fs::path dir = TestDir("edge_dump_overload");
  auto r = Coordinator(Data("big_dump.json"), dir / "w",
                       {"--dump-args", "2", "--dump-arena-bytes", "65536",
                        "--dump-drain-bytes-per-sec", "1000", "--dump-timeout-ms", "200"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("args dump could not drain"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("enable_dump_args=2 (full)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("use enable_dump_args=1 (partial) and dump_tag"), std::string::npos)
      << r.err;
  // The fix works: level 1 with no tags dumps nothing heavy and succeeds.
  auto fixed = Coordinator(Data("big_dump.json"), dir / "w2",
                           {"--dump-args", "1", "--dump-arena-bytes", "65536",
                            "--dump-drain-bytes-per-sec", "1000", "--dump-timeout-ms", "200"});
  EXPECT_EQ(fixed.exit_code, 0) << fixed.err;
  // The drain knobs are L2-only and say so at L3.
  auto l3 = Coordinator(Data("big_dump.json"), dir / "w3",
                        {"--ranks", "2", "--launcher", "local", "--dump-timeout-ms", "200"});
  EXPECT_NE(l3.exit_code, 0);
  EXPECT_NE(l3.err.find("--dump-timeout-ms"), std::string::npos) << l3.err;
  fs::remove_all(dir);
}

// Row 6: a tagged tensor never appears because the value was rebound.
TEST(EdgeCasesTest, ReboundTagIsNotDumpedAndTheRunSaysWhy) {
  fs::path dir = TestDir("edge_rebound");
  auto r = Coordinator(Data("rebound_tag.json"), dir / "w", {"--dump-args", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("dump_tag(\"q\") is never dumped"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("$.orchestration[0]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tag the value the kernel actually receives"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "w/dfx_outputs/args_dump/args_dump.json"))
      << "nothing the kernels received was tagged";
  // Tagging the value the kernel actually receives: it is dumped, no warning.
  auto fixed = Coordinator(Data("retagged.json"), dir / "w2", {"--dump-args", "1"});
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  EXPECT_EQ(fixed.err.find("never dumped"), std::string::npos) << fixed.err;
  EXPECT_EQ(DumpedFloats(dir / "w2/dfx_outputs/args_dump", 0, "before_dispatch"),
            std::vector<float>({1, 2, 3, 4, 5, 6, 7, 8}));
  fs::remove_all(dir);
}

// Row 7: the deps viewer on a huge graph advises --engine sfdp, and the
// Graphviz wait is bounded.
TEST(EdgeCasesTest, HugeGraphHtmlAdvisesSfdpAndTheLayoutWaitIsBounded) {
  fs::path dir = TestDir("edge_huge_graph");
  auto r = Coordinator(Source("examples/large_dag_2k.json"), dir / "w", {"--enable-dep-gen"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path deps = dir / "w/dfx_outputs/deps.json";
  ASSERT_TRUE(fs::exists(deps));
  // The run printed the command, with the large-graph engine; it ran nothing.
  EXPECT_NE(r.out.find("--format html --engine sfdp"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "w/dfx_outputs/deps_graph.html"));
  auto view = RunCommand({Bin("dfx-view"), "deps", deps.string(), "--format", "html", "--engine",
                          "dot", "--layout-timeout", "1", "-o", (dir / "g.html").string()},
                         dir, 120);
  ASSERT_FALSE(view.timed_out);
  EXPECT_NE(view.err.find("--engine sfdp"), std::string::npos) << view.out << view.err;
  fs::remove_all(dir);
}

// Row 8: the enable_l2_swimlane deprecation names the new spelling, with the
// same values and semantics.
TEST(EdgeCasesTest, EnableL2SwimlaneWarnsWithTheNewSpelling) {
  fs::path dir = TestDir("edge_l2_swimlane");
  auto r = Coordinator(kVector, dir / "w", {"--enable-l2-swimlane"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("deprecated"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--enable-chip-swimlane"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(dir / "w/dfx_outputs/chip_swimlane_records.json"));
  // Same values: the level is 4, exactly like --enable-chip-swimlane.
  Json records = LoadJson(dir / "w/dfx_outputs/chip_swimlane_records.json");
  ASSERT_TRUE(records.is_object());
  EXPECT_EQ(records["chip_swimlane_level"], 4);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dfx::e2e
