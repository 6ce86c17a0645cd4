#include "view/perfetto_trace_encoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace dfx::view {
namespace {

// How many times `s` occurs in `out` from byte `from` on.
size_t Occurrences(const std::string& out, std::string_view s, size_t from) {
  size_t n = 0;
  for (size_t at = out.find(s, from); at != std::string::npos; at = out.find(s, at + 1)) ++n;
  return n;
}

TEST(PerfettoTraceEncoderTest, InternsANameTheSecondTimeItIsSeen) {
  std::string out;
  PerfettoTraceEncoder enc(&out);
  auto slice = [&] {
    enc.BeginSlice(4, 1, 1.0, "event", "Task_1");
    enc.EndSlice(1.0, 2.0);
  };
  auto count = [&](size_t from) { return Occurrences(out, "Task_1", from); };
  slice();  // inline: a name drawn once costs no table entry
  EXPECT_EQ(count(0), 1u);
  const size_t first = out.size();
  slice();  // interned: the entry rides this packet
  EXPECT_EQ(count(first), 1u);
  const size_t second = out.size();
  slice();  // the iid only; no track descriptor again
  EXPECT_EQ(count(second), 0u);
  EXPECT_LT(out.size() - second, second - first);
}

// A task's name (or hint) is looked up in the string cache only when it is
// one of the last few such strings (a task's next SPMD block): the third of
// three in a row is an iid, and so is a hint that alternates with others
// (a slice's event-hint, fan-out and fan-in hints); a name that comes back
// after several other tasks' is written inline again, with no lookup.
TEST(PerfettoTraceEncoderTest, InternsAPerTaskStringOnlyWhenItRepeatsARecentOne) {
  std::string out;
  PerfettoTraceEncoder enc(&out);
  auto count = [&](const char* s, size_t from) { return Occurrences(out, s, from); };
  auto slice = [&](std::string_view name) {
    const size_t at = out.size();
    enc.BeginSlice(4, 1, 1.0, "event", name, /*per_task=*/true);
    enc.EndSlice(1.0, 2.0);
    return at;
  };
  slice("add(t1)");
  const size_t second = slice("add(t1)");
  EXPECT_EQ(count("add(t1)", second), 1u);  // inline again, now in the cache
  const size_t third = slice("add(t1)");
  EXPECT_EQ(count("add(t1)", third), 1u);  // the InternedData entry, then its iid
  const size_t fourth = slice("add(t1)");
  EXPECT_EQ(count("add(t1)", fourth), 0u);  // the iid only
  for (const char* other : {"mul(t2)", "sub(t3)", "div(t4)", "neg(t5)"}) slice(other);
  const size_t back = slice("add(t1)");
  EXPECT_EQ(count("add(t1)", back), 1u) << "after four other tasks' names: inline";
  // Four SPMD blocks of one task: each has its own event-hint (its core),
  // and the same fan-out hint: inline, inline, interned, then the iid only.
  size_t block_at[4];
  for (int b = 0; b < 4; ++b) {
    block_at[b] = out.size();
    enc.BeginSlice(4, 1, 2.0 + b, "event", "mul(t2)", true);
    enc.AnnotateString("event-hint", "Task:t2, FuncId:1, CoreId:" + std::to_string(b), true);
    enc.AnnotateString("fanout-hint", "2: [t7, t8]", true);
    enc.EndSlice(2.0 + b, 1.0);
  }
  EXPECT_EQ(count("2: [t7, t8]", block_at[0]), 3u);
  EXPECT_EQ(count("2: [t7, t8]", block_at[2]), 1u);                  // the InternedData entry
  EXPECT_EQ(count("2: [t7, t8]", block_at[3]), 0u);                  // its iid
  EXPECT_EQ(count("Task:t2, FuncId:1, CoreId:3", block_at[3]), 1u);  // inline
}

}  // namespace
}  // namespace dfx::view
