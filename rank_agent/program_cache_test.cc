#include "rank_agent/program_cache.h"

#include <gtest/gtest.h>

namespace dfx::rank_agent {
namespace {

std::shared_ptr<const device::Program> Named(const std::string& name) {
  auto p = std::make_shared<device::Program>();
  p->name = name;
  return p;
}

TEST(ProgramCacheTest, FindsWhatWasKeptUnderTheWholeKey) {
  ProgramCache cache;
  cache.Put({1, "a", "a.json"}, Named("a"), 100);
  ASSERT_NE(cache.Find({1, "a", "a.json"}), nullptr);
  EXPECT_EQ(cache.Find({1, "a", "a.json"})->name, "a");
  // The name and file are part of what the parser made of the text.
  EXPECT_EQ(cache.Find({1, "b", "a.json"}), nullptr);
  EXPECT_EQ(cache.Find({1, "a", "b.json"}), nullptr);
  EXPECT_EQ(cache.Find({2, "a", "a.json"}), nullptr);
}

TEST(ProgramCacheTest, EvictsTheLeastRecentlyUsedPastEitherBound) {
  ProgramCache cache(/*max_entries=*/2, /*max_bytes=*/1000);
  cache.Put({1, "a", ""}, Named("a"), 100);
  cache.Put({2, "b", ""}, Named("b"), 100);
  ASSERT_NE(cache.Find({1, "a", ""}), nullptr);  // a is now the most recent
  cache.Put({3, "c", ""}, Named("c"), 100);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.Find({2, "b", ""}), nullptr);
  EXPECT_NE(cache.Find({1, "a", ""}), nullptr);
  EXPECT_NE(cache.Find({3, "c", ""}), nullptr);

  // Bytes: 950 more evict everything older.
  cache.Put({4, "d", ""}, Named("d"), 950);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_NE(cache.Find({4, "d", ""}), nullptr);
  // Larger than the bound alone: not kept, nothing else lost.
  cache.Put({5, "e", ""}, Named("e"), 1001);
  EXPECT_EQ(cache.Find({5, "e", ""}), nullptr);
  EXPECT_NE(cache.Find({4, "d", ""}), nullptr);
}

TEST(ProgramCacheTest, AnEvictedProgramLivesOnWhileADispatchHoldsIt) {
  ProgramCache cache(1, 1000);
  cache.Put({1, "a", ""}, Named("a"), 10);
  auto held = cache.Find({1, "a", ""});
  cache.Clear();
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(held->name, "a");
}

}  // namespace
}  // namespace dfx::rank_agent
