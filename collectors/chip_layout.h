// What the collectors need to know about the chip that ran: plain data filled
// in by the device and written into artifact metadata.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace dfx::collectors {

enum class CoreKind : uint8_t { kAic = 0, kAiv = 1 };

struct ChipLayout {
  std::string backend = "a2a3";       // "a2a3" | "a5"
  uint64_t clock_freq_hz = 50000000;  // swimlane counter frequency
  std::vector<CoreKind> core_types;   // index = core_id; the cores that really ran
  int sched_threads = 1;              // AICPU scheduler threads
  int orch_threads = 1;               // orchestrator threads (normally 1)
  // Ring capacities (scope stats metadata), per ring depth 0..3.
  std::array<int64_t, 4> task_window_max{};
  std::array<uint64_t, 4> heap_max{};
  std::array<int64_t, 4> dep_pool_max{};
  int64_t tensormap_max = 0;
};

// Upper bounds the device knows before the run starts (from the program), used
// to preallocate every record buffer so recording never allocates.
struct CapacityHint {
  uint64_t tasks = 0;            // logical tasks (submits, incl. dummies)
  uint64_t core_executions = 0;  // per-core task executions (SPMD blocks count each)
  uint64_t scope_samples = 0;    // scope begin + end samples (root included)
  uint64_t tensor_args = 0;      // total tensor + scalar args over all submits
  uint64_t edges = 0;            // dependency edges upper bound (0 = unknown)
};

}  // namespace dfx::collectors
