#include "device/chip_threads.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>

namespace dfx::device {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "a futex waits on the atomic's own word");

void Parker::Wait(uint32_t seen) {
  for (int i = 0; i < kSpins; ++i) {
    if (seq_.load(std::memory_order_acquire) != seen) return;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  // The kernel sleeps only while the word still holds `seen`: a Notify
  // between the check and the sleep is not lost.
  while (seq_.load(std::memory_order_seq_cst) == seen) {
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&seq_), FUTEX_WAIT_PRIVATE, seen, nullptr,
              nullptr, 0);
  }
  sleepers_.fetch_sub(1, std::memory_order_seq_cst);
}

void Parker::WakeAll() {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&seq_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
            nullptr, 0);
}

ChipThreads::~ChipThreads() {
  stop_.store(true, std::memory_order_seq_cst);
  for (auto& c : cores_) c->mailbox.wake.Notify();
  for (auto& s : scheds_) s->wake.Notify();
  for (auto& c : cores_) c->thread.join();
  for (auto& s : scheds_) s->thread.join();
}

void ChipThreads::EnsureCores(int count) {
  while (static_cast<int>(cores_.size()) < count) {
    auto core = std::make_unique<CoreThread>();
    CoreMailbox* box = &core->mailbox;
    box->core = static_cast<int>(cores_.size());
    core->thread = std::thread([this, box] { CoreLoop(box); });
    cores_.push_back(std::move(core));
  }
}

void ChipThreads::CoreLoop(CoreMailbox* box) {
  for (;;) {
    const uint32_t seen = box->wake.Seq();
    if (box->state.load(std::memory_order_acquire) == CoreMailbox::kAssigned) {
      box->runner->RunBlock(box->core);
      continue;
    }
    if (stop_.load(std::memory_order_acquire)) return;
    box->wake.Wait(seen);
  }
}

void ChipThreads::SchedLoop(SchedThread* self) {
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
  while (scheds_.size() < jobs.size()) {
    auto sched = std::make_unique<SchedThread>();
    SchedThread* self = sched.get();
    sched->thread = std::thread([this, self] { SchedLoop(self); });
    scheds_.push_back(std::move(sched));
  }
  running_.store(static_cast<int>(jobs.size()), std::memory_order_relaxed);
  for (size_t i = 0; i < jobs.size(); ++i) {
    scheds_[i]->job.store(&jobs[i], std::memory_order_release);
    scheds_[i]->wake.Notify();  // publishes `job` (seq_cst)
  }
  on_caller();
  for (;;) {
    const uint32_t seen = done_.Seq();
    if (running_.load(std::memory_order_acquire) == 0) return;
    done_.Wait(seen);
  }
}

}  // namespace dfx::device
