#include "coordinator/launcher.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace dfx::coordinator {
namespace {

using V = std::vector<std::string>;

AgentLaunch Launch() {
  AgentLaunch l;
  l.agent_binary = "/opt/dfx/bin/dfx-rank-agent";
  l.launcher_args = {"--hostfile", "hosts"};
  l.cores = 2;
  protocol::CurveClient curve;
  l.curve = curve;
  return l;
}

TEST(LauncherTest, RecognisesMpiFlavours) {
  EXPECT_EQ(MpiFlavourFromVersion("mpirun (Open MPI) 4.1.4\n\nReport bugs to ..."),
            MpiFlavour::kOpenMpi);
  EXPECT_EQ(MpiFlavourFromVersion("HYDRA build details:\n    Version: 4.0.2"), MpiFlavour::kMpich);
  EXPECT_EQ(MpiFlavourFromVersion("Intel(R) MPI Library for Linux* OS, Version 2021.6"),
            MpiFlavour::kIntelMpi);
  EXPECT_EQ(MpiFlavourFromVersion("something else"), MpiFlavour::kUnknown);
}

TEST(LauncherTest, OpenMpiGetsItsFlagsOthersDoNot) {
  AgentLaunch l = Launch();
  l.mpi_flavour = MpiFlavour::kOpenMpi;
  l.root = true;
  const V agent_args = {"--coordinator", "tcp://h:1"};
  V argv = LauncherArgv(Launcher::kMpirun, 4, l, agent_args);
  V expected = {"mpirun", "--enable-recovery", "--allow-run-as-root", "--oversubscribe"};
  for (const std::string& name : protocol::CurveClientEnvironmentNames()) {
    expected.insert(expected.end(), {"-x", name});
  }
  expected.insert(expected.end(), {"-np", "4", "--hostfile", "hosts"});
  // Each rank runs under the wrapper that reports its end (launcher_report.h).
  for (const std::string& word : RankWrapperArgv()) expected.push_back(word);
  expected.insert(expected.end(), {"/opt/dfx/bin/dfx-rank-agent", "--coordinator", "tcp://h:1"});
  EXPECT_EQ(argv, expected);

  l.mpi_flavour = MpiFlavour::kMpich;
  l.launcher_binary = "/opt/mpich/bin/mpiexec";
  l.agent_command = "dfx-rank-agent";
  argv = LauncherArgv(Launcher::kMpirun, 2, l, agent_args);
  EXPECT_EQ(argv.front(), "/opt/mpich/bin/mpiexec");
  for (const char* flag : {"--enable-recovery", "--allow-run-as-root", "--oversubscribe", "-x"}) {
    EXPECT_EQ(std::find(argv.begin(), argv.end(), flag), argv.end()) << flag;
  }
  EXPECT_NE(std::find(argv.begin(), argv.end(), "-genvlist"), argv.end());
  EXPECT_EQ(argv[argv.size() - 3], "dfx-rank-agent");  // found on each host's PATH

  l.mpi_flavour = MpiFlavour::kUnknown;
  l.launcher_binary.clear();
  argv = LauncherArgv(Launcher::kMpirun, 2, l, agent_args);
  V plain = {"mpirun", "-np", "2", "--hostfile", "hosts"};
  for (const std::string& word : RankWrapperArgv()) plain.push_back(word);
  plain.insert(plain.end(), {"dfx-rank-agent", "--coordinator", "tcp://h:1"});
  EXPECT_EQ(argv, plain);
}

TEST(LauncherTest, SrunKeepsTheOtherTasksAndTheEnvironment) {
  AgentLaunch l = Launch();
  l.launcher_args = {"--nodes", "2"};
  const V argv = LauncherArgv(Launcher::kSrun, 8, l, {"--session", "ab"});
  EXPECT_EQ(argv, (V{"srun", "--ntasks=8", "--kill-on-bad-exit=0", "--export=ALL", "--nodes", "2",
                     "/opt/dfx/bin/dfx-rank-agent", "--session", "ab"}));
}

}  // namespace
}  // namespace dfx::coordinator
