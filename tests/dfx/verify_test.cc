// Viewers verify what they read (issue 46, case 8), on one real 2-rank run
// in a work dir whose name holds a space and a quote, with a dispatch that
// fails: a changed byte is refused with both checksums, a truncated args.bin
// fails, `summary` marks the failed dispatch with its error, and the printed
// "dig further" commands work when pasted into a shell.
#include <gtest/gtest.h>

#include "tests/dfx/dfx_test_util.h"

namespace dfx::e2e {
namespace {

// The run shared by the tests of this file: rank0/d1 fails ("injected
// kernel failure"), everything else is ok.
const fs::path& FailingRun() {
  static const fs::path work = [] {
    fs::path dir = TestDir("verify");
    EXPECT_TRUE(WriteFileAtomic(dir / "plan.json", R"({"programs": {
        "vec": ")" + Source("examples/vector_pipeline.json").string() +
                                                       R"(",
        "fail": ")" + Source("tests/l3/testdata/fail.json").string() +
                                                       R"("},
      "steps": [{"program": "vec", "ranks": "all"}, {"program": "fail", "rank": 0}]})")
                    .ok());
    const fs::path w = dir / "work dir's x";
    auto r = Coordinator(dir / "plan.json", w,
                         {"--ranks", "2", "--launcher", "local", "--enable-chip-swimlane", "1",
                          "--enable-dep-gen", "--dump-args", "2"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    return w;
  }();
  return work;
}

CommandResult View(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {Bin("dfx-view")};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, FailingRun().parent_path() / "logs", 120);
}

// A copy of the run's outputs to damage.
fs::path Copy(const std::string& name) {
  const fs::path copy = FailingRun().parent_path() / name;
  fs::remove_all(copy);
  fs::copy(FailingRun() / "dfx_outputs", copy, fs::copy_options::recursive);
  return copy;
}

// The line of `text` that starts with `prefix`, without it.
std::string LineAfter(const std::string& text, const std::string& prefix) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return "";
  const size_t end = text.find('\n', at);
  return text.substr(at + prefix.size(), end == std::string::npos ? end : end - at - prefix.size());
}

TEST(VerifyTest, AChangedByteIsRefusedNamingBothChecksums) {
  const fs::path out = Copy("changed");
  const fs::path deps = out / "rank1/d0/deps.json";
  std::string bytes = Slurp(deps);
  ASSERT_FALSE(bytes.empty());
  bytes[bytes.size() / 2] = bytes[bytes.size() / 2] == ' ' ? '\t' : ' ';
  ASSERT_TRUE(WriteFileAtomic(deps, bytes).ok());
  std::string expected;
  const Json manifest = LoadJson(out / "run_manifest.json");
  for (const auto& d : manifest["dispatches"]) {
    for (const auto& a : d["artifacts"]) {
      if (a["path"] == "rank1/d0/deps.json") expected = a["checksum"].get<std::string>();
    }
  }
  ASSERT_FALSE(expected.empty());
  auto refused = View({"deps", deps.string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_NE(refused.err.find(deps.string() + ": checksum xxh64:"), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("does not match " + expected), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--no-verify"), std::string::npos) << refused.err;
  // The run-level viewers read it too.
  EXPECT_EQ(View({"summary", out.string()}).exit_code, 1);
  auto anyway = View({"deps", deps.string(), "--no-verify"});
  EXPECT_EQ(anyway.exit_code, 0) << anyway.err;
  EXPECT_NE(anyway.err.find("Warning: " + deps.string() + ": checksum"), std::string::npos)
      << anyway.err;
  // The untouched files of the same run still read.
  EXPECT_EQ(View({"deps", (out / "rank0/d0/deps.json").string()}).exit_code, 0);
}

TEST(VerifyTest, ATruncatedArgsBinFailsNamingTheFileAndTheOffset) {
  const fs::path out = Copy("truncated");
  const fs::path dump = out / "rank1/d0/args_dump";
  const uint64_t size = fs::file_size(dump / "args.bin");
  ASSERT_GT(size, 16u);
  fs::resize_file(dump / "args.bin", size / 2);
  auto refused = View({"dump", dump.string(), "--export"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.err.find("checksum"), std::string::npos) << refused.err;
  auto cut = View({"dump", dump.string(), "--export", "--no-verify"});
  EXPECT_EQ(cut.exit_code, 1) << "not exported as empty tensors\n" << cut.out;
  EXPECT_NE(cut.err.find((dump / "args.bin").string()), std::string::npos) << cut.err;
  EXPECT_NE(cut.err.find("at offset"), std::string::npos) << cut.err;
  EXPECT_NE(cut.err.find("truncated"), std::string::npos) << cut.err;
}

TEST(VerifyTest, SummaryMarksTheFailedDispatchWithItsError) {
  const fs::path out = FailingRun() / "dfx_outputs";
  auto table = View({"summary", out.string()});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("run status: failed"), std::string::npos) << table.out;
  const std::string marked = LineAfter(table.out, "  !! FAILED");
  EXPECT_NE(marked.find("rank0/d1"), std::string::npos) << table.out;
  EXPECT_NE(marked.find("injected kernel failure"), std::string::npos) << table.out;
  auto json = View({"summary", out.string(), "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  Json s = Json::parse(json.out);
  EXPECT_EQ(s["run_status"], "failed");
  ASSERT_FALSE(s["not_ok"].empty()) << json.out;
  EXPECT_EQ(s["not_ok"][0]["what"], "rank0/d1");
  EXPECT_EQ(s["not_ok"][0]["status"], "failed");
}

TEST(VerifyTest, PrintedCommandsWorkWhenPastedWithASpaceAndAQuoteInTheWorkDir) {
  const fs::path out = FailingRun() / "dfx_outputs";
  // The run's README.txt (the coordinator's end-of-run lines print the same).
  const std::string readme = Slurp(out / "README.txt");
  const std::string summary = LineAfter(readme, "The run summary: ");
  ASSERT_FALSE(summary.empty()) << readme;
  auto pasted = RunCommand({"/bin/sh", "-c", summary}, FailingRun().parent_path() / "logs", 120);
  EXPECT_EQ(pasted.exit_code, 0) << summary << "\n" << pasted.err;
  EXPECT_NE(pasted.out.find("run status: failed"), std::string::npos) << pasted.out;
  // dfx-view summary's own "dig further" line.
  auto brief = View({"summary", out.string(), "--brief", "--view-command", Bin("dfx-view")});
  ASSERT_EQ(brief.exit_code, 0) << brief.err;
  std::string dig = LineAfter(brief.out, "dig further: ");
  dig = dig.substr(0, dig.find("   |"));
  ASSERT_FALSE(dig.empty()) << brief.out;
  auto again = RunCommand({"/bin/sh", "-c", dig}, FailingRun().parent_path() / "logs", 120);
  EXPECT_EQ(again.exit_code, 0) << dig << "\n" << again.err;
}

}  // namespace
}  // namespace dfx::e2e
