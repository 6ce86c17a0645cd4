// CoreBlockRows: many writers, exact counts, per-core order, drops counted
// per core when a core reaches its limit or the pool runs out.
#include "collectors/internal/core_block_rows.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <thread>
#include <vector>

namespace dfx::collectors::internal {
namespace {

struct Row {
  uint32_t core;
  uint32_t seq;  // the writer's own count for this core
};

using Rows = CoreBlockRows<Row>;
constexpr uint64_t kBlock = Rows::kBlockRows;

// Each of `threads` threads writes `per_core` rows for each core c with
// c % threads == its index (one writer per core), all at once.
void Fill(Rows& rows, uint32_t cores, uint32_t threads, uint64_t per_core) {
  std::vector<std::thread> workers;
  for (uint32_t t = 0; t < threads; ++t) {
    workers.emplace_back([&rows, cores, threads, per_core, t] {
      for (uint64_t i = 0; i < per_core; ++i) {
        for (uint32_t c = t; c < cores; c += threads) {
          if (Row* r = rows.Claim(c)) *r = Row{c, static_cast<uint32_t>(i)};
        }
      }
    });
  }
  for (auto& w : workers) w.join();
}

TEST(CoreBlockRows, ManyThreadsKeepEveryRowInCoreOrder) {
  constexpr uint32_t kCores = 24, kThreads = 8;
  constexpr uint64_t kPerCore = 1000;  // not a multiple of the block
  Rows rows;
  rows.Reset(kCores * kPerCore, kCores);
  Fill(rows, kCores, kThreads, kPerCore);
  EXPECT_EQ(rows.total_kept(), kCores * kPerCore);
  EXPECT_EQ(rows.total_dropped(), 0u);
  const std::vector<uint32_t> order = rows.CoreOrder();
  ASSERT_EQ(order.size(), kCores * kPerCore);
  std::set<uint32_t> distinct(order.begin(), order.end());
  EXPECT_EQ(distinct.size(), order.size()) << "a slot was handed out twice";
  for (size_t k = 0; k < order.size(); ++k) {
    const Row& r = rows[order[k]];
    ASSERT_EQ(r.core, k / kPerCore) << "row " << k << " out of core order";
    ASSERT_EQ(r.seq, k % kPerCore) << "row " << k << " out of its writer's order";
  }
}

TEST(CoreBlockRows, CoreOverItsLimitDropsAndCountsOnlyItsOwn) {
  constexpr uint32_t kCores = 4;
  Rows rows;
  rows.Reset(100000, kCores, /*per_core_limit=*/150);
  // Core 0 writes 1000 rows, the others 100 each, concurrently.
  std::vector<std::thread> workers;
  for (uint32_t c = 0; c < kCores; ++c) {
    workers.emplace_back([&rows, c] {
      const uint32_t n = c == 0 ? 1000 : 100;
      for (uint32_t i = 0; i < n; ++i) {
        if (Row* r = rows.Claim(c)) *r = Row{c, i};
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(rows.kept(0), 150u);
  EXPECT_EQ(rows.dropped(0), 850u);
  for (uint32_t c = 1; c < kCores; ++c) {
    EXPECT_EQ(rows.kept(c), 100u) << "core " << c;
    EXPECT_EQ(rows.dropped(c), 0u) << "core " << c;
  }
  EXPECT_EQ(rows.total_dropped(), 850u);
  const std::vector<uint32_t> order = rows.CoreOrder();
  ASSERT_EQ(order.size(), 450u);
  for (uint32_t i = 0; i < 150; ++i)
    EXPECT_EQ(rows[order[i]].seq, i) << "core 0 keeps its first rows";
}

TEST(CoreBlockRows, FullPoolDropsAndCountsPerCore) {
  constexpr uint32_t kCores = 2;
  Rows rows;
  rows.Reset(2 * kBlock, kCores);  // 2 blocks + 1 per core = 4 blocks
  Fill(rows, kCores, 1, 3 * kBlock);
  // Whatever the interleaving, every block is used whole: 4 blocks kept.
  EXPECT_EQ(rows.total_kept(), 4 * kBlock);
  EXPECT_EQ(rows.total_dropped(), 6 * kBlock - 4 * kBlock);
  EXPECT_EQ(rows.kept(0) + rows.dropped(0), 3 * kBlock);
  EXPECT_EQ(rows.kept(1) + rows.dropped(1), 3 * kBlock);
  EXPECT_EQ(rows.CoreOrder().size(), 4 * kBlock);
}

TEST(CoreBlockRows, CapacityHoldsWithPartlyFilledBlocks) {
  // Every core leaves a partly filled block, and still `capacity` rows fit.
  constexpr uint32_t kCores = 8;
  constexpr uint64_t kCapacity = 1000;
  Rows rows;
  rows.Reset(kCapacity, kCores);
  Fill(rows, kCores, 4, kCapacity / kCores);
  EXPECT_EQ(rows.total_kept(), kCapacity);
  EXPECT_EQ(rows.total_dropped(), 0u);
}

TEST(CoreBlockRows, EmptyHasNoRows) {
  Rows rows;
  rows.Reset(10, 3);
  EXPECT_EQ(rows.total_kept(), 0u);
  EXPECT_TRUE(rows.CoreOrder().empty());
}

}  // namespace
}  // namespace dfx::collectors::internal
