#include "coordinator/manifest_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "collectors/artifact_layout.h"

namespace dfx::coordinator {
namespace {

namespace fs = std::filesystem;
using collectors::DispatchEntry;
using collectors::RunManifest;
using collectors::RunState;

class ManifestWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dfx_manifest_writer_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A manifest of `done` finished dispatches out of 64.
  static RunManifest Snapshot(RunState state, int done) {
    RunManifest m;
    m.session = 0x1234;
    m.status = state;
    m.plan = "plan";
    for (int i = 0; i < 64; ++i) {
      DispatchEntry d;
      d.rank = i;
      d.program = "tiny";
      d.status = i < done ? collectors::DispatchState::kOk : collectors::DispatchState::kSent;
      d.start_ns = 1000 + i;
      if (i < done) d.end_ns = 2000 + i;
      m.dispatches.push_back(d);
    }
    return m;
  }

  Result<RunManifest> OnDisk() {
    return collectors::ReadRunManifest(dir_ / collectors::kRunManifestFile);
  }

  fs::path dir_;
};

TEST_F(ManifestWriterTest, APostedSnapshotIsOnDiskWhileTheRunGoesOn) {
  ManifestWriter writer(dir_);
  writer.Post(Snapshot(RunState::kRunning, 10));
  // What a user watching the manifest sees: the running state, soon.
  for (int i = 0; i < 1000 && writer.busy(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(writer.busy());
  auto m = OnDisk();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(*m, Snapshot(RunState::kRunning, 10));
}

// The coordinator paces rewrites by their own time, so a manifest with a
// row per dispatch of a long run is not rewritten back to back.
TEST_F(ManifestWriterTest, EachRewriteIsTimedAndPacesTheNext) {
  ManifestWriter writer(dir_);
  EXPECT_EQ(writer.last_write_ns(), 0u);
  const auto before = std::chrono::steady_clock::now();
  writer.Post(Snapshot(RunState::kRunning, 10));
  for (int i = 0; i < 10000 && writer.busy(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_FALSE(writer.busy());
  const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now() - before)
                          .count();
  EXPECT_GT(writer.last_write_ns(), 0u);
  EXPECT_LE(writer.last_write_ns(), static_cast<uint64_t>(waited));
  constexpr uint64_t kMs = 1000000;
  EXPECT_EQ(NextManifestAfterNs(500 * kMs, 20 * kMs), 500 * kMs);    // the floor
  EXPECT_EQ(NextManifestAfterNs(500 * kMs, 200 * kMs), 1800 * kMs);  // a tenth of the time
}

TEST_F(ManifestWriterTest, TheFinalWriteIsExactAfterAnyNumberOfPostedSnapshots) {
  ManifestWriter writer(dir_);
  for (int done = 0; done < 64; ++done) writer.Post(Snapshot(RunState::kRunning, done));
  const RunManifest final_state = Snapshot(RunState::kOk, 64);
  ASSERT_TRUE(writer.WriteNow(final_state).ok());
  EXPECT_FALSE(writer.busy());
  auto m = OnDisk();
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(*m, final_state);
  // No temporary file is left beside it.
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 1);
}

TEST_F(ManifestWriterTest, AFailedWriteIsReportedByWriteNow) {
  // Its directory is a regular file.
  {
    std::FILE* f = std::fopen((dir_ / "not_a_dir").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  ManifestWriter writer(dir_ / "not_a_dir");
  EXPECT_FALSE(writer.WriteNow(Snapshot(RunState::kOk, 64)).ok());
}

}  // namespace
}  // namespace dfx::coordinator
