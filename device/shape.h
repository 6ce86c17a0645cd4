// Shape: the dimensions of a tensor view, at most 5 (PLATFORM_DUMP_MAX_DIMS),
// stored inline so the per-task hot paths (lowering, dispatch, recording)
// never allocate for it. Plain value type.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dfx::device {

struct Shape {
  static constexpr size_t kMaxDims = 5;
  uint8_t ndims = 0;
  std::array<uint32_t, kMaxDims> dims{};

  Shape() = default;
  // Implicit on purpose: declarations keep their shape as a vector. Dims past
  // the fifth are dropped (the loader rejects them).
  Shape(const std::vector<uint32_t>& v) {  // NOLINT
    ndims = static_cast<uint8_t>(v.size() < kMaxDims ? v.size() : kMaxDims);
    for (size_t i = 0; i < ndims; ++i) dims[i] = v[i];
  }
  size_t size() const { return ndims; }
  bool empty() const { return ndims == 0; }
  uint32_t operator[](size_t i) const { return dims[i]; }
  uint32_t back() const { return dims[ndims - 1]; }
  const uint32_t* begin() const { return dims.data(); }
  const uint32_t* end() const { return dims.data() + ndims; }
  bool operator==(const Shape& o) const {
    if (ndims != o.ndims) return false;
    for (size_t i = 0; i < ndims; ++i)
      if (dims[i] != o.dims[i]) return false;
    return true;
  }
};

}  // namespace dfx::device
