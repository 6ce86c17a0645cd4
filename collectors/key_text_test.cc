#include "collectors/key_text.h"

#include <gtest/gtest.h>

#include <string>

#include "collectors/dep_gen/deps_keys.h"
#include "collectors/internal/compiled_format.h"
#include "collectors/swimlane/swimlane_keys.h"

namespace dfx::collectors {
namespace {

inline constexpr KeyText kKey = "task_id";

TEST(KeyTextTest, ComparesWithAnyText) {
  EXPECT_TRUE(std::string("task_id") == kKey);
  EXPECT_TRUE(kKey == std::string_view("task_id"));
  EXPECT_FALSE(std::string("task") == kKey);
  EXPECT_FALSE(std::string("task_id2") == kKey);
  EXPECT_EQ(kKey.size(), 7u);
  EXPECT_STREQ(kKey.c_str(), "task_id");
}

// The writers glue a member's whole prefix into one constant; a byte of it
// wrong would change every artifact, so the glued texts are checked against
// the form the format spec gives.
TEST(KeyTextTest, JoinedTextIsTheMembersPrefix) {
  static_assert(JoinedText<",\"", kKey, "\":\""> == ",\"task_id\":\"");
  EXPECT_EQ((JoinedText<"{\"", deps_keys::kTasks, "\":[">), "{\"tasks\":[");
  EXPECT_EQ((JoinedText<",\"", deps_keys::kConsumer, deps_keys::kStartOffset, "\":\"">),
            ",\"consumer_start_offset\":\"");
  EXPECT_EQ((JoinedText<",\n  \"", swimlane_keys::kSchedPhases, "\": [">),
            ",\n  \"aicpu_scheduler_phases\": [");
  EXPECT_EQ((JoinedKey<swimlane_keys::kKind>.view()), "kind");
}

TEST(KeyTextTest, KeyFormatFormatsLikeFmtCompile) {
  std::string out;
  fmt::format_to(std::back_inserter(out), internal::KeyFormat<"{{\"", kKey, "\": {}}}">{}, 42);
  EXPECT_EQ(out, "{\"task_id\": 42}");
}

}  // namespace
}  // namespace dfx::collectors
