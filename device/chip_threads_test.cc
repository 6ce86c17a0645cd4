#include "device/chip_threads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

namespace dfx::device {
namespace {

using namespace std::chrono_literals;

// Waits up to `limit` for `done()`.
bool Eventually(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(ParkerTest, ANotifyAfterTheWaiterReadTheSequenceWakesItFromItsSleep) {
  for (int sleepers : {1, 3}) {
    Parker p;
    const uint32_t seen = p.Seq();
    std::atomic<int> woke{0};
    std::vector<std::thread> waiters;
    for (int i = 0; i < sleepers; ++i) {
      waiters.emplace_back([&] {
        p.Wait(seen);
        ++woke;
      });
    }
    std::this_thread::sleep_for(50ms);  // past their spin: asleep in the kernel
    EXPECT_EQ(woke.load(), 0) << "a Wait returned before any Notify";
    p.Notify();
    const bool in_time = Eventually([&] { return woke.load() == sleepers; }, 5000ms);
    EXPECT_TRUE(in_time) << woke.load() << " of " << sleepers << " sleepers woke";
    while (woke.load() < sleepers) {  // after a failure: wake them again (if Notify wakes at all)
      p.Notify();
      std::this_thread::sleep_for(10ms);
    }
    for (auto& w : waiters) w.join();
    if (in_time) {
      EXPECT_EQ(p.Seq(), seen + 1);
    }
    p.Wait(seen);  // the sequence moved on: returns at once
  }
}

// The race this Parker fixed needs fresh processes to show up (see
// parker_stress.cc, run by CTest as parker_stress_smoke): here, the waits
// and wake-ups of one sequence seen by several sleepers and notifiers at
// once, each sleeper woken by the Notify after its Seq().
TEST(ParkerTest, EveryWaiterReturnsOnceTheSequenceItSawMoved) {
  Parker p;
  constexpr int kThreads = 4;
  constexpr int kRounds = 2000;
  std::atomic<int> finished{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        const uint32_t seen = p.Seq();
        p.Notify();    // moves the sequence past `seen` ...
        p.Wait(seen);  // ... so this returns, asleep or not
      }
      ++finished;
    });
  }
  EXPECT_TRUE(Eventually([&] { return finished.load() == kThreads; }, 20000ms));
  for (auto& t : threads) t.join();
  EXPECT_EQ(p.Seq(), static_cast<uint32_t>(kThreads * kRounds));
}

}  // namespace
}  // namespace dfx::device
