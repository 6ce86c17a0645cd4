#include "view/edge_reduction.h"

#include <gtest/gtest.h>

namespace dfx::view {
namespace {

using Edges = std::vector<std::pair<uint64_t, uint64_t>>;

TEST(TransitiveReductionTest, DropsEdgesImpliedByLongerPaths) {
  // 1→2→3→4 plus shortcuts 1→3, 1→4, 2→4.
  Edges e = {{1, 2}, {1, 3}, {1, 4}, {2, 3}, {2, 4}, {3, 4}};
  std::vector<bool> red;
  ASSERT_TRUE(TransitiveReduction(e, {}, &red));
  EXPECT_EQ(red, (std::vector<bool>{false, true, true, false, true, false}));
}

TEST(TransitiveReductionTest, KeepsCreatorEdges) {
  Edges e = {{0, 1}, {0, 2}, {1, 2}};
  std::vector<bool> red;
  ASSERT_TRUE(TransitiveReduction(e, {{0, 2}}, &red));
  EXPECT_EQ(red, (std::vector<bool>{false, false, false}));
  ASSERT_TRUE(TransitiveReduction(e, {}, &red));
  EXPECT_EQ(red, (std::vector<bool>{false, true, false}));
}

TEST(TransitiveReductionTest, ReportsCycles) {
  std::vector<bool> red;
  EXPECT_FALSE(TransitiveReduction({{1, 2}, {2, 3}, {3, 1}}, {}, &red));
}

TEST(TransitiveReductionTest, DiamondHasNoRedundantEdge) {
  std::vector<bool> red;
  ASSERT_TRUE(TransitiveReduction({{1, 2}, {1, 3}, {2, 4}, {3, 4}}, {}, &red));
  EXPECT_EQ(red, (std::vector<bool>(4, false)));
}

TEST(EdgeModeTest, ParsesDocumentedModesOnly) {
  EXPECT_EQ(*ParseEdgeMode("omitted_dataflow"), EdgeMode::kOmittedDataflow);
  auto bad = ParseEdgeMode("partial");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--edge-mode"), std::string::npos);
}

}  // namespace
}  // namespace dfx::view
