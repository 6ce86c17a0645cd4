// Runs that span hosts, end to end with the real binaries on
// loopback: --bind by host name, --advertise, the manifest's endpoints;
// mpirun with launcher arguments and a rank that dies before HELLO; srun
// (a FAKE srun script that records the exact command line it gets and
// starts the tasks with SLURM_PROCID / SLURM_NTASKS set, as srun does; the
// real srun, against a one-node Slurm, is in tests/launchers); serve agents that
// wait with a limit and say why they exit. The several-"host" runs are in
// hosts_test.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "common/subprocess.h"
#include "tests/l3/fault_hooks.h"
#include "tests/l3/raw_client.h"

namespace dfx::e2e {
namespace {

const fs::path kVector = Source("examples/vector_pipeline.json");

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(MultiHostTest, BindTakesAHostNameAndTheManifestRecordsEndpoints) {
  fs::path dir = TestDir("mh_bind");
  const fs::path work = dir / "w";
  auto r = RunCommand(
      {Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "1", "--launcher", "local",
       "--bind", "tcp://localhost:0", "--work-dir", work.string(), "--enable-dep-gen"},
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  ASSERT_TRUE(m.is_object());
  const std::string bind = m["bind"];
  EXPECT_EQ(bind.rfind("tcp://127.0.0.1:", 0), 0u) << bind;
  EXPECT_EQ(m["endpoint"], bind) << "a routable bind is what agents dial";
  EXPECT_TRUE(m["ranks"][0]["host"].is_string());
  EXPECT_EQ(m["ranks"][0]["address"], "127.0.0.1");

  // A wildcard bind with --advertise: agents dial the advertised host on the bound port.
  const fs::path work2 = dir / "w2";
  r = RunCommand({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "2", "--launcher",
                  "local", "--bind", "tcp://0.0.0.0:0", "--advertise", "tcp://127.0.0.1",
                  "--work-dir", work2.string(), "--enable-dep-gen"},
                 dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  m = LoadJson(work2 / "dfx_outputs/run_manifest.json");
  const std::string bound = m["bind"], dialed = m["endpoint"];
  ASSERT_EQ(bound.rfind("tcp://0.0.0.0:", 0), 0u) << bound;
  EXPECT_EQ(dialed, "tcp://127.0.0.1:" + bound.substr(bound.rfind(':') + 1));
  EXPECT_NE(r.err.find("agents dial " + dialed), std::string::npos) << r.err;

  // A name that is no host, address or interface: refused before anything is written.
  const fs::path work3 = dir / "w3";
  r = RunCommand(
      {Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "1", "--launcher", "local",
       "--bind", "tcp://no-such-host.invalid:0", "--work-dir", work3.string(), "--enable-dep-gen"},
      dir);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--bind tcp://no-such-host.invalid:0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--advertise"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(work3 / "dfx_outputs")) << "nothing is left behind";
  fs::remove_all(dir);
}

// Under mpirun, an agent that dies before HELLO (here: killed by the test
// hook right after start) fails its rank alone, named, long before
// --startup-timeout; the other ranks complete.
TEST(MultiHostTest, MpirunRankKilledBeforeHelloFailsAloneAndNamed) {
  DFX_SKIP_WITHOUT_FAULT_HOOKS();
  fs::path dir = TestDir("mh_early_kill");
  const fs::path work = dir / "w";
  const auto start = std::chrono::steady_clock::now();
  auto r = RunCommand({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "4",
                       "--launcher", "mpirun", "--work-dir", work.string(), "--enable-dep-gen",
                       "--startup-timeout", "150", "--heartbeat-timeout", "100"},
                      dir, 240, {"DFX_FAULT_KILL_RANK_BEFORE_HELLO=2"});
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 1) << r.err;
  // Not the startup deadline (150 s) nor the heartbeat one (100 s).
  EXPECT_LT(wall, 90) << r.err;
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  ASSERT_TRUE(m.is_object()) << r.err;
  EXPECT_EQ(m["launcher"], "mpirun");
  for (int rank : {0, 1, 3}) {
    EXPECT_EQ(m["ranks"][rank]["status"], "ok") << m["ranks"][rank].dump();
    EXPECT_TRUE(fs::exists(work / "dfx_outputs" / ("rank" + std::to_string(rank)) / "d0/deps.json"))
        << rank;
  }
  EXPECT_EQ(m["ranks"][2]["status"], "failed");
  const std::string why = m["ranks"][2]["error"];
  EXPECT_NE(why.find("ended before it said HELLO: killed by signal 9"), std::string::npos) << why;
  EXPECT_NE(r.err.find("rank 2: its agent process"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// --launcher-binary and --launcher-args reach mpirun (a hostfile here).
TEST(MultiHostTest, MpirunTakesLauncherArgumentsAndBinary) {
  fs::path dir = TestDir("mh_mpirun_args");
  const fs::path work = dir / "w";
  ASSERT_TRUE(WriteFileAtomic(dir / "hosts", "localhost slots=8\n").ok());
  auto mpirun = FindExecutable("mpirun");
  ASSERT_TRUE(mpirun.has_value());
  auto r =
      RunCommand({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "3", "--launcher",
                  "mpirun", "--launcher-binary", mpirun->string(), "--launcher-args",
                  "--hostfile " + (dir / "hosts").string() + " --map-by slot", "--work-dir",
                  work.string(), "--enable-dep-gen"},
                 dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("is Open MPI"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--hostfile " + (dir / "hosts").string() + " --map-by slot"),
            std::string::npos)
      << r.err;
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(m["ranks"][rank]["status"], "ok");
  // Node-local spools by default: nothing was spooled under the work dir.
  EXPECT_FALSE(fs::exists(work / ".dfx_spool"));

  r = RunCommand(
      {Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "1", "--launcher", "mpirun",
       "--launcher-binary", (dir / "no-mpirun").string(), "--work-dir", work.string()},
      dir);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--launcher mpirun: " + (dir / "no-mpirun").string()), std::string::npos)
      << r.err;
  fs::remove_all(dir);
}

// A FAKE srun (what a real one cannot show: the exact argv it was given):
// records its arguments, then starts
// --ntasks copies of the command with SLURM_PROCID / SLURM_NTASKS set.
void WriteFakeSrun(const fs::path& path, const fs::path& log) {
  ASSERT_TRUE(WriteFileAtomic(path, R"(#!/bin/sh
# FAKE srun for tests: it records its exact argv (tests/launchers runs the real one).
echo "$@" > ")" + log.string() + R"("
n=1
while [ $# -gt 0 ]; do
  case "$1" in
    --ntasks=*) n=${1#--ntasks=}; shift ;;
    --nodes) shift 2 ;;
    --*) shift ;;
    *) break ;;
  esac
done
i=0
pids=""
while [ $i -lt $n ]; do
  SLURM_PROCID=$i SLURM_NTASKS=$n "$@" &
  pids="$pids $!"
  i=$((i + 1))
done
rc=0
for p in $pids; do wait $p || rc=$?; done
exit $rc
)")
                  .ok());
  fs::permissions(path, fs::perms::owner_all);
}

TEST(MultiHostTest, SrunLauncherWithAFakeSrun) {
  DFX_SKIP_WITHOUT_FAULT_HOOKS();
  fs::path dir = TestDir("mh_srun");
  const fs::path srun = dir / "srun", log = dir / "srun.args";
  WriteFakeSrun(srun, log);
  const fs::path work = dir / "w";
  auto r =
      RunCommand({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "3", "--launcher",
                  "srun", "--launcher-binary", srun.string(), "--launcher-args", "--nodes 1",
                  "--work-dir", work.string(), "--enable-dep-gen", "--startup-timeout", "150"},
                 dir, 240, {"DFX_FAULT_KILL_RANK_BEFORE_HELLO=1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string args = Slurp(log);
  EXPECT_NE(args.find("--ntasks=3 --kill-on-bad-exit=0 --export=ALL --nodes 1 "), std::string::npos)
      << args;
  // The credentials travel in the environment, never on the command line.
  EXPECT_EQ(args.find("DFX_CURVE"), std::string::npos) << args;
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  ASSERT_TRUE(m.is_object()) << r.err;
  EXPECT_EQ(m["launcher"], "srun");
  EXPECT_EQ(m["ranks"][0]["status"], "ok") << m.dump();
  EXPECT_EQ(m["ranks"][2]["status"], "ok") << m.dump();
  EXPECT_EQ(m["ranks"][1]["status"], "failed");
  EXPECT_NE(m["ranks"][1]["error"].get<std::string>().find("ended before it said HELLO"),
            std::string::npos)
      << m["ranks"][1].dump();
  fs::remove_all(dir);
}

TEST(MultiHostTest, ServeAgentLogsItsWaitHonoursConnectTimeoutAndSaysWhyItExits) {
  fs::path dir = TestDir("mh_serve_wait");
  // Port 1 on loopback: nobody listens.
  auto r =
      RunCommand({Bin("dfx-rank-agent"), "serve", "--coordinator", "tcp://127.0.0.1:1", "--rank",
                  "0", "--spool", (dir / "spool").string(), "--connect-timeout", "2"},
                 dir, 60);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("waiting for a coordinator at tcp://127.0.0.1:1 (giving up after "
                       "--connect-timeout 2 s)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("no coordinator answered at tcp://127.0.0.1:1 within --connect-timeout 2 s"),
            std::string::npos)
      << r.err;

  Process serve({Bin("dfx-rank-agent"), "serve", "--coordinator", "tcp://127.0.0.1:1", "--rank",
                 "0", "--spool", (dir / "spool").string()},
                dir);
  ASSERT_TRUE(WaitFor([&] { return serve.err().find("no time limit") != std::string::npos; }, 30))
      << serve.err();
  serve.Signal(SIGTERM);
  ASSERT_TRUE(serve.Wait(30));
  EXPECT_EQ(serve.exit_code(), 0) << serve.err();
  EXPECT_NE(serve.err().find("exiting on Terminated (signal 15)"), std::string::npos)
      << serve.err();
  EXPECT_EQ(Count(serve.err(), "waiting for a coordinator"), 1u) << serve.err();
  fs::remove_all(dir);
}

// The run-level trace states how well ranks line up (each rank's clock
// offset and its round-trip bound), and dfx-view warns only when that bound
// changes what the trace shows (README "Reading a run trace across ranks":
// over a quarter of the time the trace spans): not on an ordinary run of
// vector_pipeline, whose ~1 µs tasks are far shorter than any loopback
// round trip, but for a 10 s round trip.
TEST(MultiHostTest, RunTimelineStatesClockUncertaintyAndWarnsWhenItMatters) {
  fs::path dir = TestDir("mh_clock");
  const fs::path work = dir / "w";
  auto r =
      RunCommand({Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "2", "--launcher",
                  "local", "--work-dir", work.string(), "--enable-chip-swimlane"},
                 dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path outputs = work / "dfx_outputs";
  auto v = RunCommand({Bin("dfx-view"), "swimlane", "--run", outputs.string()}, dir);
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_EQ(v.err.find("aligned only"), std::string::npos) << v.err;  // an ordinary run
  Json trace = LoadJson(outputs / "merged_run_swimlane.json");
  ASSERT_TRUE(trace.is_object());
  const Json& align = trace["metadata"]["clock_alignment"];
  ASSERT_EQ(align["ranks"].size(), 2u) << align.dump();
  for (const Json& rank : align["ranks"]) {
    EXPECT_TRUE(rank["clock_offset_ns"].is_number());
    EXPECT_EQ(rank["uncertainty_ns"].get<uint64_t>(), rank["round_trip_ns"].get<uint64_t>() / 2);
  }
  EXPECT_GT(align["max_uncertainty_us"].get<double>(), 0);
  EXPECT_GT(align["trace_span_us"].get<double>(), 0);
  EXPECT_LT(align["max_uncertainty_us"].get<double>(), align["warned_above_us"].get<double>());

  // A manifest whose round trip was 10 s (a slow, distant host): warned.
  Json m = LoadJson(outputs / "run_manifest.json");
  m["ranks"][1]["clock_offset_rtt_ns"] = 10000000000ull;
  ASSERT_TRUE(WriteFileAtomic(outputs / "run_manifest.json", m.dump()).ok());
  v = RunCommand({Bin("dfx-view"), "swimlane", "--run", outputs.string()}, dir);
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.err.find("aligned only to within +- 5000000.0 us"), std::string::npos) << v.err;
  trace = LoadJson(outputs / "merged_run_swimlane.json");
  EXPECT_EQ(trace["metadata"]["clock_alignment"]["max_uncertainty_us"].get<double>(), 5e6);
  fs::remove_all(dir);
}

// The coordinator's host lane on the run timeline: each rank's start-up
// (launch → HELLO → READY) and each dispatch's orchestration (sent →
// accepted, run, stream, verify), from the times the manifest records.
TEST(MultiHostTest, RunTimelineHasAHostLaneWithStartUpAndEachDispatchsOrchestration) {
  fs::path dir = TestDir("mh_host_lane");
  const fs::path work = dir / "w";
  auto r = RunCommand(
      {Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "2", "--launcher", "local",
       "--work-dir", work.string(), "--enable-chip-swimlane", "--enable-dep-gen"},
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path outputs = work / "dfx_outputs";
  Json m = LoadJson(outputs / "run_manifest.json");
  ASSERT_TRUE(m["launch_ns"].is_number()) << m.dump();
  const uint64_t launch = m["launch_ns"];
  for (const Json& rank : m["ranks"]) {
    ASSERT_TRUE(rank["hello_ns"].is_number() && rank["ready_ns"].is_number()) << rank.dump();
    EXPECT_LE(launch, rank["hello_ns"].get<uint64_t>());
    EXPECT_LE(rank["hello_ns"].get<uint64_t>(), rank["ready_ns"].get<uint64_t>());
  }
  for (const Json& d : m["dispatches"]) {
    ASSERT_TRUE(d["accepted_ns"].is_number() && d["stream_ns"].is_number() &&
                d["verified_ns"].is_number())
        << d.dump();
    const uint64_t sent = d["start_ns"], accepted = d["accepted_ns"], stream = d["stream_ns"],
                   end = d["end_ns"], verified = d["verified_ns"];
    EXPECT_LE(sent, accepted);
    EXPECT_LE(accepted, stream);
    EXPECT_LE(stream, end);
    EXPECT_LE(stream, verified);
  }
  auto v = RunCommand({Bin("dfx-view"), "swimlane", "--run", outputs.string()}, dir);
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_EQ(v.err.find("aligned only"), std::string::npos) << v.err;  // an ordinary run
  Json trace = LoadJson(outputs / "merged_run_swimlane.json");
  std::map<std::string, std::pair<double, double>> host;  // name -> [ts, ts + dur]
  double first_chip_ts = 1e300;
  for (const Json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const double ts = e["ts"], dur = e["dur"];
    if (e["pid"] == 99) {
      host[e["name"].get<std::string>()] = {ts, ts + dur};
    } else {
      first_chip_ts = std::min(first_chip_ts, ts);
    }
  }
  for (int rank = 0; rank < 2; ++rank) {
    const std::string p = "rank " + std::to_string(rank) + ": ";
    ASSERT_TRUE(host.count(p + "launch → HELLO")) << trace.dump().substr(0, 2000);
    ASSERT_TRUE(host.count(p + "HELLO → READY"));
    // The trace starts at the launch: the start-up comes before the chips.
    EXPECT_NEAR(host[p + "launch → HELLO"].first, 0.0, 1e-3);
    EXPECT_LE(host[p + "HELLO → READY"].second, first_chip_ts + 1e-3);
  }
  const std::string d0 = "d0 vector_pipeline: ";
  ASSERT_TRUE(host.count(d0 + "sent → accepted"));
  ASSERT_TRUE(host.count(d0 + "run"));
  ASSERT_TRUE(host.count(d0 + "stream"));
  EXPECT_LE(host[d0 + "sent → accepted"].second, host[d0 + "run"].first + 1e-3);
  EXPECT_LE(host[d0 + "run"].second, host[d0 + "stream"].first + 1e-3);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dfx::e2e
