#include "coordinator/run.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "common/testing/temp_dirs.h"

namespace dfx::coordinator {
namespace {

namespace fs = std::filesystem;

RunRequest Request(const std::string& name) {
  RunRequest r;
  r.file = fs::path(DFX_SOURCE_DIR) / "examples/vector_pipeline.json";
  r.session.work_dir = FreshTestDir("run_test_" + std::to_string(::getpid()) + "_" + name);
  r.session.agent_binary = "/nonexistent/dfx-rank-agent";  // never started by these requests
  return r;
}

// What `dfx-coordinator run` refuses before anything runs: a usage error
// (exit 2) on stderr, and no verdict line.
void ExpectUsageError(const RunReport& report, const std::string& message) {
  EXPECT_EQ(report.exit, RunExit::kUsage);
  EXPECT_EQ(report.errors, "dfx-coordinator: " + message + "\n");
  EXPECT_FALSE(report.verdict.has_value());
}

TEST(RunTest, AHeartbeatTimeoutShorterThanItsIntervalIsAUsageError) {
  RunRequest r = Request("heartbeat");
  r.session.timeouts.heartbeat_interval = Seconds(2);
  r.session.timeouts.heartbeat_timeout = Seconds(1);
  const RunReport report = RunProgramOrPlan(r);
  EXPECT_EQ(report.exit, RunExit::kUsage);
  EXPECT_NE(report.errors.find("heartbeat"), std::string::npos) << report.errors;
  EXPECT_FALSE(report.verdict.has_value());
}

TEST(RunTest, AMissingProgramFileIsAUsageError) {
  RunRequest r = Request("missing");
  r.file = r.session.work_dir / "nope.json";
  const RunReport report = RunProgramOrPlan(r);
  EXPECT_EQ(report.exit, RunExit::kUsage);
  EXPECT_NE(report.errors.find("nope.json"), std::string::npos) << report.errors;
  EXPECT_FALSE(report.verdict.has_value());
}

TEST(RunTest, TheArgsDumpDrainModelIsRefusedForAnL3Run) {
  RunRequest r = Request("drain");
  r.ranks = 2;
  r.dump_timeout_ms = 5;
  ExpectUsageError(RunProgramOrPlan(r),
                   "--dump-timeout-ms: the args-dump drain model is an L2 knob (one program, "
                   "`dfx-rank-agent exec`); drop it for a plan / --ranks run");
}

TEST(RunTest, LauncherArgsNeedMpirunOrSrun) {
  RunRequest r = Request("launcher_args");
  r.ranks = 2;
  r.launcher = "local";
  r.launcher_args = "--hostfile H";
  ExpectUsageError(RunProgramOrPlan(r),
                   "--launcher-binary, --launcher-args and --agent-command are for --launcher "
                   "mpirun or srun, not local");
}

}  // namespace
}  // namespace dfx::coordinator
