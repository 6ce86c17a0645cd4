// Capture only what is asked (README "Select", "On demand"): an L3 run with
// --capture-ranks / --capture-dispatches, a plan step with its own
// run_config, and `dfx-coordinator capture W` changing a running run. Real
// coordinator and agents (local launcher) on loopback; no timed assertions.
#include <gtest/gtest.h>

#include "tests/l3/e2e_util.h"

namespace dfx::e2e {
namespace {

const std::string kVec = Source("examples/vector_pipeline.json").string();
const std::string kBusy = Source("tests/l3/testdata/busy.json").string();

// <dir>/plan.json of `programs` (a JSON object) and `steps` (a JSON array).
fs::path WritePlan(const fs::path& dir, const std::string& programs, const std::string& steps) {
  const fs::path plan = dir / "plan.json";
  EXPECT_TRUE(
      WriteFileAtomic(plan, R"({"programs": )" + programs + R"(, "steps": )" + steps + "}").ok());
  return plan;
}

std::vector<std::string> RunArgs(const fs::path& plan, const fs::path& work, int ranks,
                                 std::vector<std::string> extra) {
  std::vector<std::string> argv = {
      Bin("dfx-coordinator"), "run",   plan.string(), "--ranks",    std::to_string(ranks),
      "--launcher",           "local", "--work-dir",  work.string()};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// The single-pass dispatch entry of (rank, k).
Json Entry(const Json& manifest, int rank, int k) {
  for (const Json& d : manifest["dispatches"]) {
    if (d["rank"] == rank && d["k"] == k) return d;
  }
  return Json();
}

TEST(CaptureE2E, FourRanksCaptureOnlyTheRanksAndDispatchesAsked) {
  const fs::path dir = TestDir("capture_select");
  const fs::path plan = WritePlan(dir, R"({"vec": ")" + kVec + R"("})",
                                  R"([{"program": "vec", "ranks": "all"},
                                      {"program": "vec", "ranks": "all"},
                                      {"program": "vec", "ranks": "all"}])");
  auto r = RunCommand(RunArgs(plan, dir / "w", 4,
                              {"--enable-chip-swimlane", "--enable-pmu", "--capture-ranks", "1,3",
                               "--capture-dispatches", "1-2"}),
                      dir, 300);
  ASSERT_FALSE(r.timed_out);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const fs::path out = dir / "w/dfx_outputs";
  // Artifacts exactly where asked: rank 1 and 3, dispatches 1 and 2.
  for (int rank = 0; rank < 4; ++rank) {
    for (int k = 0; k < 3; ++k) {
      const bool asked = (rank == 1 || rank == 3) && k >= 1;
      const fs::path d = out / ("rank" + std::to_string(rank)) / ("d" + std::to_string(k));
      EXPECT_EQ(fs::exists(d / "chip_swimlane_records.json"), asked) << d;
      EXPECT_EQ(fs::exists(d / "pmu.csv"), asked) << d;
      EXPECT_EQ(fs::exists(d), asked) << d;
    }
  }
  const Json m = LoadJson(out / "run_manifest.json");
  ASSERT_TRUE(m.is_object());
  EXPECT_EQ(m["status"], "ok");
  for (int rank = 0; rank < 4; ++rank) {
    for (int k = 0; k < 3; ++k) {
      const Json d = Entry(m, rank, k);
      ASSERT_TRUE(d.is_object()) << rank << " " << k;
      EXPECT_EQ(d["status"], "ok") << d.dump();
      const bool asked = (rank == 1 || rank == 3) && k >= 1;
      EXPECT_EQ(d["capture"]["captured"], asked) << d.dump();
      if (!asked) {
        EXPECT_EQ(d["capture"]["by"],
                  rank == 1 || rank == 3 ? "--capture-dispatches 1-2" : "--capture-ranks 1,3")
            << d.dump();
        EXPECT_EQ(d["capture"]["collectors"]["enable_chip_swimlane"], 0);
        EXPECT_TRUE(d["artifacts"].empty());
      } else {
        EXPECT_EQ(d["capture"]["collectors"]["enable_pmu"], 2);
      }
    }
  }
  // The summary says which were not captured by request, apart from missing.
  auto summary = RunCommand({Bin("dfx-view"), "summary", out.string()}, dir, 120);
  ASSERT_EQ(summary.exit_code, 0) << summary.out << summary.err;
  EXPECT_NE(summary.out.find("not captured (by request: --capture-ranks 1,3): 6 dispatch(es)"),
            std::string::npos)
      << summary.out;
  EXPECT_NE(summary.out.find("not captured (by request: --capture-dispatches 1-2): 2"),
            std::string::npos)
      << summary.out;
  EXPECT_EQ(summary.out.find("FAILED"), std::string::npos) << summary.out;
  // The run timeline shows them on the coordinator's lane.
  auto timeline = RunCommand(
      {Bin("dfx-view"), "swimlane", "--run", out.string(), "-o", (dir / "t.json").string()}, dir,
      120);
  ASSERT_EQ(timeline.exit_code, 0) << timeline.out << timeline.err;
  EXPECT_NE(Slurp(dir / "t.json").find("not captured (by request: --capture-ranks 1,3)"),
            std::string::npos);
  // The run report gets the same.
  EXPECT_NE(Slurp(out / "report.html").find("\"by_request_count\":8"), std::string::npos);
}

TEST(CaptureE2E, APlanStepCarriesItsOwnRunConfig) {
  const fs::path dir = TestDir("capture_step");
  const fs::path plan = WritePlan(dir, R"({"vec": ")" + kVec + R"("})",
                                  R"([{"program": "vec", "ranks": "all"},
          {"program": "vec", "ranks": "all", "run_config": {"enable_chip_swimlane": 0, "enable_pmu": 4}},
          {"program": "vec", "ranks": "all", "run_config": {"enable_chip_swimlane": 0}}])");
  auto r = RunCommand(RunArgs(plan, dir / "w", 2, {"--enable-chip-swimlane"}), dir, 300);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const fs::path out = dir / "w/dfx_outputs";
  for (int rank = 0; rank < 2; ++rank) {
    const fs::path base = out / ("rank" + std::to_string(rank));
    EXPECT_TRUE(fs::exists(base / "d0/chip_swimlane_records.json"));
    EXPECT_FALSE(fs::exists(base / "d0/pmu.csv"));
    EXPECT_TRUE(fs::exists(base / "d1/pmu.csv"));
    EXPECT_FALSE(fs::exists(base / "d1/chip_swimlane_records.json"));
    EXPECT_FALSE(fs::exists(base / "d2"));
  }
  const Json m = LoadJson(out / "run_manifest.json");
  EXPECT_EQ(m["status"], "ok");
  EXPECT_EQ(Entry(m, 0, 1)["capture"]["by"], "plan $.steps[1].run_config");
  EXPECT_EQ(Entry(m, 0, 1)["capture"]["collectors"]["enable_pmu"], 4);
  EXPECT_EQ(Entry(m, 1, 2)["capture"]["captured"], false);
  EXPECT_EQ(Entry(m, 1, 2)["capture"]["by"], "plan $.steps[2].run_config");

  // A step's run_config is checked like the run's, before anything starts.
  const fs::path bad = WritePlan(dir, R"({"vec": ")" + kVec + R"("})",
                                 R"([{"program": "vec", "run_config": {"enable_pmu": 3}}])");
  auto refused = RunCommand(RunArgs(bad, dir / "w2", 1, {"--enable-chip-swimlane"}), dir, 120);
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("at $.steps[0].run_config"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("enable_pmu"), std::string::npos) << refused.err;
}

TEST(CaptureE2E, BadListsAndRanksOutsideTheRunAreRefusedBeforeItStarts) {
  const fs::path dir = TestDir("capture_refuse");
  const fs::path plan =
      WritePlan(dir, R"({"vec": ")" + kVec + R"("})", R"([{"program": "vec", "ranks": "all"}])");
  auto backwards =
      RunCommand(RunArgs(plan, dir / "w", 2, {"--enable-pmu", "--capture-ranks", "3-1"}), dir, 120);
  EXPECT_EQ(backwards.exit_code, 2);
  EXPECT_NE(
      backwards.err.find("--capture-ranks: '3-1' is not a range (write LOW-HIGH with LOW <= HIGH)"),
      std::string::npos)
      << backwards.err;
  auto outside =
      RunCommand(RunArgs(plan, dir / "w", 2, {"--enable-pmu", "--capture-ranks", "0,5"}), dir, 120);
  EXPECT_EQ(outside.exit_code, 2);
  EXPECT_NE(outside.err.find("rank 5 does not exist in a run of --ranks 2"), std::string::npos)
      << outside.err;
  auto far_k = RunCommand(
      RunArgs(plan, dir / "w", 2, {"--enable-pmu", "--capture-dispatches", "4"}), dir, 120);
  EXPECT_EQ(far_k.exit_code, 2);
  EXPECT_NE(far_k.err.find("d4 does not exist"), std::string::npos) << far_k.err;
  EXPECT_FALSE(fs::exists(dir / "w/dfx_outputs/run_manifest.json"));
  // No run in W: said plainly, exit 1.
  fs::create_directories(dir / "idle");
  auto none =
      RunCommand({Bin("dfx-coordinator"), "capture", (dir / "idle").string(), "--off"}, dir, 60);
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("no run is going in"), std::string::npos) << none.err;
  auto usage = RunCommand(
      {Bin("dfx-coordinator"), "capture", (dir / "idle").string(), "--backend-type", "a5"}, dir,
      60);
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_NE(usage.err.find("--backend-type is the run's"), std::string::npos) << usage.err;
}

TEST(CaptureE2E, ACaptureChangedMidRunAppliesToTheNextDispatchesAndIsRecorded) {
  const fs::path dir = TestDir("capture_demand");
  // Two ranks, four dispatches each of a program that spins ~2 s: time to
  // change the capture while the run goes on.
  const fs::path plan = WritePlan(dir, R"({"busy": ")" + kBusy + R"("})",
                                  R"([{"program": "busy", "ranks": "all"},
                                      {"program": "busy", "ranks": "all"},
                                      {"program": "busy", "ranks": "all"},
                                      {"program": "busy", "ranks": "all"}])");
  const fs::path work = dir / "w";
  Process run(RunArgs(plan, work, 2, {"--enable-chip-swimlane", "2", "--no-report"}), dir);
  // Wait until the run answers on its control socket (it is up once the
  // session started).
  CommandResult status;
  ASSERT_TRUE(WaitFor(
      [&] {
        status =
            RunCommand({Bin("dfx-coordinator"), "capture", work.string(), "--status"}, dir, 60);
        return status.exit_code == 0 || run.exited();
      },
      120))
      << status.err;
  ASSERT_EQ(status.exit_code, 0) << status.err << run.err();
  EXPECT_NE(status.out.find("of 8 dispatch(es) sent"), std::string::npos) << status.out;
  auto change = RunCommand(
      {Bin("dfx-coordinator"), "capture", work.string(), "--ranks", "0", "--next", "1", "--off"},
      dir, 60);
  ASSERT_EQ(change.exit_code, 0) << change.out << change.err;
  EXPECT_NE(change.out.find("capture change 1 applied"), std::string::npos) << change.out;
  // Another user cannot reach the socket.
  if (::geteuid() == 0) {
    auto other = RunCommand({"setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                             Bin("dfx-coordinator"), "capture", work.string(), "--off"},
                            dir, 60);
    EXPECT_EQ(other.exit_code, 1) << other.out << other.err;
    EXPECT_NE(other.err.find("only the user who started the run"), std::string::npos) << other.err;
  }
  auto bad = RunCommand(
      {Bin("dfx-coordinator"), "capture", work.string(), "--ranks", "0-9", "--off"}, dir, 60);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("rank 9 does not exist in this run"), std::string::npos) << bad.err;
  ASSERT_TRUE(run.Wait(300)) << "the run did not end";
  ASSERT_EQ(run.exit_code(), 0) << run.out() << run.err();
  EXPECT_FALSE(fs::exists(work / ".dfx_control")) << "the control socket outlived the run";

  const Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  ASSERT_EQ(m["capture_changes"].size(), 1u) << m.dump();
  const Json& c = m["capture_changes"][0];
  EXPECT_EQ(c["id"], 1);
  EXPECT_EQ(c["uid"], ::geteuid());
  EXPECT_GT(c["pid"].get<int64_t>(), 0);
  EXPECT_NE(c["request"].get<std::string>().find("--ranks 0 --next 1 --off"), std::string::npos);
  // It applied to exactly one dispatch of rank 0, which ran without collectors.
  ASSERT_EQ(c["applied_to"].size(), 1u) << c.dump();
  EXPECT_EQ(c["applied_to"][0]["rank"], 0);
  const int k = c["applied_to"][0]["k"].get<int>();
  size_t not_captured = 0;
  for (const Json& d : m["dispatches"]) {
    const bool changed = d["rank"] == 0 && d["k"] == k;
    EXPECT_EQ(d["status"], "ok") << d.dump();
    EXPECT_EQ(d["capture"]["captured"], !changed) << d.dump();
    if (changed) {
      EXPECT_EQ(d["capture"]["by"], "capture change 1");
      ++not_captured;
    } else {
      EXPECT_EQ(d["capture"]["collectors"]["enable_chip_swimlane"], 2) << d.dump();
    }
    const fs::path records =
        work / "dfx_outputs" / d["dir"].get<std::string>() / "chip_swimlane_records.json";
    EXPECT_EQ(fs::exists(records), !changed) << records;
  }
  EXPECT_EQ(not_captured, 1u);
}

}  // namespace
}  // namespace dfx::e2e
