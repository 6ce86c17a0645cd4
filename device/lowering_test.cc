#include "device/lowering.h"

#include <gtest/gtest.h>

#include <tuple>

#include "common/json.h"
#include "device/generators.h"
#include "device/program_loader.h"

namespace dfx::device {
namespace {

using collectors::EdgeSource;
using collectors::Overlap;

RingCapacities Rings() { return GetChipModel(config::BackendType::kA2A3).ring_defaults; }

Program ParseOrDie(const std::string& text) {
  auto j = ParseJson(text, "t.json");
  EXPECT_TRUE(j.ok());
  auto p = ParseProgram(*j, "t.json");
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *p;
}

// (pred local id, succ local id, source, arg) of every edge, in record order.
using EdgeRow = std::tuple<int, int, EdgeSource, int>;
std::vector<EdgeRow> Edges(const LoweredProgram& lp) {
  std::vector<EdgeRow> rows;
  for (size_t i = 0; i < lp.tasks.size(); ++i)
    for (const LoweredEdge& e : lp.tasks[i].edges)
      rows.emplace_back(e.pred, static_cast<int>(i), e.source, e.arg);
  return rows;
}

// A program over [4,4] FLOAT32 tensors a, b, q, q2 (view of q), x, y with
// kernels add (aiv), cp (copy, aiv); `orch` is the orchestration array.
Program Small(const std::string& orch) {
  return ParseOrDie(R"({"name": "s", "kernels": [
      {"func_id": 0, "name": "add", "core_type": "aiv", "op": "add"},
      {"func_id": 1, "name": "cp", "core_type": "aiv", "op": "copy"}],
    "tensors": [{"name": "a", "shape": [4, 4], "dtype": "FLOAT32"},
                {"name": "b", "shape": [4, 4], "dtype": "FLOAT32"},
                {"name": "q", "shape": [4, 4], "dtype": "FLOAT32"},
                {"name": "q2", "view_of": "q", "shape": [16]},
                {"name": "half", "view_of": "q", "shape": [2, 4], "offset": 4},
                {"name": "x", "shape": [4, 4], "dtype": "FLOAT32"},
                {"name": "y", "shape": [4, 4], "dtype": "FLOAT32"},
                {"name": "h2", "shape": [2, 4], "dtype": "FLOAT32"},
                {"name": "flat", "shape": [16], "dtype": "FLOAT32"}],
    "orchestration": )" +
                    orch + "}");
}

std::string Sub(const std::string& k, const std::string& in, const std::string& out,
                const std::string& out_type = "OUTPUT", const std::string& extra = "") {
  return R"({"submit": ")" + k + R"(", "args": [{"tensor": ")" + in +
         R"(", "type": "INPUT"}, {"tensor": ")" + out + R"(", "type": ")" + out_type + R"("}])" +
         extra + "}";
}

TEST(LoweringTest, VectorPipelineHasExactlySixEdges) {
  Program p = GenerateVectorPipeline();
  auto lp = Lower(p, Rings());
  ASSERT_TRUE(lp.ok()) << lp.status().ToString();
  std::vector<EdgeRow> want = {
      {0, 1, EdgeSource::kTensormap, 0}, {0, 2, EdgeSource::kTensormap, 0},
      {1, 3, EdgeSource::kTensormap, 0}, {1, 3, EdgeSource::kCreator, 0},
      {2, 3, EdgeSource::kTensormap, 1}, {3, 4, EdgeSource::kTensormap, 0}};
  EXPECT_EQ(Edges(*lp), want);
  EXPECT_EQ(lp->edge_count, 6u);
  EXPECT_EQ(lp->tasks[3].preds, (std::vector<int>{1, 2}));
  for (const auto& t : lp->tasks) EXPECT_EQ(t.task_id >> 32, 0u);  // root scope = ring 0
  EXPECT_EQ(lp->tasks[4].task_id, 4u);
}

TEST(LoweringTest, TaskIdsUseRingOfScopeDepthAndMonotonicLocalIds) {
  Program p = GenerateAttentionDecode({});
  auto lp = Lower(p, Rings());
  ASSERT_TRUE(lp.ok()) << lp.status().ToString();
  // layer scope depth 1 -> ring 1; head scope depth 2 -> ring 2.
  EXPECT_EQ(lp->tasks[0].task_id, (2ull << 32) | 0);  // qk head 0 layer 0
  EXPECT_EQ(lp->tasks[3].task_id, (2ull << 32) | 3);  // qk head 1 layer 0
  EXPECT_EQ(lp->tasks[6].task_id, (1ull << 32) | 0);  // rmsnorm layer 0
  EXPECT_EQ(lp->tasks[7].task_id, (1ull << 32) | 1);  // residual add layer 0
  EXPECT_EQ(lp->tasks[8].task_id, (2ull << 32) | 6);  // qk head 0 layer 1
  EXPECT_EQ(lp->tasks[1].block_num, 2);
  // rmsnorm reads attn_out, written in two halves by the pv matmuls: partial overlaps.
  const LoweredTask& norm = lp->tasks[6];
  ASSERT_EQ(norm.edges.size(), 2u);
  for (const LoweredEdge& e : norm.edges) {
    EXPECT_EQ(e.source, EdgeSource::kTensormap);
    EXPECT_EQ(e.overlap, Overlap::kOther);
  }
  // Layer 1's qk reads q0, a view of x, last written by layer 0's residual add: covered.
  const LoweredTask& qk1 = lp->tasks[8];
  ASSERT_EQ(qk1.edges.size(), 1u);
  EXPECT_EQ(qk1.edges[0].pred, 7);
  EXPECT_EQ(qk1.edges[0].overlap, Overlap::kCovered);
}

TEST(LoweringTest, CreatorEdgeForWritesIntoAnotherTasksOutputAndNoWriteAfterRead) {
  Program p = Small("[" + Sub("cp", "a", "x") + "," + Sub("cp", "x", "y") + "," +
                    Sub("cp", "b", "x", "OUTPUT_EXISTING") + "]");
  auto lp = Lower(p, Rings());
  ASSERT_TRUE(lp.ok()) << lp.status().ToString();
  // t1 reads x from t0; t2 overwrites x (allocated by t0): creator edge only,
  // and no edge from the earlier reader t1 (the tensormap tracks producers only).
  std::vector<EdgeRow> want = {{0, 1, EdgeSource::kTensormap, 0}, {0, 2, EdgeSource::kCreator, 1}};
  EXPECT_EQ(Edges(*lp), want);
  EXPECT_EQ(lp->tasks[2].args[1].version, 1);
  EXPECT_EQ(lp->tasks[2].args[1].tensor_id,
            TensorId(lp->buffers[lp->tasks[2].args[1].buffer].addr, 1));
}

TEST(LoweringTest, LastWriterWinsAndPartialOverlapIsOther) {
  // h2 -> half (rows 1..2 of q); then q read whole: covered by nobody -> walks
  // both writers; then q written whole and read again: only the newest writer.
  Program p = Small("[" + Sub("cp", "a", "q", "OUTPUT_EXISTING") + "," +
                    Sub("cp", "h2", "half", "OUTPUT_EXISTING") + "," + Sub("cp", "q", "x") + "," +
                    Sub("cp", "b", "q", "OUTPUT_EXISTING") + "," + Sub("cp", "q", "y") + "]");
  auto lp = Lower(p, Rings());
  ASSERT_TRUE(lp.ok()) << lp.status().ToString();
  const auto& e2 = lp->tasks[2].edges;
  ASSERT_EQ(e2.size(), 2u);
  EXPECT_EQ(e2[0].pred, 1);
  EXPECT_EQ(e2[0].overlap, Overlap::kOther);
  EXPECT_EQ(e2[0].producer_offset, 4u);
  EXPECT_EQ(e2[1].pred, 0);
  EXPECT_EQ(e2[1].overlap, Overlap::kCovered);
  const auto& e4 = lp->tasks[4].edges;
  ASSERT_EQ(e4.size(), 1u);  // t3 superseded t0 and t1
  EXPECT_EQ(e4[0].pred, 3);
}

TEST(LoweringTest, ManualScopeUsesOnlyExplicitDeps) {
  Program p = Small("[" + Sub("cp", "a", "x", "OUTPUT", R"(, "id": "w")") +
                    R"(, {"scope": "m", "manual": true, "body": [)" + Sub("cp", "x", "y") + "," +
                    Sub("cp", "x", "q", "OUTPUT_EXISTING", R"(, "deps": ["w"])") + "]}]");
  auto lp = Lower(p, Rings());
  ASSERT_TRUE(lp.ok()) << lp.status().ToString();
  std::vector<EdgeRow> want = {{0, 2, EdgeSource::kExplicit, -1}};
  EXPECT_EQ(Edges(*lp), want);
  EXPECT_TRUE(lp->tasks[1].manual);
}

// Marks follow value identity (docs/run-config.md §2.11).
TEST(LoweringTest, DumpTagFollowsValueIdentity) {
  // dump_tag(q) then k(q): covered.
  Program p1 = Small(R"([{"dump_tag": "q"}, )" + Sub("cp", "q", "x") + "]");
  auto l1 = Lower(p1, Rings());
  ASSERT_TRUE(l1.ok());
  EXPECT_TRUE(l1->tasks[0].args[0].dump);
  EXPECT_FALSE(l1->tasks[0].args[1].dump);

  // dump_tag(q); q = foo(q) (rebound by OUTPUT); k(q): not covered (but foo's input is).
  Program p2 =
      Small(R"([{"dump_tag": "q"}, )" +
            Sub("add", "q", "q", "OUTPUT", R"(, "scalars": [{"dtype": "FLOAT32", "value": 1}])") +
            "," + Sub("cp", "q", "x") + "]");
  auto l2 = Lower(p2, Rings());
  ASSERT_TRUE(l2.ok()) << l2.status().ToString();
  EXPECT_TRUE(l2->tasks[0].args[0].dump);
  EXPECT_FALSE(l2->tasks[1].args[0].dump);

  // dump_tag(q); q2 = reshape(q); k(q2): not covered.
  Program p3 = Small(R"([{"dump_tag": "q"}, )" + Sub("cp", "q2", "flat", "OUTPUT_EXISTING") + "]");
  auto l3 = Lower(p3, Rings());
  ASSERT_TRUE(l3.ok());
  EXPECT_FALSE(l3->tasks[0].args[0].dump);

  // An in-place write makes a new value: the writer dumps it, later readers don't.
  Program p4 = Small(
      R"([{"dump_tag": "x"}, {"submit": "add", "args": [{"tensor": "x", "type": "INOUT"}, {"tensor": "a", "type": "INPUT"}]}, )" +
      Sub("cp", "x", "y") + "]");
  auto l4 = Lower(p4, Rings());
  ASSERT_TRUE(l4.ok()) << l4.status().ToString();
  EXPECT_TRUE(l4->tasks[0].args[0].dump);
  EXPECT_FALSE(l4->tasks[1].args[0].dump);

  // Tagging is forward-sticky: every later consumer of the same value dumps it.
  Program p5 =
      Small(R"([{"dump_tag": "a"}, )" + Sub("cp", "a", "x") + "," + Sub("cp", "a", "y") + "]");
  auto l5 = Lower(p5, Rings());
  ASSERT_TRUE(l5.ok());
  EXPECT_TRUE(l5->tasks[0].args[0].dump);
  EXPECT_TRUE(l5->tasks[1].args[0].dump);
  EXPECT_TRUE(l5->warnings.empty());

  // A tag no later dispatch consumes (the reshape case) is reported with the fix.
  ASSERT_EQ(l3->warnings.size(), 1u);
  EXPECT_NE(l3->warnings[0].find("$.orchestration[0]"), std::string::npos) << l3->warnings[0];
  EXPECT_NE(l3->warnings[0].find("dump_tag(\"q\") is never dumped"), std::string::npos);
  EXPECT_NE(l3->warnings[0].find("tag the value the kernel actually receives"), std::string::npos);
  EXPECT_TRUE(l1->warnings.empty());
}

TEST(LoweringTest, DumpsMarkOnlyThatSubmit) {
  Program p = Small("[" + Sub("cp", "a", "x", "OUTPUT", R"(, "dumps": ["a", "x"])") + "," +
                    Sub("cp", "a", "y") + "]");
  auto lp = Lower(p, Rings());
  ASSERT_TRUE(lp.ok());
  EXPECT_TRUE(lp->tasks[0].args[0].dump);
  EXPECT_TRUE(lp->tasks[0].args[1].dump);
  EXPECT_FALSE(lp->tasks[1].args[0].dump);
}

TEST(LoweringTest, UsingABufferAfterItsScopeEndedIsAnError) {
  Program p = Small(R"([{"scope": "inner", "body": [)" + Sub("cp", "a", "x") + "]}," +
                    Sub("cp", "x", "y") + "]");
  auto lp = Lower(p, Rings());
  ASSERT_FALSE(lp.ok());
  const std::string& m = lp.status().message();
  EXPECT_NE(m.find("t.json: at $.orchestration[1].args[0].tensor"), std::string::npos) << m;
  EXPECT_NE(m.find("scope \"inner\", which has ended"), std::string::npos) << m;
}

TEST(LoweringTest, HeapPlacementWrapsAndRejectsOversizedOutputs) {
  RingCapacities rings = Rings();
  rings.heap[0] = 160;  // two 64-byte [4,4] buffers fit, the third wraps
  Program p = Small("[" + Sub("cp", "a", "x") + "," + Sub("cp", "a", "y") + "," +
                    Sub("cp", "b", "q") + "]");
  auto lp = Lower(p, rings);
  ASSERT_TRUE(lp.ok()) << lp.status().ToString();
  auto offset = [&](int t) { return lp->buffers[lp->tasks[t].args[1].buffer].heap_offset; };
  EXPECT_EQ(offset(0), 0u);
  EXPECT_EQ(offset(1), 64u);
  EXPECT_EQ(offset(2), 0u);
  EXPECT_EQ(lp->tasks[2].heap_bytes, 32u + 64u);  // padding to the end + the buffer
  rings.heap[0] = 32;
  auto small = Lower(p, rings);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("expected ring_heap >= 64"), std::string::npos)
      << small.status().message();
}

TEST(LoweringTest, ReleaseEventsFollowBindingsAndScopes) {
  // x is rebound by the second OUTPUT: the first writer is released right after it.
  Program p = Small("[" + Sub("cp", "a", "x") + "," + Sub("cp", "b", "x") + "]");
  auto lp = Lower(p, Rings());
  ASSERT_TRUE(lp.ok());
  std::vector<std::pair<LoweredEvent::Kind, int>> ev;
  for (const auto& e : lp->events) ev.emplace_back(e.kind, e.index);
  using K = LoweredEvent::Kind;
  std::vector<std::pair<K, int>> want = {{K::kScopeBegin, 0}, {K::kSubmit, 0},  {K::kSubmit, 1},
                                         {K::kRelease, 0},    {K::kRelease, 1}, {K::kScopeEnd, 0}};
  EXPECT_EQ(ev, want);
}

TEST(LoweringTest, TensorIdIsFnv1aOfAddressAndVersion) {
  // FNV-1a 64 over the 8 address bytes and 4 version bytes, little-endian.
  uint64_t h = 0xcbf29ce484222325ull;
  uint8_t bytes[12] = {0x00, 0x10, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0};
  for (uint8_t b : bytes) {
    h ^= b;
    h *= 0x100000001b3ull;
  }
  EXPECT_EQ(TensorId(0x1000, 2), h);
  EXPECT_NE(TensorId(0x1000, 2), TensorId(0x1000, 3));
}

TEST(LoweringTest, LargeGeneratedDagLowersQuickly) {
  LayeredDagOptions o;
  o.tasks = 100000;
  o.width = 32;
  Program p = GenerateLayeredDag(o);
  auto lp = Lower(p, Rings());
  ASSERT_TRUE(lp.ok()) << lp.status().ToString();
  EXPECT_EQ(lp->tasks.size(), 100000u);
  EXPECT_GT(lp->edge_count, 100000u);
}

}  // namespace
}  // namespace dfx::device
