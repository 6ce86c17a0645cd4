#include <gtest/gtest.h>

#include <cstring>

#include "collectors/recorders.h"
#include "collectors/testing/test_util.h"

namespace dfx::collectors {
namespace {

using testing::Keys;
using testing::ReadJson;
using testing::Slurp;
using testing::TempDir;

TensorView View(uint64_t id, std::vector<uint32_t> shape, std::vector<uint32_t> strides,
                uint64_t offset = 0) {
  return testing::MakeTensorView(id, std::move(shape), std::move(strides), offset);
}

DepGenTaskRecord Task(uint64_t id) {
  DepGenTaskRecord t;
  t.task_id = id;
  t.kernel_ids[1] = 2;
  t.kernel_ids[2] = 2;
  t.block_num = 4;
  t.arg_count = 2;
  t.args[0].idx = 0;
  t.args[0].type = ArgType::kInput;
  t.args[0].has_tensor = true;
  t.args[0].view = View(911, {64, 128}, {128, 1});
  t.args[1].idx = 1;
  t.args[1].type = ArgType::kOutput;
  return t;
}

TEST(DepGenRecorder, WritesSpecSchemaWithU64Strings) {
  TempDir dir;
  DepGenRecorder r(CapacityHint{.tasks = 4, .tensor_args = 8, .edges = 8});
  DepGenEdgeRecord tm;
  tm.pred = 4294967295ull;
  tm.succ = 4294967296ull;
  tm.arg = 0;
  tm.source = EdgeSource::kTensormap;
  tm.overlap = Overlap::kCovered;
  tm.consumer = View(911, {64, 128}, {128, 1});
  tm.producer = View(911, {64, 128}, {128, 1});
  DepGenEdgeRecord creator;
  creator.pred = 1;
  creator.succ = 4294967296ull;
  creator.arg = 1;
  creator.source = EdgeSource::kCreator;
  creator.consumer = View(912, {8}, {1}, 16);
  DepGenEdgeRecord expl;
  expl.pred = 7;
  expl.succ = 4294967296ull;
  expl.arg = 3;  // ignored: explicit edges have no arg slot
  expl.source = EdgeSource::kExplicit;
  DepGenEdgeRecord edges[] = {tm, creator, expl};
  r.RecordSubmit(Task(4294967296ull), edges);
  DepGenTensorRecord tensor;
  tensor.tensor_id = 911;
  tensor.buffer_addr = 30064771072ull;
  tensor.version = 1;
  std::strcpy(tensor.dtype, "BFLOAT16");
  tensor.buffer_numel = 8192;
  r.RecordTensor(tensor);
  auto path = dir.path() / "deps.json";
  ASSERT_TRUE(r.Export(path).ok());

  std::string text = Slurp(path);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "single compact line";
  EXPECT_EQ(text.find(": "), std::string::npos) << "no whitespace";

  Json j = ReadJson(path);
  EXPECT_EQ(Keys(j), (std::vector<std::string>{"tasks", "tensors", "edges"}));
  const Json& t = j["tasks"][0];
  EXPECT_EQ(Keys(t), (std::vector<std::string>{"task_id", "scope", "early_dispatch", "kernel_ids",
                                               "block_num", "args"}));
  EXPECT_EQ(t["task_id"], "4294967296");
  EXPECT_EQ(t["scope"], "auto");
  EXPECT_EQ(t["early_dispatch"], false);
  EXPECT_EQ(t["kernel_ids"], Json::parse("[-1,2,2]"));
  EXPECT_EQ(t["block_num"], 4);
  EXPECT_EQ(Keys(t["args"][0]), (std::vector<std::string>{"idx", "type", "tensor_id", "dtype",
                                                          "shape", "start_offset", "strides"}));
  EXPECT_EQ(t["args"][0]["tensor_id"], "911");
  EXPECT_EQ(t["args"][0]["start_offset"], "0");
  EXPECT_EQ(t["args"][0]["shape"], Json::parse("[64,128]"));
  EXPECT_EQ(t["args"][1], Json::parse(R"({"idx":1,"type":"OUTPUT"})"));

  EXPECT_EQ(j["tensors"][0], Json::parse(R"({"tensor_id":"911","buffer_addr":"30064771072",
      "version":1,"dtype":"BFLOAT16","buffer_numel":"8192"})"));
  EXPECT_EQ(Keys(j["tensors"][0]), (std::vector<std::string>{"tensor_id", "buffer_addr", "version",
                                                             "dtype", "buffer_numel"}));

  const Json& e = j["edges"];
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(Keys(e[0]),
            (std::vector<std::string>{"pred", "succ", "arg", "source", "flags", "overlap",
                                      "tensor_id", "consumer_dtype", "consumer_shape",
                                      "consumer_start_offset", "consumer_strides", "producer_shape",
                                      "producer_start_offset", "producer_strides"}));
  EXPECT_EQ(e[0]["pred"], "4294967295");
  EXPECT_EQ(e[0]["flags"], Json::parse(R"(["wait"])"));
  EXPECT_EQ(e[0]["overlap"], "covered");
  EXPECT_EQ(Keys(e[1]), (std::vector<std::string>{"pred", "succ", "arg", "source", "flags",
                                                  "tensor_id", "consumer_dtype", "consumer_shape",
                                                  "consumer_start_offset", "consumer_strides"}));
  EXPECT_EQ(e[1]["source"], "creator");
  EXPECT_EQ(e[1]["flags"], Json::parse(R"(["wait","retain"])"));
  EXPECT_EQ(e[1]["consumer_start_offset"], "16");
  EXPECT_EQ(e[1]["tensor_id"], "912");
  EXPECT_EQ(Keys(e[2]), (std::vector<std::string>{"pred", "succ", "arg", "source", "flags"}));
  EXPECT_EQ(e[2]["arg"], -1);
  EXPECT_EQ(e[2]["flags"], Json::parse(R"(["wait","retain"])"));
}

// The recorder keeps an edge's views only where they differ from the
// consumer's arg slot (consumer) or from the consumer (producer); every
// combination must come back out as recorded.
TEST(DepGenRecorder, EdgeViewsComeOutAsRecordedWhetherOrNotTheyMatchTheArgSlot) {
  TempDir dir;
  DepGenRecorder r(CapacityHint{.tasks = 4, .tensor_args = 8, .edges = 8});
  const TensorView arg0 = View(911, {64, 128}, {128, 1});
  auto tensormap = [](uint64_t pred, const TensorView& consumer, const TensorView& producer) {
    DepGenEdgeRecord e;
    e.pred = pred;
    e.succ = 10;
    e.arg = 0;
    e.source = EdgeSource::kTensormap;
    e.overlap = Overlap::kOther;
    e.consumer = consumer;
    e.producer = producer;
    return e;
  };
  TensorView same_but_dtype = arg0;
  std::strcpy(same_but_dtype.dtype, "FLOAT16");
  DepGenEdgeRecord edges[] = {
      tensormap(1, arg0, arg0),                                  // both from the arg slot
      tensormap(2, arg0, View(911, {32, 128}, {128, 1}, 4096)),  // producer a part of it
      tensormap(3, View(911, {64, 64}, {128, 1}, 64), arg0),     // consumer a part of the arg
      tensormap(4, same_but_dtype, same_but_dtype),              // differs in dtype only
  };
  r.RecordSubmit(Task(10), edges);
  // A second submit: its arg slots come after the first one's.
  DepGenTaskRecord t2 = Task(11);
  t2.args[0].view = View(913, {16}, {1}, 8);
  DepGenEdgeRecord e2 = tensormap(10, t2.args[0].view, View(913, {16}, {2}, 8));
  e2.succ = 11;
  r.RecordSubmit(t2, std::span(&e2, 1));
  auto path = dir.path() / "deps.json";
  ASSERT_TRUE(r.Export(path).ok());

  const Json e = ReadJson(path)["edges"];
  ASSERT_EQ(e.size(), 5u);
  auto views = [](const Json& edge) {
    return edge["tensor_id"].get<std::string>() + " " + edge["consumer_dtype"].get<std::string>() +
           " " + edge["consumer_shape"].dump() + edge["consumer_start_offset"].get<std::string>() +
           edge["consumer_strides"].dump() + " / " + edge["producer_shape"].dump() +
           edge["producer_start_offset"].get<std::string>() + edge["producer_strides"].dump();
  };
  EXPECT_EQ(views(e[0]), "911 BFLOAT16 [64,128]0[128,1] / [64,128]0[128,1]");
  EXPECT_EQ(views(e[1]), "911 BFLOAT16 [64,128]0[128,1] / [32,128]4096[128,1]");
  EXPECT_EQ(views(e[2]), "911 BFLOAT16 [64,64]64[128,1] / [64,128]0[128,1]");
  EXPECT_EQ(views(e[3]), "911 FLOAT16 [64,128]0[128,1] / [64,128]0[128,1]");
  EXPECT_EQ(views(e[4]), "913 BFLOAT16 [16]8[1] / [16]8[2]");
  EXPECT_EQ(e[4]["succ"], "11");
}

TEST(DepGenRecorder, ManualScopeEarlyDispatchAndEmptyEdges) {
  TempDir dir;
  DepGenRecorder r(CapacityHint{.tasks = 2, .tensor_args = 2});
  DepGenTaskRecord t = Task(~0ull);
  t.manual_scope = true;
  t.early_dispatch = true;
  r.RecordSubmit(t, {});
  auto path = dir.path() / "deps.json";
  ASSERT_TRUE(r.Export(path).ok());
  Json j = ReadJson(path);
  EXPECT_EQ(j["tasks"][0]["task_id"], "18446744073709551615");
  EXPECT_EQ(j["tasks"][0]["scope"], "manual");
  EXPECT_EQ(j["tasks"][0]["early_dispatch"], true);
  EXPECT_TRUE(j["edges"].is_array());
  EXPECT_TRUE(j["edges"].empty());
}

TEST(DepGenRecorder, DroppedRecordsRefuseToWrite) {
  TempDir dir;
  DepGenRecorder r(CapacityHint{.tasks = 1, .tensor_args = 1, .edges = 1});
  // Floors: 64 tasks. Fill them, then one more is dropped.
  for (int i = 0; i < 65; ++i) r.RecordSubmit(Task(i), {});
  EXPECT_EQ(r.dropped_records(), 1u);
  auto path = dir.path() / "deps.json";
  Status s = r.Export(path);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("deps.json will NOT be emitted for this run (incomplete graph)"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace dfx::collectors
