// `dfx-coordinator run PROGRAM.json` (L2): one program, one local emulated
// chip, artifacts flat in <work_dir>/dfx_outputs/.
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "tests/l3/e2e_util.h"

namespace dfx::e2e {
namespace {

const fs::path kVector = Source("examples/vector_pipeline.json");
const fs::path kFail = Source("tests/l3/testdata/fail.json");

TEST(L2RunTest, EveryFlagLandsFlatWithRenderCommands) {
  fs::path dir = TestDir("l2_all") / "my work";  // a space: paths must be quoted
  auto r = RunCommand({Bin("dfx-coordinator"), "run", kVector.string(), "--work-dir", dir.string(),
                       "--enable-chip-swimlane", "--enable-dep-gen", "--enable-pmu",
                       "--enable-scope-stats", "--dump-args", "2"},
                      dir.parent_path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path out = dir / "dfx_outputs";
  auto tree = Tree(out);
  for (const char* f :
       {"chip_swimlane_records.json", "deps.json", "pmu.csv", "scope_stats/scope_stats.jsonl",
        "args_dump/args_dump.json", "name_map_my work.json"}) {
    EXPECT_TRUE(tree.count(f)) << f << " missing; got " << ::testing::PrintToString(tree);
  }
  for (const auto& f : tree) EXPECT_EQ(f.find("rank"), std::string::npos) << "L2 is flat: " << f;
  const std::string q = "'" + out.string();
  EXPECT_NE(r.out.find("dfx-view deps " + q + "/deps.json'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--format html --engine sfdp"), std::string::npos);
  EXPECT_NE(r.out.find("dfx-view swimlane " + q + "/chip_swimlane_records.json'"),
            std::string::npos);
  EXPECT_NE(r.out.find("dfx-view scope-stats " + q + "/scope_stats/scope_stats.jsonl'"),
            std::string::npos);
  EXPECT_NE(r.out.find("dfx-view dump " + q + "/args_dump'"), std::string::npos);
  EXPECT_NE(r.out.find(q + "/pmu.csv'"), std::string::npos);
  // The name map maps func_id -> kernel name (docs/formats.md §3).
  Json map = LoadJson(out / "name_map_my work.json");
  EXPECT_EQ(map["level"], 2);
  EXPECT_EQ(map["orchestrator_name"], "vector_pipeline");
  EXPECT_EQ(map["callable_id_to_name"]["0"], "vector_add");
  fs::remove_all(dir.parent_path());
}

TEST(L2RunTest, NoFlagMeansNoDirectory) {
  fs::path dir = TestDir("l2_none");
  auto r = RunCommand({Bin("dfx-coordinator"), "run", kVector.string(), "--work-dir", dir.string()},
                      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(dir / "dfx_outputs"));
  EXPECT_NE(r.out.find("no DFX flag"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST(L2RunTest, BadFlagIsNamedAndNothingIsCreated) {
  fs::path dir = TestDir("l2_badflag");
  auto r = RunCommand({Bin("dfx-coordinator"), "run", kVector.string(), "--work-dir", dir.string(),
                       "--chip-swimlane-level", "7"},
                      dir);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--chip-swimlane-level"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[0, 4]"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "dfx_outputs"));
  fs::remove_all(dir);
}

TEST(L2RunTest, BadProgramNamesFileAndJsonPath) {
  fs::path dir = TestDir("l2_badprog");
  fs::path prog = dir / "broken.json";
  ASSERT_TRUE(WriteFileAtomic(prog, R"({"name": "x", "kernels": [{"func_id": 0, "name": "k",
    "core_type": "aiv", "op": "frobnicate"}], "tensors": [], "orchestration": []})")
                  .ok());
  auto r = RunCommand({Bin("dfx-coordinator"), "run", prog.string(), "--work-dir",
                       (dir / "w").string(), "--enable-dep-gen"},
                      dir);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("broken.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("$.kernels[0].op"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "w" / "dfx_outputs")) << "failed before dispatch: no directory";

  auto missing = RunCommand({Bin("dfx-coordinator"), "run", (dir / "nope.json").string(),
                             "--work-dir", (dir / "w").string()},
                            dir);
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("nope.json"), std::string::npos) << missing.err;
  fs::remove_all(dir);
}

TEST(L2RunTest, KernelFailureExitsNonZeroWithTheKernelError) {
  fs::path dir = TestDir("l2_fail");
  auto r = RunCommand({Bin("dfx-coordinator"), "run", kFail.string(), "--work-dir", dir.string(),
                       "--enable-chip-swimlane"},
                      dir);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("injected kernel failure"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

TEST(L2RunTest, OnboardSwimlaneRunsGraphThenTimingPass) {
  fs::path dir = TestDir("l2_onboard");
  auto r =
      RunCommand({Bin("dfx-coordinator"), "run", kVector.string(), "--work-dir", dir.string(),
                  "--backend-type", "a5", "--execution-mode", "onboard", "--enable-chip-swimlane"},
                 dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("run 1/2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run 2/2"), std::string::npos) << r.out;
  auto tree = Tree(dir / "dfx_outputs");
  EXPECT_TRUE(tree.count("deps.json")) << "the graph pass writes deps.json";
  EXPECT_TRUE(tree.count("chip_swimlane_records.json")) << "the timing pass writes the records";
  // dep_gen was not asked for: no deps hint (spec §2.6).
  EXPECT_EQ(r.out.find("dfx-view deps"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

TEST(L2RunTest, DeprecatedPlatformWarnsAndMaps) {
  fs::path dir = TestDir("l2_platform");
  auto r = RunCommand({Bin("dfx-coordinator"), "run", kVector.string(), "--work-dir", dir.string(),
                       "--platform", "a2a3sim", "--enable-dep-gen"},
                      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("deprecated"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--backend-type"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(dir / "dfx_outputs/deps.json"));
  fs::remove_all(dir);
}

TEST(L2RunTest, AgentExecRunsDirectly) {
  fs::path dir = TestDir("l2_exec");
  auto r = RunCommand({Bin("dfx-rank-agent"), "exec", "--program", kVector.string(), "--output-dir",
                       (dir / "dfx_outputs").string(), "--enable-dep-gen"},
                      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "dfx_outputs/deps.json"));
  EXPECT_TRUE(fs::exists(dir / ("dfx_outputs/name_map_" + dir.filename().string() + ".json")));
  fs::remove_all(dir);
}

// Usage errors name the flag, the value and what is allowed, and exit 2;
// --help works on the binary and on each subcommand.
TEST(L2RunTest, AgentUsageErrorsExitTwoAndHelpWorks) {
  fs::path dir = TestDir("l2_agent_usage");
  auto bad = RunCommand({Bin("dfx-rank-agent"), "serve", "--coordinator", "tcp://127.0.0.1:1",
                         "--heartbeat-timeout", "2e6"},
                        dir);
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--heartbeat-timeout 2e6: expected a positive number of seconds, at most "
                         "1000000"),
            std::string::npos)
      << bad.err;
  auto unknown = RunCommand({Bin("dfx-rank-agent"), "--coordinator", "x", "--sesion", "1"}, dir);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("--sesion"), std::string::npos) << unknown.err;
  auto no_program =
      RunCommand({Bin("dfx-rank-agent"), "exec", "--output-dir", (dir / "o").string()}, dir);
  EXPECT_EQ(no_program.exit_code, 2);
  EXPECT_NE(no_program.err.find("--program P.json is required"), std::string::npos)
      << no_program.err;
  auto bad_config = RunCommand({Bin("dfx-rank-agent"), "exec", "--program", kVector.string(),
                                "--output-dir", (dir / "o").string(), "--enable-pmu", "3"},
                               dir);
  EXPECT_EQ(bad_config.exit_code, 2);
  EXPECT_NE(bad_config.err.find("--enable-pmu 3"), std::string::npos) << bad_config.err;
  EXPECT_FALSE(fs::exists(dir / "o"));
  for (const std::vector<std::string>& help :
       {std::vector<std::string>{"--help"}, {"serve", "--help"}, {"exec", "--help"}}) {
    std::vector<std::string> argv = {Bin("dfx-rank-agent")};
    argv.insert(argv.end(), help.begin(), help.end());
    auto r = RunCommand(argv, dir);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(help.front() == "exec" ? "--output-dir" : "--coordinator"),
              std::string::npos)
        << r.out;
  }
  fs::remove_all(dir);
}

TEST(L2RunTest, GenProgramUsageErrorsExitTwo) {
  fs::path dir = TestDir("l2_gen_usage");
  const std::string gen = DFX_BINARY_DIR "/device/dfx-gen-program";
  auto bad = RunCommand({gen, "layered", "--tasks", "0"}, dir);
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--tasks"), std::string::npos) << bad.err;
  auto unknown = RunCommand({gen, "vector", "--colums", "3"}, dir);
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
  EXPECT_NE(unknown.err.find("--colums"), std::string::npos) << unknown.err;
  auto none = RunCommand({gen}, dir);
  EXPECT_EQ(none.exit_code, 2) << none.err;
  auto help = RunCommand({gen, "vector", "--help"}, dir);
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("--rows"), std::string::npos) << help.out;
  fs::remove_all(dir);
}

// Every run reports its makespan from the emulator's own accounting, with
// collectors or without: on the virtual clock (exact, and the collectors do
// not move it) the two runs agree to the nanosecond.
TEST(L2RunTest, EveryRunReportsItsMakespanWithOrWithoutCollectors) {
  fs::path dir = TestDir("l2_makespan");
  auto makespan = [&](const std::string& name, std::vector<std::string> flags) {
    std::vector<std::string> argv = {Bin("dfx-coordinator"), "run",
                                     kVector.string(),       "--work-dir",
                                     (dir / name).string(),  "--virtual-clock"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto r = RunCommand(argv, dir);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const size_t at = r.out.find("makespan ");
    EXPECT_NE(at, std::string::npos) << r.out;
    return at == std::string::npos ? -1.0 : std::stod(r.out.substr(at + 9));
  };
  const double bare = makespan("bare", {});
  const double all = makespan("all", {"--enable-chip-swimlane", "4", "--enable-dep-gen",
                                      "--enable-pmu", "--enable-scope-stats"});
  EXPECT_GT(bare, 0.0);
  EXPECT_EQ(bare, all);
  fs::remove_all(dir);
}

// Runs argv with stdin, stdout and stderr on a new pseudo-terminal, as from
// a user's shell: everything it wrote, and its exit code (-1: timed out).
struct TerminalRun {
  int exit_code = -1;
  std::string output;
};
TerminalRun RunOnTerminal(const std::vector<std::string>& argv, const fs::path& cwd,
                          int timeout_s) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  winsize size{};
  size.ws_col = 160;
  size.ws_row = 40;
  int terminal = -1;
  const pid_t pid = ::forkpty(&terminal, nullptr, nullptr, &size);
  if (pid == 0) {
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  TerminalRun run;
  if (pid < 0) return run;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{terminal, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    const ssize_t n = ::read(terminal, buf, sizeof buf);
    if (n <= 0) break;  // EIO: every process holding the terminal has gone
    run.output.append(buf, static_cast<size_t>(n));
  }
  // The terminal closes as the process exits: wait for it (within the deadline).
  int status = 0;
  pid_t reaped = 0;
  while ((reaped = ::waitpid(pid, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    ::usleep(10000);
  }
  if (reaped == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  } else if (reaped == pid && WIFEXITED(status)) {
    run.exit_code = WEXITSTATUS(status);
  }
  ::close(terminal);
  return run;
}

// On a terminal, a run keeps a live progress line: an L2 run shows loading
// and the chip's tasks done (it was silent for 19 s on 100k tasks); an L3
// run shows ranks and dispatches done and the post-run conversion (asked
// for with --swimlane-traces eager: sim runs convert on demand by default).
TEST(L2RunTest, ALiveProgressLineOnATerminalAtL2AndL3) {
  fs::path dir = TestDir("l2_progress");
  const fs::path program = dir / "big.json";
  auto gen = RunCommand({DFX_BINARY_DIR "/device/dfx-gen-program", "layered", "--tasks", "30000",
                         "-o", program.string()},
                        dir);
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  TerminalRun l2 = RunOnTerminal({Bin("dfx-coordinator"), "run", program.string(), "--work-dir",
                                  (dir / "l2").string(), "--enable-chip-swimlane"},
                                 dir, 300);
  ASSERT_EQ(l2.exit_code, 0) << l2.output;
  EXPECT_NE(l2.output.find("big.json: loading the program"), std::string::npos) << l2.output;
  EXPECT_NE(l2.output.find("/30000 tasks ("), std::string::npos) << l2.output;
  EXPECT_NE(l2.output.find("\r\033[K"), std::string::npos);  // redrawn in place
  // Not on a terminal (a pipe, a log file): no progress line at all.
  auto piped = RunCommand(
      {Bin("dfx-coordinator"), "run", program.string(), "--work-dir", (dir / "l2p").string()}, dir);
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.err.find("tasks ("), std::string::npos) << piped.err;
  EXPECT_EQ(piped.err.find('\r'), std::string::npos) << piped.err;

  TerminalRun l3 = RunOnTerminal(
      {Bin("dfx-coordinator"), "run", kVector.string(), "--ranks", "2", "--launcher", "local",
       "--work-dir", (dir / "l3").string(), "--enable-chip-swimlane", "--swimlane-traces", "eager"},
      dir, 300);
  ASSERT_EQ(l3.exit_code, 0) << l3.output;
  EXPECT_NE(l3.output.find(" ranks done, "), std::string::npos) << l3.output;
  EXPECT_NE(l3.output.find("converting swimlane records 1/2"), std::string::npos) << l3.output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dfx::e2e
