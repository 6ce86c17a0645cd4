#include "device/chip_threads.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>

namespace dfx::device {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "a futex waits on the atomic's own word");

namespace {

void Pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

uint32_t* Word(std::atomic<uint32_t>* a) { return reinterpret_cast<uint32_t*>(a); }

}  // namespace

void Parker::Wait(uint32_t seen) {
  for (int i = 0; i < kSpins; ++i) {
    if (Seq() != seen) return;
    Pause();
  }
  // Flag the word, then sleep while it holds exactly that: the sequence we
  // saw, flagged. A Notify in between changes the word, so the kernel does
  // not let us sleep; one after it finds the flag and wakes us.
  for (;;) {
    uint32_t word = word_.load(std::memory_order_seq_cst);
    if ((word >> 1) != seen) return;
    if ((word & kSleeping) == 0 &&
        !word_.compare_exchange_strong(word, word | kSleeping, std::memory_order_seq_cst)) {
      continue;  // a Notify (or another sleeper's flag) came first: look again
    }
    ::syscall(SYS_futex, Word(&word_), FUTEX_WAIT_PRIVATE, word | kSleeping, nullptr, nullptr, 0);
  }
}

void Parker::WakeAll() {
  ::syscall(SYS_futex, Word(&word_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

RunMutex::RunMutex() {
  pthread_mutexattr_t attr;
  ::pthread_mutexattr_init(&attr);
  ::pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
  ::pthread_mutex_init(&mu_, &attr);
  ::pthread_mutexattr_destroy(&attr);
}

RunMutex::~RunMutex() { ::pthread_mutex_destroy(&mu_); }

void RunMutex::lock() { ::pthread_mutex_lock(&mu_); }

void RunMutex::unlock() { ::pthread_mutex_unlock(&mu_); }

ChipThreads::~ChipThreads() {
  stop_.store(true, std::memory_order_seq_cst);
  for (auto& p : pool_) p->wake.Notify();
  for (auto& p : pool_) p->thread.join();
}

void ChipThreads::PoolLoop(PoolThread* self) {
  for (;;) {
    const uint32_t seen = self->wake.Seq();
    if (const std::function<void()>* job = self->job.load(std::memory_order_acquire)) {
      (*job)();
      self->job.store(nullptr, std::memory_order_relaxed);
      if (running_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.Notify();
      continue;
    }
    if (stop_.load(std::memory_order_acquire)) return;
    self->wake.Wait(seen);
  }
}

void ChipThreads::Run(const std::vector<std::function<void()>>& jobs,
                      const std::function<void()>& on_caller) {
  while (pool_.size() < jobs.size()) {
    auto thread = std::make_unique<PoolThread>();
    PoolThread* self = thread.get();
    thread->thread = std::thread([this, self] { PoolLoop(self); });
    pool_.push_back(std::move(thread));
  }
  running_.store(static_cast<int>(jobs.size()), std::memory_order_relaxed);
  for (size_t i = 0; i < jobs.size(); ++i) {
    pool_[i]->job.store(&jobs[i], std::memory_order_release);
    pool_[i]->wake.Notify();  // publishes `job` (seq_cst)
  }
  on_caller();
  for (;;) {
    const uint32_t seen = done_.Seq();
    if (running_.load(std::memory_order_acquire) == 0) return;
    done_.Wait(seen);
  }
}

}  // namespace dfx::device
