// The run manifest while a run goes on, written off the event loop's thread:
// a rewrite of a manifest with a row per rank and per dispatch takes
// milliseconds, and on the loop's thread every dispatch whose DispatchDone
// arrived meanwhile would carry that in its round trip. The loop takes a
// snapshot (a copy of the records) and posts it; one writer thread
// serialises and writes it (collectors::WriteRunManifest: a temporary file
// renamed over the manifest). Only the latest snapshot matters: one posted
// while another waits replaces it. The run's last word goes through
// WriteNow, after every earlier write: the final manifest is exactly the
// final state, never overtaken by an older snapshot.
//
// Threads: Post, WriteNow and busy from one owner thread; the writer
// thread is started on the first Post and joined by the destructor.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "collectors/run_manifest.h"
#include "common/status.h"

namespace dfx::coordinator {

// How long after the start of one running-manifest rewrite the next may
// begin: `min_interval_ns`, or nine times the last rewrite's own time if
// that is longer, so rewriting takes at most a tenth of the writer's thread
// whatever the manifest's size. (A manifest is rewritten whole, with a row
// per dispatch: at 64 ranks x 1000 dispatches a rewrite took a large part
// of a second, and rewriting every 0.5 s kept a third of a core busy.)
inline uint64_t NextManifestAfterNs(uint64_t min_interval_ns, uint64_t last_write_ns) {
  return std::max(min_interval_ns, 9 * last_write_ns);
}

class ManifestWriter {
 public:
  // Writes <dir>/run_manifest.json.
  explicit ManifestWriter(std::filesystem::path dir) : dir_(std::move(dir)) {}
  ~ManifestWriter();
  ManifestWriter(const ManifestWriter&) = delete;
  ManifestWriter& operator=(const ManifestWriter&) = delete;

  // Queues `manifest` for the writer thread (replacing a snapshot still
  // queued). A failed write is logged there.
  void Post(collectors::RunManifest manifest);
  // True while a posted snapshot is queued or being written.
  bool busy();
  // How long the last posted snapshot took to serialise and write (0 before
  // the first), for pacing: see NextManifestAfterNs.
  uint64_t last_write_ns() const { return last_write_ns_.load(std::memory_order_relaxed); }
  // Waits for the posted writes, then writes `manifest` on this thread.
  Status WriteNow(const collectors::RunManifest& manifest);

 private:
  void Loop();

  const std::filesystem::path dir_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<collectors::RunManifest> queued_;  // under mu_
  bool writing_ = false;                           // under mu_
  bool stop_ = false;                              // under mu_
  std::atomic<uint64_t> last_write_ns_{0};
  std::thread thread_;
};

}  // namespace dfx::coordinator
