#include "collectors/run_manifest.h"

#include <gtest/gtest.h>

#include <fstream>

#include "collectors/artifact_layout.h"
#include "collectors/testing/test_util.h"

namespace dfx::collectors {
namespace {

RunManifest Sample() {
  RunManifest m;
  m.session = 0x0123456789abcdefull;
  m.status = RunState::kFailed;
  m.plan = "decode";
  m.work_dir = "/w";
  m.launcher = "local";
  m.endpoint = "tcp://head.example:5555";
  m.bind = "tcp://0.0.0.0:5555";
  m.run_config.enable_chip_swimlane = 4;
  m.run_config.save_kernels = true;
  m.passes = {config::PassKind::kGraph, config::PassKind::kTiming};
  m.ranks.push_back({0, "host-a", 42, RankState::kOk, "", -1500, 2000, 2, "10.0.0.2", 5, 8});
  m.ranks.push_back({1, std::nullopt, std::nullopt, RankState::kFailed, "agent died", {}, {}, 2});
  DispatchEntry d;
  d.rank = 0;
  d.k = 1;
  d.program = "attn";
  d.pass = config::PassKind::kTiming;
  d.status = DispatchState::kOk;
  d.start_ns = 10;
  d.end_ns = 20;
  d.tasks_executed = 7;
  d.accepted_ns = 11;
  d.stream_ns = 15;
  d.verified_ns = 21;
  d.makespan_ns = 5;
  d.agent_wall_ns = 8;
  d.artifacts.push_back({"rank0/d1/deps.json", 12, 0xfeedull, ArtifactState::kOk, ""});
  d.artifacts.push_back({"rank0/d1/pmu.csv", 3, std::nullopt, ArtifactState::kFailed, "why"});
  d.capture = DispatchCapture{true, "capture change 1", {}};
  d.capture->collectors.enable_pmu = 4;
  d.capture->collectors.enable_dep_gen = true;
  m.dispatches.push_back(d);
  m.dispatches.push_back({1,
                          0,
                          "attn",
                          config::PassKind::kGraph,
                          DispatchState::kNotRun,
                          "never dispatched",
                          0,
                          0,
                          0,
                          {}});
  m.bytes_gathered = 15;
  m.launch_ns = 1;
  m.merged_swimlane = {"rank0/d1/merged_swimlane_x.json"};
  m.gather =
      GatherEntry{"g1", true, {{"rank1/d0/deps.json", 9, 1, ArtifactState::kRecovered, ""}}, {}};
  m.capture_changes.push_back(CaptureChange{1,
                                            12,
                                            1700000000000,
                                            4242,
                                            1000,
                                            "dfx-coordinator capture W --enable-pmu 4",
                                            {{0, 1, config::PassKind::kTiming}}});
  return m;
}

TEST(RunManifestTest, RoundTripsThroughJsonAndDisk) {
  const RunManifest m = Sample();
  auto back = RunManifestFromJson(RunManifestToJson(m), "m.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, m);
  testing::TempDir tmp;
  ASSERT_TRUE(WriteRunManifest(tmp.path(), m).ok());
  auto read = ReadRunManifest(tmp.path() / kRunManifestFile);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, m);
}

// The writer makes the file one dispatch row at a time: the bytes are the
// document's dump(2), with rows whose strings hold what JSON must escape,
// and with no dispatch at all.
TEST(RunManifestTest, TheWrittenTextIsTheDocumentByteForByte) {
  RunManifest m = Sample();
  m.dispatches[0].error = "line one\nline \"two\"\t\u00e9\u4e2d \"dispatches\": []";
  m.dispatches[1].program = "p\\q";
  m.plan = "\"dispatches\": []";
  EXPECT_EQ(RunManifestText(m), RunManifestToJson(m).dump(2) + "\n");
  testing::TempDir tmp;
  ASSERT_TRUE(WriteRunManifest(tmp.path(), m).ok());
  auto read = ReadRunManifest(tmp.path() / kRunManifestFile);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, m);
  m.dispatches.clear();
  EXPECT_EQ(RunManifestText(m), RunManifestToJson(m).dump(2) + "\n");
}

TEST(RunManifestTest, KeysAndStatesAreTheDocumentedOnes) {
  Json j = RunManifestToJson(Sample());
  EXPECT_EQ(testing::Keys(j),
            (std::vector<std::string>{"session", "status", "level", "plan", "work_dir", "launcher",
                                      "endpoint", "bind", "launch_ns", "run_config", "passes",
                                      "ranks", "dispatches", "bytes_gathered", "merged_swimlane",
                                      "gather", "capture_changes"}));
  // Capture: per dispatch what it armed and why (null until sent), and who changed what.
  EXPECT_EQ(j["dispatches"][0]["capture"]["by"], "capture change 1");
  EXPECT_EQ(j["dispatches"][0]["capture"]["collectors"]["enable_pmu"], 4);
  EXPECT_TRUE(j["dispatches"][1]["capture"].is_null());
  EXPECT_EQ(j["capture_changes"][0]["applied_to"][0]["pass"], "timing");
  // The host lane's times: null until known.
  EXPECT_EQ(j["ranks"][0]["hello_ns"], 5);
  EXPECT_TRUE(j["ranks"][1]["ready_ns"].is_null());
  EXPECT_EQ(j["dispatches"][0]["verified_ns"], 21);
  EXPECT_TRUE(j["dispatches"][1]["accepted_ns"].is_null());
  EXPECT_EQ(j["session"], "0123456789abcdef");
  EXPECT_EQ(j["status"], "failed");
  EXPECT_EQ(j["dispatches"][0]["dir"], "rank0/d1");
  EXPECT_EQ(j["dispatches"][0]["artifacts"][0]["checksum"], "xxh64:000000000000feed");
  EXPECT_TRUE(j["dispatches"][0]["artifacts"][1]["checksum"].is_null());
  EXPECT_EQ(j["dispatches"][1]["status"], "not_run");
  EXPECT_TRUE(j["ranks"][1]["host"].is_null());
  EXPECT_EQ(j["ranks"][0]["address"], "10.0.0.2");
  EXPECT_EQ(j["bind"], "tcp://0.0.0.0:5555");
  // "sent" is a state like the others.
  EXPECT_EQ(ParseDispatchState("sent"), DispatchState::kSent);
  EXPECT_EQ(ParseRunState("interrupted"), RunState::kInterrupted);
}

// An L2 run's manifest (level "L2"): its dispatches' dir is "." (the
// artifacts lie flat in dfx_outputs/); a manifest without "level" is an L3
// run's (written before the key existed).
TEST(RunManifestTest, LevelSaysL2OrL3AndAnL2DispatchLiesInDfxOutputs) {
  RunManifest m = Sample();
  EXPECT_EQ(RunManifestToJson(m)["level"], "L3");
  m.level = RunLevel::kL2;
  Json j = RunManifestToJson(m);
  EXPECT_EQ(j["level"], "L2");
  EXPECT_EQ(j["dispatches"][0]["dir"], ".");
  auto read = RunManifestFromJson(j, "m.json");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, m);
  j.erase("level");
  read = RunManifestFromJson(j, "m.json");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->level, RunLevel::kL3);
  j["level"] = "L4";
  read = RunManifestFromJson(j, "m.json");
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find(R"($.level)"), std::string::npos)
      << read.status().message();
}

TEST(RunManifestTest, ErrorsNameTheFileAndThePath) {
  Json j = RunManifestToJson(Sample());
  j["dispatches"][1]["status"] = "exploded";
  auto bad = RunManifestFromJson(j, "w/run_manifest.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("w/run_manifest.json"), std::string::npos);
  EXPECT_NE(bad.status().message().find("$.dispatches[1].status"), std::string::npos)
      << bad.status().message();
  // What would have been read: every state, in the table's order.
  EXPECT_NE(
      bad.status().message().find(
          R"(one of "pending", "sent", "running", "ok", "failed", "not_run", "interrupted", "in_spool")"),
      std::string::npos)
      << bad.status().message();
  Json c = RunManifestToJson(Sample());
  c["dispatches"][0]["artifacts"][0]["checksum"] = "md5:x";
  EXPECT_FALSE(RunManifestFromJson(c, "m").ok());
}

TEST(RunManifestTest, AManifestBehindALinkIsNotRead) {
  testing::TempDir tmp;
  ASSERT_TRUE(WriteRunManifest(tmp.path(), Sample()).ok());
  std::filesystem::create_directory(tmp.path() / "other");
  std::filesystem::create_symlink(tmp.path() / kRunManifestFile,
                                  tmp.path() / "other" / kRunManifestFile);
  auto r = ReadRunManifest(tmp.path() / "other" / kRunManifestFile);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("symbolic link"), std::string::npos);
}

}  // namespace
}  // namespace dfx::collectors
