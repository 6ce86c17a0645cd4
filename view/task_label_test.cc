#include "view/task_label.h"

#include <gtest/gtest.h>

namespace dfx::view {
namespace {

TEST(LabelsTest, TaskDisplayAndBijectiveLetters) {
  EXPECT_EQ(FormatTaskDisplay(3), "t3");
  EXPECT_EQ(FormatTaskDisplay((uint64_t{2} << 32) | 10), "r2t10");
  EXPECT_EQ(FuncLetters(0), "a");
  EXPECT_EQ(FuncLetters(25), "z");
  EXPECT_EQ(FuncLetters(26), "aa");
  EXPECT_EQ(FuncLetters(27), "ab");
  EXPECT_EQ(FuncLetters(701), "zz");
  EXPECT_EQ(FuncLetters(702), "aaa");
}

}  // namespace
}  // namespace dfx::view
