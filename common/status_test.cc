#include "common/status.h"

#include <gtest/gtest.h>

#include "common/enum_text.h"
#include "common/timeouts.h"

namespace dfx {
namespace {

enum class Colour { kRed, kGreen, kBlue };
constexpr auto kColourText =
    MakeEnumTable<Colour>({{Colour::kRed, "red"}, {Colour::kGreen, "green"}});

TEST(EnumTableTest, NamesAndParsesFromOneTable) {
  static_assert(kColourText.Parse("green") == Colour::kGreen);
  EXPECT_STREQ(kColourText.Name(Colour::kRed), "red");
  EXPECT_EQ(kColourText.Parse("red"), Colour::kRed);
  EXPECT_EQ(kColourText.Parse("Red"), std::nullopt);
  EXPECT_EQ(kColourText.Parse(""), std::nullopt);
  EXPECT_EQ(kColourText.Choices(), "red | green");
  EXPECT_EQ(kColourText.Choices(", "), "red, green");
}

TEST(EnumTableTest, AValueWithoutARowNamesItselfWithTheFallback) {
  EXPECT_STREQ(kColourText.Name(Colour::kBlue), "?");
  constexpr auto other = MakeEnumTable<Colour>({{Colour::kRed, "red"}}, "UNKNOWN");
  EXPECT_STREQ(other.Name(static_cast<Colour>(7)), "UNKNOWN");
}

TEST(StatusTest, CodeNamesComeFromTheTable) {
  EXPECT_EQ(InvalidArgument("x").ToString(), "INVALID_ARGUMENT: x");
  EXPECT_EQ(Status::Ok().ToString(), "OK");
  EXPECT_STREQ(CodeName(static_cast<Code>(99)), "UNKNOWN");
}

TEST(ResultDeathTest, ValueOfAnErrorAbortsNamingTheError) {
  Result<int> r = NotFound("no such file: a.json");
  EXPECT_DEATH((void)r.value(), "Result::value\\(\\) of an error: NOT_FOUND: no such file: a.json");
  EXPECT_DEATH((void)*r, "NOT_FOUND");
  Result<std::string> s = Internal("boom");
  EXPECT_DEATH((void)s->size(), "INTERNAL: boom");
}

TEST(ResultTest, ValueOfASuccessIsTheValue) {
  Result<std::string> r = std::string("abc");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), "abc");
  EXPECT_EQ(r->size(), 3u);
  std::string moved = std::move(r).value();
  EXPECT_EQ(moved, "abc");
}

TEST(TimeoutsTest, HeartbeatPairIsCheckedNamingTheFlags) {
  Timeouts t;
  EXPECT_TRUE(t.ValidateHeartbeat().ok());
  t.heartbeat_interval = Seconds(0.005);
  EXPECT_NE(
      t.ValidateHeartbeat().message().find("--heartbeat-interval 0.005: expected at least 0.01 s"),
      std::string::npos)
      << t.ValidateHeartbeat().message();
  t.heartbeat_interval = Seconds(0.1);
  t.heartbeat_timeout = Seconds(0.3);  // exactly three intervals: allowed
  EXPECT_TRUE(t.ValidateHeartbeat().ok());
  t.heartbeat_timeout = Seconds(0.29);
  EXPECT_NE(t.ValidateHeartbeat().message().find("--heartbeat-timeout 0.29: expected at least 3"),
            std::string::npos)
      << t.ValidateHeartbeat().message();
}

TEST(TimeoutsTest, SecondsConvertAtTheEdge) {
  EXPECT_EQ(Seconds(0.2), std::chrono::milliseconds(200));
  EXPECT_DOUBLE_EQ(ToSeconds(std::chrono::seconds(10)), 10.0);
  EXPECT_EQ(ToNs(std::chrono::milliseconds(3)), 3000000u);
  EXPECT_EQ(ToPollMs(std::chrono::microseconds(2500)), 2);
  EXPECT_EQ(ToPollMs(Timeouts::Duration(-5)), 0);
}

}  // namespace
}  // namespace dfx
