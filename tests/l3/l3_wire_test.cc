// Artifact bytes on the wire end to end (docs/design.md §7): zstd-coded
// chunks land byte-identical to raw ones, the manifest records the bytes on
// the wire beside the artifact bytes, and a byte budget (--max-run-bytes)
// stops a stream during the run, leaves its file in the agent's spool and
// lets a `gather` with a larger budget fetch it later. Real coordinator and
// agents on loopback, virtual-clock chips (byte-identical artifacts run to run).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/l3/e2e_util.h"

namespace dfx::e2e {
namespace {

const fs::path kVector = Source("examples/vector_pipeline.json");

// A virtual-clock run of the vector pipeline on 2 ranks with dep_gen,
// swimlane records and PMU; `extra` flags appended.
CommandResult RunVector(const fs::path& dir, const fs::path& work,
                        const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {Bin("dfx-coordinator"),
                                   "run",
                                   kVector.string(),
                                   "--ranks",
                                   "2",
                                   "--launcher",
                                   "local",
                                   "--work-dir",
                                   work.string(),
                                   "--virtual-clock",
                                   "--enable-dep-gen",
                                   "--enable-chip-swimlane",
                                   "--enable-pmu",
                                   "--no-report",
                                   "--swimlane-traces",
                                   "lazy"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return RunCommand(argv, dir, 180);
}

// path -> the manifest's artifact entry, over every dispatch.
std::map<std::string, Json> Artifacts(const Json& manifest) {
  std::map<std::string, Json> out;
  for (const auto& d : manifest["dispatches"]) {
    for (const auto& a : d["artifacts"]) out[a["path"].get<std::string>()] = a;
  }
  return out;
}

TEST(L3WireTest, ZstdOnTheWireLandsTheSameBytesAsRaw) {
  const fs::path dir = TestDir("l3_wire_zstd");
  const fs::path raw_work = dir / "off", zstd_work = dir / "zstd", auto_work = dir / "auto";
  auto off = RunVector(dir, raw_work, {"--wire-compression", "off"});
  ASSERT_EQ(off.exit_code, 0) << off.err;
  auto zstd = RunVector(dir, zstd_work, {"--wire-compression", "zstd"});
  ASSERT_EQ(zstd.exit_code, 0) << zstd.err;
  const Json m_off = LoadJson(raw_work / "dfx_outputs/run_manifest.json");
  const Json m_zstd = LoadJson(zstd_work / "dfx_outputs/run_manifest.json");
  const auto a_off = Artifacts(m_off), a_zstd = Artifacts(m_zstd);
  ASSERT_FALSE(a_off.empty());
  ASSERT_EQ(a_off.size(), a_zstd.size());
  for (const auto& [path, entry] : a_off) {
    ASSERT_TRUE(a_zstd.count(path)) << path;
    EXPECT_EQ(entry["status"], "ok") << path;
    EXPECT_EQ(a_zstd.at(path)["status"], "ok") << path;
    EXPECT_EQ(Slurp(raw_work / "dfx_outputs" / path), Slurp(zstd_work / "dfx_outputs" / path))
        << path << " differs between a compressed and an uncompressed run";
    EXPECT_EQ(entry["checksum"], a_zstd.at(path)["checksum"]) << path;
    // Raw: the wire carries the file's bytes exactly.
    EXPECT_EQ(entry["wire_bytes"], entry["size"]) << path;
  }
  EXPECT_EQ(m_off["wire"]["compression"], "off");
  EXPECT_EQ(m_off["wire"]["wire_bytes"], m_off["wire"]["artifact_bytes"]);
  EXPECT_EQ(m_zstd["wire"]["compression"], "zstd");
  const uint64_t artifact = m_zstd["wire"]["artifact_bytes"], wire = m_zstd["wire"]["wire_bytes"];
  EXPECT_GT(artifact, 0u);
  EXPECT_LT(wire * 2, artifact) << "artifacts compress well; zstd should at least halve them";
  EXPECT_NE(m_zstd["wire"]["chosen"].get<std::string>().find("zstd on"), std::string::npos);
  EXPECT_NE(zstd.err.find("wire compression zstd:"), std::string::npos) << zstd.err;
  // auto on loopback: raw, and it says so (console and manifest).
  auto au = RunVector(dir, auto_work, {});
  ASSERT_EQ(au.exit_code, 0) << au.err;
  const Json m_auto = LoadJson(auto_work / "dfx_outputs/run_manifest.json");
  EXPECT_EQ(m_auto["wire"]["compression"], "auto");
  EXPECT_NE(m_auto["wire"]["chosen"].get<std::string>().find("raw on all"), std::string::npos)
      << m_auto["wire"].dump();
  EXPECT_NE(au.err.find("wire compression auto: raw on all"), std::string::npos) << au.err;
  fs::remove_all(dir);
}

TEST(L3WireTest, ABudgetStopsAStreamAndAGatherWithALargerOneFetchesIt) {
  const fs::path dir = TestDir("l3_wire_budget");
  const fs::path full = dir / "full", work = dir / "budget";
  auto ref = RunVector(dir, full, {});
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  const auto all = Artifacts(LoadJson(full / "dfx_outputs/run_manifest.json"));
  uint64_t total = 0;
  for (const auto& [path, a] : all) total += a["size"].get<uint64_t>();
  ASSERT_GT(total, 0u);
  const uint64_t budget = total / 2;

  // Without --force the estimate refuses the run before it starts
  // (estimate_test.cc); with it, the budget is enforced as streams begin.
  auto run = RunVector(dir, work, {"--max-run-bytes", std::to_string(budget), "--force"});
  EXPECT_NE(run.exit_code, 0) << "a run that left artifacts behind is not ok";
  EXPECT_NE(run.err.find("--max-run-bytes " + std::to_string(budget)), std::string::npos)
      << run.err;
  const std::string gather_hint = "dfx-coordinator gather --work-dir ";
  ASSERT_NE(run.err.find(gather_hint), std::string::npos) << run.err;
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  ASSERT_TRUE(m["budget"].is_object()) << m.dump();
  EXPECT_EQ(m["budget"]["max_run_bytes"], budget);
  const auto refused = m["budget"]["over_budget"].get<std::vector<std::string>>();
  ASSERT_FALSE(refused.empty());
  const std::string hex = LoadJson(work / "dfx_outputs/.session.json")["session"];
  const fs::path spool = work / ".dfx_spool" / hex;
  ASSERT_TRUE(WaitFor([&] { return FindProcesses({"dfx-rank-agent", hex}).empty(); }, 60));
  uint64_t taken = 0;
  for (const auto& [path, a] : Artifacts(m)) {
    if (a["status"] == "ok") taken += a["size"].get<uint64_t>();
  }
  EXPECT_LE(taken, budget);
  for (const std::string& path : refused) {
    EXPECT_EQ(Artifacts(m)[path]["status"], "in_spool") << path;
    EXPECT_FALSE(fs::exists(work / "dfx_outputs" / path)) << path << ": never a truncated file";
    EXPECT_TRUE(fs::exists(spool / path)) << path << " must stay in the agent's spool";
  }
  for (const auto& f : Tree(work / "dfx_outputs")) EXPECT_EQ(f.find(".tmp."), std::string::npos);

  // A gather within the same budget fetches nothing more; one with room
  // for everything fetches the rest, compressed on the wire.
  auto tight = RunCommand(
      {Bin("dfx-coordinator"), "gather", "--work-dir", work.string(), "--max-run-bytes", "1"}, dir,
      120);
  EXPECT_NE(tight.exit_code, 0) << tight.err << tight.out;
  EXPECT_NE((tight.out + tight.err).find("over budget"), std::string::npos) << tight.err;
  for (const std::string& path : refused) EXPECT_TRUE(fs::exists(spool / path)) << path;
  auto g = RunCommand({Bin("dfx-coordinator"), "gather", "--work-dir", work.string(),
                       "--max-run-bytes", std::to_string(total), "--wire-compression", "zstd"},
                      dir, 120);
  ASSERT_EQ(g.exit_code, 0) << g.err << g.out;
  m = LoadJson(work / "dfx_outputs/run_manifest.json");
  EXPECT_EQ(m["status"], "ok") << m.dump();
  EXPECT_TRUE(m["budget"]["over_budget"].empty());
  for (const auto& a : m["gather"]["recovered"]) {
    const std::string path = a["path"];
    const fs::path p = work / "dfx_outputs" / path;
    auto sum = ChecksumFile(p);
    ASSERT_TRUE(sum.ok()) << path;
    EXPECT_EQ(a["checksum"], "xxh64:" + Hex64(*sum)) << path;
    EXPECT_LE(a["wire_bytes"].get<uint64_t>(), a["size"].get<uint64_t>()) << path;
  }
  for (const auto& [path, a] : all) {
    EXPECT_EQ(Slurp(work / "dfx_outputs" / path), Slurp(full / "dfx_outputs" / path)) << path;
  }
  EXPECT_TRUE(SpooledArtifacts(spool).empty()) << "fetched files leave the spool";
  EXPECT_LT(m["gather"]["recovered"].size(), all.size()) << "the run itself took some";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dfx::e2e
