#include "view/dump_viewer.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dfx::view {
namespace {

TEST(FormatSignificantTest, MatchesPythonGFormatting) {
  EXPECT_EQ(FormatSignificant(0.1f, 6), "0.1");
  EXPECT_EQ(FormatSignificant(3.14159265, 4), "3.142");
  EXPECT_EQ(FormatSignificant(1234567.0, 6), "1.23457e+06");
  EXPECT_EQ(FormatSignificant(2.0, 3), "2");
  EXPECT_EQ(FormatSignificant(NAN, 6), "nan");
  EXPECT_EQ(FormatSignificant(-INFINITY, 6), "-inf");
}

}  // namespace
}  // namespace dfx::view
