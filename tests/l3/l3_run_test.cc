// L3 runs end to end: dfx-coordinator + N dfx-rank-agent processes on
// loopback, launched by mpirun or by the local launcher.
#include <gtest/gtest.h>

#include <map>

#include "tests/l3/e2e_util.h"
#include "tests/l3/fault_hooks.h"

namespace dfx::e2e {
namespace {

const fs::path kPlan = Source("examples/plans/l3_four_ranks.json");

const std::vector<std::string> kAllFlags = {
    "--enable-chip-swimlane", "--enable-dep-gen", "--enable-pmu",
    "--enable-scope-stats",   "--dump-args",      "2"};

// Writes <dir>/plan.json: the vector pipeline example as program "vec", run
// by `steps` (the plan's JSON array of steps).
bool WriteVecPlan(const fs::path& dir, const std::string& steps) {
  return WriteFileAtomic(dir / "plan.json", R"({"programs": {"vec": ")" +
                                                Source("examples/vector_pipeline.json").string() +
                                                R"("}, "steps": )" + steps + "}")
      .ok();
}

std::set<std::string> ExpectedFourRankTree() {
  // report.html: the run report, written after every L3 run with swimlane records.
  std::set<std::string> files = {"run_manifest.json", ".session.json", "README.txt", "report.html"};
  for (int r = 0; r < 4; ++r) {
    for (int k = 0; k < 3; ++k) {
      const std::string d = "rank" + std::to_string(r) + "/d" + std::to_string(k) + "/";
      for (const char* f : {"dispatch_program.json", "name_map.json", "chip_swimlane_records.json",
                            "deps.json", "pmu.csv", "scope_stats/scope_stats.jsonl",
                            "args_dump/args_dump.json", "args_dump/args.bin"}) {
        files.insert(d + f);
      }
    }
  }
  return files;
}

// Checks the manifest against the files on disk: every artifact ok, its size
// and XXH64 those of the file.
void CheckManifest(const fs::path& out, int ranks, int dispatches_per_rank) {
  Json m = LoadJson(out / "run_manifest.json");
  ASSERT_TRUE(m.is_object());
  EXPECT_EQ(m["status"], "ok");
  EXPECT_EQ(m["session"].get<std::string>().size(), 16u);
  ASSERT_EQ(m["ranks"].size(), static_cast<size_t>(ranks));
  for (const auto& r : m["ranks"]) {
    EXPECT_EQ(r["status"], "ok");
    EXPECT_TRUE(r["pid"].is_number());
    EXPECT_TRUE(r["clock_offset_ns"].is_number());
  }
  ASSERT_EQ(m["dispatches"].size(), static_cast<size_t>(ranks * dispatches_per_rank));
  for (const auto& d : m["dispatches"]) {
    EXPECT_EQ(d["status"], "ok") << d.dump();
    EXPECT_LE(d["start_ns"].get<uint64_t>(), d["end_ns"].get<uint64_t>());
    for (const auto& a : d["artifacts"]) {
      const fs::path p = out / a["path"].get<std::string>();
      EXPECT_EQ(a["status"], "ok") << a.dump();
      ASSERT_TRUE(fs::exists(p)) << p;
      EXPECT_EQ(a["size"].get<uint64_t>(), fs::file_size(p));
      auto sum = ChecksumFile(p);
      ASSERT_TRUE(sum.ok());
      EXPECT_EQ(a["checksum"], "xxh64:" + Hex64(*sum)) << p;
    }
  }
  // dispatch_program.json labels each directory with its program.
  EXPECT_EQ(LoadJson(out / "rank0/d0/dispatch_program.json")["program"], "attn");
  EXPECT_EQ(LoadJson(out / "rank1/d0/dispatch_program.json")["program"], "vec");
  EXPECT_EQ(LoadJson(out / "rank0/d0/name_map.json")["orchestrator_name"], "attention_decode");
}

// `eager`: the per-dispatch merged traces are written after the run
// (--swimlane-traces eager); otherwise (sim's default) on demand.
void RunFourRanks(const std::string& launcher, bool eager) {
  fs::path dir = TestDir("l3_" + launcher);
  // A stale dispatch directory of an earlier run must be cleared.
  ASSERT_TRUE(WriteFileAtomic(dir / "w/dfx_outputs/rank7/d9/deps.json", "{}").ok());
  std::vector<std::string> argv = {
      Bin("dfx-coordinator"), "run", kPlan.string(), "--ranks", "4", "--work-dir",
      (dir / "w").string()};
  for (const std::string& flag : LauncherFlags(launcher)) argv.push_back(flag);
  argv.insert(argv.end(), kAllFlags.begin(), kAllFlags.end());
  if (eager) {
    argv.push_back("--swimlane-traces");
    argv.push_back("eager");
  }
  auto r = RunCommand(argv, dir, 300);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path out = dir / "w/dfx_outputs";
  // The post-run converter adds one merged_swimlane_<ts>.json per leaf.
  std::set<std::string> tree = Tree(out);
  size_t merged = 0;
  for (auto it = tree.begin(); it != tree.end();) {
    if (it->find("/merged_swimlane_") != std::string::npos) {
      ++merged;
      it = tree.erase(it);
    } else {
      ++it;
    }
  }
  EXPECT_EQ(merged, eager ? 12u : 0u);
  if (!eager) {
    // A lazy run says how to get the traces; the run-level one works as printed.
    EXPECT_NE(r.out.find("swimlane traces: written on demand"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("swimlane --run " + out.string()), std::string::npos) << r.out;
    auto view = RunCommand({Bin("dfx-view"), "swimlane", "--run", out.string(), "-o",
                            (dir / "run_trace.json").string()},
                           dir, 300);
    ASSERT_EQ(view.exit_code, 0) << view.out << view.err;
    EXPECT_NE(Slurp(dir / "run_trace.json").find("\"traceEvents\""), std::string::npos);
  }
  EXPECT_EQ(tree, ExpectedFourRankTree());
  CheckManifest(out, 4, 3);
  // Every path with its render command is in README.txt, not on the console.
  const std::string readme = Slurp(out / "README.txt");
  EXPECT_NE(readme.find("dfx-view deps " + (out / "rank3/d2/deps.json").string()),
            std::string::npos)
      << readme;
  EXPECT_NE(r.out.find((out / "README.txt").string()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run manifest: " + (out / "run_manifest.json").string()), std::string::npos);
  // Every spooled file was confirmed and deleted.
  EXPECT_TRUE(Tree(dir / "w/.dfx_spool").empty());
  fs::remove_all(dir);
}

TEST(L3RunTest, MpirunFourRanksProduceTheExactTree) { RunFourRanks("mpirun", /*eager=*/true); }

// The same under MPICH's mpiexec (Hydra), picked with --launcher-binary.
TEST(L3RunTest, MpichFourRanksProduceTheExactTree) { RunFourRanks("mpich", /*eager=*/true); }

TEST(L3RunTest, LocalLauncherFourRanksProduceTheExactTree) {
  RunFourRanks("local", /*eager=*/false);
}

TEST(L3RunTest, TwoChipsPerAgentUnderMpirunAreDenseRanks) {
  fs::path dir = TestDir("l3_chips");
  auto r = RunCommand(
      {Bin("dfx-coordinator"), "run", kPlan.string(), "--ranks", "4", "--chips-per-agent", "2",
       "--launcher", "mpirun", "--work-dir", (dir / "w").string(), "--enable-dep-gen"},
      dir, 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json m = LoadJson(dir / "w/dfx_outputs/run_manifest.json");
  ASSERT_EQ(m["ranks"].size(), 4u);
  // MPI rank 0 owns ranks 0 and 1, MPI rank 1 owns ranks 2 and 3.
  EXPECT_EQ(m["ranks"][0]["pid"], m["ranks"][1]["pid"]);
  EXPECT_EQ(m["ranks"][2]["pid"], m["ranks"][3]["pid"]);
  EXPECT_NE(m["ranks"][0]["pid"], m["ranks"][2]["pid"]);
  for (int rank = 0; rank < 4; ++rank) {
    for (int k = 0; k < 3; ++k) {
      EXPECT_TRUE(fs::exists(dir / "w/dfx_outputs" / ("rank" + std::to_string(rank)) /
                             ("d" + std::to_string(k)) / "deps.json"));
    }
  }
  fs::remove_all(dir);
}

TEST(L3RunTest, AFailingDispatchFailsOnlyThatDispatch) {
  fs::path dir = TestDir("l3_kernel_fail");
  ASSERT_TRUE(WriteFileAtomic(dir / "plan.json", R"({"programs": {
      "vec": ")" + Source("examples/vector_pipeline.json").string() +
                                                     R"(",
      "fail": ")" + Source("tests/l3/testdata/fail.json").string() +
                                                     R"("},
    "steps": [{"program": "vec", "ranks": "all"}, {"program": "fail", "rank": 0},
              {"program": "vec", "ranks": "all"}]})")
                  .ok());
  auto r =
      RunCommand({Bin("dfx-coordinator"), "run", (dir / "plan.json").string(), "--ranks", "2",
                  "--launcher", "local", "--work-dir", (dir / "w").string(), "--enable-dep-gen"},
                 dir, 300);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("injected kernel failure"), std::string::npos) << r.err;
  Json m = LoadJson(dir / "w/dfx_outputs/run_manifest.json");
  ASSERT_TRUE(m.is_object());
  EXPECT_EQ(m["status"], "failed");
  std::map<std::string, Json> by_dir;
  for (const auto& d : m["dispatches"]) by_dir[d["dir"].get<std::string>()] = d;
  EXPECT_EQ(by_dir["rank0/d1"]["status"], "failed");
  EXPECT_NE(by_dir["rank0/d1"]["error"].get<std::string>().find("injected kernel failure"),
            std::string::npos);
  // The rank stays usable: its next dispatch ran, and the other rank is untouched.
  EXPECT_EQ(by_dir["rank0/d2"]["status"], "ok");
  EXPECT_EQ(by_dir["rank1/d0"]["status"], "ok");
  EXPECT_EQ(by_dir["rank1/d1"]["status"], "ok");
  for (const auto& rank : m["ranks"]) EXPECT_EQ(rank["status"], "ok");
  EXPECT_TRUE(fs::exists(dir / "w/dfx_outputs/rank0/d2/deps.json"));
  fs::remove_all(dir);
}

// A program is sent to an agent once; its later dispatches go by hash and
// run the agent's parsed copy, with the same artifacts. An agent that does
// not keep it (DFX_FAULT_FORGET_PROGRAMS=1: a new, restarted or evicting
// agent) is sent the program again, and the run is the same.
TEST(L3RunTest, ASecondDispatchOfAProgramGoesByHashAndAForgetfulAgentGetsItAgain) {
  fs::path dir = TestDir("l3_by_hash");
  ASSERT_TRUE(WriteVecPlan(dir, R"([{"program": "vec", "rank": 0}, {"program": "vec", "rank": 0},
               {"program": "vec", "rank": 0}])"));
  std::map<std::string, std::string> deps;  // by run and dispatch
  for (const char* way : {"kept", "forgotten"}) {
    SCOPED_TRACE(way);
    const bool forget = std::string(way) == "forgotten";
    if (forget) DFX_SKIP_WITHOUT_FAULT_HOOKS();  // "kept" ran; forgetting is a fault
    const fs::path work = dir / way;
    auto r = RunCommand(
        {Bin("dfx-coordinator"), "run", (dir / "plan.json").string(), "--ranks", "1", "--launcher",
         "local", "--work-dir", work.string(), "--virtual-clock", "--enable-dep-gen",
         "--chip-swimlane-level", "4", "--log-level", "debug", "--agent-log-level", "info"},
        dir, 300,
        forget ? std::vector<std::string>{"DFX_FAULT_FORGET_PROGRAMS=1"}
               : std::vector<std::string>{});
    ASSERT_FALSE(r.timed_out);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string log = r.out + r.err;
    size_t by_hash = 0, again = 0;
    for (size_t at = log.find("kept: sent by hash"); at != std::string::npos;
         at = log.find("kept: sent by hash", at + 1))
      ++by_hash;
    for (size_t at = log.find("sending it again"); at != std::string::npos;
         at = log.find("sending it again", at + 1))
      ++again;
    EXPECT_EQ(by_hash, forget ? 0u : 2u) << log;
    EXPECT_EQ(again, forget ? 2u : 0u) << log;
    Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
    ASSERT_EQ(m["dispatches"].size(), 3u);
    for (const auto& d : m["dispatches"]) EXPECT_EQ(d["status"], "ok") << d.dump();
    for (int k = 0; k < 3; ++k) {
      const fs::path d = work / "dfx_outputs/rank0" / ("d" + std::to_string(k));
      deps[std::string(way) + std::to_string(k)] = Slurp(d / "deps.json");
      EXPECT_FALSE(deps[std::string(way) + std::to_string(k)].empty()) << d;
    }
  }
  // Virtual clock: every dispatch wrote the same dependency graph.
  for (const auto& [key, text] : deps) EXPECT_EQ(text, deps["kept0"]) << key;
  fs::remove_all(dir);
}

// A plain run prints what the chips took, as a collecting one does, from the
// emulator's own accounting carried in DispatchDone: what collection costs
// is then one comparison away.
TEST(L3RunTest, EveryRunReportsTheChipMakespanWithOrWithoutCollectors) {
  fs::path dir = TestDir("l3_makespan");
  ASSERT_TRUE(WriteVecPlan(dir, R"([{"program": "vec", "ranks": "all"}])"));
  std::map<std::string, std::vector<uint64_t>> makespans;
  for (const char* how : {"plain", "swimlane"}) {
    SCOPED_TRACE(how);
    const bool plain = std::string(how) == "plain";
    const fs::path work = dir / how;
    std::vector<std::string> argv = {Bin("dfx-coordinator"),
                                     "run",
                                     (dir / "plan.json").string(),
                                     "--ranks",
                                     "2",
                                     "--launcher",
                                     "local",
                                     "--work-dir",
                                     work.string(),
                                     "--virtual-clock"};
    if (!plain) argv.insert(argv.end(), {"--chip-swimlane-level", "1"});
    auto r = RunCommand(argv, dir, 300);
    ASSERT_FALSE(r.timed_out);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("makespan (chip clock, the emulator's own accounting): 2 dispatch(es)"),
              std::string::npos)
        << r.out;
    Json m = LoadJson(plain ? work / "run_manifest.json" : work / "dfx_outputs/run_manifest.json");
    ASSERT_EQ(m["dispatches"].size(), 2u) << m.dump();
    for (const auto& d : m["dispatches"]) {
      ASSERT_TRUE(d["makespan_ns"].is_number()) << d.dump();
      EXPECT_GT(d["makespan_ns"].get<uint64_t>(), 0u) << d.dump();
      EXPECT_GT(d["agent_wall_ns"].get<uint64_t>(), 0u) << d.dump();
      // Accepted while in flight, whether the agent said so in a message
      // of its own (artifacts to stream) or in its DispatchDone (none).
      ASSERT_TRUE(d["accepted_ns"].is_number()) << d.dump();
      EXPECT_LE(d["start_ns"].get<uint64_t>(), d["accepted_ns"].get<uint64_t>()) << d.dump();
      EXPECT_LE(d["accepted_ns"].get<uint64_t>(), d["end_ns"].get<uint64_t>()) << d.dump();
      makespans[how].push_back(d["makespan_ns"].get<uint64_t>());
    }
  }
  // On the virtual clock the chip's accounting does not depend on the host.
  EXPECT_EQ(makespans["plain"], makespans["swimlane"]);
  fs::remove_all(dir);
}

// A collector with nothing to do (a level-1 args dump of a program that
// tags no tensor) is said once per run at info level, with the count, not
// as a warning per dispatch: the quickstart's nine warnings (issue 45).
TEST(L3RunTest, ACollectorWithNothingToDoIsSaidOncePerRun) {
  fs::path dir = TestDir("l3_idle_collector");
  auto r = RunCommand(
      {Bin("dfx-coordinator"), "run", kPlan.string(), "--ranks", "4", "--launcher", "local",
       "--work-dir", (dir / "w").string(), "--dump-args", "1", "--agent-log-level", "info"},
      dir, 300);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string all = r.out + r.err;
  EXPECT_EQ(all.find("No args dump data"), std::string::npos) << all;
  EXPECT_EQ(all.find("[warning]"), std::string::npos) << all;
  // attn tags tensors (3 dispatches), vec does not (9 of the 12).
  const std::string line = "[info] args dump: no tensor tagged for dump in 9 of 12 dispatch(es)";
  const size_t at = r.err.find(line);
  EXPECT_NE(at, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(line, at + 1), std::string::npos) << r.err;  // once
  fs::remove_all(dir);
}

TEST(L3RunTest, OnboardSwimlaneRunsBothPassesIntoTheSameDirectories) {
  fs::path dir = TestDir("l3_onboard");
  auto r = RunCommand(
      {Bin("dfx-coordinator"), "run", kPlan.string(), "--ranks", "4", "--launcher", "local",
       "--work-dir", (dir / "w").string(), "--execution-mode", "onboard", "--enable-chip-swimlane"},
      dir, 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("l3_swimlane_pass=graph event=begin"), std::string::npos);
  EXPECT_NE(r.err.find("l3_swimlane_pass=timing event=end"), std::string::npos);
  const fs::path out = dir / "w/dfx_outputs";
  for (int rank = 0; rank < 4; ++rank) {
    for (int k = 0; k < 3; ++k) {
      const fs::path d = out / ("rank" + std::to_string(rank)) / ("d" + std::to_string(k));
      EXPECT_TRUE(fs::exists(d / "deps.json")) << d;                   // graph pass
      EXPECT_TRUE(fs::exists(d / "chip_swimlane_records.json")) << d;  // timing pass
    }
  }
  Json m = LoadJson(out / "run_manifest.json");
  EXPECT_EQ(m["passes"], Json::parse(R"(["graph", "timing"])"));
  EXPECT_EQ(m["dispatches"].size(), 24u);
  fs::remove_all(dir);
}

TEST(L3RunTest, PlanErrorsNameTheFileAndPath) {
  fs::path dir = TestDir("l3_badplan");
  ASSERT_TRUE(WriteFileAtomic(dir / "plan.json",
                              R"({"programs": {"a": "missing.json"}, "steps": [{"program": "a"}]})")
                  .ok());
  auto r = RunCommand({Bin("dfx-coordinator"), "run", (dir / "plan.json").string(), "--ranks", "2",
                       "--work-dir", (dir / "w").string()},
                      dir);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("plan.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("$.programs.a"), std::string::npos) << r.err;
  auto too_many = RunCommand({Bin("dfx-coordinator"), "run", kPlan.string(), "--ranks", "2",
                              "--launcher", "local", "--work-dir", (dir / "w2").string()},
                             dir);
  EXPECT_NE(too_many.exit_code, 0);
  EXPECT_NE(too_many.err.find("--ranks 2"), std::string::npos) << too_many.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dfx::e2e
