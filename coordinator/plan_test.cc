#include "coordinator/plan.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "common/file_util.h"

namespace dfx::coordinator {
namespace {

namespace fs = std::filesystem;

class PlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("plan_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "programs");
    ASSERT_TRUE(WriteFileAtomic(dir_ / "programs/a.json", R"({"name": "a", "kernels": []})").ok());
    ASSERT_TRUE(WriteFileAtomic(dir_ / "programs/b.json", R"({"name": "b", "kernels": []})").ok());
  }
  void TearDown() override { fs::remove_all(dir_); }
  Result<Plan> Load(const std::string& text) {
    EXPECT_TRUE(WriteFileAtomic(dir_ / "plan.json", text).ok());
    return LoadPlan(dir_ / "plan.json");
  }
  fs::path dir_;
};

TEST_F(PlanTest, ExpandsTargetsAndNumbersDispatchesPerRank) {
  auto plan =
      Load(R"({"name": "p", "programs": {"attn": "programs/a.json", "vec": "programs/b.json"},
    "steps": [{"program": "attn", "rank": 0}, {"program": "vec", "ranks": [1, 2]},
              {"program": "attn", "ranks": "all"}, {"program": "vec"}, {"program": "vec"}]})");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->programs.at("attn").path, (dir_ / "programs/a.json").lexically_normal());
  auto expanded = ExpandPlan(*plan, 3);
  ASSERT_TRUE(expanded.ok());
  std::vector<std::string> got;
  for (const auto& d : *expanded) got.push_back(fmt::format("r{}d{}:{}", d.rank, d.k, d.program));
  // Round-robin restarts at rank 0 in every expansion (every run).
  EXPECT_EQ(got, (std::vector<std::string>{"r0d0:attn", "r1d0:vec", "r2d0:vec", "r0d1:attn",
                                           "r1d1:attn", "r2d1:attn", "r0d2:vec", "r1d2:vec"}));
  auto again = ExpandPlan(*plan, 3);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->back().rank, 1);
}

TEST_F(PlanTest, ErrorsNameFileJsonPathAndExpectation) {
  auto bad_rank = Load(
      R"({"programs": {"a": "programs/a.json"}, "steps": [{"program": "a", "ranks": [0, "x"]}]})");
  ASSERT_FALSE(bad_rank.ok());
  EXPECT_NE(bad_rank.status().message().find("plan.json"), std::string::npos);
  EXPECT_NE(bad_rank.status().message().find("$.steps[0].ranks[1]"), std::string::npos);
  EXPECT_NE(bad_rank.status().message().find("rank number"), std::string::npos);

  auto missing = Load(R"({"programs": {"a": "programs/nope.json"}, "steps": [{"program": "a"}]})");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("$.programs.a"), std::string::npos);
  EXPECT_NE(missing.status().message().find("nope.json"), std::string::npos);

  auto unknown = Load(R"({"programs": {"a": "programs/a.json"}, "steps": [{"program": "zz"}]})");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("$.steps[0].program"), std::string::npos);

  auto extra =
      Load(R"({"programs": {"a": "programs/a.json"}, "steps": [{"program": "a", "rnak": 1}]})");
  ASSERT_FALSE(extra.ok());
  EXPECT_NE(extra.status().message().find("rnak"), std::string::npos);

  auto plan =
      Load(R"({"programs": {"a": "programs/a.json"}, "steps": [{"program": "a", "rank": 5}]})");
  ASSERT_TRUE(plan.ok());
  auto too_few = ExpandPlan(*plan, 2);
  ASSERT_FALSE(too_few.ok());
  EXPECT_NE(too_few.status().message().find("--ranks 2"), std::string::npos);
}

// A program file must be a JSON object; the plan names what is wrong with
// one that is not (its syntax is checked without a document when it is).
TEST_F(PlanTest, AProgramFileMustBeAJsonObject) {
  const std::string plan = R"({"programs": {"a": "programs/a.json"}, "steps": [{"program": "a"}]})";
  ASSERT_TRUE(
      WriteFileAtomic(dir_ / "programs/a.json", " \n{\"name\": \"a\", \"x\": [1, {}]}\n").ok());
  EXPECT_TRUE(Load(plan).ok());
  const std::pair<const char*, const char*> bad[] = {
      {R"({"name": "a", "kernels": [})", "programs/a.json: not valid JSON: parse error at line 1"},
      {R"({"name": "a"} x)", "programs/a.json: not valid JSON"},
      {"", "programs/a.json: not valid JSON"},
      {R"(["a"])", "programs/a.json: at $: expected a program object, got array"},
      {R"("a")", "programs/a.json: at $: expected a program object, got string"},
      {"{\"a\": 1e400}", "programs/a.json: not valid JSON"},
  };
  for (const auto& [text, expected] : bad) {
    ASSERT_TRUE(WriteFileAtomic(dir_ / "programs/a.json", text).ok());
    auto p = Load(plan);
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_NE(p.status().message().find(expected), std::string::npos) << p.status().message();
  }
}

TEST_F(PlanTest, ProgramsAndPlansAreTellable) {
  EXPECT_TRUE(IsPlan(Json::parse(R"({"steps": []})")));
  EXPECT_FALSE(IsPlan(Json::parse(R"({"kernels": []})")));
}

}  // namespace
}  // namespace dfx::coordinator
