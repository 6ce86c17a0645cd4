// `dfx-coordinator estimate` against what the real run then writes, and the
// estimate `run` acts on before it starts (README "Large runs"): the line it
// prints, its refusal when the run will not fit where it lands or exceeds
// --max-run-bytes, and --force. Real binaries, real runs (L2 and L3 on local
// agents over loopback).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "tests/dfx/dfx_test_util.h"

namespace dfx::e2e {
namespace {

const fs::path kVector = Source("examples/vector_pipeline.json");
const fs::path kAttention = Source("examples/attention_decode.json");
const fs::path kPlan = Source("examples/plans/l3_four_ranks.json");

// The estimate's column a file written under dfx_outputs/ belongs to.
std::string ColumnOf(const fs::path& rel) {
  const std::string name = rel.filename().string();
  const std::string path = rel.generic_string();
  if (name == "chip_swimlane_records.json") return "chip_swimlane";
  if (name == "deps.json") return "deps";
  if (path.find("args_dump/") != std::string::npos) return "args_dump";
  if (name == "pmu.csv") return "pmu";
  if (path.find("scope_stats/") != std::string::npos) return "scope_stats";
  if (name.rfind("name_map", 0) == 0) return "name_map";
  if (name.rfind("merged_swimlane", 0) == 0) return "merged_trace";
  if (name == "dispatch_program.json") return "dispatch_files";
  if (name == "run_manifest.json" || name == "README.txt" || name == "report.html" ||
      name == ".session.json")
    return "run_files";
  return "";
}

std::map<std::string, uint64_t> Written(const fs::path& dfx_dir) {
  std::map<std::string, uint64_t> out;
  for (const std::string& f : Tree(dfx_dir)) {
    const std::string column = ColumnOf(f);
    if (!column.empty()) out[column] += fs::file_size(dfx_dir / f);
  }
  return out;
}

CommandResult EstimateCommand(const fs::path& file, const fs::path& work,
                              const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {Bin("dfx-coordinator"), "estimate", file.string(), "--work-dir",
                                   work.string()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return RunCommand(argv, work.parent_path() / "logs", 120);
}

struct Case {
  std::string label;
  fs::path file;
  std::vector<std::string> flags;
};

// Every swimlane level, each with another args-dump level and PMU event
// type, dep_gen on at 2 and 4 (the merged trace differs with it), scope stats.
std::vector<std::string> LevelFlags(int level) {
  std::vector<std::string> f = {"--enable-chip-swimlane", std::to_string(level),
                                "--enable-scope-stats", "--dump-args"};
  const char* dump[] = {"1", "2", "3", "2"};
  const char* pmu[] = {"1", "2", "4", "8"};
  f.push_back(dump[level - 1]);
  f.push_back("--enable-pmu");
  f.push_back(pmu[level - 1]);
  if (level % 2 == 0) f.push_back("--enable-dep-gen");
  return f;
}

TEST(EstimateTest, WithinAQuarterOfWhatTheRunWritesForEveryCollectorLevelAndShape) {
  const fs::path dir = TestDir("estimate_error");
  const std::string gen = DFX_BINARY_DIR "/device/dfx-gen-program";
  const std::map<std::string, std::vector<std::string>> generated = {
      {"layered", {"layered", "--tasks", "60", "--width", "8"}},
      {"layered_wide",
       {"layered", "--tasks", "100", "--width", "64", "--rows", "16", "--cols", "32"}},
      {"attention", {"attention", "--layers", "2", "--heads", "4", "--softmax-blocks", "3"}},
  };
  std::map<std::string, fs::path> programs = {{"vector_pipeline", kVector},
                                              {"attention_decode", kAttention}};
  for (const auto& [name, args] : generated) {
    std::vector<std::string> argv = {gen};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("-o");
    argv.push_back((dir / (name + ".json")).string());
    ASSERT_EQ(RunCommand(argv, dir / "logs", 60).exit_code, 0) << name;
    programs[name] = dir / (name + ".json");
  }
  std::vector<Case> cases;
  for (const auto& [name, file] : programs) {
    for (int level = 1; level <= 4; ++level) {
      cases.push_back({name + " L2 swimlane " + std::to_string(level), file, LevelFlags(level)});
    }
  }
  const std::vector<std::string> l3 = {"--launcher", "local", "--swimlane-traces", "eager"};
  auto with = [&l3](std::vector<std::string> a, int ranks) {
    a.insert(a.end(), l3.begin(), l3.end());
    a.push_back("--ranks");
    a.push_back(std::to_string(ranks));
    return a;
  };
  cases.push_back({"l3_four_ranks L3 4 ranks swimlane 4", kPlan, with(LevelFlags(4), 4)});
  cases.push_back(
      {"attention L3 2 ranks swimlane 3", programs["attention"], with(LevelFlags(3), 2)});
  cases.push_back({"layered L3 3 ranks swimlane 1", programs["layered"], with(LevelFlags(1), 3)});

  std::map<std::string, std::pair<double, std::string>> worst;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const fs::path work = dir / ("w" + std::to_string(i));
    std::vector<std::string> json_flags = c.flags;
    json_flags.push_back("--format");
    json_flags.push_back("json");
    auto est = EstimateCommand(c.file, work, json_flags);
    ASSERT_EQ(est.exit_code, 0) << c.label << ": " << est.err;
    Json e = Json::parse(est.out);
    // The estimate writes nothing where the run will: not even the work dir.
    EXPECT_FALSE(fs::exists(work)) << c.label;
    uint64_t sum = 0;
    for (const auto& [column, bytes] : e["collectors"].items()) sum += bytes.get<uint64_t>();
    EXPECT_EQ(e["total_bytes"].get<uint64_t>(), sum) << c.label;
    std::vector<std::string> run_flags = c.flags;
    run_flags.push_back("-q");
    auto run = Coordinator(c.file, work, run_flags);
    ASSERT_EQ(run.exit_code, 0) << c.label << ": " << run.out << run.err;
    const auto written = Written(work / "dfx_outputs");
    for (const auto& [column, bytes] : e["collectors"].items()) {
      const uint64_t estimated = bytes.get<uint64_t>();
      const uint64_t actual = written.count(column) ? written.at(column) : 0;
      if (actual == 0) {
        EXPECT_EQ(estimated, 0u) << c.label << ": " << column << " wrote nothing";
        continue;
      }
      const double error = (static_cast<double>(estimated) - actual) / actual;
      EXPECT_LE(std::abs(error), 0.25) << c.label << ": " << column << " estimated " << estimated
                                       << " B, written " << actual << " B";
      if (!worst.count(column) || std::abs(error) > std::abs(worst[column].first))
        worst[column] = {error, c.label};
    }
    fs::remove_all(work);
  }
  for (const auto& [column, w] : worst) {
    std::printf("%15s: worst error %+.1f%% (%s)\n", column.c_str(), 100 * w.first,
                w.second.c_str());
  }
  fs::remove_all(dir);
}

TEST(EstimateTest, TheTableNamesEveryRankDispatchCollectorAndWhereItLands) {
  const fs::path dir = TestDir("estimate_table");
  auto r = EstimateCommand(kPlan, dir / "w",
                           {"--ranks", "4", "--launcher", "local", "--enable-chip-swimlane", "2",
                            "--enable-pmu", "--dump-args", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* column : {"chip_swimlane", "deps", "args_dump", "pmu", "scope_stats", "name_map",
                             "merged_trace", "total"}) {
    EXPECT_NE(r.out.find(column), std::string::npos) << column << "\n" << r.out;
  }
  // 12 dispatches, one row each: d0..d2 of ranks 0..3 (the plan's steps).
  for (int rank = 0; rank < 4; ++rank) {
    for (int k = 0; k < 3; ++k) {
      char row[32];
      std::snprintf(row, sizeof(row), "\n%5d %8s ", rank, ("d" + std::to_string(k)).c_str());
      EXPECT_EQ(Count(r.out, row), 1u) << row << r.out;
    }
  }
  EXPECT_NE(r.out.find("total: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dfx_outputs: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("free there"), std::string::npos) << r.out;
  // Local agents spool under the work dir: the same file system.
  EXPECT_NE(r.out.find("spools: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(the same file system as above)"), std::string::npos) << r.out;
  // A program the agents refuse is named as they name it.
  const fs::path bad = dir / "bad.json";
  ASSERT_TRUE(WriteFileAtomic(bad, R"({"name": "x", "kernels": [], "tensors": [{"name": "a",
      "shape": [4], "dtype": "float99"}], "orchestration": []})")
                  .ok());
  auto refused = EstimateCommand(bad, dir / "w", {"--enable-dep-gen"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("bad.json"), std::string::npos) << refused.err;
  fs::remove_all(dir);
}

TEST(EstimateTest, RunPrintsTheEstimateAndABudgetBelowItRefusesBeforeAnythingRuns) {
  const fs::path dir = TestDir("estimate_budget");
  const std::vector<std::string> dfx = {"--enable-chip-swimlane", "4", "--dump-args", "2"};
  auto ok = Coordinator(kAttention, dir / "ok", dfx);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  // A log line on stderr, before the run's own lines.
  EXPECT_NE(ok.err.find("estimate: this run will write about "), std::string::npos) << ok.err;
  for (bool l3 : {false, true}) {
    const fs::path work = dir / (l3 ? "l3" : "l2");
    std::vector<std::string> flags = dfx;
    flags.insert(flags.end(), {"--max-run-bytes", "1K"});
    if (l3) flags.insert(flags.end(), {"--ranks", "2", "--launcher", "local"});
    auto r = Coordinator(kAttention, work, flags);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.err.find("more than --max-run-bytes 1.0 KiB (1024 bytes)"), std::string::npos)
        << r.err;
    for (const char* way : {"--force", "larger --max-run-bytes", "--capture-ranks"})
      EXPECT_NE(r.err.find(way), std::string::npos) << way << "\n" << r.err;
    // Nothing ran: no artifact of this run exists.
    EXPECT_TRUE(Tree(work / "dfx_outputs").empty()) << (l3 ? "L3" : "L2");
  }
  fs::remove_all(dir);
}

// A work dir that is a 64 KiB tmpfs, mounted in a private mount namespace
// (`unshare -m`, as tests/dfx/inputs_test.cc does): an all-collector run of
// attention_decode needs about 146 KiB there.
TEST(EstimateTest, ARunThatWillNotFitIsRefusedAndForceGoesOn) {
  const fs::path dir = TestDir("estimate_fit");
  if (RunCommand({"unshare", "-m", "true"}, dir / "logs", 30).exit_code != 0)
    GTEST_SKIP() << "unshare -m is not permitted here";
  const fs::path work = dir / "small";
  fs::create_directories(work);
  auto in_small_fs = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {"unshare",
                                     "-m",
                                     "sh",
                                     "-c",
                                     "mount -t tmpfs -o size=64k dfx-test \"$0\" && exec \"$@\"",
                                     work.string(),
                                     Bin("dfx-coordinator"),
                                     "run",
                                     kAttention.string(),
                                     "--work-dir",
                                     work.string(),
                                     "--enable-chip-swimlane",
                                     "4",
                                     "--dump-args",
                                     "2",
                                     "--enable-dep-gen",
                                     "--enable-pmu",
                                     "--enable-scope-stats"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunCommand(argv, dir / "logs", 240);
  };
  auto refused = in_small_fs({});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("but its file system has only "), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find((work / "dfx_outputs").string()), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_NE(refused.out.find("verdict: FAILED: not started"), std::string::npos) << refused.out;
  // --force starts it: the exec child runs the program (the disk may then
  // fill: the run says so, it does not refuse).
  auto forced = in_small_fs({"--force"});
  EXPECT_NE(forced.err.find("--force: starting anyway"), std::string::npos) << forced.err;
  EXPECT_EQ(forced.out.find("not started"), std::string::npos) << forced.out;
  EXPECT_NE(forced.out.find("verdict: "), std::string::npos) << forced.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dfx::e2e
