#include "coordinator/launcher_report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "common/subprocess.h"

namespace dfx::coordinator {
namespace {

TEST(LauncherReportTest, ReadsTheRankWrappersLine) {
  auto r = ParseLauncherLine("dfx-rank-exit: rank=1 host=node7 status=3\n", 4);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].launcher_rank, 1);
  EXPECT_EQ(r[0].host, "node7");
  EXPECT_EQ(r[0].how, "exit code 3");
  EXPECT_FALSE(r[0].clean);
  // A guard or a shell reports a signal as 128 + N.
  r = ParseLauncherLine("[1,2]<stderr>:dfx-rank-exit: rank=2 host=n status=137", 4);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].how, "killed by signal 9 (Killed)");
  r = ParseLauncherLine("dfx-rank-exit: rank=0 host=n status=0", 4);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(r[0].clean);
  EXPECT_NE(ParseLauncherLine("dfx-rank-exit: rank=0 host=n status=127", 1)[0].how.find(
                "command not found"),
            std::string::npos);
  // A rank outside the launch, or a line that is not whole, says nothing.
  EXPECT_TRUE(ParseLauncherLine("dfx-rank-exit: rank=4 host=n status=3", 4).empty());
  EXPECT_TRUE(ParseLauncherLine("dfx-rank-exit: rank=-1 host=n status=3", 4).empty());
  EXPECT_TRUE(ParseLauncherLine("dfx-rank-exit: rank=1 status=3", 4).empty());
  EXPECT_TRUE(ParseLauncherLine("dfx-rank-exit: rank=1 host=n status=x", 4).empty());
  EXPECT_TRUE(ParseLauncherLine("an agent's log line", 4).empty());
}

TEST(LauncherReportTest, ReadsSrunsTaskLines) {
  auto r = ParseLauncherLine("srun: error: vm: task 1: Exited with exit code 3", 2);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].launcher_rank, 1);
  EXPECT_EQ(r[0].host, "vm");
  EXPECT_EQ(r[0].how, "exit code 3");
  r = ParseLauncherLine("srun: error: node2: tasks 0-1,3: Killed", 3);
  ASSERT_EQ(r.size(), 2u);  // task 3 is not of this launch
  EXPECT_EQ(r[1].launcher_rank, 1);
  EXPECT_EQ(r[1].how, "killed by signal 9 (Killed)");
  r = ParseLauncherLine("srun: error: n: task 0: Segmentation fault (core dumped)", 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].how, "killed by signal 11 (Segmentation fault)");
  EXPECT_TRUE(ParseLauncherLine("srun: error: Unable to allocate resources", 2).empty());
  EXPECT_TRUE(ParseLauncherLine("srun: error: n: task 2-1: Killed", 4).empty());
}

// The real wrapper under /bin/sh: the agent command's status comes back
// in one line on stderr, through the pipe, and other lines pass.
TEST(LauncherReportTest, TheWrapperReportsThroughThePipe) {
  auto output = LauncherOutput::Open(1);
  ASSERT_TRUE(output.ok());
  std::vector<std::string> argv = RankWrapperArgv();
  argv.insert(argv.end(), {"/bin/sh", "-c", "exit 3"});
  SpawnOptions options;
  options.stderr_fd = (*output)->write_fd();
  setenv("PMI_RANK", "0", 1);
  auto child = ChildProcess::Spawn(argv, options);
  unsetenv("PMI_RANK");
  ASSERT_TRUE(child.ok()) << child.status().message();
  (*output)->Start();
  ASSERT_TRUE(child->Wait(10000));
  EXPECT_EQ(child->exit_code(), 3);
  std::vector<RankExitReport> reports;
  for (int i = 0; i < 500 && reports.empty(); ++i) {
    reports = (*output)->Take();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].launcher_rank, 0);
  EXPECT_EQ(reports[0].how, "exit code 3");
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  EXPECT_EQ(reports[0].host, host);
}

// SIGTERM to the wrapper reaches the agent command, and the wrapper waits
// for it: an agent gets to finish writing its spool.
TEST(LauncherReportTest, TheWrapperPassesSigtermOnAndWaits) {
  auto output = LauncherOutput::Open(1);
  ASSERT_TRUE(output.ok());
  std::vector<std::string> argv = RankWrapperArgv();
  argv.insert(argv.end(),
              {"/bin/sh", "-c", "trap 'sleep 0.3; exit 7' TERM; while :; do sleep 0.05; done"});
  SpawnOptions options;
  options.stderr_fd = (*output)->write_fd();
  setenv("PMI_RANK", "0", 1);
  auto child = ChildProcess::Spawn(argv, options);
  unsetenv("PMI_RANK");
  ASSERT_TRUE(child.ok());
  (*output)->Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(child->pid(), SIGTERM);  // the wrapper only, not its group
  ASSERT_TRUE(child->Wait(10000));
  EXPECT_EQ(child->exit_code(), 7) << child->Describe();
}

}  // namespace
}  // namespace dfx::coordinator
