#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "collectors/args_dump/args_dump_reader.h"
#include "collectors/recorders.h"
#include "collectors/testing/test_util.h"

namespace dfx::collectors {
namespace {

using testing::Keys;
using testing::ReadJson;
using testing::Slurp;
using testing::TempDir;
namespace fs = std::filesystem;

DumpArgMeta TensorMeta(uint64_t task, int arg, DumpRole role, DumpStage stage,
                       std::vector<int64_t> shape) {
  DumpArgMeta m;
  m.task_id = task;
  m.func_ids[0] = 1;
  m.func_count = 1;
  m.arg_index = arg;
  m.role = role;
  m.stage = stage;
  m.kind = DumpKind::kTensor;
  std::strcpy(m.dtype, "FLOAT16");
  m.ndims = static_cast<uint8_t>(shape.size());
  int64_t stride = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    m.shape[i] = shape[i];
    m.strides[i] = stride;
    stride *= shape[i];
  }
  return m;
}

DumpArgMeta ScalarMeta(uint64_t task, int arg, const char* dtype, uint64_t bits) {
  DumpArgMeta m;
  m.task_id = task;
  m.func_ids[0] = 1;
  m.arg_index = arg;
  m.kind = DumpKind::kScalar;
  std::strcpy(m.dtype, dtype);
  m.scalar_bits = bits;
  return m;
}

uint64_t FloatBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

std::vector<uint8_t> Bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

ArgsDumpOptions Options(int level, uint64_t arena = 1 << 20) {
  ArgsDumpOptions o;
  o.level = level;
  o.arena_bytes = arena;
  o.drain_timeout_ms = 5000;
  return o;
}

TEST(ArgsDump, FullLevelManifestMatchesSpec) {
  TempDir dir;
  ArgsDumpRecorder r(Options(2), CapacityHint{.tensor_args = 8}, dir.path());
  EXPECT_EQ(r.level(), 2);
  auto a = Bytes(64, 1), b = Bytes(32, 9), c = Bytes(16, 3);
  // Host collection order: task 5 first, then task 3: manifest sorts, bin does not.
  ASSERT_TRUE(
      r.Capture(TensorMeta(5, 0, DumpRole::kInput, DumpStage::kBeforeDispatch, {4, 8}), a).ok());
  ASSERT_TRUE(
      r.Capture(TensorMeta(3, 1, DumpRole::kOutput, DumpStage::kAfterCompletion, {16}), b).ok());
  ASSERT_TRUE(
      r.Capture(TensorMeta(3, 0, DumpRole::kInout, DumpStage::kBeforeDispatch, {8}), c).ok());
  ASSERT_TRUE(r.Capture(ScalarMeta(3, 2, "FLOAT32", FloatBits(0.5f)), {}).ok());
  ASSERT_TRUE(r.Export().ok());

  fs::path d = dir.path() / "args_dump";
  Json j = ReadJson(d / "args_dump.json");
  EXPECT_EQ(Keys(j),
            (std::vector<std::string>{"run_dir", "bin_format", "dump_args_level", "total_args",
                                      "before_dispatch", "after_completion", "input_args",
                                      "output_args", "inout_args", "truncated_args",
                                      "dropped_records", "dropped_overwrite", "bin_file", "args"}));
  EXPECT_EQ(j["run_dir"], "args_dump");
  EXPECT_EQ(j["bin_format"],
            Json::parse(R"({"type":"logical_contiguous","byte_order":"little_endian"})"));
  EXPECT_EQ(j["dump_args_level"], 2);
  EXPECT_EQ(j["total_args"], 4);
  EXPECT_EQ(j["before_dispatch"], 3);
  EXPECT_EQ(j["after_completion"], 1);
  EXPECT_EQ(j["input_args"], 2);
  EXPECT_EQ(j["output_args"], 1);
  EXPECT_EQ(j["inout_args"], 1);
  EXPECT_EQ(j["bin_file"], "args.bin");
  const Json& args = j["args"];
  ASSERT_EQ(args.size(), 4u);
  // Sorted by (task_id, stage, arg_index, role).
  EXPECT_EQ(args[0]["task_id"], "0x0000000000000003");
  EXPECT_EQ(args[0]["arg_index"], 0);
  EXPECT_EQ(args[1]["arg_index"], 2);
  EXPECT_EQ(args[2]["stage"], "after_completion");
  EXPECT_EQ(args[3]["task_id"], "0x0000000000000005");
  EXPECT_EQ(Keys(args[0]), (std::vector<std::string>{
                               "task_id", "func_id", "arg_index", "role", "stage", "kind", "dtype",
                               "is_contiguous", "shape", "strides", "start_offset", "numel",
                               "bin_offset", "bin_size", "truncated", "overwritten"}));
  EXPECT_EQ(Keys(args[1]), (std::vector<std::string>{
                               "task_id", "func_id", "arg_index", "role", "stage", "kind", "dtype",
                               "value", "is_contiguous", "shape", "strides", "start_offset",
                               "numel", "bin_offset", "bin_size", "truncated", "overwritten"}));
  EXPECT_EQ(args[1]["value"], 0.5);
  EXPECT_EQ(args[1]["shape"], Json::array());
  EXPECT_EQ(args[1]["numel"], 1);
  EXPECT_EQ(args[1]["bin_size"], 0);
  EXPECT_EQ(args[3]["shape"], Json::parse("[4,8]"));
  EXPECT_EQ(args[3]["strides"], Json::parse("[8,1]"));
  EXPECT_EQ(args[3]["numel"], 32);
  EXPECT_EQ(args[3]["func_id"], Json::parse("[1]"));
  EXPECT_EQ(args[0]["role"], "inout");
  // bin offsets in host collection order.
  EXPECT_EQ(args[3]["bin_offset"], 0);
  EXPECT_EQ(args[3]["bin_size"], 64);
  EXPECT_EQ(args[2]["bin_offset"], 64);
  EXPECT_EQ(args[0]["bin_offset"], 96);
  std::string bin = Slurp(d / "args.bin");
  ASSERT_EQ(bin.size(), 112u);
  EXPECT_EQ(0, std::memcmp(bin.data(), a.data(), 64));
  EXPECT_EQ(0, std::memcmp(bin.data() + 64, b.data(), 32));
  EXPECT_EQ(0, std::memcmp(bin.data() + 96, c.data(), 16));
  // Spacing as the spec example.
  std::string text = Slurp(d / "args_dump.json");
  EXPECT_EQ(text.rfind("{\"run_dir\": \"args_dump\", \"bin_format\": {\"type\": ", 0), 0u);
}

TEST(ArgsDump, ScalarValueFormatting) {
  TempDir dir;
  ArgsDumpRecorder r(Options(2), CapacityHint{.tensor_args = 16}, dir.path());
  struct Case {
    const char* dtype;
    uint64_t bits;
    const char* literal;
  } cases[] = {
      {"FLOAT32", FloatBits(0.5f), "0.5"},
      {"FLOAT32", FloatBits(3.0f), "3.0"},
      {"FLOAT32", FloatBits(0.1f), "0.1"},
      {"FLOAT32", FloatBits(1234567.0f), "1.23457e+06"},
      {"FLOAT32", FloatBits(-2.0f), "-2.0"},
      {"FLOAT32", FloatBits(std::numeric_limits<float>::quiet_NaN()), "null"},
      {"FLOAT32", FloatBits(std::numeric_limits<float>::infinity()), "\"$Inf\""},
      {"FLOAT32", FloatBits(-std::numeric_limits<float>::infinity()), "\"-$Inf\""},
      {"INT32", 0xFFFFFFFBull, "-5"},
      {"UINT32", 0xFFFFFFFBull, "4294967291"},
      {"INT64", ~0ull, "-1"},
      {"BOOL", 1, "true"},
      {"BOOL", 0, "false"},
      {"FLOAT16", 0x3C00, "15360"},
  };
  int i = 0;
  for (const auto& c : cases) {
    ASSERT_TRUE(r.Capture(ScalarMeta(1, i++, c.dtype, c.bits), {}).ok());
  }
  ASSERT_TRUE(r.Export().ok());
  std::string text = Slurp(dir.path() / "args_dump" / "args_dump.json");
  for (const auto& c : cases) {
    std::string needle = std::string("\"dtype\": \"") + c.dtype + "\", \"value\": " + c.literal +
                         ", \"is_contiguous\"";
    EXPECT_NE(text.find(needle), std::string::npos) << needle;
  }
  Json j = ReadJson(dir.path() / "args_dump" / "args_dump.json");
  EXPECT_TRUE(j["args"][5]["value"].is_null());
  EXPECT_EQ(j["args"][6]["value"], "$Inf");
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "args_dump" / "args.bin"))
      << "level 2 always has args.bin once records exist (here empty)";
}

TEST(ArgsDump, PartialWithoutRecordsWritesNothing) {
  TempDir dir;
  {
    ArgsDumpRecorder r(Options(1), CapacityHint{}, dir.path());
    Status s = r.Export();
    EXPECT_EQ(s.code(), Code::kNotFound);
  }
  EXPECT_FALSE(fs::exists(dir.path() / "args_dump")) << "no manifest, no directory";
}

TEST(ArgsDump, HybridPayloadOnlyForMarked) {
  TempDir dir;
  {
    ArgsDumpRecorder r(Options(3), CapacityHint{.tensor_args = 4}, dir.path());
    // Unmarked: metadata only (the device passes an empty payload).
    ASSERT_TRUE(
        r.Capture(TensorMeta(1, 0, DumpRole::kInput, DumpStage::kBeforeDispatch, {4}), {}).ok());
    ASSERT_TRUE(r.Export().ok());
    Json j = ReadJson(dir.path() / "args_dump" / "args_dump.json");
    EXPECT_EQ(j["dump_args_level"], 3);
    EXPECT_TRUE(j["bin_file"].is_null());
    EXPECT_EQ(j["args"][0]["bin_size"], 0);
    EXPECT_EQ(j["args"][0]["numel"], 4);
    EXPECT_FALSE(fs::exists(dir.path() / "args_dump" / "args.bin"));
  }
  TempDir dir2;
  ArgsDumpRecorder r(Options(3), CapacityHint{.tensor_args = 4}, dir2.path());
  ASSERT_TRUE(
      r.Capture(TensorMeta(1, 0, DumpRole::kInput, DumpStage::kBeforeDispatch, {4}), {}).ok());
  auto marked = Bytes(8, 5);
  ASSERT_TRUE(
      r.Capture(TensorMeta(1, 1, DumpRole::kInput, DumpStage::kBeforeDispatch, {4}), marked).ok());
  ASSERT_TRUE(r.Export().ok());
  Json j = ReadJson(dir2.path() / "args_dump" / "args_dump.json");
  EXPECT_EQ(j["bin_file"], "args.bin");
  EXPECT_EQ(j["args"][1]["bin_size"], 8);
  EXPECT_EQ(Slurp(dir2.path() / "args_dump" / "args.bin").size(), 8u);
}

TEST(ArgsDump, TruncationAndDroppedRecords) {
  TempDir dir;
  ArgsDumpOptions o = Options(2, 1024);
  o.max_records = 2;
  ArgsDumpRecorder r(o, CapacityHint{}, dir.path());
  auto big = Bytes(3000, 1);
  ASSERT_TRUE(
      r.Capture(TensorMeta(1, 0, DumpRole::kInput, DumpStage::kBeforeDispatch, {1500}), big).ok());
  ASSERT_TRUE(r.Capture(ScalarMeta(1, 1, "INT32", 7), {}).ok());
  ASSERT_TRUE(r.Capture(ScalarMeta(1, 2, "INT32", 8), {}).ok());  // beyond max_records
  ASSERT_TRUE(r.Export().ok());
  Json j = ReadJson(dir.path() / "args_dump" / "args_dump.json");
  EXPECT_EQ(j["truncated_args"], 1);
  EXPECT_EQ(j["dropped_records"], 1);
  EXPECT_EQ(j["total_args"], 2);
  EXPECT_EQ(j["args"][0]["truncated"], true);
  EXPECT_EQ(j["args"][0]["bin_size"], 512) << "arena/2 bytes of the logical layout";
  EXPECT_EQ(j["args"][0]["numel"], 1500);
  std::string bin = Slurp(dir.path() / "args_dump" / "args.bin");
  ASSERT_EQ(bin.size(), 512u);
  EXPECT_EQ(0, std::memcmp(bin.data(), big.data(), 512));
}

TEST(ArgsDump, ProducerParksUntilDrainFreesTheArena) {
  TempDir dir;
  ArgsDumpRecorder r(Options(2, 1024), CapacityHint{.tensor_args = 64}, dir.path());
  std::string expected;
  // 3 threads x 10 captures of 700 bytes through a 1 KiB arena: every capture waits.
  std::vector<std::thread> threads;
  std::vector<std::vector<uint8_t>> payloads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&r, t] {
      for (int i = 0; i < 10; ++i) {
        auto p = Bytes(700, static_cast<uint8_t>(t * 16 + i));
        Status s =
            r.Capture(TensorMeta(t, i, DumpRole::kInput, DumpStage::kBeforeDispatch, {350}), p);
        EXPECT_TRUE(s.ok()) << s.ToString();
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(r.Export().ok());
  Json j = ReadJson(dir.path() / "args_dump" / "args_dump.json");
  EXPECT_EQ(j["total_args"], 30);
  EXPECT_EQ(j["dropped_records"], 0);
  std::string bin = Slurp(dir.path() / "args_dump" / "args.bin");
  ASSERT_EQ(bin.size(), 30u * 700u);
  // Every entry's bytes are where its bin_offset says.
  for (const auto& e : j["args"]) {
    int t = std::stoi(e["task_id"].get<std::string>().substr(2), nullptr, 16);
    auto p = Bytes(700, static_cast<uint8_t>(t * 16 + e["arg_index"].get<int>()));
    EXPECT_EQ(0, std::memcmp(bin.data() + e["bin_offset"].get<uint64_t>(), p.data(), 700));
  }
}

TEST(ArgsDump, RateLimitedDrainStillCompletes) {
  TempDir dir;
  ArgsDumpOptions o = Options(2, 1024);
  o.drain_bytes_per_sec = 200000;  // 3.5 KB through a 1 KiB arena: ~20 ms of parking
  ArgsDumpRecorder r(o, CapacityHint{.tensor_args = 8}, dir.path());
  for (int i = 0; i < 5; ++i) {
    auto p = Bytes(700, static_cast<uint8_t>(i));
    ASSERT_TRUE(
        r.Capture(TensorMeta(1, i, DumpRole::kInput, DumpStage::kBeforeDispatch, {350}), p).ok());
  }
  ASSERT_TRUE(r.Export().ok());
  EXPECT_EQ(Slurp(dir.path() / "args_dump" / "args.bin").size(), 3500u);
}

TEST(ArgsDump, SlowDrainFailsTheDispatchWithDeadlineExceeded) {
  TempDir dir;
  ArgsDumpOptions o = Options(2, 1024);
  o.drain_bytes_per_sec = 100;  // the first 700 bytes alone take 7 s to drain
  o.drain_timeout_ms = 50;
  ArgsDumpRecorder r(o, CapacityHint{.tensor_args = 4}, dir.path());
  auto p = Bytes(700, 1);
  ASSERT_TRUE(
      r.Capture(TensorMeta(1, 0, DumpRole::kInput, DumpStage::kBeforeDispatch, {350}), p).ok());
  Status s = r.Capture(TensorMeta(2, 0, DumpRole::kInput, DumpStage::kBeforeDispatch, {350}), p);
  ASSERT_EQ(s.code(), Code::kDeadlineExceeded);
  EXPECT_NE(s.message().find("could not drain"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("enable_dump_args=2"), std::string::npos);
  EXPECT_NE(s.message().find("enable_dump_args=1"), std::string::npos);
  EXPECT_NE(s.message().find("dump_tag"), std::string::npos);
  // Export after the failure writes what was captured, at disk speed.
  ASSERT_TRUE(r.Export().ok());
  Json j = ReadJson(dir.path() / "args_dump" / "args_dump.json");
  EXPECT_EQ(j["total_args"], 1);
  EXPECT_EQ(j["dropped_records"], 1);
  EXPECT_EQ(Slurp(dir.path() / "args_dump" / "args.bin").size(), 700u);
}

TEST(ArgsDump, PartialLevelMessageDoesNotBlameFullDump) {
  TempDir dir;
  ArgsDumpOptions o = Options(1, 1024);
  o.drain_bytes_per_sec = 100;
  o.drain_timeout_ms = 20;
  ArgsDumpRecorder r(o, CapacityHint{.tensor_args = 4}, dir.path());
  auto p = Bytes(1000, 1);
  ASSERT_TRUE(
      r.Capture(TensorMeta(1, 0, DumpRole::kInput, DumpStage::kBeforeDispatch, {500}), p).ok());
  Status s = r.Capture(TensorMeta(1, 1, DumpRole::kInput, DumpStage::kBeforeDispatch, {500}), p);
  ASSERT_EQ(s.code(), Code::kDeadlineExceeded);
  EXPECT_EQ(s.message().find("enable_dump_args=2"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("dump_tag"), std::string::npos);
}

TEST(ArgsDump, ReaderReadsBackTheManifestAndThePayloads) {
  TempDir dir;
  ArgsDumpRecorder r(Options(2), CapacityHint{.tensor_args = 8}, dir.path());
  auto a = Bytes(64, 1);
  ASSERT_TRUE(
      r.Capture(TensorMeta(5, 0, DumpRole::kInput, DumpStage::kBeforeDispatch, {4, 8}), a).ok());
  ASSERT_TRUE(r.Capture(ScalarMeta(3, 2, "FLOAT32", FloatBits(2.0f)), {}).ok());
  ASSERT_TRUE(r.Export().ok());
  fs::path d = dir.path() / "args_dump";
  auto m = ReadArgsDumpManifest(d / "args_dump.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->bin_file, "args.bin");
  ASSERT_EQ(m->args.size(), 2u);
  const ArgsDumpEntry& scalar = m->args[0];  // task 3 sorts first
  EXPECT_EQ(scalar.task_id, "0x0000000000000003");
  EXPECT_EQ(scalar.kind, "scalar");
  EXPECT_EQ(scalar.dtype, "FLOAT32");
  EXPECT_EQ(scalar.arg_index, 2);
  EXPECT_EQ(scalar.value_text, "2.0");  // the text the writer wrote
  EXPECT_EQ(scalar.shape, std::vector<int64_t>{});
  const ArgsDumpEntry& tensor = m->args[1];
  EXPECT_EQ(tensor.role, "input");
  EXPECT_EQ(tensor.stage, "before_dispatch");
  EXPECT_TRUE(tensor.is_contiguous);
  EXPECT_EQ(tensor.shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(tensor.strides, (std::vector<int64_t>{8, 1}));
  EXPECT_EQ(tensor.bin_size, 64);
  ArgsDumpBin bin;
  bin.Open(d, *m);
  ASSERT_TRUE(bin.is_open());
  auto read = bin.Read(tensor);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(*read, a);
  // A truncated args.bin: an error naming the file, the offset and the size.
  std::filesystem::resize_file(d / "args.bin", 10);
  ArgsDumpBin cut;
  cut.Open(d, *m);
  auto short_read = cut.Read(tensor);
  ASSERT_FALSE(short_read.ok());
  const std::string message = short_read.status().message();
  EXPECT_NE(message.find((d / "args.bin").string()), std::string::npos) << message;
  EXPECT_NE(message.find("64 byte(s)"), std::string::npos) << message;
  EXPECT_NE(message.find(fmt::format("at offset {}", tensor.bin_offset)), std::string::npos)
      << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
}

TEST(ArgsDump, ReaderAcceptsTheLegacyTensorsListAndNamesWhatIsWrong) {
  TempDir dir;
  auto path = dir.path() / "args_dump.json";
  ASSERT_TRUE(WriteFileAtomic(path, R"({"tensors": [{"task_id": "0x1", "bin_size": 4}]})").ok());
  auto m = ReadArgsDumpManifest(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->args.size(), 1u);
  EXPECT_EQ(m->args[0].task_id, "0x1");
  EXPECT_FALSE(m->bin_file.has_value());
  ArgsDumpBin bin;
  bin.Open(dir.path(), *m);
  EXPECT_FALSE(bin.is_open());
  ASSERT_TRUE(WriteFileAtomic(path, R"({"args": {}})").ok());
  m = ReadArgsDumpManifest(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), path.string() + ": at $.args: expected an array, got object {}");
  ASSERT_TRUE(WriteFileAtomic(path, R"({"args": [{"arg_index": "two"}]})").ok());
  m = ReadArgsDumpManifest(path);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find(path.string() + ": at $.args[0]"), std::string::npos)
      << m.status().message();
  // Hostile types are refused by name, never thrown or cast (1e300 as an
  // int64 would be undefined).
  for (const char* entry :
       {R"({"bin_size": 1e300})", R"({"bin_offset": true})", R"({"shape": [1, "x"]})",
        R"({"is_contiguous": 1})", R"({"dtype": 7})", R"({"strides": {}})"}) {
    ASSERT_TRUE(WriteFileAtomic(path, fmt::format(R"({{"args": [{}]}})", entry)).ok());
    m = ReadArgsDumpManifest(path);
    ASSERT_FALSE(m.ok()) << entry;
    EXPECT_NE(m.status().message().find(": at $.args[0]."), std::string::npos)
        << m.status().message();
  }
}

}  // namespace
}  // namespace dfx::collectors
