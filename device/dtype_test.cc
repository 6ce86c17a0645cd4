#include "device/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace dfx::device {
namespace {

TEST(DTypeTest, NamesRoundTripAndSizes) {
  for (const char* name :
       {"FLOAT32", "FLOAT16", "BFLOAT16", "INT32", "INT64", "INT8", "UINT8", "BOOL"}) {
    auto t = ParseDType(name);
    ASSERT_TRUE(t.has_value()) << name;
    EXPECT_STREQ(DTypeName(*t), name);
  }
  EXPECT_FALSE(ParseDType("float32").has_value());  // names are upper-case
  EXPECT_EQ(DTypeSize(DType::kBFloat16), 2u);
  EXPECT_EQ(DTypeSize(DType::kInt64), 8u);
}

TEST(DTypeTest, HalfConversionIsExactOnRepresentableValuesAndRoundsToNearestEven) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 0.000061035156f, 5.9604645e-8f}) {
    EXPECT_EQ(HalfToFloat(FloatToHalf(v)), v) << v;
  }
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);  // rounds up to +inf
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0).
  EXPECT_EQ(FloatToHalf(1.0f + 0.00048828125f), 0x3c00);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(NAN))));
}

TEST(DTypeTest, BFloat16KeepsTheTopSixteenBitsRounded) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(BFloat16ToFloat(0x3f80), 1.0f);
  EXPECT_NEAR(BFloat16ToFloat(FloatToBFloat16(3.14159f)), 3.14159f, 0.01f);
}

TEST(DTypeTest, LoadStoreConvertsEveryDType) {
  uint8_t buf[64] = {};
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kInt8,
                  DType::kUInt8, DType::kInt64, DType::kBool}) {
    StoreElement(buf, t, 3, 1.0f);
    EXPECT_EQ(LoadElement(buf, t, 3), 1.0f) << DTypeName(t);
  }
  StoreElement(buf, DType::kInt8, 0, 300.0f);  // saturates
  EXPECT_EQ(LoadElement(buf, DType::kInt8, 0), 127.0f);
}

}  // namespace
// An args dump records a scalar's bits in its dtype; a program may give any
// JSON number, and one out of the type's range saturates.
TEST(DTypeTest, ScalarBitsSaturateOutOfRange) {
  EXPECT_EQ(ScalarBits(DType::kInt64, -3), static_cast<uint64_t>(int64_t{-3}));
  EXPECT_EQ(ScalarBits(DType::kInt64, 1e300),
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(ScalarBits(DType::kInt64, -1e300),
            static_cast<uint64_t>(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(ScalarBits(DType::kUInt64, 7), 7u);
  EXPECT_EQ(ScalarBits(DType::kUInt64, 5e62), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(ScalarBits(DType::kUInt64, -1), 0u);
}

}  // namespace dfx::device
