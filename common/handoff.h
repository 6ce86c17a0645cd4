// Handoff<Buf>: one producer thread hands filled buffers to one consumer
// thread, in order, through a bounded queue, and gets emptied ones back to
// fill again. The one queue behind Prefetch (a reader thread ahead of its
// consumer), PerfettoEncodeThread (a converter's commands to the encoding
// thread) and ChunkedWriter's background writer (a trace's chunks to the
// thread that writes them).
//
// At most `depth` buffers are queued, so memory stays bounded however long
// the stream: the producer's buffer, the queue, the consumer's buffer and
// the spares the consumer gave back. Each side, once it has to wait, waits
// until half the queue is there for it (room, or buffers to take): on two
// cores the threads then take turns in runs of buffers, not a sleep and a
// wake-up per buffer.
//
// Either side may end early: the producer with Drop (the consumer takes
// nothing more), the consumer with Stop (Put refuses from then on, and never
// waits). Close is the producer's normal end: the consumer takes what is
// queued, then Take returns false.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace dfx {

template <typename Buf>
class Handoff {
 public:
  // `make` makes an empty buffer when the consumer has given none back.
  Handoff(size_t depth, std::function<Buf()> make)
      : depth_(std::max<size_t>(depth, 1)), make_(std::move(make)) {}
  Handoff(const Handoff&) = delete;
  Handoff& operator=(const Handoff&) = delete;

  // Producer: queues `buf` and puts an empty buffer in its place (one the
  // consumer gave back, or a new one). With `depth` queued, first waits
  // until half of them are taken. False once the consumer stopped: nothing
  // is queued and `buf` is left as it was.
  bool Put(Buf& buf) {
    std::unique_lock<std::mutex> lock(mu_);
    if (queue_.size() >= depth_) {
      room_.wait(lock, [&] { return stopped_ || queue_.size() <= depth_ / 2; });
    }
    if (stopped_) return false;
    queue_.push_back(std::move(buf));
    const bool wake = queue_.size() >= Half();
    if (!spare_.empty()) {
      buf = std::move(spare_.back());
      spare_.pop_back();
    } else {
      lock.unlock();  // make() may allocate: not under the lock
      buf = make_();
      lock.lock();
    }
    lock.unlock();
    if (wake) filled_.notify_one();
    return true;
  }
  // Producer, before its first Put: adds `buf` (empty) to the buffers Put
  // hands out before it makes any, so a buffer can be made ready (its
  // memory mapped, say) ahead of the stream.
  void Give(Buf buf) {
    std::lock_guard<std::mutex> lock(mu_);
    spare_.push_back(std::move(buf));
  }
  // Producer: nothing more comes.
  void Close() { End(&closed_); }
  // Producer: ends without the rest; what is queued is never taken.
  void Drop() { End(&dropped_); }

  // Consumer: gives back the buffer it took last (the caller has emptied
  // it) and takes the next one into `buf`. When none is queued, waits until
  // half the queue is there or the producer ended. False at the end: closed
  // with nothing left, or dropped.
  bool Take(Buf& buf) {
    std::unique_lock<std::mutex> lock(mu_);
    if (holds_) spare_.push_back(std::move(buf));
    holds_ = false;
    if (queue_.empty()) {
      filled_.wait(lock, [&] { return closed_ || dropped_ || queue_.size() >= Half(); });
    }
    if (dropped_ || queue_.empty()) return false;
    buf = std::move(queue_.front());
    queue_.pop_front();
    holds_ = true;
    const bool wake = queue_.size() <= depth_ / 2;
    lock.unlock();
    if (wake) room_.notify_one();
    return true;
  }
  // Consumer: takes nothing more; Put returns false from now on.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    room_.notify_all();
  }

 private:
  size_t Half() const { return std::max<size_t>(depth_ / 2, 1); }
  void End(bool* flag) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      *flag = true;
    }
    filled_.notify_all();
  }

  const size_t depth_;
  const std::function<Buf()> make_;
  std::mutex mu_;
  std::condition_variable filled_, room_;
  std::deque<Buf> queue_;   // filled, in order
  std::vector<Buf> spare_;  // emptied by the consumer, for the producer
  bool closed_ = false, dropped_ = false, stopped_ = false;
  bool holds_ = false;  // the consumer holds a taken buffer
};

}  // namespace dfx
