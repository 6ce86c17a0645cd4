#include "common/subprocess.h"

#include <gtest/gtest.h>

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
