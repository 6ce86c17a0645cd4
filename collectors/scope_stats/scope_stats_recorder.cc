// Scope stats recorder and scope_stats.jsonl writer (docs/formats.md §11).
//
// Single producer (the orchestrator thread): samples go into one preallocated
// array; a sample past capacity is dropped and counted. Depth > 64 and rings
// outside [0, 4) are ignored silently, as on the device.
#include <algorithm>
#include <atomic>
#include <vector>

#include "collectors/internal/compiled_format.h"
#include "collectors/internal/fixed_string.h"
#include "collectors/internal/lazy_array.h"
#include "collectors/recorders.h"
#include "collectors/scope_stats/scope_stats_keys.h"
#include "common/json_stream.h"
#include "common/log.h"

namespace dfx::collectors {

namespace keys = scope_stats_keys;
namespace {
constexpr int kMaxScopeDepth = 64;  // PTO2_SCOPE_STATS_MAX_SCOPE_DEPTH
}  // namespace

struct ScopeStatsRecorder::Impl {
  ChipLayout layout;
  internal::LazyArray<ScopeSample> samples;
  uint64_t count = 0;
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> total{0};
  std::atomic<bool> fatal{false};
};

ScopeStatsRecorder::ScopeStatsRecorder(const ChipLayout& layout, const CapacityHint& hint)
    : impl_(std::make_unique<Impl>()) {
  impl_->layout = layout;
  // PLATFORM_SCOPE_STATS_RECORDS_PER_BUFFER x BUFFERS_PER_INSTANCE is the floor.
  impl_->samples.Reset(std::max<uint64_t>(hint.scope_samples, 512 * 4));
}

ScopeStatsRecorder::~ScopeStatsRecorder() = default;

void ScopeStatsRecorder::Record(const ScopeSample& sample) {
  Impl& m = *impl_;
  if (sample.depth > kMaxScopeDepth || sample.depth < 0) return;
  if (sample.ring < 0 || sample.ring >= 4) return;
  // One producer: a load and a store, not an atomic read-modify-write.
  m.total.store(m.total.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (m.count >= m.samples.size()) {
    m.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  m.samples.MapAhead(m.count);
  m.samples[m.count++] = sample;
}

void ScopeStatsRecorder::SetFatal() { impl_->fatal.store(true, std::memory_order_relaxed); }

Status ScopeStatsRecorder::Export(const fs::path& path) const {
  const Impl& m = *impl_;
  const ChipLayout& l = m.layout;
  const uint64_t dropped = m.dropped.load();
  if (dropped > 0) {
    DFX_LOG_WARN(
        "scope_stats reconcile: {} records dropped on device side. Raise the "
        "CapacityHint scope_samples bound if frequent.",
        dropped);
  }
  ChunkedWriter w;
  Status s = w.Open(path);
  if (!s.ok()) {
    DFX_LOG_ERROR("scope_stats: failed to open {}: {}", path.string(), s.message());
    return s;
  }
  using internal::KeyFormat;
  internal::Put(
      w,
      KeyFormat<"{{\"", keys::kVersion, "\": 6, \"", keys::kFatal, "\": {}, \"", keys::kDropped,
                "\": {}, \"", keys::kTotal, "\": {}, \"", keys::kTaskWindow, keys::kMaxSuffix,
                "\": [{}, {}, {}, {}], \"", keys::kHeap, keys::kMaxSuffix,
                "\": [{}, {}, {}, {}], \"", keys::kDepPool, keys::kMaxSuffix,
                "\": [{}, {}, {}, {}], \"", keys::kTensormap, keys::kMaxSuffix, "\": {}}}\n">{},
      m.fatal.load() ? "true" : "false", dropped, m.total.load(), l.task_window_max[0],
      l.task_window_max[1], l.task_window_max[2], l.task_window_max[3], l.heap_max[0],
      l.heap_max[1], l.heap_max[2], l.heap_max[3], l.dep_pool_max[0], l.dep_pool_max[1],
      l.dep_pool_max[2], l.dep_pool_max[3], l.tensormap_max);
  for (uint64_t i = 0; i < m.count; ++i) {
    const ScopeSample& x = m.samples[i];
    w.Append(JoinedText<"{\"", keys::kSite, "\": ">);
    w.String(internal::FixedString(x.site));
    internal::Put(
        w,
        KeyFormat<", \"", keys::kPhase, "\": \"{}\", \"", keys::kDepth, "\": {}, \"", keys::kRing,
                  "\": {}, \"", keys::kTaskWindow, keys::kStartSuffix, "\": {}, \"",
                  keys::kTaskWindow, keys::kEndSuffix, "\": {}, \"", keys::kHeap,
                  keys::kStartSuffix, "\": {}, \"", keys::kHeap, keys::kEndSuffix, "\": {}, \"",
                  keys::kDepPool, keys::kStartSuffix, "\": {}, \"", keys::kDepPool,
                  keys::kEndSuffix, "\": {}, \"", keys::kTensormap, "\": {}}}\n">{},
        x.begin ? keys::kPhaseBegin.c_str() : keys::kPhaseEnd.c_str(), x.depth, x.ring,
        x.task_window_start, x.task_window_end, x.heap_start, x.heap_end, x.dep_pool_start,
        x.dep_pool_end, x.tensormap);
  }
  DFX_RETURN_IF_ERROR(w.Commit());
  DFX_LOG_INFO("scope_stats: wrote {} records (dropped={}) to {}", m.count, dropped, path.string());
  return Status::Ok();
}

}  // namespace dfx::collectors
