#include "collectors/dispatch_bytes.h"

#include <gtest/gtest.h>

namespace dfx::collectors {
namespace {

TEST(DispatchBytesTest, TheAgentsLineReadsBackAsWritten) {
  DispatchBytes b;
  b.tasks = 16;
  b.blocks = 22;
  b.scopes = 7;
  b.chip_swimlane = 13465;
  b.deps = 15225;
  b.args_dump = 1ull << 40;
  b.pmu = 1385;
  b.scope_stats = 3291;
  b.name_map = 203;
  b.merged_trace = 74960;
  const std::string line = DispatchBytesJson(b);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto back = ParseDispatchBytes(line, "agent");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, b);
}

TEST(DispatchBytesTest, AMissingOrNegativeFieldIsNamed) {
  auto missing = ParseDispatchBytes(R"({"tasks": 1})", "the estimate of p.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("the estimate of p.json"), std::string::npos);
  EXPECT_NE(missing.status().message().find("$.blocks"), std::string::npos)
      << missing.status().message();
  DispatchBytes b;
  std::string text = DispatchBytesJson(b);
  text.replace(text.find("\"pmu\":0"), 7, "\"pmu\":-3");
  auto negative = ParseDispatchBytes(text, "x");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("$.pmu"), std::string::npos);
  EXPECT_FALSE(ParseDispatchBytes("not json", "x").ok());
}

}  // namespace
}  // namespace dfx::collectors
