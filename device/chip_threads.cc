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
    if (seq_.load(std::memory_order_acquire) != seen) return;
    Pause();
  }
  // Counted before each sleep; Notify takes the count (exchange with 0)
  // and wakes all, so nobody decrements. The kernel sleeps only while the
  // word still holds `seen`: a Notify between the check and the sleep is
  // not lost (it saw the count, or the check sees its new seq_).
  while (true) {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    if (seq_.load(std::memory_order_seq_cst) != seen) return;
    ::syscall(SYS_futex, Word(&seq_), FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
    if (seq_.load(std::memory_order_seq_cst) != seen) return;
  }
}

void Parker::WakeAll() {
  ::syscall(SYS_futex, Word(&seq_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
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
