// Prefetch<T>: runs a reader on a thread of its own, ahead of the one thread
// that consumes what it reads. A converter that streams a large file twice
// or three times (the scheduler and orchestrator phases of a records file)
// spends a good part of its one core parsing; with the parse on the other
// core, the converter's thread only draws.
//
// The reader hands items over in batches of kBatch, at most kDepth batches
// ahead of the consumer, so memory stays bounded (kBatch * kDepth items)
// however long the stream. The consumer may stop early: destroying the
// Prefetch tells the reader to stop (its push returns false) and joins it.
//
// One consumer thread; the reader must not touch what the consumer changes.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dfx {

template <typename T>
class Prefetch {
 public:
  static constexpr size_t kBatch = 512;
  static constexpr size_t kDepth = 4;

  // What the reader calls for each item; false: the consumer is gone, stop.
  using Push = std::function<bool(const T&)>;
  // Reads the whole stream through `push`; its status is status() at the end.
  using Reader = std::function<Status(const Push&)>;

  explicit Prefetch(Reader read) : thread_([this, read = std::move(read)] { Run(read); }) {}
  ~Prefetch() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    space_.notify_all();
    thread_.join();
  }
  Prefetch(const Prefetch&) = delete;
  Prefetch& operator=(const Prefetch&) = delete;

  // The next item; false at the end of the stream (then status() is the
  // reader's).
  bool Next(T* out) {
    if (pos_ == current_.size() && !Refill()) return false;
    *out = current_[pos_++];
    return true;
  }
  // Calls fn for every item left; returns the reader's status.
  Status ForEach(const std::function<void(const T&)>& fn) {
    for (;;) {
      for (; pos_ < current_.size(); ++pos_) fn(current_[pos_]);
      if (!Refill()) return status();
    }
  }
  // The reader's status once Next returned false (Ok before).
  Status status() const {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  void Run(const Reader& read) {
    std::vector<T> batch;
    batch.reserve(kBatch);
    Status st = read([&](const T& item) {
      batch.push_back(item);
      return batch.size() < kBatch || Hand(batch);
    });
    if (!batch.empty()) Hand(batch);
    {
      std::lock_guard<std::mutex> lock(mu_);
      status_ = std::move(st);
      done_ = true;
    }
    ready_.notify_one();
  }
  // Queues `batch` (and gives the reader an empty one); false: stopped.
  // Each side, once it has to wait, waits until half the queue is there for
  // it (room or batches): the threads then take turns in runs of batches,
  // not a sleep and a wake-up per batch.
  bool Hand(std::vector<T>& batch) {
    std::unique_lock<std::mutex> lock(mu_);
    if (queue_.size() >= kDepth) {
      space_.wait(lock, [&] { return stopped_ || queue_.size() <= kDepth / 2; });
    }
    if (stopped_) {
      batch.clear();  // a reader that reads on after false keeps no more than a batch
      return false;
    }
    queue_.push_back(std::move(batch));
    const bool wake = queue_.size() >= kDepth / 2;
    if (!spare_.empty()) {
      batch = std::move(spare_.back());
      spare_.pop_back();
    } else {
      batch = {};
      batch.reserve(kBatch);
    }
    lock.unlock();
    if (wake) ready_.notify_one();
    return true;
  }
  // Makes the next queued batch current; false when there is none left.
  bool Refill() {
    std::unique_lock<std::mutex> lock(mu_);
    current_.clear();
    if (current_.capacity() != 0) spare_.push_back(std::move(current_));
    if (queue_.empty()) ready_.wait(lock, [&] { return done_ || queue_.size() >= kDepth / 2; });
    current_ = {};
    pos_ = 0;
    if (queue_.empty()) return false;
    current_ = std::move(queue_.front());
    queue_.pop_front();
    const bool wake = queue_.size() <= kDepth / 2;
    lock.unlock();
    if (wake) space_.notify_one();
    return true;
  }

  mutable std::mutex mu_;
  std::condition_variable ready_, space_;
  std::deque<std::vector<T>> queue_;   // read, not yet consumed
  std::vector<std::vector<T>> spare_;  // consumed, for the reader to fill again
  bool done_ = false, stopped_ = false;
  Status status_;
  // The consumer's side.
  std::vector<T> current_;
  size_t pos_ = 0;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace dfx
