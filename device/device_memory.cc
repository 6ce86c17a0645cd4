#include "device/device_memory.h"

#include <fmt/format.h>

#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "device/kernels.h"

namespace dfx::device {

namespace {

// Writes `t`'s initial value (TensorDecl::init) into `data`.
void FillInit(const TensorDecl& t, uint8_t* data) {
  uint64_t n = t.Numel();
  uint64_t state = t.init.seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  for (uint64_t i = 0; i < n; ++i) {
    double v = 0;
    switch (t.init.kind) {
      case InitKind::kZeros:
        v = 0;
        break;
      case InitKind::kOnes:
        v = 1;
        break;
      case InitKind::kRange:
        v = t.init.range_start + t.init.range_step * static_cast<double>(i);
        break;
      case InitKind::kRandom: {  // splitmix64 -> uniform [-1, 1)
        state += 0x9e3779b97f4a7c15ull;
        uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        v = static_cast<double>(z >> 11) / static_cast<double>(1ull << 53) * 2.0 - 1.0;
        break;
      }
      case InitKind::kValues:
        v = t.init.values[i];
        break;
    }
    StoreElement(data, t.dtype, i, static_cast<float>(v));
  }
}

}  // namespace

DeviceMemory::DeviceMemory(const LoweredProgram& lp, DeviceHeap* heaps, ResidentState* resident)
    : lp_(lp), prog_(*lp.program), heaps_(heaps), resident_(resident) {}

Status DeviceMemory::Allocate() {
  for (size_t b = 0; b < lp_.buffers.size(); ++b) {
    const Buffer& buf = lp_.buffers[b];
    if (!buf.external) continue;
    auto mem = std::make_unique<uint8_t[]>(buf.bytes);
    const TensorDecl& decl = prog_.tensors[buf.decl];
    auto held = decl.resident && resident_ ? resident_->find(decl.name) : ResidentState::iterator();
    if (decl.resident && resident_ && held != resident_->end()) {
      const ResidentTensor& r = held->second;
      const uint64_t bytes = decl.Numel() * DTypeSize(decl.dtype);
      if (r.dtype != decl.dtype || r.bytes.size() != bytes) {
        return FailedPrecondition(fmt::format(
            "{}: resident tensor \"{}\" is {} {} bytes in this program, but the chip's device "
            "memory holds a {} value of {} bytes from an earlier dispatch; give it another "
            "name or keep its dtype and shape",
            prog_.origin, decl.name, DTypeName(decl.dtype), bytes, DTypeName(r.dtype),
            r.bytes.size()));
      }
      std::memcpy(mem.get(), r.bytes.data(), bytes);
    } else {
      FillInit(decl, mem.get());
    }
    external_[b] = std::move(mem);
  }
  for (const LoweredTask& t : lp_.tasks) {
    if (!t.has_heap || heap_mem_[t.ring]) continue;
    // Uninitialised: pages are only touched where outputs are written.
    // The chip keeps it for the next dispatch with the same ring size (a
    // heap is tens of MiB: mapping and unmapping it cost every dispatch).
    DeviceHeap& heap = heaps_[t.ring];
    const uint64_t bytes = lp_.rings.heap[t.ring];
    if (heap.bytes != bytes) {
      heap.mem.reset();
      heap.bytes = 0;
      heap.mem.reset(new (std::nothrow) uint8_t[bytes]);
      if (!heap.mem)
        return Unavailable("cannot allocate the " + std::to_string(bytes) + "-byte heap of ring " +
                           std::to_string(t.ring) + "; lower ring_heap");
      heap.bytes = bytes;
    }
    heap_mem_[t.ring] = heap.mem.get();
  }
  return Status::Ok();
}

void DeviceMemory::SaveResident() {
  if (!resident_) return;
  for (size_t b = 0; b < lp_.buffers.size(); ++b) {
    const Buffer& buf = lp_.buffers[b];
    auto mem = external_.find(static_cast<int>(b));
    if (!buf.external || !prog_.tensors[buf.decl].resident || mem == external_.end()) continue;
    const TensorDecl& decl = prog_.tensors[buf.decl];
    ResidentTensor& r = (*resident_)[decl.name];
    r.dtype = decl.dtype;
    r.shape = decl.shape;
    r.bytes.assign(mem->second.get(), mem->second.get() + decl.Numel() * DTypeSize(decl.dtype));
  }
}

void DeviceMemory::CollectTensors(uint64_t submitted, RunReport* report) {
  if (!report) return;
  // Current binding of every base name: replay the bindings from the stream.
  std::vector<int> binding(prog_.tensors.size(), -1);
  for (size_t b = 0; b < lp_.buffers.size(); ++b)
    if (lp_.buffers[b].external) binding[lp_.buffers[b].decl] = static_cast<int>(b);
  for (size_t i = 0; i < lp_.tasks.size() && i < submitted; ++i)
    for (const LoweredArg& a : lp_.tasks[i].args)
      if (a.type == ArgType::kOutput) binding[a.decl] = a.buffer;
  for (size_t d = 0; d < prog_.tensors.size(); ++d) {
    if (binding[d] < 0) continue;
    const Buffer& buf = lp_.buffers[binding[d]];
    std::vector<float> v(buf.numel);
    const uint8_t* data = BufferData(binding[d]);
    for (uint64_t i = 0; i < buf.numel; ++i) v[i] = LoadElement(data, buf.dtype, i);
    report->tensors[prog_.tensors[d].name] = std::move(v);
  }
}

}  // namespace dfx::device
