// Chip models per backend type (docs/formats.md §1, docs/design.md §5): core
// counts, the swimlane counter clock, AICPU thread limits and ring defaults.
// Plain data; thread-safe.
#pragma once

#include <array>
#include <cstdint>

#include "common/status.h"
#include "config/run_config.h"

namespace dfx::device {

// Capacities of the four per-depth rings (depth 0..3) and the tensormap.
struct RingCapacities {
  std::array<uint64_t, 4> task_window{};  // task slots (power of 2)
  std::array<uint64_t, 4> heap{};         // bytes
  std::array<uint64_t, 4> dep_pool{};     // dependency-list entries
  uint64_t tensormap = 0;                 // live producer entries
  bool operator==(const RingCapacities&) const = default;
};

struct ChipModel {
  config::BackendType backend;
  const char* name;        // "a2a3" | "a5"
  int max_cores;           // PLATFORM_MAX_CORES: 72 / 108
  uint64_t clock_freq_hz;  // PLATFORM_PROF_SYS_CNT_FREQ: 50 MHz / 1 GHz
  int max_aicpu_threads;   // PLATFORM_MAX_AICPU_THREADS: 4 / 5
  RingCapacities ring_defaults;
  // Cost model (virtual clock and PMU): per-core throughput.
  double cube_flops_per_cycle;  // fp multiply-adds per cycle (x2 flops)
  double vec_elems_per_cycle;   // vector elements per cycle
  double gm_bytes_per_cycle;    // global memory bandwidth per core
  // Device memory (HBM) of one chip: what a dispatch's tensors and ring
  // heaps may take (device/memory_budget.h).
  uint64_t device_memory_bytes;
};

const ChipModel& GetChipModel(config::BackendType backend);

// The model defaults overridden by the non-zero entries of `sizing`.
RingCapacities ResolveRings(const ChipModel& model, const config::RingSizing& sizing);

}  // namespace dfx::device
