#include "common/integer_cast.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace dfx {
namespace {

// Every edge where a plain cast would be undefined: just past each end of
// the range, far past it, and NaN.
TEST(IntegerCastTest, TruncatesInsideTheRangeAndRefusesOutside) {
  EXPECT_EQ(TruncatedInteger<int64_t>(-2.9), -2);
  EXPECT_EQ(TruncatedInteger<int64_t>(-9223372036854775808.0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(TruncatedInteger<int64_t>(9223372036854775808.0), std::nullopt);
  EXPECT_EQ(TruncatedInteger<uint64_t>(18446744073709549568.0), 18446744073709549568u);
  EXPECT_EQ(TruncatedInteger<uint64_t>(18446744073709551616.0), std::nullopt);
  EXPECT_EQ(TruncatedInteger<uint64_t>(-0.5), std::nullopt);
  EXPECT_EQ(TruncatedInteger<int8_t>(127.9), 127);
  EXPECT_EQ(TruncatedInteger<int8_t>(128.0), std::nullopt);
  EXPECT_EQ(TruncatedInteger<int>(std::nan("")), std::nullopt);
}

TEST(IntegerCastTest, SaturatesOutsideTheRangeAndNanIsZero) {
  EXPECT_EQ(SaturatedInteger<int64_t>(1e300), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(SaturatedInteger<int64_t>(-1e300), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(SaturatedInteger<uint64_t>(5e62), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(SaturatedInteger<uint64_t>(-1.0), 0u);
  EXPECT_EQ(SaturatedInteger<int16_t>(-40000.0), -32768);
  EXPECT_EQ(SaturatedInteger<int16_t>(12.7), 12);
  EXPECT_EQ(SaturatedInteger<int>(std::nan("")), 0);
}

}  // namespace
}  // namespace dfx
