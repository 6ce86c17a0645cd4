#include "common/handoff.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace dfx {
namespace {

using Batch = std::vector<uint64_t>;

// Every buffer arrives once, in order, and buffers are reused: no more are
// ever made than the queue, the producer's, the consumer's and one spare.
TEST(HandoffTest, BuffersArriveInOrderAndAreReused) {
  constexpr size_t kDepth = 4;
  constexpr uint64_t kBuffers = 1000;
  std::atomic<int> made{0};
  Handoff<Batch> h(kDepth, [&] {
    ++made;
    return Batch{};
  });
  std::thread producer([&] {
    Batch b;
    for (uint64_t i = 0; i < kBuffers; ++i) {
      b.assign({i, i + 1});
      ASSERT_TRUE(h.Put(b));
      EXPECT_TRUE(b.empty()) << "Put leaves an empty buffer in place of the queued one";
    }
    h.Close();
  });
  Batch got;
  uint64_t next = 0;
  while (h.Take(got)) {
    ASSERT_EQ(got, (Batch{next, next + 1}));
    ++next;
    got.clear();
  }
  producer.join();
  EXPECT_EQ(next, kBuffers);
  EXPECT_LE(made.load(), static_cast<int>(kDepth + 2));
  EXPECT_FALSE(h.Take(got)) << "a closed handoff stays at its end";
}

// Buffers given before the stream are the ones Put hands out: none is made
// until they are used up (ChunkedWriter's chunks, mapped at Open, so).
TEST(HandoffTest, GivenBuffersAreHandedOutBeforeAnyIsMade) {
  std::atomic<int> made{0};
  Handoff<Batch> h(4, [&] {
    ++made;
    return Batch{};
  });
  Batch given;
  given.reserve(64);
  const uint64_t* storage = given.data();
  h.Give(std::move(given));
  h.Give(Batch{});
  Batch b{1};
  ASSERT_TRUE(h.Put(b));
  b = {2};
  ASSERT_TRUE(h.Put(b));
  EXPECT_EQ(made.load(), 0) << "two Puts, two given buffers: nothing made";
  EXPECT_EQ(b.data(), storage) << "the buffer given first came back with its storage";
  b = {3};
  ASSERT_TRUE(h.Put(b));
  EXPECT_EQ(made.load(), 1) << "the given ones used up, Put makes one";
  h.Close();
  Batch got;
  for (uint64_t want = 1; want <= 3; ++want) {
    ASSERT_TRUE(h.Take(got));
    EXPECT_EQ(got, Batch{want});
  }
}

// The producer runs at most `depth` buffers ahead of a consumer that does
// not take, and a consumer that stops releases it: Put refuses.
TEST(HandoffTest, AProducerWaitsForRoomAndAStoppedConsumerReleasesIt) {
  constexpr size_t kDepth = 4;
  Handoff<Batch> h(kDepth, [] { return Batch{}; });
  std::atomic<uint64_t> put{0};
  std::atomic<bool> refused{false};
  std::thread producer([&] {
    Batch b;
    for (;;) {
      b.assign({put.load()});
      if (!h.Put(b)) break;
      ++put;
    }
    refused = true;
    EXPECT_EQ(b, Batch{put.load()}) << "a refused buffer stays the producer's";
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (put.load() < kDepth && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // time to run past, if it could
  EXPECT_EQ(put.load(), kDepth) << "the queue holds `depth` buffers, then Put waits";
  EXPECT_FALSE(refused);
  Batch got;
  ASSERT_TRUE(h.Take(got));
  EXPECT_EQ(got, Batch{0});
  h.Stop();
  producer.join();
  EXPECT_TRUE(refused);
  EXPECT_LE(put.load(), kDepth + 1);
}

// A waiting consumer wakes for half the queue, or for the producer's end.
TEST(HandoffTest, AConsumerTakesWhatIsQueuedAfterCloseButNothingAfterDrop) {
  Handoff<Batch> closed(4, [] { return Batch{}; });
  Batch b{7};
  ASSERT_TRUE(closed.Put(b));
  closed.Close();
  Batch got;
  ASSERT_TRUE(closed.Take(got)) << "Close: what is queued is still taken";
  EXPECT_EQ(got, Batch{7});
  EXPECT_FALSE(closed.Take(got));

  Handoff<Batch> dropped(4, [] { return Batch{}; });
  b = {8};
  ASSERT_TRUE(dropped.Put(b));
  dropped.Drop();
  EXPECT_FALSE(dropped.Take(got)) << "Drop: nothing queued is taken";

  // A consumer waiting on an empty queue wakes for either end.
  for (const bool close : {true, false}) {
    Handoff<Batch> waiting(4, [] { return Batch{}; });
    std::thread consumer([&] {
      Batch mine;
      EXPECT_FALSE(waiting.Take(mine));
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    close ? waiting.Close() : waiting.Drop();
    consumer.join();
  }
}

// With a depth of one (ChunkedWriter's), the consumer still waits for a
// buffer instead of taking from an empty queue.
TEST(HandoffTest, ADepthOfOneHandsOverEachBuffer) {
  Handoff<Batch> h(1, [] { return Batch{}; });
  std::thread producer([&] {
    Batch b;
    for (uint64_t i = 0; i < 100; ++i) {
      b.assign({i});
      ASSERT_TRUE(h.Put(b));
    }
    h.Close();
  });
  Batch got;
  uint64_t next = 0;
  while (h.Take(got)) {
    ASSERT_EQ(got, Batch{next});
    ++next;
    got.clear();
  }
  producer.join();
  EXPECT_EQ(next, 100u);
}

}  // namespace
}  // namespace dfx
