#include "common/prefetch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>

namespace dfx {
namespace {

// Items arrive in order across many batches, and the end carries the
// reader's status.
TEST(PrefetchTest, DeliversEveryItemInOrderThenTheReadersStatus) {
  constexpr uint64_t kItems = Prefetch<uint64_t>::kBatch * 10 + 7;
  Prefetch<uint64_t> p([](const Prefetch<uint64_t>::Push& push) {
    for (uint64_t i = 0; i < kItems; ++i) {
      if (!push(i)) return Internal("stopped early");
    }
    return InvalidArgument("records.json: at byte 42: truncated");
  });
  uint64_t next = 0, got = 0;
  while (p.Next(&got)) {
    ASSERT_EQ(got, next);
    ++next;
  }
  EXPECT_EQ(next, kItems);
  EXPECT_EQ(p.status().message(), "records.json: at byte 42: truncated");
  EXPECT_FALSE(p.Next(&got)) << "a finished stream stays finished";
}

TEST(PrefetchTest, ForEachSeesWhatNextLeft) {
  Prefetch<int> p([](const Prefetch<int>::Push& push) {
    for (int i = 0; i < 3000; ++i) push(i);
    return Status::Ok();
  });
  int first = -1;
  ASSERT_TRUE(p.Next(&first));
  int64_t sum = 0, n = 0;
  EXPECT_TRUE(p.ForEach([&](const int& v) { sum += v, ++n; }).ok());
  EXPECT_EQ(first, 0);
  EXPECT_EQ(n, 2999);
  EXPECT_EQ(sum, int64_t{2999} * 3000 / 2);
}

// A consumer that stops early stops the reader too: this reader would read
// for ever, and is told to stop when the Prefetch goes away.
TEST(PrefetchTest, AConsumerThatStopsEarlyStopsTheReader) {
  std::atomic<uint64_t> pushed{0};
  std::atomic<bool> told_to_stop{false};
  {
    Prefetch<uint64_t> p([&](const Prefetch<uint64_t>::Push& push) {
      for (uint64_t i = 0;; ++i) {
        if (!push(i)) break;
        ++pushed;
      }
      told_to_stop = true;
      return Status::Ok();
    });
    uint64_t v = 0;
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(p.Next(&v));
    EXPECT_EQ(v, 4u);
  }
  EXPECT_TRUE(told_to_stop);
  // Never more than the queue, the batch being filled and the one read.
  EXPECT_LE(pushed.load(), (Prefetch<uint64_t>::kDepth + 2) * Prefetch<uint64_t>::kBatch);
}

TEST(PrefetchTest, AnEmptyStreamEndsAtOnce) {
  Prefetch<int> p([](const Prefetch<int>::Push&) { return Status::Ok(); });
  int v = 0;
  EXPECT_FALSE(p.Next(&v));
  EXPECT_TRUE(p.status().ok());
}

}  // namespace
}  // namespace dfx
