#include "common/subprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

namespace dfx {
namespace {

TEST(SubprocessTest, CapturesOutputAndExitCode) {
  auto run = RunCaptured({"sh", "-c", "echo out; echo err >&2; exit 3"}, 30);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->exit_code, 3);
  EXPECT_FALSE(run->timed_out);
  EXPECT_NE(run->output.find("out"), std::string::npos);
  EXPECT_NE(run->output.find("err"), std::string::npos);
}

TEST(SubprocessTest, ATimeoutKillsTheWholeGroup) {
  auto run = RunCaptured({"sh", "-c", "sleep 30 & sleep 30"}, 0.2);
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->timed_out);
  EXPECT_EQ(run->exit_code, -1);
  EXPECT_LT(run->wall_s, 10);
}

TEST(SubprocessTest, ExtraEnvironmentReachesTheChildOnly) {
  auto run = RunCaptured({"sh", "-c", "echo \"[$DFX_SUBPROCESS_TEST]\""}, 30,
                         SpawnOptions{.extra_env = {"DFX_SUBPROCESS_TEST=secret"}});
  ASSERT_TRUE(run.ok());
  EXPECT_NE(run->output.find("[secret]"), std::string::npos) << run->output;
  EXPECT_EQ(std::getenv("DFX_SUBPROCESS_TEST"), nullptr);
}

TEST(SubprocessTest, MissingProgramIsAnErrorNamingIt) {
  auto child = ChildProcess::Spawn({"dfx-no-such-program-xyz"});
  ASSERT_FALSE(child.ok());
  EXPECT_NE(child.status().message().find("dfx-no-such-program-xyz"), std::string::npos);
  EXPECT_FALSE(FindExecutable("dfx-no-such-program-xyz").has_value());
  EXPECT_TRUE(FindExecutable("sh").has_value());
  auto found = FindProjectBinary("dfx-no-such-program-xyz", "DFX_NO_SUCH_ENV", {});
  ASSERT_FALSE(found.ok());
  EXPECT_NE(found.status().message().find("DFX_NO_SUCH_ENV"), std::string::npos);
}

// Whether `pid` is gone: no such process, or a zombie nobody reaped yet.
bool Gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

// A child started with a parent-death signal ends when the process that
// started it ends, here by _exit without any cleanup (as SIGKILL would).
TEST(SubprocessTest, AParentDeathSignalEndsTheChildWithItsParent) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    SpawnOptions options;
    options.parent_death_signal = SIGKILL;
    auto child = ChildProcess::Spawn({"sleep", "60"}, options);
    const pid_t pid = child.ok() ? child->pid() : -1;
    [[maybe_unused]] ssize_t n = ::write(fds[1], &pid, sizeof pid);
    ::_exit(0);  // no destructor: the child is not killed by ChildProcess
  }
  ::close(fds[1]);
  pid_t child = -1;
  ASSERT_EQ(::read(fds[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(parent, &status, 0);
  ASSERT_GT(child, 0);
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = Gone(child);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "pid " << child << " outlived the process that started it";
  if (!gone) ::kill(child, SIGKILL);
}

TEST(SubprocessTest, TheParentDeathPathReportsWhatTheSpawnPathDoes) {
  SpawnOptions options;
  options.parent_death_signal = SIGKILL;
  auto missing = ChildProcess::Spawn({"dfx-no-such-program-xyz"}, options);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("dfx-no-such-program-xyz"), std::string::npos);
  auto run = RunCaptured(
      {"sh", "-c", "echo \"[$DFX_SUBPROCESS_TEST]\"; exit 4"}, 30,
      SpawnOptions{.extra_env = {"DFX_SUBPROCESS_TEST=secret"}, .parent_death_signal = SIGKILL});
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->exit_code, 4);
  EXPECT_NE(run->output.find("[secret]"), std::string::npos) << run->output;
}

TEST(SubprocessTest, DescribesHowAChildEnded) {
  auto child = ChildProcess::Spawn({"sh", "-c", "kill -9 $$"});
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(child->Wait(10000));
  EXPECT_FALSE(child->succeeded());
  EXPECT_NE(child->Describe().find("signal 9"), std::string::npos) << child->Describe();
}

TEST(SubprocessTest, ShellQuoteMatchesShlex) {
  EXPECT_EQ(ShellQuote("/a/b.json"), "/a/b.json");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\"'\"'s'");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellCommand({"dfx-view", "a b"}), "dfx-view 'a b'");
}

TEST(SubprocessTest, SplitShellWordsInvertsShellQuote) {
  using V = std::vector<std::string>;
  EXPECT_EQ(*SplitShellWords("  --hostfile h  --map-by node "),
            (V{"--hostfile", "h", "--map-by", "node"}));
  EXPECT_EQ(*SplitShellWords("-H 'a b',c \"x\\\"y\" z\\ w"), (V{"-H", "a b,c", "x\"y", "z w"}));
  EXPECT_EQ(*SplitShellWords(""), V{});
  const V words = {"--mca", "btl tcp,self", "it's", ""};
  EXPECT_EQ(*SplitShellWords(ShellCommand(words)), words);
  EXPECT_FALSE(SplitShellWords("'open").ok());
  EXPECT_FALSE(SplitShellWords("\"open").ok());
}

}  // namespace
}  // namespace dfx
