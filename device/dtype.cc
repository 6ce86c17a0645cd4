#include "device/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <iterator>

#include "common/enum_text.h"
#include "common/integer_cast.h"

namespace dfx::device {
namespace {

// The names programs and artifacts use, in the order error messages list them.
constexpr auto kDTypeText = MakeEnumTable<DType>({
    {DType::kFloat32, "FLOAT32"},
    {DType::kFloat16, "FLOAT16"},
    {DType::kBFloat16, "BFLOAT16"},
    {DType::kInt32, "INT32"},
    {DType::kInt16, "INT16"},
    {DType::kInt8, "INT8"},
    {DType::kUInt8, "UINT8"},
    {DType::kInt64, "INT64"},
    {DType::kUInt64, "UINT64"},
    {DType::kUInt16, "UINT16"},
    {DType::kUInt32, "UINT32"},
    {DType::kBool, "BOOL"},
});
static_assert(kDTypeText.rows().size() == kDTypeCount, "one kDTypeText row per DType");

// Bytes per element, in DType order (FLOAT32, FLOAT16, ..., BOOL).
constexpr size_t kDTypeSizes[] = {4, 2, 2, 4, 2, 1, 1, 8, 8, 2, 4, 1};
static_assert(std::size(kDTypeSizes) == kDTypeCount, "one kDTypeSizes entry per DType");

}  // namespace

const char* DTypeName(DType t) { return kDTypeText.Name(t); }
size_t DTypeSize(DType t) { return kDTypeSizes[static_cast<int>(t)]; }

std::optional<DType> ParseDType(std::string_view name) { return kDTypeText.Parse(name); }

std::string DTypeNameList() { return kDTypeText.Choices(", "); }

uint16_t FloatToHalf(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));  // inf/nan
  int32_t e = static_cast<int32_t>(exp) - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);  // underflow -> 0
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into exp: correct
  return static_cast<uint16_t>(half);
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t out;
  if (exp == 0) {
    if (mant == 0) {
      out = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      out = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    out = sign | 0x7f800000u | (mant << 13);
  } else {
    out = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(out);
}

uint16_t FloatToBFloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float BFloat16ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

float LoadElement(const uint8_t* base, DType t, uint64_t i) {
  switch (t) {
    case DType::kFloat32: {
      float v;
      std::memcpy(&v, base + i * 4, 4);
      return v;
    }
    case DType::kFloat16: {
      uint16_t v;
      std::memcpy(&v, base + i * 2, 2);
      return HalfToFloat(v);
    }
    case DType::kBFloat16: {
      uint16_t v;
      std::memcpy(&v, base + i * 2, 2);
      return BFloat16ToFloat(v);
    }
#define DFX_LOAD_INT(ENUM, CTYPE)                             \
  case ENUM: {                                                \
    CTYPE v;                                                  \
    std::memcpy(&v, base + i * sizeof(CTYPE), sizeof(CTYPE)); \
    return static_cast<float>(v);                             \
  }
      DFX_LOAD_INT(DType::kInt32, int32_t)
      DFX_LOAD_INT(DType::kInt16, int16_t)
      DFX_LOAD_INT(DType::kInt8, int8_t)
      DFX_LOAD_INT(DType::kUInt8, uint8_t)
      DFX_LOAD_INT(DType::kInt64, int64_t)
      DFX_LOAD_INT(DType::kUInt64, uint64_t)
      DFX_LOAD_INT(DType::kUInt16, uint16_t)
      DFX_LOAD_INT(DType::kUInt32, uint32_t)
#undef DFX_LOAD_INT
    case DType::kBool:
      return base[i] ? 1.0f : 0.0f;
  }
  return 0.0f;
}

namespace {
// Rounded to the nearest integer, then clamped to T (NaN is 0).
template <typename T>
T SaturatingCast(float v) {
  return SaturatedInteger<T>(std::nearbyint(static_cast<double>(v)));
}
}  // namespace

void StoreElement(uint8_t* base, DType t, uint64_t i, float value) {
  switch (t) {
    case DType::kFloat32:
      std::memcpy(base + i * 4, &value, 4);
      return;
    case DType::kFloat16: {
      uint16_t v = FloatToHalf(value);
      std::memcpy(base + i * 2, &v, 2);
      return;
    }
    case DType::kBFloat16: {
      uint16_t v = FloatToBFloat16(value);
      std::memcpy(base + i * 2, &v, 2);
      return;
    }
#define DFX_STORE_INT(ENUM, CTYPE)                            \
  case ENUM: {                                                \
    CTYPE v = SaturatingCast<CTYPE>(value);                   \
    std::memcpy(base + i * sizeof(CTYPE), &v, sizeof(CTYPE)); \
    return;                                                   \
  }
      DFX_STORE_INT(DType::kInt32, int32_t)
      DFX_STORE_INT(DType::kInt16, int16_t)
      DFX_STORE_INT(DType::kInt8, int8_t)
      DFX_STORE_INT(DType::kUInt8, uint8_t)
      DFX_STORE_INT(DType::kInt64, int64_t)
      DFX_STORE_INT(DType::kUInt64, uint64_t)
      DFX_STORE_INT(DType::kUInt16, uint16_t)
      DFX_STORE_INT(DType::kUInt32, uint32_t)
#undef DFX_STORE_INT
    case DType::kBool:
      base[i] = value != 0.0f ? 1 : 0;
      return;
  }
}

uint64_t ScalarBits(DType t, double value) {
  uint8_t bytes[8] = {};
  // A program's scalar is any JSON number: out of the type's range it
  // saturates (NaN is 0), where a plain cast would be undefined.
  if (t == DType::kInt64) {
    const int64_t v = SaturatedInteger<int64_t>(value);
    std::memcpy(bytes, &v, 8);
  } else if (t == DType::kUInt64) {
    const uint64_t v = SaturatedInteger<uint64_t>(value);
    std::memcpy(bytes, &v, 8);
  } else {
    StoreElement(bytes, t, 0, static_cast<float>(value));
  }
  uint64_t bits;
  std::memcpy(&bits, bytes, 8);
  return bits;
}

}  // namespace dfx::device
