#include "common/decimal.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace dfx {
namespace {

template <typename Integer>
std::string Written(Integer v) {
  char buf[kMaxDecimalChars + 1];
  return std::string(buf, WriteDecimal(buf, v));
}

template <typename Integer>
std::string ToChars(Integer v) {
  char buf[kMaxDecimalChars + 1];
  return std::string(buf, std::to_chars(buf, buf + sizeof(buf), v).ptr);
}

TEST(DecimalTest, WritesWhatToCharsWritesAtEveryLengthAndLimit) {
  std::vector<uint64_t> values = {0, std::numeric_limits<uint64_t>::max()};
  for (uint64_t p = 1; p <= 10'000'000'000'000'000'000ull / 10; p *= 10) {
    for (uint64_t v : {p - 1, p, p + 1, 10 * p - 1, 10 * p}) values.push_back(v);
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) values.push_back(rng() >> (rng() % 64));
  for (uint64_t v : values) {
    ASSERT_EQ(Written(v), ToChars(v)) << v;
    ASSERT_EQ(Written(static_cast<int64_t>(v)), ToChars(static_cast<int64_t>(v))) << v;
    ASSERT_EQ(Written(static_cast<uint32_t>(v)), ToChars(static_cast<uint32_t>(v))) << v;
    ASSERT_EQ(Written(static_cast<int32_t>(v)), ToChars(static_cast<int32_t>(v))) << v;
    ASSERT_EQ(Written(static_cast<int16_t>(v)), ToChars(static_cast<int16_t>(v))) << v;
    ASSERT_EQ(Written(static_cast<uint8_t>(v)), ToChars(static_cast<uint8_t>(v))) << v;
  }
  EXPECT_EQ(Written(std::numeric_limits<int64_t>::min()), "-9223372036854775808");
  EXPECT_EQ(Written(std::numeric_limits<uint64_t>::max()), "18446744073709551615");
  EXPECT_EQ(Written(-1), "-1");
  EXPECT_EQ(Written(0), "0");
}

}  // namespace
}  // namespace dfx
