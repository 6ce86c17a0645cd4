// Signals end a run cleanly, and a stopped coordinator owns its stop (issue
// 46, cases 1 and 6), end to end: the real coordinator, rank agents and
// mpirun on loopback. Ctrl-C is typed on a pseudo-terminal (the terminal
// sends SIGINT to its foreground process group, as a user's would); the
// run must end "interrupted" with nothing of it left running, and `gather`
// must fetch what the agents kept. Waits are bounded; the only time bounds
// asserted are the task's own ("no process of the run is left 3 s later").
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>

#include <map>

#include "common/subprocess.h"
#include "tests/l3/e2e_util.h"
#include "tests/l3/fault_hooks.h"

namespace dfx::e2e {
namespace {

const fs::path kBusy = Source("tests/l3/testdata/busy.json");  // 4 x 0.5 s on its chip
// With the DFX flags below, 3 MiB of artifacts in 6 chunks per dispatch:
// two dispatches' streams exceed the credit window (8 chunks).
const fs::path kLargeDag = Source("examples/large_dag_2k.json");

// `per_rank` busy dispatches on each of `ranks` ranks.
fs::path WritePlan(const fs::path& dir, int ranks, int per_rank, const fs::path& program = kBusy) {
  std::string steps;
  for (int i = 0; i < per_rank; ++i) {
    for (int r = 0; r < ranks; ++r) {
      if (!steps.empty()) steps += ", ";
      steps += R"({"program": "busy", "rank": )" + std::to_string(r) + "}";
    }
  }
  const fs::path plan = dir / "plan.json";
  EXPECT_TRUE(WriteFileAtomic(plan, R"({"programs": {"busy": ")" + program.string() +
                                        R"("}, "steps": [)" + steps + "]}")
                  .ok());
  return plan;
}

// The coordinator's command line for `plan`; the DFX flags give every
// dispatch several artifacts to stream.
std::vector<std::string> RunArgv(const fs::path& plan, const fs::path& work, int ranks,
                                 const std::string& launcher) {
  std::vector<std::string> argv = {Bin("dfx-coordinator"), "run", plan.string(), "--ranks",
                                   std::to_string(ranks)};
  for (const std::string& flag : LauncherFlags(launcher)) argv.push_back(flag);
  argv.insert(argv.end(), {"--work-dir", work.string(), "--enable-dep-gen",
                           "--enable-chip-swimlane", "--enable-pmu"});
  return argv;
}

// A slow disk on the coordinator's side: every chunk write takes 250 ms, so
// a dispatch's artifacts are still streaming when the signal comes.
const std::vector<std::string> kSlowDisk = {"DFX_FAULT_COORDINATOR_WRITE_DELAY_MS=250"};
// Slower still: two dispatches' streams (8 chunks, 4.8 s) outlast the 2 s
// an interrupted run gives what is in flight.
const std::vector<std::string> kSlowerDisk = {"DFX_FAULT_COORDINATOR_WRITE_DELAY_MS=600"};

// A child on a new pseudo-terminal, its session leader and foreground
// process group, like a command typed in a terminal. What it writes there
// is read as it comes (so it never blocks on a full terminal).
class PtyProcess {
 public:
  PtyProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY);
    EXPECT_GE(master_, 0);
    EXPECT_EQ(::grantpt(master_), 0);
    EXPECT_EQ(::unlockpt(master_), 0);
    const std::string slave = ::ptsname(master_);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setsid();
      const int fd = ::open(slave.c_str(), O_RDWR);
      if (fd < 0 || ::ioctl(fd, TIOCSCTTY, 0) != 0) ::_exit(126);
      ::dup2(fd, 0);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(master_);
      ExecInChild(argv, env);
    }
    ::fcntl(master_, F_SETFL, O_NONBLOCK);
  }
  ~PtyProcess() {
    if (!done_) {
      ::kill(pid_, SIGKILL);
      Wait(30);
    }
    ::close(master_);
  }
  PtyProcess(const PtyProcess&) = delete;
  PtyProcess& operator=(const PtyProcess&) = delete;

  // What the user types.
  void Type(const std::string& keys) {
    ASSERT_EQ(::write(master_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  }
  bool Wait(int timeout_s) {
    return WaitFor(
        [&] {
          Drain();
          int status = 0;
          if (!done_ && ::waitpid(pid_, &status, WNOHANG) == pid_) {
            done_ = true;
            status_ = status;
          }
          return done_;
        },
        timeout_s);
  }
  bool running() {
    Drain();
    return !Wait(0);
  }
  int exit_code() const { return done_ && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1; }
  const std::string& output() {
    Drain();
    return output_;
  }

 private:
  void Drain() {
    char buf[4096];
    ssize_t n = 0;
    while ((n = ::read(master_, buf, sizeof buf)) > 0) output_.append(buf, static_cast<size_t>(n));
  }
  int master_ = -1;
  pid_t pid_ = -1;
  bool done_ = false;
  int status_ = 0;
  std::string output_;
};

std::string SessionHex(const fs::path& work) {
  Json s;
  WaitFor(
      [&] {
        s = LoadJson(work / "dfx_outputs/.session.json");
        return s.is_object();
      },
      60);
  return s.is_object() ? s["session"].get<std::string>() : std::string();
}

// True once some artifact of `dir` (under dfx_outputs) is being streamed
// (a temporary name) or is in place.
bool Streaming(const fs::path& work, const std::string& dir) {
  for (const std::string& f : Tree(work / "dfx_outputs" / dir)) {
    if (f != "dispatch_program.json") return true;
  }
  return false;
}

// The processes of the run (coordinator, agents, guards, mpirun): their
// command lines name the session.
bool NoneLeft(const std::string& hex) { return FindProcesses({hex}).empty(); }

std::map<std::string, std::string> DispatchStates(const fs::path& work) {
  std::map<std::string, std::string> states;
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  if (!m.is_object()) return states;
  for (const auto& d : m["dispatches"]) {
    states[d["dir"].get<std::string>()] = d["status"].get<std::string>();
  }
  return states;
}

// After the run: `gather` fetches what the spools held, the spool is empty
// and no dispatch is left "in_spool"; every "ok" one has its files in place.
void ExpectGatherRecoversEverything(const fs::path& dir, const fs::path& work,
                                    const std::string& hex) {
  const auto before = DispatchStates(work);
  const auto spooled = SpooledArtifacts(work / ".dfx_spool" / hex);
  auto r = RunCommand({Bin("dfx-coordinator"), "gather", "--work-dir", work.string()}, dir, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_TRUE(SpooledArtifacts(work / ".dfx_spool" / hex).empty());
  for (const auto& f : spooled) {
    EXPECT_TRUE(fs::exists(work / "dfx_outputs" / f)) << f << " was spooled but not recovered";
  }
  const auto after = DispatchStates(work);
  for (const auto& [d, state] : before) {
    EXPECT_NE(after.at(d), "in_spool") << d;
    // A dispatch its agent had finished is whole now; one it was still
    // running stays interrupted, with what reached the spool in place.
    if (state == "in_spool") {
      EXPECT_TRUE(after.at(d) == "ok" || after.at(d) == "interrupted") << d << ": " << after.at(d);
    }
    if (after.at(d) == "ok") {
      EXPECT_TRUE(fs::exists(work / "dfx_outputs" / d / "deps.json")) << d;
    }
  }
  for (const auto& f : Tree(work / "dfx_outputs")) {
    EXPECT_FALSE(IsTemporaryPath(f)) << f;
  }
}

// The manifest of an interrupted run: "interrupted", and each dispatch
// either complete, in a spool, interrupted or never run.
void ExpectInterruptedManifest(const fs::path& work) {
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  ASSERT_TRUE(m.is_object());
  EXPECT_EQ(m["status"], "interrupted");
  size_t unfinished = 0;
  for (const auto& d : m["dispatches"]) {
    const std::string s = d["status"];
    EXPECT_TRUE(s == "ok" || s == "in_spool" || s == "interrupted" || s == "not_run") << s;
    unfinished += s == "ok" ? 0 : 1;
  }
  EXPECT_GT(unfinished, 0u) << "the signal came mid-run";
}

void CtrlCOnATerminal(const std::string& name, bool mid_stream) {
  if (mid_stream) DFX_SKIP_WITHOUT_FAULT_HOOKS();  // a slow disk
  fs::path dir = TestDir(name);
  const fs::path work = dir / "w";
  PtyProcess coordinator(RunArgv(WritePlan(dir, 2, 6), work, 2, "local"),
                         mid_stream ? kSlowerDisk : std::vector<std::string>{});
  const std::string hex = SessionHex(work);
  ASSERT_FALSE(hex.empty()) << coordinator.output();
  ASSERT_TRUE(WaitFor(
      [&] {
        return mid_stream ? Streaming(work, "rank1/d0")
                          : fs::exists(work / "dfx_outputs/rank1/d1/dispatch_program.json");
      },
      120))
      << coordinator.output();
  coordinator.Type("\x03");
  ASSERT_TRUE(coordinator.Wait(60)) << coordinator.output();
  EXPECT_EQ(coordinator.exit_code(), 130) << coordinator.output();
  const std::string out = coordinator.output();
  EXPECT_NE(out.find("SIGINT: stopping the run"), std::string::npos) << out;
  EXPECT_NE(out.find("dfx-coordinator gather --work-dir " + ShellQuote(work.string())),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("verdict: FAILED: interrupted by SIGINT"), std::string::npos) << out;
  ExpectInterruptedManifest(work);
  if (mid_stream) {
    // What was streaming when the coordinator stopped waits in a spool.
    size_t in_spool = 0;
    for (const auto& [d, state] : DispatchStates(work)) in_spool += state == "in_spool" ? 1 : 0;
    EXPECT_GE(in_spool, 1u) << out;
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_TRUE(NoneLeft(hex)) << "a process of the run outlived it by 3 s";
  ExpectGatherRecoversEverything(dir, work, hex);
  fs::remove_all(dir);
}

TEST(SignalsTest, CtrlCMidDispatchEndsTheRunInterrupted) {
  CtrlCOnATerminal("ctrl_c_dispatch", /*mid_stream=*/false);
}

TEST(SignalsTest, CtrlCMidStreamKeepsWhatIsInFlightInTheSpools) {
  CtrlCOnATerminal("ctrl_c_stream", /*mid_stream=*/true);
}

// A second Ctrl-C while the first is handled exits at once; the manifest
// on disk is whole and already says "interrupted"; nothing of the run is
// left (the agents die with the coordinator) and gather still works.
TEST(SignalsTest, ASecondCtrlCExitsAtOnceLeavingAValidManifest) {
  DFX_SKIP_WITHOUT_FAULT_HOOKS();
  fs::path dir = TestDir("ctrl_c_twice");
  const fs::path work = dir / "w";
  PtyProcess coordinator(RunArgv(WritePlan(dir, 2, 6), work, 2, "local"), kSlowerDisk);
  const std::string hex = SessionHex(work);
  ASSERT_FALSE(hex.empty()) << coordinator.output();
  ASSERT_TRUE(WaitFor([&] { return Streaming(work, "rank0/d0"); }, 120)) << coordinator.output();
  coordinator.Type("\x03");
  ASSERT_TRUE(WaitFor(
      [&] { return coordinator.output().find("SIGINT: stopping the run") != std::string::npos; },
      30))
      << coordinator.output();
  coordinator.Type("\x03");
  ASSERT_TRUE(coordinator.Wait(30)) << coordinator.output();
  EXPECT_EQ(coordinator.exit_code(), 130) << coordinator.output();
  auto m = ReadJsonFile(work / "dfx_outputs/run_manifest.json");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ((*m)["status"], "interrupted");
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_TRUE(NoneLeft(hex)) << "a process of the run outlived it by 3 s";
  auto r = RunCommand({Bin("dfx-coordinator"), "gather", "--work-dir", work.string()}, dir, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(DispatchStates(work).at("rank0/d0"), "running");
  fs::remove_all(dir);
}

void StopWith(int signal, const std::string& launcher, const std::string& name) {
  DFX_SKIP_WITHOUT_FAULT_HOOKS();
  fs::path dir = TestDir(name);
  const fs::path work = dir / "w";
  Process coordinator(RunArgv(WritePlan(dir, 2, 6), work, 2, launcher), dir, kSlowDisk);
  const std::string hex = SessionHex(work);
  ASSERT_FALSE(hex.empty()) << coordinator.err();
  ASSERT_TRUE(WaitFor([&] { return Streaming(work, "rank0/d0"); }, 120)) << coordinator.err();
  coordinator.Signal(signal);
  ASSERT_TRUE(coordinator.Wait(60)) << coordinator.err();
  EXPECT_EQ(coordinator.exit_code(), 128 + signal) << coordinator.err();
  EXPECT_NE(coordinator.out().find("dfx-coordinator gather --work-dir"), std::string::npos);
  ExpectInterruptedManifest(work);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_TRUE(NoneLeft(hex)) << "a process of the run outlived it by 3 s";
  ExpectGatherRecoversEverything(dir, work, hex);
  fs::remove_all(dir);
}

TEST(SignalsTest, SigtermEndsALocalRunInterrupted) { StopWith(SIGTERM, "local", "sigterm"); }

TEST(SignalsTest, SigtermEndsAnMpirunRunAndMpirunWithIt) {
  StopWith(SIGTERM, "mpirun", "sigterm_mpi");
}

TEST(SignalsTest, SigtermEndsAnMpichRunAndMpiexecWithIt) {
  StopWith(SIGTERM, "mpich", "sigterm_mpich");
}

// L2: a stop signal ends the exec pass; the run's manifest says
// "interrupted" and the exec child does not outlive the coordinator.
TEST(SignalsTest, SigtermEndsAnL2RunInterrupted) {
  fs::path dir = TestDir("sigterm_l2");
  const fs::path work = dir / "w";
  Process coordinator(
      {Bin("dfx-coordinator"), "run", kBusy.string(), "--work-dir", work.string(), "--enable-pmu"},
      dir);
  const std::string exec_marker = work.string();
  ASSERT_TRUE(WaitFor(
      [&] {
        return !FindProcesses({"dfx-rank-agent", exec_marker}).empty();
      },
      60))
      << coordinator.err();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  coordinator.Signal(SIGTERM);
  ASSERT_TRUE(coordinator.Wait(30)) << coordinator.err();
  EXPECT_EQ(coordinator.exit_code(), 128 + SIGTERM) << coordinator.err() << coordinator.out();
  EXPECT_NE(coordinator.out().find("interrupted by SIGTERM"), std::string::npos)
      << coordinator.out();
  const Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  ASSERT_TRUE(m.is_object()) << coordinator.err();
  EXPECT_EQ(m["status"], "interrupted");
  EXPECT_EQ(m["dispatches"][0]["status"], "interrupted");
  EXPECT_TRUE(WaitFor(
      [&] {
        return FindProcesses({"dfx-rank-agent", exec_marker}).empty();
      },
      3))
      << "the exec child outlived its coordinator by 3 s";
  fs::remove_all(dir);
}

// No handler can run on SIGKILL: the agents (a parent-death signal) and
// mpirun (the same, then it ends its ranks) go with the coordinator.
void KillCoordinator(const std::string& launcher, const std::string& name) {
  fs::path dir = TestDir(name);
  const fs::path work = dir / "w";
  Process coordinator(RunArgv(WritePlan(dir, 2, 6), work, 2, launcher), dir);
  const std::string hex = SessionHex(work);
  ASSERT_FALSE(hex.empty()) << coordinator.err();
  ASSERT_TRUE(WaitFor([&] { return fs::exists(work / "dfx_outputs/rank1/d0"); }, 120))
      << coordinator.err();
  ASSERT_FALSE(FindProcesses({"dfx-rank-agent", hex}).empty());
  coordinator.Signal(SIGKILL);
  ASSERT_TRUE(coordinator.Wait(30));
  // Well within the heartbeat timeout (10 s) the agents would otherwise wait.
  EXPECT_TRUE(WaitFor([&] { return NoneLeft(hex); }, 5))
      << "a process of the run outlived its SIGKILLed coordinator";
  fs::remove_all(dir);
}

TEST(SignalsTest, SigkilledCoordinatorLeavesNoLocalAgent) { KillCoordinator("local", "kill9"); }

TEST(SignalsTest, SigkilledCoordinatorLeavesNoMpirunNorAgent) {
  KillCoordinator("mpirun", "kill9_mpi");
}

TEST(SignalsTest, SigkilledCoordinatorLeavesNoMpiexecNorAgent) {
  KillCoordinator("mpich", "kill9_mpich");
}

// SIGSTOP for 15 s while a dispatch streams: the agent runs the next one,
// cannot stream it (no credit from a stopped coordinator), gives up after
// --heartbeat-timeout (10 s) and keeps its files; once continued the
// coordinator says it was paused, marks that dispatch "in_spool" (not
// failed), and prints the gather command, which fetches it.
TEST(SignalsTest, PausedCoordinatorReconcilesWithTheSpool) {
  DFX_SKIP_WITHOUT_FAULT_HOOKS();
  fs::path dir = TestDir("pause");
  const fs::path work = dir / "w";
  Process coordinator(RunArgv(WritePlan(dir, 1, 3, kLargeDag), work, 1, "local"), dir, kSlowDisk);
  const std::string hex = SessionHex(work);
  ASSERT_FALSE(hex.empty()) << coordinator.err();
  ASSERT_TRUE(WaitFor([&] { return Streaming(work, "rank0/d0"); }, 120)) << coordinator.err();
  coordinator.Signal(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::seconds(15));
  coordinator.Signal(SIGCONT);
  ASSERT_TRUE(coordinator.Wait(120)) << coordinator.err();
  EXPECT_EQ(coordinator.exit_code(), 1) << coordinator.err();
  const std::string err = coordinator.err();
  EXPECT_NE(err.find("this coordinator was paused for"), std::string::npos) << err;
  // The coordinator does not blame the agent's silence (its own stop caused it).
  EXPECT_EQ(err.find("(heartbeat deadline --heartbeat-timeout"), std::string::npos) << err;
  EXPECT_NE(coordinator.out().find("dfx-coordinator gather --work-dir"), std::string::npos)
      << coordinator.out();
  size_t in_spool = 0;
  for (const auto& [d, state] : DispatchStates(work)) {
    EXPECT_NE(state, "failed") << d << ": its files are in the spool, not lost";
    in_spool += state == "in_spool" ? 1 : 0;
  }
  EXPECT_GE(in_spool, 1u) << err;
  // The viewer says so too, with the command that fetches it: in its
  // summary when some dispatch's records are here, else in its refusal
  // (nothing to summarize yet; which one depends on when the pause came).
  auto summary = RunCommand({Bin("dfx-view"), "summary", (work / "dfx_outputs").string()}, dir, 60);
  ASSERT_TRUE(summary.exit_code == 0 || summary.exit_code == 1) << summary.err;
  const std::string said = summary.exit_code == 0 ? summary.out : summary.err;
  EXPECT_NE(said.find("IN_SPOOL"), std::string::npos) << summary.out << summary.err;
  EXPECT_NE(said.find("dispatch(es) are in an agent's spool, not here: "
                      "dfx-coordinator gather --work-dir"),
            std::string::npos)
      << summary.out << summary.err;
  ExpectGatherRecoversEverything(dir, work, hex);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dfx::e2e
