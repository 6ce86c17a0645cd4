// The emulated AICore kernels: real float math on host buffers (FLOAT16 and
// BFLOAT16 converted exactly), one SPMD block at a time, plus the cost model
// that turns a block's real work into device cycles and PMU work counts.
//
// Thread-safe: a call touches only the buffers it is given. SPMD blocks of
// one task write disjoint output rows, so they may run concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectors/recorders.h"
#include "common/status.h"
#include "device/chip_model.h"
#include "device/program.h"
#include "device/shape.h"

namespace dfx::device {

// One tensor argument as the kernel sees it: element 0 of the view.
struct KernelTensor {
  uint8_t* data = nullptr;
  DType dtype = DType::kFloat32;
  uint64_t numel = 0;
  Shape shape;
};

struct KernelCall {
  const Kernel* kernel = nullptr;
  std::vector<KernelTensor> ins;   // INPUT and INOUT args, in arg order
  std::vector<KernelTensor> outs;  // OUTPUT, OUTPUT_EXISTING and INOUT args
  const std::vector<Scalar>* scalars = nullptr;
  int block_idx = 0;
  int block_num = 1;
};

// Work of one block from the shapes alone (deterministic): the cycles the
// block takes on `model` and the counters PMU derives from them.
collectors::PmuWork EstimateWork(const KernelCall& call, const ChipModel& model);

// Runs one block. `spin_busy` makes busy kernels spin on the host clock for
// their duration (real-clock mode); otherwise they return at once.
// A `fail` kernel returns Internal with its message.
Status RunKernelBlock(const KernelCall& call, bool spin_busy);

// Half-open row range [begin, end) that block `b` of `n` owns out of `rows`.
inline void BlockRows(uint64_t rows, int b, int n, uint64_t* begin, uint64_t* end) {
  *begin = rows * static_cast<uint64_t>(b) / static_cast<uint64_t>(n);
  *end = rows * static_cast<uint64_t>(b + 1) / static_cast<uint64_t>(n);
}

}  // namespace dfx::device
