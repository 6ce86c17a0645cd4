// The device memory of one run (device/emulator.h): every external tensor's
// buffer (filled from its init, or from the chip's resident tensors) and the
// rings' heaps, which the chip keeps between dispatches. Owned by the run;
// BufferData may be called from any thread once Allocate returned (buffers
// are not moved afterwards), the rest from the run's calling thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "common/status.h"
#include "device/chip.h"
#include "device/emulator.h"
#include "device/lowering.h"

namespace dfx::device {

class DeviceMemory {
 public:
  // `heaps`: the chip's, one per ring; `resident` may be null (nothing is
  // resident).
  DeviceMemory(const LoweredProgram& lp, DeviceHeap* heaps, ResidentState* resident);

  // Allocates and fills the external buffers, and maps each used ring's
  // heap (reusing the chip's while its size is the same). An error when a
  // resident tensor's dtype or size changed, or a heap cannot be allocated.
  Status Allocate();
  // Where buffer `b`'s data starts.
  uint8_t* BufferData(int b) {
    const Buffer& buf = lp_.buffers[b];
    if (buf.external) return external_[b].get();
    return heap_mem_[buf.ring] + buf.heap_offset;
  }
  // Writes every resident tensor's buffer back to the chip's device memory
  // (in-place updates persist; a rebinding OUTPUT is a new value and does not).
  void SaveResident();
  // Copies the final value of every base tensor name, as bound after the
  // first `submitted` tasks, into `report->tensors`.
  void CollectTensors(uint64_t submitted, RunReport* report);

 private:
  const LoweredProgram& lp_;
  const Program& prog_;
  DeviceHeap* heaps_;          // the chip's, one per ring
  ResidentState* resident_;    // may be null
  uint8_t* heap_mem_[4] = {};  // this run's (heaps_[ring].mem once used)
  std::map<int, std::unique_ptr<uint8_t[]>> external_;
};

}  // namespace dfx::device
