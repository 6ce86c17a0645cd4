// The deps.json reader against what the writer writes and against the
// fixtures' hand-written files: both results (the compact task graph and the
// typed file) come from one parser and agree.
#include "collectors/dep_gen/deps_reader.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "collectors/recorders.h"
#include "collectors/testing/graph_dump.h"
#include "collectors/testing/test_util.h"

namespace dfx::collectors {
namespace {

using testing::DumpGraph;
using testing::GraphDump;
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

// The trace's fanin-hint / fanout-hint list peers as the reference does: in
// deps.json's edge order, each unique edge where it first appears.
TEST(DepsReader, TaskGraphListsPeersInTheFilesEdgeOrder) {
  TaskGraph g;
  for (uint64_t id : {1, 2, 3, 4}) g.AddTask(id, TaskInfo{});
  for (auto [pred, succ] :
       std::vector<std::pair<uint64_t, uint64_t>>{{3, 4}, {1, 4}, {2, 4}, {1, 4}, {1, 3}, {1, 2}}) {
    g.AddEdge(pred, succ);
  }
  g.Finalize();
  std::vector<uint64_t> peers;
  g.PredsInFileOrder(4, &peers);
  EXPECT_EQ(peers, (std::vector<uint64_t>{3, 1, 2}));  // sorted would be 1, 2, 3
  g.SuccsInFileOrder(1, &peers);
  EXPECT_EQ(peers, (std::vector<uint64_t>{4, 3, 2}));
  g.SuccsInFileOrder(4, &peers);
  EXPECT_TRUE(peers.empty());
  g.PredsInFileOrder(99, &peers);
  EXPECT_TRUE(peers.empty());
  // The sorted views are unchanged.
  auto preds = g.Preds(4);
  ASSERT_EQ(preds.size(), 3u);
  EXPECT_EQ(preds[0].second, 1u);
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

// --- The fast scan of dep_gen's compact form against the generic reader -------------

// What a graph holds (collectors/testing/graph_dump.h) with tasks 0..max_id.
GraphDump Dump(const TaskGraph& g, uint64_t max_id) {
  std::vector<uint64_t> ids;
  for (uint64_t id = 0; id <= max_id; ++id) ids.push_back(id);
  return DumpGraph(g, ids);
}

// Reads `text` as written (`*fast`: which reader read it) and with a leading
// space (not dep_gen's form: the generic reader); both results must agree.
GraphDump ReadBothWays(const TempDir& dir, const std::string& text, uint64_t max_id, bool* fast) {
  const fs::path compact = dir.path() / "deps.json", spaced = dir.path() / "spaced_deps.json";
  EXPECT_TRUE(WriteFileAtomic(compact, text).ok());
  EXPECT_TRUE(WriteFileAtomic(spaced, " " + text).ok());
  bool generic_fast = true;
  auto a = ReadTaskGraph(compact, fast);
  auto b = ReadTaskGraph(spaced, &generic_fast);
  EXPECT_FALSE(generic_fast);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  if (!a.ok() || !b.ok()) return {};
  GraphDump da = Dump(*a, max_id);
  EXPECT_EQ(da, Dump(*b, max_id));
  return da;
}

// dep_gen's form with `n` tasks (task i after i - 1 and i - 2) and every
// annotation, `extra` spliced into each edge: over a MiB from n = 4000.
std::string WriterLikeDeps(int n, const std::string& extra = "") {
  std::string s = R"({"tasks":[)";
  for (int i = 0; i < n; ++i) {
    s += fmt::format(
        R"({}{{"task_id":"{}","scope":"auto","early_dispatch":{},"kernel_ids":[{},-1,{}],)"
        R"("block_num":{},"args":[{{"idx":0,"type":"INPUT","tensor_id":"{}","dtype":"FLOAT32",)"
        R"("shape":[8,8],"start_offset":"0","strides":[8,1]}},{{"idx":1,"type":"OUTPUT"}}]}})",
        i ? "," : "", i, i % 3 == 0 ? "true" : "false", i % 4 - 1, i % 5 - 1, 1 + i % 2,
        1234567890123456789ull + static_cast<uint64_t>(i));
  }
  s +=
      R"(],"tensors":[{"tensor_id":"911","buffer_addr":"30064771072","version":1,"dtype":"FLOAT16","buffer_numel":"8192"}],"edges":[)";
  for (int i = 2; i < n; ++i) {
    for (int back : {1, 2}) {
      s += fmt::format(
          R"({}{{"pred":"{}","succ":"{}","arg":0,"source":"tensormap","flags":["wait"],)"
          R"("overlap":"covered","tensor_id":"18420461503755023245","consumer_dtype":"FLOAT32",)"
          R"("consumer_shape":[8,8],"consumer_start_offset":"0","consumer_strides":[8,1]{}}})",
          i == 2 && back == 1 ? "" : ",", i - back, i, extra);
    }
  }
  return s + "]}\n";
}

TEST(DepsReaderFastScan, ReadsTheWritersFormLikeTheGenericReaderAcrossChunks) {
  TempDir dir;
  bool fast = false;
  ASSERT_TRUE(ReadTaskGraph(WriteSample(dir), &fast).ok());
  EXPECT_TRUE(fast);  // what DepGenRecorder::Export writes
  // Entries straddle the 1 MiB chunks' ends.
  GraphDump d = ReadBothWays(dir, WriterLikeDeps(6000), 6000, &fast);
  EXPECT_TRUE(fast);
  EXPECT_EQ(d.tasks.size(), 6000u);
  EXPECT_EQ(d.edges.size(), 2u * 5998u);
  // Keys in another order, unknown keys and values, empty containers,
  // escapes and numbers of every form in what is skipped.
  const std::string reordered =
      R"({"meta":{"a":[1,-2.5e3,true,false,null,{}],"b":"x\"\\\u00e9\n"},"edges":[)"
      R"({"x":[[],[{}]],"succ":"7","pred":5},{"succ":9,"tensor_id":"1","pred":"-1"}],)"
      R"("tasks":[{"block_num":3,"kernel_ids":[2],"early_dispatch":true,"task_id":"7"},)"
      R"({"kernel_ids":[],"early_dispatch":"no","task_id":9,"task_id":"5"}],"tensors":[]})";
  d = ReadBothWays(dir, reordered, 20, &fast);
  EXPECT_TRUE(fast);
  EXPECT_EQ(d.tasks, (std::vector<std::tuple<uint64_t, int, int, int, int, bool>>{
                         {5, -1, -1, -1, 1, false}, {7, 2, -1, -1, 3, true}}));
}

// DepGenRecorder::Export's own form: every task with two tensor arguments,
// a tensors[] table and edges with every annotation. Entry `odd` gets an
// escape in one skipped string (that entry alone goes through the token
// skipper).
std::string ExportLikeDeps(int n, int odd) {
  const auto arg = [](int idx, const char* type, uint64_t tensor) {
    return fmt::format(R"({{"idx":{},"type":"{}","tensor_id":"{}","dtype":"FLOAT32","shape":[8,8],)"
                       R"("start_offset":"0","strides":[8,1]}})",
                       idx, type, tensor);
  };
  std::string s = R"({"tasks":[)";
  for (int i = 0; i < n; ++i) {
    s += fmt::format(
        R"({}{{"task_id":"{}","scope":"auto","early_dispatch":{},"kernel_ids":[{},-1,{}],)"
        R"("block_num":{},"args":[{},{}]}})",
        i ? "," : "", i, i % 3 == 0 ? "true" : "false", i % 4 - 1, i % 5 - 1, 1 + i % 2,
        arg(0, i == odd ? "IN\u0050UT" : "INPUT", 1000 + i), arg(1, "OUTPUT", 2000 + i));
  }
  s += R"(],"tensors":[)";
  for (int i = 0; i < n; ++i) {
    s += fmt::format(R"({}{{"tensor_id":"{}","buffer_addr":"{}","version":0,"dtype":"FLOAT32",)"
                     R"("buffer_numel":"64"}})",
                     i ? "," : "", 2000 + i, 123145302311168ull + 256u * static_cast<unsigned>(i));
  }
  s += R"(],"edges":[)";
  for (int i = 1; i < n; ++i) {
    s += fmt::format(
        R"({}{{"pred":"{}","succ":"{}","arg":0,"source":"tensormap","flags":["wait"],)"
        R"("overlap":"covered","tensor_id":"{}","consumer_dtype":"FLOAT32",)"
        R"("consumer_shape":[8,8],"consumer_start_offset":"0","consumer_strides":[8,1],)"
        R"("producer_shape":[8,8],"producer_start_offset":"{}","producer_strides":[8,1]}})",
        i > 1 ? "," : "", i - 1, i, 2000 + i - 1, i == odd ? "0\n" : "0");
  }
  return s + "]}\n";
}

TEST(DepsReaderFastScan, TheExportersFormIsReadLikeTheGenericReaderAcrossChunks) {
  TempDir dir;
  bool fast = false;
  // Over 2 MiB: entries straddle both chunk ends; entry 4000 has an escape.
  const std::string text = ExportLikeDeps(6000, 4000);
  ASSERT_GT(text.size(), size_t{2} << 20);
  GraphDump d = ReadBothWays(dir, text, 6000, &fast);
  EXPECT_TRUE(fast);
  EXPECT_EQ(d.tasks.size(), 6000u);
  EXPECT_EQ(d.edges.size(), 5999u);
  // The same with a byte out of place in an annotation: the generic reader's error.
  std::string bad = text;
  const size_t at = bad.find(R"("consumer_strides":[8,1])", bad.size() / 2);
  ASSERT_NE(at, std::string::npos);
  bad[at + 21] = ';';  // [8;1]
  const fs::path path = dir.path() / "deps.json";
  ASSERT_TRUE(WriteFileAtomic(path, bad).ok());
  auto g = ReadTaskGraph(path, &fast);
  EXPECT_FALSE(fast);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find(path.string() + ": at byte"), std::string::npos)
      << g.status().message();
}

TEST(DepsReaderFastScan, OtherFormsFallBackToTheGenericReaderWithItsResult) {
  TempDir dir;
  bool fast = true;
  // Deeper nesting than the scan takes (the generic reader's limit is 256).
  std::string deep = std::string(40, '[') + std::string(40, ']');
  ReadBothWays(dir, WriterLikeDeps(50, R"(,"deep":)" + deep), 50, &fast);
  EXPECT_FALSE(fast);
  // A string longer than a chunk (in both edges).
  ReadBothWays(dir, WriterLikeDeps(3, R"(,"long":")" + std::string(3 << 20, 'x') + "\""), 3, &fast);
  EXPECT_FALSE(fast);
  // Ids and numbers the scan does not parse itself: 20 digits, a fraction, a '+'.
  ReadBothWays(dir,
               R"({"tasks":[{"task_id":18446744073709551615,"block_num":2.5}],)"
               R"("edges":[{"pred":"+3","succ":"18446744073709551615"}]})",
               0, &fast);
  EXPECT_FALSE(fast);
  // An escaped key.
  ReadBothWays(dir, R"({"tasks":[{"task\u005fid":"3"}]})", 5, &fast);
  EXPECT_FALSE(fast);
}

TEST(DepsReaderFastScan, MalformedFilesAreTheGenericReadersErrorsNamingTheFile) {
  TempDir dir;
  const fs::path path = dir.path() / "deps.json";
  const std::string good = WriterLikeDeps(5000);  // over a chunk
  std::vector<std::string> bad;
  for (size_t cut :
       {size_t{1}, size_t{20}, good.size() / 2, (size_t{1} << 20) + 3, good.size() - 3}) {
    bad.push_back(good.substr(0, cut));  // truncated
  }
  bad.push_back(std::string(300, '[') + std::string(300, ']'));  // too deep
  bad.push_back(R"({"edges":[{"pred":"1","succ":"2","x":)" + std::string(300, '[') +
                std::string(300, ']') + "}]}");                               // too deep
  bad.push_back(R"({"edges":[{"pred":"1","succ":"2","x":"unterminated}]})");  // no quote
  bad.push_back(R"({"edges":[{"pred":"1","succ":"2","x":[1,]}]})");           // trailing comma
  bad.push_back(R"({"edges":[{"pred":"1","succ":"2"},]})");
  bad.push_back(R"({"edges":[{"succ":"2"}]})");                // no pred
  bad.push_back(R"({"tasks":[{"task_id":"3"}],"edges":{}})");  // not an array
  bad.push_back(R"({"tasks":[{"task_id":"3","x":"\q"}]})");    // bad escape
  bad.push_back(R"({"tasks":[{"task_id":"3","x":tru}]})");
  for (const std::string& text : bad) {
    ASSERT_TRUE(WriteFileAtomic(path, text).ok());
    bool fast = true;
    auto g = ReadTaskGraph(path, &fast);
    ASSERT_FALSE(g.ok()) << text.substr(0, 80);
    EXPECT_FALSE(fast);
    EXPECT_NE(g.status().message().find(path.string() + ": at byte"), std::string::npos)
        << g.status().message();
  }
}

}  // namespace
}  // namespace dfx::collectors
