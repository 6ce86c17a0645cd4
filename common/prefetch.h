// Prefetch<T>: runs a reader on a thread of its own, ahead of the one thread
// that consumes what it reads. A converter that streams a large file twice
// or three times (the scheduler and orchestrator phases of a records file)
// spends a good part of its one core parsing; with the parse on the other
// core, the converter's thread only draws.
//
// The reader hands items over in batches of kBatch, at most kDepth batches
// ahead of the consumer (common/handoff.h), so memory stays bounded however
// long the stream. The consumer may stop early: destroying the
// Prefetch tells the reader to stop (its push returns false) and joins it.
//
// One consumer thread; the reader must not touch what the consumer changes.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/handoff.h"
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

  explicit Prefetch(Reader read)
      : handoff_(kDepth, [] { return NewBatch(); }),
        thread_([this, read = std::move(read)] { Run(read); }) {}
  ~Prefetch() {
    handoff_.Stop();
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
    std::lock_guard<std::mutex> lock(status_mu_);
    return status_;
  }

 private:
  static std::vector<T> NewBatch() {
    std::vector<T> batch;
    batch.reserve(kBatch);
    return batch;
  }
  void Run(const Reader& read) {
    std::vector<T> batch = NewBatch();
    Status st = read([&](const T& item) {
      batch.push_back(item);
      if (batch.size() < kBatch || handoff_.Put(batch)) return true;
      batch.clear();  // a reader that reads on after false keeps no more than a batch
      return false;
    });
    if (!batch.empty()) handoff_.Put(batch);
    {
      std::lock_guard<std::mutex> lock(status_mu_);
      status_ = std::move(st);
    }
    handoff_.Close();
  }
  // Makes the next batch current; false when there is none left.
  bool Refill() {
    current_.clear();
    pos_ = 0;
    return handoff_.Take(current_);
  }

  Handoff<std::vector<T>> handoff_;
  mutable std::mutex status_mu_;
  Status status_;
  // The consumer's side.
  std::vector<T> current_;
  size_t pos_ = 0;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace dfx
