// The host threads of one emulated chip (device/emulator.h), kept across
// dispatches, and the wake-ups they use. Internal to the emulator.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace dfx::device {

// A wake-up word with spin-then-park: Wait(seen) returns once Notify() was
// called after `seen = Seq()` was read. A waiter first spins briefly, then
// sleeps in the kernel on a futex; Notify() makes a system call only when
// someone sleeps. The machine may have fewer cores than the emulator has
// threads, so the spin is short: long spinning would take the core from the
// thread that has the work. It never calls sched_yield (nor
// std::atomic::wait, which does before it sleeps): on a loaded machine a
// yielding thread waits behind every other runnable one, and a run of 20k
// tasks took minutes instead of seconds.
//
// The sequence and the "someone sleeps" flag share the one word the futex
// waits on, and a Notify changes both in one step. They used to be two
// words (a sequence, and a count of sleepers that Notify took with an
// exchange), which lost wake-ups: a notifier delayed between its two steps
// took the count of the waiter's next wait, woke it before it slept, and
// the Notify after that found no count and made no call, leaving it asleep
// for good: two 100k-task runs stalled in a few thousand, and 5 of 3,000
// fresh processes ping-ponging through two such Parkers (parker_stress.cc).
class Parker {
 public:
  uint32_t Seq() const { return word_.load(std::memory_order_seq_cst) >> 1; }
  // Wakes every sleeper; a system call only when someone went to sleep
  // since the last one (a sleeper woken but not yet running is not woken
  // again: that was one futex call per Notify while it waited for a CPU).
  void Notify() {
    uint32_t old = word_.load(std::memory_order_relaxed);
    while (!word_.compare_exchange_weak(old, ((old >> 1) + 1) << 1, std::memory_order_seq_cst)) {
    }
    if ((old & kSleeping) != 0) WakeAll();
  }
  void Wait(uint32_t seen);

 private:
  // Measured with bench/device when each emulated core had its own thread
  // (100k tasks, 6 cores + 2 threads on 2 host cores): 128 pauses beat no
  // spin (more sleeps) and 1000 (the spinner holds the core the worker
  // needs).
  static constexpr int kSpins = 128;
  static constexpr uint32_t kSleeping = 1;  // bit 0; the sequence is bits 1..31
  void WakeAll();
  std::atomic<uint32_t> word_{0};
};

// The run's one lock (AicpuThreads::mu_): glibc's adaptive mutex, which spins a
// little (up to ~100 tries, pausing) before it sleeps on its futex, where
// std::mutex sleeps at once. Its holders keep it for a scheduler pass or a
// batch of submits, so a waiter that spins a few hundred nanoseconds mostly
// gets it without two context switches. Measured with the 100k-task
// layered program (9 interleaved runs): makespan 296 -> 200 ms without
// collectors, 397 -> 261 ms with all five; CPU -5% and -12%. BasicLockable,
// for std::unique_lock.
class RunMutex {
 public:
  RunMutex();
  ~RunMutex();
  RunMutex(const RunMutex&) = delete;
  RunMutex& operator=(const RunMutex&) = delete;
  void lock();
  void unlock();

 private:
  pthread_mutex_t mu_;
};

// The host threads of one chip, kept across dispatches (a dispatch used to
// create and join 6 worker + 1 scheduler threads): a pool of threads that
// each run one job per dispatch. Grown on demand, stopped and joined with
// the chip.
class ChipThreads {
 public:
  ChipThreads() = default;
  ChipThreads(const ChipThreads&) = delete;
  ChipThreads& operator=(const ChipThreads&) = delete;
  ~ChipThreads();  // stops and joins every thread

  // Runs jobs[i] on pool thread i and `on_caller` on the calling thread;
  // returns once every job has returned.
  void Run(const std::vector<std::function<void()>>& jobs, const std::function<void()>& on_caller);
  // Pool threads started so far.
  int size() const { return static_cast<int>(pool_.size()); }

 private:
  struct PoolThread {
    // Set before `wake`; null when done. Atomic: the thread reads it while
    // the caller may be setting it (it looks before it sleeps).
    std::atomic<const std::function<void()>*> job{nullptr};
    Parker wake;
    std::thread thread;
  };
  void PoolLoop(PoolThread* self);

  std::atomic<bool> stop_{false};
  std::vector<std::unique_ptr<PoolThread>> pool_;
  std::atomic<int> running_{0};  // jobs not yet returned
  Parker done_;                  // the caller waits here for them
};

}  // namespace dfx::device
