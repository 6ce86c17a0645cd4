#include "coordinator/manifest_writer.h"

#include "common/clock.h"
#include "common/log.h"

namespace dfx::coordinator {

ManifestWriter::~ManifestWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ManifestWriter::Post(collectors::RunManifest manifest) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued_ = std::move(manifest);
  }
  cv_.notify_all();
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
}

bool ManifestWriter::busy() {
  std::lock_guard<std::mutex> lock(mu_);
  return writing_ || queued_.has_value();
}

Status ManifestWriter::WriteNow(const collectors::RunManifest& manifest) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !writing_ && !queued_; });
  }
  return collectors::WriteRunManifest(dir_, manifest);
}

void ManifestWriter::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || queued_.has_value(); });
    // A snapshot still queued at the end is written: it is newer than the file.
    if (!queued_) return;
    collectors::RunManifest manifest = std::move(*queued_);
    queued_.reset();
    writing_ = true;
    lock.unlock();
    const uint64_t start = MonotonicClock::Instance().NowNs();
    const Status s = collectors::WriteRunManifest(dir_, manifest);
    last_write_ns_.store(MonotonicClock::Instance().NowNs() - start, std::memory_order_relaxed);
    if (!s.ok()) DFX_LOG_ERROR("cannot write the run manifest: {}", s.message());
    lock.lock();
    writing_ = false;
    cv_.notify_all();
  }
}

}  // namespace dfx::coordinator
