#include "device/chip_model.h"

namespace dfx::device {

namespace {

// Ring defaults: depth 0/1 rings are the large ones (orchestration body and
// first-level loops), depth 2/3 smaller, as in the reference runtime's
// per-depth ring layout.
const ChipModel kA2A3{
    config::BackendType::kA2A3,
    "a2a3",
    72,
    50000000,
    4,
    RingCapacities{{4096, 4096, 1024, 1024},
                   {64ull << 20, 64ull << 20, 16ull << 20, 16ull << 20},
                   {16384, 16384, 4096, 4096},
                   16384},
    /*cube_flops_per_cycle=*/4096,
    /*vec_elems_per_cycle=*/128,
    /*gm_bytes_per_cycle=*/64,
    /*device_memory_bytes=*/64ull << 30,
};

const ChipModel kA5{
    config::BackendType::kA5,
    "a5",
    108,
    1000000000,
    5,
    RingCapacities{{8192, 8192, 2048, 2048},
                   {128ull << 20, 128ull << 20, 32ull << 20, 32ull << 20},
                   {32768, 32768, 8192, 8192},
                   32768},
    /*cube_flops_per_cycle=*/8192,
    /*vec_elems_per_cycle=*/256,
    /*gm_bytes_per_cycle=*/128,
    /*device_memory_bytes=*/128ull << 30,
};

}  // namespace

const ChipModel& GetChipModel(config::BackendType backend) {
  return backend == config::BackendType::kA5 ? kA5 : kA2A3;
}

RingCapacities ResolveRings(const ChipModel& model, const config::RingSizing& sizing) {
  RingCapacities r = model.ring_defaults;
  for (int i = 0; i < 4; ++i) {
    if (sizing.task_window[i]) r.task_window[i] = sizing.task_window[i];
    if (sizing.heap[i]) r.heap[i] = sizing.heap[i];
    if (sizing.dep_pool[i]) r.dep_pool[i] = sizing.dep_pool[i];
  }
  return r;
}

}  // namespace dfx::device
