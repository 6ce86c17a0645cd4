#include "common/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "common/file_util.h"
#include "common/json_value.h"

namespace dfx {
namespace {

namespace fs = std::filesystem;

std::string Nested(int depth, const std::string& open = "[", const std::string& close = "]") {
  std::string s;
  for (int i = 0; i < depth; ++i) s += open;
  for (int i = 0; i < depth; ++i) s += close;
  return s;
}

TEST(JsonDepth, A100kDeepDocumentIsRefusedWithItsPathInsteadOfCrashing) {
  auto r = ParseJson(Nested(100000), "deep.json");
  ASSERT_FALSE(r.ok());
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("deep.json: at $[0][0][0][0]<248 more>[0][0][0][0] (depth 257)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("deeper than 256 levels"), std::string::npos) << m;
}

TEST(JsonDepth, ThePathNamesKeysAndIndicesOutsideStrings) {
  // Brackets inside strings (and escaped quotes) are not nesting.
  std::string text =
      R"({"a": "[[[[\"{{{", "orchestration": [1, 2, {"scope": )" + Nested(300) + "}]}";
  auto r = ParseJson(text, "p.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("p.json: at $.orchestration[2].scope[0]<"), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(ParseJson(Nested(kMaxJsonDepth), "ok.json").ok()) << "the limit itself is fine";
  EXPECT_TRUE(CheckJsonDepth(Nested(3, "{\"k\":", "}"), "x", 3).ok());
  EXPECT_FALSE(CheckJsonDepth(Nested(4, "{\"k\":", "}"), "x", 3).ok());
}

TEST(JsonDepth, ReadJsonFileBoundsSizeAndDepth) {
  const fs::path dir = fs::temp_directory_path() / ("dfx_json_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ASSERT_TRUE(WriteFileAtomic(dir / "big.json", "[" + std::string(1000, ' ') + "]").ok());
  auto big = ReadJsonFile(dir / "big.json", 100);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("1002 bytes"), std::string::npos) << big.status().message();
  ASSERT_TRUE(WriteFileAtomic(dir / "deep.json", Nested(5000, "{\"a\":", "}")).ok());
  auto deep = ReadJsonFile(dir / "deep.json");
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("at $.a.a.a.a<248 more>.a.a.a.a"), std::string::npos)
      << deep.status().message();
  fs::remove_all(dir);
}

// Found by fuzz_run_config: a number too large for a double threw
// out_of_range through ParseJson and aborted the process.
TEST(JsonParse, ANumberTooLargeIsAnErrorNotACrash) {
  auto r = ParseJson(R"({"ring_heap": 1e400})", "config.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("config.json: not valid JSON: number overflow"),
            std::string::npos)
      << r.status().message();
  auto long_digits = ParseJson("[" + std::string(5000, '9') + "e999]", "big.json");
  ASSERT_FALSE(long_digits.ok());
  EXPECT_LT(long_digits.status().message().size(), 300u) << "the error stays short";
}

TEST(DescribeJson, NeverDumpsAWholeValue) {
  Json big = Json::array();
  for (int i = 0; i < 1000000; ++i) big.push_back(i);
  const std::string d = DescribeJson(big);
  EXPECT_LE(d.size(), 60u) << d;
  EXPECT_EQ(d.rfind("array [0,1,2,", 0), 0u) << d;
  Json deep = Json::parse(Nested(kMaxJsonDepth));
  EXPECT_LE(DescribeJson(deep).size(), 60u);
  EXPECT_EQ(DescribeJson(Json("abc")), "string \"abc\"");
  EXPECT_EQ(DescribeJson(Json(3)), "number 3");
  EXPECT_LE(DescribeJson(Json(std::string(1 << 20, 'x'))).size(), 60u);
  Json keys = Json::object();
  keys[std::string(1 << 20, 'k')] = 1;
  EXPECT_LE(DescribeJson(keys).size(), 60u);
}

}  // namespace
// A hostile file's numbers: an integer field read from a float far out of
// range, a negative into an unsigned, a string or a bool, falls back instead
// of casting (undefined) or throwing.
TEST(JsonIntegerTest, OnlyRepresentableNumbersConvert) {
  EXPECT_EQ(JsonInteger<int64_t>(Json(42)), 42);
  EXPECT_EQ(JsonInteger<int64_t>(Json(-7)), -7);
  EXPECT_EQ(JsonInteger<int64_t>(Json(2.9)), 2);
  EXPECT_EQ(JsonInteger<int64_t>(Json(1.5e40)), std::nullopt);
  EXPECT_EQ(JsonInteger<int64_t>(Json(9223372036854775808.0)), std::nullopt);
  EXPECT_EQ(JsonInteger<uint64_t>(Json(uint64_t{18446744073709551615u})),
            uint64_t{18446744073709551615u});
  EXPECT_EQ(JsonInteger<uint64_t>(Json(-1)), std::nullopt);
  EXPECT_EQ(JsonInteger<int>(Json(int64_t{1} << 40)), std::nullopt);
  EXPECT_EQ(JsonInteger<int>(Json(-2147483648.0)), -2147483647 - 1);
  EXPECT_EQ(JsonInteger<int>(Json(std::nan(""))), std::nullopt);
  EXPECT_EQ(JsonInteger<int>(Json("12")), std::nullopt);
  EXPECT_EQ(JsonInteger<int>(Json(true)), std::nullopt);
  const Json md = {{"clock_freq_hz", 1.5555e40}, {"num_cores", 6}, {"relation", 5}};
  EXPECT_EQ(JsonIntegerOr<int64_t>(md, "clock_freq_hz", 0), 0);
  EXPECT_EQ(JsonIntegerOr<int64_t>(md, "num_cores", 0), 6);
  EXPECT_EQ(JsonIntegerOr<int64_t>(Json::array(), "num_cores", -1), -1);
  EXPECT_EQ(JsonStringOr(md, "relation", "default"), "default");
  EXPECT_EQ(JsonStringOr(Json{{"relation", "x"}}, "relation", "default"), "x");
}

}  // namespace dfx
