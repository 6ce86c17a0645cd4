// The deps.json reader against what the writer writes and against the
// fixtures' hand-written files: both results (the compact task graph and the
// typed file) come from one parser and agree.
#include "collectors/dep_gen/deps_reader.h"

#include <gtest/gtest.h>

#include <cstring>

#include "collectors/recorders.h"
#include "collectors/testing/test_util.h"

namespace dfx::collectors {
namespace {

using testing::MakeTensorView;
using testing::TempDir;
namespace fs = std::filesystem;

// Task 4294967296 (ring 1) consumes tensor 911 from task 5 (tensormap) and
// from its creator 1; task 7 precedes it explicitly.
fs::path WriteSample(const TempDir& dir) {
  DepGenRecorder r(CapacityHint{.tasks = 4, .tensor_args = 8, .edges = 8});
  DepGenTaskRecord t;
  t.task_id = 4294967296ull;
  t.early_dispatch = true;
  t.kernel_ids[1] = 2;
  t.block_num = 4;
  t.arg_count = 2;
  t.args[0].idx = 0;
  t.args[0].type = ArgType::kInout;
  t.args[0].has_tensor = true;
  t.args[0].view = MakeTensorView(911, {4, 8}, {16, 1}, 32, "FLOAT16");
  t.args[1].idx = 1;
  t.args[1].type = ArgType::kOutput;
  DepGenEdgeRecord tm;
  tm.pred = 5;
  tm.succ = t.task_id;
  tm.arg = 0;
  tm.source = EdgeSource::kTensormap;
  tm.overlap = Overlap::kOther;
  tm.consumer = MakeTensorView(911, {4, 8}, {16, 1}, 32, "FLOAT16");
  tm.producer = MakeTensorView(911, {2, 8}, {16, 1}, 48, "FLOAT16");
  DepGenEdgeRecord creator = tm;
  creator.pred = 1;
  creator.source = EdgeSource::kCreator;
  DepGenEdgeRecord expl;
  expl.pred = 7;
  expl.succ = t.task_id;
  expl.source = EdgeSource::kExplicit;
  DepGenEdgeRecord edges[] = {tm, creator, expl, tm};
  DepGenTaskRecord producer;
  producer.task_id = 5;
  producer.kernel_ids[0] = 3;
  r.RecordSubmit(producer, {});
  r.RecordSubmit(t, edges);
  DepGenTensorRecord tensor;
  tensor.tensor_id = 911;
  tensor.buffer_addr = 30064771072ull;
  tensor.version = 1;
  std::strcpy(tensor.dtype, "FLOAT16");
  tensor.buffer_numel = 8192;
  r.RecordTensor(tensor);
  fs::path path = dir.path() / "deps.json";
  EXPECT_TRUE(r.Export(path).ok());
  return path;
}

TEST(DepsReader, ReadsEveryFieldTheWriterWrites) {
  TempDir dir;
  auto file = ReadDepsFile(WriteSample(dir));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_EQ(file->tasks.size(), 2u);
  const DepsTask& t = file->tasks[1];
  EXPECT_EQ(t.task_id, 4294967296ull);
  EXPECT_TRUE(t.has_kernel_ids);
  EXPECT_EQ(t.kernel_ids, (std::array<int32_t, 3>{-1, 2, -1}));
  EXPECT_EQ(t.block_num, 4);
  EXPECT_TRUE(t.early_dispatch);
  ASSERT_TRUE(t.args.has_value());
  ASSERT_EQ(t.args->size(), 2u);
  const DepsArg& inout = (*t.args)[0];
  EXPECT_EQ(inout.idx, 0);
  EXPECT_EQ(inout.type, "INOUT");
  EXPECT_EQ(inout.tensor_id, 911u);
  EXPECT_EQ(inout.dtype, "FLOAT16");
  EXPECT_EQ(inout.slice.shape, (std::vector<uint64_t>{4, 8}));
  EXPECT_EQ(inout.slice.strides, (std::vector<uint64_t>{16, 1}));
  EXPECT_EQ(inout.slice.start_offset, 32u);
  const DepsArg& output = (*t.args)[1];
  EXPECT_EQ(output.type, "OUTPUT");
  EXPECT_FALSE(output.tensor_id.has_value());
  EXPECT_FALSE(output.slice.shape.has_value());

  ASSERT_EQ(file->tensors.size(), 1u);
  EXPECT_EQ(file->tensors[0].tensor_id, 911u);
  EXPECT_EQ(file->tensors[0].buffer_addr, 30064771072ull);
  EXPECT_EQ(file->tensors[0].version, 1);
  EXPECT_EQ(file->tensors[0].dtype, "FLOAT16");
  EXPECT_EQ(file->tensors[0].buffer_numel, 8192u);

  ASSERT_EQ(file->edges.size(), 4u);
  const DepsEdge& tm = file->edges[0];
  EXPECT_EQ(tm.pred, 5u);
  EXPECT_EQ(tm.succ, 4294967296ull);
  EXPECT_EQ(tm.arg, 0);
  EXPECT_EQ(tm.source, "tensormap");
  EXPECT_EQ(tm.overlap, "other");
  EXPECT_EQ(tm.tensor_id, 911u);
  EXPECT_EQ(tm.consumer_dtype, "FLOAT16");
  EXPECT_EQ(tm.consumer.start_offset, 32u);
  EXPECT_EQ(tm.producer.shape, (std::vector<uint64_t>{2, 8}));
  EXPECT_EQ(tm.producer.start_offset, 48u);
  EXPECT_EQ(file->edges[1].source, "creator");
  EXPECT_FALSE(file->edges[1].overlap.has_value());
  EXPECT_FALSE(file->edges[1].producer.shape.has_value());
  const DepsEdge& expl = file->edges[2];
  EXPECT_EQ(expl.source, "explicit");
  EXPECT_EQ(expl.arg, -1);
  EXPECT_FALSE(expl.tensor_id.has_value());
  EXPECT_FALSE(expl.consumer.shape.has_value());
}

TEST(DepsReader, TaskGraphKeepsTasksAndUniqueEdgesIndexedBothWays) {
  TempDir dir;
  auto g = ReadTaskGraph(WriteSample(dir));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->NumTasks(), 2u);
  const TaskInfo* t = g->FindTask(4294967296ull);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->block_num, 4);
  EXPECT_TRUE(t->early_dispatch);
  EXPECT_FALSE(t->IsDummy());
  EXPECT_EQ(FuncIdForCore(*t, "aiv"), 2);
  EXPECT_EQ(FuncIdForCore(*t, "aic"), -1);
  EXPECT_EQ(g->FindTask(6), nullptr);
  // Four annotated edges, three unique pairs (the tensormap edge repeats).
  std::vector<std::pair<uint64_t, uint64_t>> edges;
  for (const auto& e : g->Edges()) edges.push_back(e);
  EXPECT_EQ(edges, (std::vector<std::pair<uint64_t, uint64_t>>{
                       {1, 4294967296ull}, {5, 4294967296ull}, {7, 4294967296ull}}));
  EXPECT_EQ(g->Succs(5).size(), 1u);
  auto preds = g->Preds(4294967296ull);
  ASSERT_EQ(preds.size(), 3u);
  EXPECT_EQ(preds[2], (std::pair<uint64_t, uint64_t>{4294967296ull, 7}));
}

TEST(DepsReader, IdsAreStringsOrNumbersAndNegativesAreMasked) {
  TempDir dir;
  auto path = dir.path() / "deps.json";
  ASSERT_TRUE(WriteFileAtomic(path, R"({"tasks":[{"task_id":"-1","kernel_ids":[1,-1,-1]},
      {"task_id":18446744073709551615,"kernel_ids":[-1,-1,-1],"block_num":2}],
      "edges":[{"pred":"3","succ":4}]})")
                  .ok());
  auto g = ReadTaskGraph(path);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->NumTasks(), 1u);  // both ids are 2^64 - 1: the last one wins
  const TaskInfo* t = g->FindTask(18446744073709551615ull);
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->IsDummy());
  EXPECT_EQ(t->block_num, 2);
  std::vector<std::pair<uint64_t, uint64_t>> edges;
  for (const auto& e : g->Edges()) edges.push_back(e);
  EXPECT_EQ(edges, (std::vector<std::pair<uint64_t, uint64_t>>{{3, 4}}));
}

TEST(DepsReader, TaskGraphTakesTasksAfterEdgesAndEdgeEndsWithoutTasks) {
  TempDir dir;
  auto path = dir.path() / "deps.json";
  // Tasks after the edges (and one repeated), an edge end (9) with no task.
  ASSERT_TRUE(WriteFileAtomic(path, R"({"tasks":[{"task_id":"5","kernel_ids":[1,-1,-1]}],
      "edges":[{"pred":"5","succ":"7"},{"pred":"9","succ":"7"},{"pred":"5","succ":"7"}],
      "tasks":[{"task_id":"7","kernel_ids":[-1,2,-1]},{"task_id":"5","kernel_ids":[3,-1,-1]}]})")
                  .ok());
  auto g = ReadTaskGraph(path);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->NumTasks(), 2u);
  ASSERT_NE(g->FindTask(5), nullptr);
  EXPECT_EQ(g->FindTask(5)->kernel_ids[0], 3);
  ASSERT_NE(g->FindTask(7), nullptr);
  EXPECT_EQ(g->FindTask(7)->kernel_ids[1], 2);
  EXPECT_EQ(g->FindTask(9), nullptr);
  std::vector<std::pair<uint64_t, uint64_t>> edges;
  for (const auto& e : g->Edges()) edges.push_back(e);
  EXPECT_EQ(edges, (std::vector<std::pair<uint64_t, uint64_t>>{{5, 7}, {9, 7}}));
  EXPECT_EQ(g->Succs(9).size(), 1u);
  auto preds = g->Preds(7);
  ASSERT_EQ(preds.size(), 2u);
  EXPECT_EQ(preds[1], (std::pair<uint64_t, uint64_t>{7, 9}));
  EXPECT_EQ(g->Preds(5).size(), 0u);
  EXPECT_EQ(g->Succs(42).size(), 0u);
}

TEST(DepsReader, EntriesWithoutTheirIdsAreErrorsNamingTheFile) {
  TempDir dir;
  auto path = dir.path() / "deps.json";
  for (const char* text :
       {R"({"tasks":[{"kernel_ids":[1,-1,-1]}]})", R"({"edges":[{"pred":"1"}]})",
        R"({"tasks":[{"task_id":"x1"}]})", R"({"tensors":[{"dtype":"FLOAT16"}]})"}) {
    ASSERT_TRUE(WriteFileAtomic(path, text).ok());
    auto file = ReadDepsFile(path);
    ASSERT_FALSE(file.ok()) << text;
    EXPECT_NE(file.status().message().find(path.string() + ": at byte"), std::string::npos)
        << file.status().message();
  }
  ASSERT_TRUE(WriteFileAtomic(path, R"({"tasks":[{"task_id":"x1"}]})").ok());
  auto g = ReadTaskGraph(path);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("expected a u64 task id string, got \"x1\""),
            std::string::npos);
  // The compact graph does not read tensors: a tensor without its id is not its concern.
  ASSERT_TRUE(WriteFileAtomic(path, R"({"tensors":[{"dtype":"FLOAT16"}]})").ok());
  EXPECT_TRUE(ReadTaskGraph(path).ok());
  EXPECT_EQ(ReadTaskGraph(dir.path() / "none.json").status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace dfx::collectors
