// The flag matrix (docs/run-config.md §2.5): every one of the 31
// non-empty subsets of the five collection flags, at L2 and at L3 (2 ranks,
// local launcher; both chip models, a2a3 and a5), produces exactly its
// artifacts and nothing else — plus
// the name map (swimlane or dep_gen), dispatch_program.json and the run
// manifest (L3), the merged trace (swimlane) and deps.json co-enabled by a
// sim swimlane at L3 — and save_kernels is reported forced on.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tests/dfx/dfx_test_util.h"

namespace dfx::e2e {
namespace {

const fs::path kProgram = Source("examples/vector_pipeline.json");

enum Flag { kSwimlane = 1, kDepGen = 2, kDump = 4, kPmu = 8, kScope = 16 };

std::vector<std::string> FlagsOf(int mask) {
  std::vector<std::string> f;
  if (mask & kSwimlane) f.push_back("--enable-chip-swimlane");
  if (mask & kDepGen) f.push_back("--enable-dep-gen");
  if (mask & kDump) f.insert(f.end(), {"--dump-args", "2"});
  if (mask & kPmu) f.push_back("--enable-pmu");
  if (mask & kScope) f.push_back("--enable-scope-stats");
  return f;
}

// The flat artifacts of one dispatch directory. `l3`: name map spelled
// name_map.json, deps.json co-enabled by the swimlane on sim.
std::set<std::string> LeafArtifacts(int mask, bool l3, const std::string& name_map) {
  std::set<std::string> files;
  const bool deps = (mask & kDepGen) || (l3 && (mask & kSwimlane));
  if (mask & kSwimlane) files.insert("chip_swimlane_records.json");
  if (deps) files.insert("deps.json");
  if (mask & (kSwimlane | kDepGen)) files.insert(name_map);
  if (mask & kDump) files.insert({"args_dump/args_dump.json", "args_dump/args.bin"});
  if (mask & kPmu) files.insert("pmu.csv");
  if (mask & kScope) files.insert("scope_stats/scope_stats.jsonl");
  return files;
}

// Splits the merged traces off `tree`, counting them per directory.
std::map<std::string, int> TakeMerged(std::set<std::string>* tree) {
  std::map<std::string, int> merged;
  for (auto it = tree->begin(); it != tree->end();) {
    const fs::path p(*it);
    if (p.filename().string().rfind("merged_swimlane_", 0) == 0) {
      ++merged[p.parent_path().generic_string()];
      it = tree->erase(it);
    } else {
      ++it;
    }
  }
  return merged;
}

std::string Describe(int mask) {
  std::string s;
  for (auto [bit, name] : std::vector<std::pair<int, const char*>>{{kSwimlane, "Swimlane"},
                                                                   {kDepGen, "DepGen"},
                                                                   {kDump, "Dump"},
                                                                   {kPmu, "Pmu"},
                                                                   {kScope, "Scope"}}) {
    if (mask & bit) s += name;
  }
  return s;
}

class FlagMatrixTest : public ::testing::TestWithParam<int> {};

TEST_P(FlagMatrixTest, L2ProducesExactlyItsArtifacts) {
  const int mask = GetParam();
  fs::path dir = TestDir("matrix_l2_" + std::to_string(mask));
  auto r = Coordinator(kProgram, dir / "w", FlagsOf(mask));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> tree = Tree(dir / "w/dfx_outputs");
  auto merged = TakeMerged(&tree);
  std::set<std::string> expected = LeafArtifacts(mask, false, "name_map_w.json");
  expected.insert("README.txt");         // every artifact with its render command
  expected.insert("run_manifest.json");  // what the run did, as at L3 (docs/formats.md §16.1)
  EXPECT_EQ(tree, expected) << Describe(mask);
  Json m = LoadJson(dir / "w/dfx_outputs/run_manifest.json");
  EXPECT_EQ(m["level"], "L2");
  EXPECT_EQ(m["status"], "ok");
  ASSERT_EQ(m["dispatches"].size(), 1u) << m.dump();
  EXPECT_EQ(m["dispatches"][0]["dir"], ".");
  // Every leaf artifact is listed with its size (the merged trace is not one).
  EXPECT_EQ(m["dispatches"][0]["artifacts"].size(), LeafArtifacts(mask, false, "x").size())
      << m.dump();
  const std::map<std::string, int> expected_merged =
      (mask & kSwimlane) ? std::map<std::string, int>{{"", 1}} : std::map<std::string, int>{};
  EXPECT_EQ(merged, expected_merged);
  EXPECT_NE(r.out.find("save_kernels: forced on"), std::string::npos) << r.out;
  // Nothing else lands in the work dir (device_state/ only for resident tensors).
  std::set<std::string> top;
  for (const auto& e : fs::directory_iterator(dir / "w")) top.insert(e.path().filename().string());
  EXPECT_EQ(top, std::set<std::string>{"dfx_outputs"});
  fs::remove_all(dir);
}

// At L3 each dispatch's RunConfig selects the chip model: a5 must reach the
// agents' chips (it once failed every dispatch with "does not match this chip").
class L3FlagMatrixTest : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(L3FlagMatrixTest, L3ProducesExactlyItsArtifactsInEveryLeaf) {
  const auto& [mask, backend] = GetParam();
  fs::path dir = TestDir("matrix_l3_" + backend + "_" + std::to_string(mask));
  std::vector<std::string> flags = {"--ranks",        "2",    "--launcher", "local",
                                    "--backend-type", backend};
  for (const auto& f : FlagsOf(mask)) flags.push_back(f);
  auto r = Coordinator(kProgram, dir / "w", flags);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> tree = Tree(dir / "w/dfx_outputs");
  auto merged = TakeMerged(&tree);
  std::set<std::string> expected = {"run_manifest.json", ".session.json", "README.txt"};
  // The run report is drawn from the swimlane records' summary.
  if (mask & kSwimlane) expected.insert("report.html");
  std::map<std::string, int> expected_merged;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string leaf = "rank" + std::to_string(rank) + "/d0";
    expected.insert(leaf + "/dispatch_program.json");
    for (const auto& f : LeafArtifacts(mask, true, "name_map.json"))
      expected.insert(leaf + "/" + f);
  }
  // Sim L3 writes the merged traces on demand (--swimlane-traces auto), and says how.
  EXPECT_EQ(tree, expected) << Describe(mask);
  EXPECT_EQ(merged, expected_merged);
  Json m = LoadJson(dir / "w/dfx_outputs/run_manifest.json");
  EXPECT_EQ(m["status"], "ok");
  EXPECT_EQ(m["run_config"]["save_kernels"], true) << "forced on by any DFX flag";
  EXPECT_EQ(m["run_config"]["backend_type"], backend);
  EXPECT_NE(r.out.find("save_kernels: forced on"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("swimlane traces: written on demand") != std::string::npos,
            (mask & kSwimlane) != 0)
      << r.out;
  if (mask & kSwimlane) {
    // The records carry the chip model the dispatch ran on (a2a3 50 MHz, a5 1 GHz).
    Json records = LoadJson(dir / "w/dfx_outputs/rank1/d0/chip_swimlane_records.json");
    EXPECT_EQ(records["metadata"]["clock_freq_hz"], backend == "a5" ? 1000000000 : 50000000);
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(AllSubsets, FlagMatrixTest, ::testing::Range(1, 32),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return Describe(param.param);
                         });

INSTANTIATE_TEST_SUITE_P(AllSubsets, L3FlagMatrixTest,
                         ::testing::Combine(::testing::Range(1, 32),
                                            ::testing::Values(std::string("a2a3"),
                                                              std::string("a5"))),
                         [](const ::testing::TestParamInfo<std::tuple<int, std::string>>& param) {
                           return Describe(std::get<0>(param.param)) + "_" +
                                  std::get<1>(param.param);
                         });

}  // namespace
}  // namespace dfx::e2e
