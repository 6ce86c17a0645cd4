#include "rank_agent/chip_pool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/testing/temp_dirs.h"
#include "rank_agent/spool_sum.h"

namespace dfx::rank_agent {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kSession = 0xc41;

// What the test chips did, shared with the test.
struct ChipLog {
  std::mutex mu;
  std::condition_variable cv;
  int chips_made = 0;
  int runs = 0;
  int releases = 0;
  int completions = 0;    // the pool's on_done calls
  bool gate_open = true;  // closed: a run waits on the chip until it opens
  std::vector<device::Chip*> chips;

  // Waits (bounded, generously) until `done` holds.
  template <typename Pred>
  bool WaitFor(Pred done) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(60), done);
  }
  void Note(int ChipLog::*counter) {
    std::lock_guard<std::mutex> lock(mu);
    ++(this->*counter);
    cv.notify_all();
  }
};

// A chip that writes one artifact, "out.txt", and keeps one resident tensor.
class TestChip final : public device::Chip {
 public:
  TestChip(ChipLog& log, int n) : log_(log), n_(n) {}
  std::string Describe() const override { return "test chip " + std::to_string(n_); }
  device::DispatchResult RunProgram(const device::Program&, const config::RunConfig&,
                                    const fs::path& output_dir) override {
    {
      std::unique_lock<std::mutex> lock(log_.mu);
      log_.cv.wait(lock, [this] { return log_.gate_open; });
    }
    device::DispatchResult result;
    fs::create_directories(output_dir);
    std::ofstream(output_dir / "out.txt") << "ran on " << Describe();
    result.artifacts = {"out.txt"};
    result.tasks_executed = 3;
    resident_["t"] = device::ResidentTensor{};
    log_.Note(&ChipLog::runs);
    return result;
  }
  void ReleaseShared() override { log_.Note(&ChipLog::releases); }

 private:
  ChipLog& log_;
  int n_;
};

std::string ProgramText() {
  auto text = ReadFile(fs::path(DFX_SOURCE_DIR) / "examples/vector_pipeline.json");
  return text.ok() ? *text : "";
}

class PoolBench {
 public:
  explicit PoolBench(const std::string& name, int chips = 2)
      : spool_root_(FreshTestDir("chip_pool_test_" + std::to_string(::getpid()) + "_" + name)) {
    ChipPoolOptions options;
    options.first_rank = 5;
    options.chips = chips;
    options.spool_root = spool_root_;
    options.make_chip =
        [this](const device::ChipOptions& chip) -> Result<std::unique_ptr<device::Chip>> {
      EXPECT_TRUE(chip.progress) << "each chip reports its progress";
      std::lock_guard<std::mutex> lock(log_.mu);
      auto made = std::make_unique<TestChip>(log_, log_.chips_made++);
      log_.chips.push_back(made.get());
      return std::unique_ptr<device::Chip>(std::move(made));
    };
    pool_.emplace(options, programs_, spool_, [this] { log_.Note(&ChipLog::completions); });
  }
  ChipPool& pool() { return *pool_; }
  ChipLog& log() { return log_; }
  fs::path DispatchDir(int32_t rank, uint32_t k) const {
    return collectors::SessionSpoolDir(spool_root_, kSession) /
           collectors::DispatchDirPath(rank, k);
  }
  // A dispatch of the example program; the worker thread reads it.
  static QueuedDispatch Dispatch(int32_t rank, uint32_t k) {
    QueuedDispatch queued;
    queued.dispatch.session_id = kSession;
    queued.dispatch.rank = rank;
    queued.dispatch.k = k;
    queued.dispatch.program_name = "vector_pipeline";
    queued.dispatch.program_json = ProgramText();
    queued.dispatch.config.Normalize();
    return queued;
  }

 private:
  fs::path spool_root_;
  ChipLog log_;
  ProgramCache programs_{ProgramCache::kDefaultMaxEntries};
  SpoolDirs spool_;
  std::optional<ChipPool> pool_;  // last: its workers use the rest
};

TEST(ChipPoolTest, RunsADispatchOnTheChipOfItsRank) {
  PoolBench bench("run");
  ASSERT_TRUE(bench.pool().Start().ok());
  EXPECT_EQ(bench.pool().Describe(), (std::vector<std::string>{"test chip 0", "test chip 1"}));
  EXPECT_TRUE(bench.pool().Has(5));
  EXPECT_TRUE(bench.pool().Has(6));
  EXPECT_FALSE(bench.pool().Has(7));

  bench.pool().Submit(PoolBench::Dispatch(6, 2));
  ASSERT_TRUE(bench.log().WaitFor([&] { return bench.log().completions == 1; }));
  auto done = bench.pool().TakeCompletions();
  ASSERT_EQ(done.size(), 1u);
  const Completion& c = done.front();
  EXPECT_EQ(c.status, protocol::DispatchStatus::kOk) << c.error;
  EXPECT_EQ(c.dispatch.rank, 6);
  EXPECT_EQ(c.dispatch.k, 2u);
  EXPECT_EQ(c.tasks, 3u);
  EXPECT_EQ(c.dir, bench.DispatchDir(6, 2));
  ASSERT_NE(std::find(c.files.begin(), c.files.end(), "out.txt"), c.files.end());
  auto text = ReadFile(c.dir / "out.txt");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "ran on test chip 1") << "rank 6 is the pool's second chip";
  auto kept = ReadSum(c.dir, "out.txt");
  auto actual = ChecksumFile(c.dir / "out.txt");
  ASSERT_TRUE(kept && actual.ok()) << "the checksum is kept at write";
  EXPECT_EQ(*kept, *actual);
  EXPECT_FALSE(bench.pool().AnyBusy());
  EXPECT_TRUE(bench.pool().TakeCompletions().empty());
}

TEST(ChipPoolTest, AChipTheMakerCannotMakeFailsTheStartNamingItsRank) {
  ChipLog log;
  ProgramCache programs(1);
  SpoolDirs spool;
  ChipPoolOptions options;
  options.first_rank = 3;
  options.make_chip = [](const device::ChipOptions&) -> Result<std::unique_ptr<device::Chip>> {
    return Internal("no such device");
  };
  ChipPool pool(options, programs, spool, nullptr);
  Status s = pool.Start();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "rank 3: no such device");
}

TEST(ChipPoolTest, AQueuedDispatchCanBeCancelledButNotARunningOne) {
  PoolBench bench("cancel", 1);
  ASSERT_TRUE(bench.pool().Start().ok());
  {
    std::lock_guard<std::mutex> lock(bench.log().mu);
    bench.log().gate_open = false;
  }
  bench.pool().Submit(PoolBench::Dispatch(5, 0));
  bench.pool().Submit(PoolBench::Dispatch(5, 1));
  EXPECT_TRUE(bench.pool().AnyBusy());
  EXPECT_TRUE(bench.pool().CancelQueued(5, 1));
  EXPECT_FALSE(bench.pool().CancelQueued(5, 1)) << "already taken off";
  EXPECT_FALSE(bench.pool().CancelQueued(6, 0)) << "not a chip of the pool";
  {
    std::lock_guard<std::mutex> lock(bench.log().mu);
    bench.log().gate_open = true;
    bench.log().cv.notify_all();
  }
  ASSERT_TRUE(bench.log().WaitFor([&] { return bench.log().completions == 1; }));
  bench.pool().Stop();
  auto done = bench.pool().TakeCompletions();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done.front().dispatch.k, 0u);
  EXPECT_EQ(bench.log().runs, 1) << "the cancelled dispatch never ran";
}

TEST(ChipPoolTest, EndingTheSessionClearsEachChipsDeviceMemory) {
  PoolBench bench("end-session", 1);
  ASSERT_TRUE(bench.pool().Start().ok());
  bench.pool().Submit(PoolBench::Dispatch(5, 0));
  ASSERT_TRUE(bench.log().WaitFor([&] { return bench.log().completions == 1; }));
  EXPECT_EQ(bench.log().chips[0]->resident_state().size(), 1u);
  bench.pool().EndSession();
  ASSERT_TRUE(bench.log().WaitFor([&] { return bench.log().releases == 1; }));
  // The chip clears its tensors before it lets go of its kept programs.
  EXPECT_TRUE(bench.log().chips[0]->resident_state().empty());
}

}  // namespace
}  // namespace dfx::rank_agent
