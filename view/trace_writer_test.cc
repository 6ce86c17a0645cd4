#include "view/trace_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

namespace dfx::view {
namespace {

// What Num wrote before its hand-written fast path: the shortest round-trip
// form of the value rounded to the nanosecond. Every trace's bytes depend
// on the two agreeing.
std::string Reference(double v) {
  std::string s;
  AppendDouble(&s, std::round(v * 1000.0) / 1000.0);
  return s;
}

std::string Written(double v) {
  std::string s = "x";  // Num appends
  Num(s, v);
  return s.substr(1);
}

TEST(TraceNumberTest, HandWrittenFormMatchesTheShortestRoundTripForm) {
  for (double v : {0.0,
                   -0.0,
                   0.001,
                   -0.001,
                   0.005,
                   0.0004,
                   0.0005,
                   0.02,
                   0.1,
                   0.12,
                   0.125,
                   1.0,
                   1.5,
                   12.3,
                   12.34,
                   12.345,
                   12.3456,
                   -12.345,
                   99.999,
                   100.0,
                   1e6,
                   1e6 + 0.02,
                   123000000.0,
                   1e8,
                   0.6399999999999864,
                   1234567.001,
                   999999999999.999,
                   1e12 + 0.5,
                   4.5e12 + 0.25,
                   1e15 + 0.5,
                   1e21,
                   -1e21,
                   1e300,
                   std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::quiet_NaN(),
                   std::numeric_limits<double>::min(),
                   std::numeric_limits<double>::denorm_min()}) {
    EXPECT_EQ(Written(v), Reference(v)) << v;
  }
  EXPECT_EQ(Written(12.345), "12.345");
  EXPECT_EQ(Written(1e6), "1e+06");  // whole numbers keep to_chars' choice
  EXPECT_EQ(Written(-0.005), "-0.005");
  EXPECT_EQ(Written(0.1204), "0.12");
}

TEST(TraceNumberTest, AgreesOnMillionsOfTimestampsOfEveryMagnitude) {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> exponent(-4.0, 16.0);
  std::uniform_int_distribution<int64_t> cycles(0, int64_t{1} << 45);
  for (int i = 0; i < 1000000; ++i) {
    const double v = std::pow(10.0, exponent(rng)) * (i % 7 == 0 ? -1 : 1);
    ASSERT_EQ(Written(v), Reference(v)) << v;
    // Chip timestamps: cycles of a 50 MHz and a 1 GHz clock, in µs.
    const int64_t c = cycles(rng);
    for (double hz : {50e6, 1e9}) {
      const double us = static_cast<double>(c) / hz * 1e6;
      ASSERT_EQ(Written(us), Reference(us)) << us;
    }
  }
}

}  // namespace
}  // namespace dfx::view
