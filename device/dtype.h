// Element data types of program tensors and scalars, with the upper-case enum
// names the artifacts use (docs/formats.md §6.2) and exact FLOAT16/BFLOAT16
// conversions for the emulated kernels. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dfx::device {

enum class DType : uint8_t {
  kFloat32,
  kFloat16,
  kBFloat16,
  kInt32,
  kInt16,
  kInt8,
  kUInt8,
  kInt64,
  kUInt64,
  kUInt16,
  kUInt32,
  kBool,
};
// How many DTypes there are (kBool is the last).
inline constexpr size_t kDTypeCount = static_cast<size_t>(DType::kBool) + 1;

const char* DTypeName(DType t);  // "FLOAT32", ...
std::optional<DType> ParseDType(std::string_view name);
// Comma-separated list of every accepted name, for error messages.
std::string DTypeNameList();
size_t DTypeSize(DType t);

// IEEE binary16 and bfloat16 <-> float, round-to-nearest-even.
uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
uint16_t FloatToBFloat16(float f);
float BFloat16ToFloat(uint16_t b);

// Reads/writes element `index` of a buffer holding `t` values, as float.
float LoadElement(const uint8_t* base, DType t, uint64_t index);
void StoreElement(uint8_t* base, DType t, uint64_t index, float value);

// Raw bits of a scalar `value` stored as dtype `t` (what args dump records).
uint64_t ScalarBits(DType t, double value);

}  // namespace dfx::device
