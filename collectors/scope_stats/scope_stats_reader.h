// The scope_stats.jsonl reader (docs/formats.md §11.2), beside its writer
// (ScopeStatsRecorder::Export): the metadata line and the begin/end samples,
// typed. Pairing samples into scopes and what the report derives from them
// is the viewer's.
//
// Plain value types; ReadScopeStats is thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace dfx::collectors {

// A capacity as the metadata line gives it: per ring (an array, as the writer
// writes task_window_max, heap_max and dep_pool_max) or one value for every
// ring (tensormap_max). A missing key or a non-number reads as 0.
struct ScopeCapacity {
  bool per_ring_form = false;
  std::vector<double> per_ring;
  double all_rings = 0;
  double ForRing(int ring) const {
    if (!per_ring_form) return all_rings;
    return ring < static_cast<int>(per_ring.size()) ? per_ring[static_cast<size_t>(ring)] : 0;
  }
};

struct ScopeStatsMetadata {
  bool fatal = false;
  uint64_t dropped = 0;
  // By resource: "task_window", "heap", "dep_pool", "tensormap" (the
  // "<resource>_max" keys).
  std::map<std::string, ScopeCapacity> capacity;
  double Capacity(const std::string& resource, int ring) const {
    auto it = capacity.find(resource);
    return it == capacity.end() ? 0 : it->second.ForRing(ring);
  }
};

// One sample; a missing number reads as 0, a missing site as "?".
struct ScopeStatsSample {
  std::string site;  // "<basename>:<line>"
  bool begin = true;
  int depth = 0;
  int ring = 0;  // clamped to [0, 3]
  double task_window_start = 0, task_window_end = 0;
  double heap_start = 0, heap_end = 0;
  double dep_pool_start = 0, dep_pool_end = 0;
  double tensormap = 0;
};

struct ScopeStatsFile {
  ScopeStatsMetadata metadata;
  std::vector<ScopeStatsSample> samples;  // in file order
};

// Reads `path`: blank lines are skipped, the first object is the metadata
// (it must have "version"), every later line one sample whose phase is
// "begin" or "end". Errors name the file and the line.
Result<ScopeStatsFile> ReadScopeStats(const std::filesystem::path& path);

}  // namespace dfx::collectors
