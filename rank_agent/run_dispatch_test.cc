#include "rank_agent/run_dispatch.h"

#include <gtest/gtest.h>

#include <cstring>

#include "collectors/artifact_layout.h"
#include "collectors/testing/test_util.h"
#include "common/file_util.h"
#include "common/json.h"
#include "device/chip_factory.h"
#include "device/program_loader.h"

namespace dfx::rank_agent {
namespace {

namespace fs = std::filesystem;

// A chip of the default backend.
std::unique_ptr<device::Chip> NewChip() {
  auto chip = device::MakeChip(device::kDefaultChipBackend, {});
  EXPECT_TRUE(chip.ok()) << chip.status().message();
  return chip.ok() ? std::move(*chip) : nullptr;
}

std::string Source(const std::string& rel) {
  auto text = ReadFile(fs::path(DFX_SOURCE_DIR) / rel);
  EXPECT_TRUE(text.ok()) << rel;
  return text.ok() ? *text : "";
}

DispatchRequest Request(const std::string& program, const fs::path& out) {
  DispatchRequest r;
  r.program_json = Source(program);
  r.program_origin = program;
  r.config.enable_chip_swimlane = 2;
  r.config.enable_dep_gen = true;
  r.config.Normalize();
  r.output_dir = out;
  r.name_map_file = collectors::kDispatchNameMapFile;
  return r;
}

TEST(RunDispatchTest, RunsTheProgramThenWritesTheNameMap) {
  collectors::testing::TempDir tmp;
  const fs::path dir = tmp.path();
  auto chip = NewChip();
  DispatchRequest request = Request("examples/vector_pipeline.json", dir / "rank0/d0");
  bool accepted = false;
  request.on_accepted = [&] {
    accepted = true;
    EXPECT_FALSE(fs::exists(dir / "rank0/d0/name_map.json")) << "the name map follows the run";
    return Status::Ok();
  };
  DispatchOutcome out = RunDispatch(*chip, request);
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_EQ(out.failure, DispatchFailure::kNone);
  EXPECT_TRUE(accepted);
  EXPECT_EQ(out.tasks_executed, 5u);
  EXPECT_EQ(out.artifacts,
            (std::vector<std::string>{"chip_swimlane_records.json", "deps.json", "name_map.json"}));
  auto map = ReadJsonFile(dir / "rank0/d0/name_map.json");
  ASSERT_TRUE(map.ok());
  EXPECT_EQ((*map)["orchestrator_name"], "vector_pipeline");

  // No swimlane and no dep_gen: no name map (docs/run-config.md §2.8).
  request = Request("examples/vector_pipeline.json", dir / "pmu");
  request.config = {};
  request.config.enable_pmu = 2;
  request.config.Normalize();
  out = RunDispatch(*chip, request);
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_EQ(out.artifacts, std::vector<std::string>{"pmu.csv"});
}

TEST(RunDispatchTest, AFailedRunHasNoNameMapButKeepsWhatTheChipWrote) {
  collectors::testing::TempDir tmp;
  const fs::path dir = tmp.path();
  auto chip = NewChip();
  DispatchOutcome out = RunDispatch(*chip, Request("tests/l3/testdata/fail.json", dir));
  EXPECT_EQ(out.failure, DispatchFailure::kRun);
  EXPECT_NE(out.status.message().find("injected kernel failure"), std::string::npos)
      << out.status.ToString();
  EXPECT_FALSE(fs::exists(dir / "name_map.json"));
  EXPECT_EQ(out.artifacts, collectors::ListArtifactFiles(dir));
}

TEST(RunDispatchTest, ABadProgramOrConfigIsRefusedBeforeAnythingHappens) {
  collectors::testing::TempDir tmp;
  const fs::path dir = tmp.path();
  auto chip = NewChip();
  bool accepted = false;
  auto refuse = [&](DispatchRequest request) {
    request.on_accepted = [&] {
      accepted = true;
      return Status::Ok();
    };
    return RunDispatch(*chip, request);
  };
  DispatchRequest request = Request("examples/vector_pipeline.json", dir / "out");
  request.program_json = "{not json";
  request.program_origin = "broken.json";
  DispatchOutcome out = refuse(request);
  EXPECT_EQ(out.failure, DispatchFailure::kRefused);
  EXPECT_NE(out.status.message().find("broken.json"), std::string::npos) << out.status.message();

  request = Request("examples/vector_pipeline.json", dir / "out");
  request.config.enable_chip_swimlane = 7;
  out = refuse(request);
  EXPECT_EQ(out.failure, DispatchFailure::kRefused);
  EXPECT_NE(out.status.message().find("7"), std::string::npos) << out.status.message();

  request = Request("examples/vector_pipeline.json", dir / "out");
  const size_t at =
      request.program_json.find("\"vector_add\"", request.program_json.find("submit"));
  ASSERT_NE(at, std::string::npos);
  request.program_json.replace(at, 12, "\"nope\"");  // an unknown kernel
  out = refuse(request);
  EXPECT_EQ(out.failure, DispatchFailure::kRefused);
  EXPECT_NE(out.status.message().find("nope"), std::string::npos) << out.status.message();

  EXPECT_FALSE(accepted);
  EXPECT_FALSE(fs::exists(dir / "out"));
}

// A syntax error comes first, then the run config's, then the program's,
// whether the program is one the text reader takes (attention_decode) or one
// it leaves to the JSON document (vector_pipeline: scalars).
TEST(RunDispatchTest, RefusalsComeInOrderSyntaxConfigProgram) {
  collectors::testing::TempDir tmp;
  auto chip = NewChip();
  for (const char* example : {"examples/attention_decode.json", "examples/vector_pipeline.json"}) {
    SCOPED_TRACE(example);
    DispatchRequest good = Request(example, tmp.path() / "out");
    EXPECT_EQ(device::ParseProgramFast(good.program_json, example).has_value(),
              std::string(example) == "examples/attention_decode.json");
    DispatchRequest bad_config = good;
    bad_config.config.enable_chip_swimlane = 7;
    DispatchRequest both = bad_config;
    const size_t at = both.program_json.find("\"submit\"");
    ASSERT_NE(at, std::string::npos);
    both.program_json.replace(at, 8, "\"submut\"");  // an unknown key
    DispatchRequest all = both;
    all.program_json += "}";
    auto message = [&](const DispatchRequest& r) {
      DispatchOutcome out = RunDispatch(*chip, r);
      EXPECT_EQ(out.failure, DispatchFailure::kRefused);
      return out.status.message();
    };
    EXPECT_NE(message(all).find("not valid JSON"), std::string::npos) << message(all);
    EXPECT_NE(message(both).find("enable_chip_swimlane"), std::string::npos) << message(both);
    EXPECT_NE(message(bad_config).find("enable_chip_swimlane"), std::string::npos);
    DispatchRequest bad_program = good;
    bad_program.program_json = both.program_json;
    EXPECT_NE(message(bad_program).find("submut"), std::string::npos) << message(bad_program);
  }
}

TEST(RunDispatchTest, TheHookAndAnInjectedFaultStopTheDispatchBeforeTheRun) {
  collectors::testing::TempDir tmp;
  const fs::path dir = tmp.path();
  auto chip = NewChip();
  DispatchRequest request = Request("examples/vector_pipeline.json", dir / "hook");
  request.on_accepted = [] { return Unavailable("disk full"); };
  DispatchOutcome out = RunDispatch(*chip, request);
  EXPECT_EQ(out.failure, DispatchFailure::kOther);
  EXPECT_EQ(out.status.message(), "disk full");
  EXPECT_EQ(out.tasks_executed, 0u);

  request = Request("examples/vector_pipeline.json", dir / "graph");
  request.pass = config::PassKind::kGraph;
  request.faults.graph_pass_error = "injected";
  out = RunDispatch(*chip, request);
  EXPECT_EQ(out.failure, DispatchFailure::kOther);
  EXPECT_EQ(out.status.message(), "injected");
  EXPECT_TRUE(out.artifacts.empty());

  request.pass = config::PassKind::kTiming;  // the fault is the graph pass's only
  out = RunDispatch(*chip, request);
  EXPECT_TRUE(out.status.ok()) << out.status.ToString();
}

// L2: each pass is its own process with its own chip; the device memory
// travels in the state file.
TEST(RunDispatchTest, ResidentTensorsTravelInTheStateFileBetweenChips) {
  collectors::testing::TempDir tmp;
  const fs::path dir = tmp.path();
  const fs::path state = dir / "device_state/chip0.json";
  std::vector<float> counter;
  for (int run = 0; run < 2; ++run) {
    auto chip = NewChip();
    DispatchRequest request = Request("tests/dfx/testdata/counter.json", dir / "out");
    request.resident_state_file = state;
    DispatchOutcome out = RunDispatch(*chip, request);
    ASSERT_TRUE(out.status.ok()) << out.status.ToString();
    auto saved = device::LoadResidentState(state);
    ASSERT_TRUE(saved.ok()) << saved.status().ToString();
    const device::ResidentTensor& t = saved->at("counter");
    counter.assign(t.bytes.size() / sizeof(float), 0);
    std::memcpy(counter.data(), t.bytes.data(), t.bytes.size());
  }
  EXPECT_EQ(counter, std::vector<float>({2, 2, 2, 2}));
}

// A one-block program of two small tensors, as the dispatch benchmark sends.
device::Program OneBlockProgram() {
  device::Program p;
  p.name = "tiny";
  p.kernels.push_back(device::Kernel{0, "add", device::CoreType::kAiv, device::KernelOp::kAdd});
  device::TensorDecl a;
  a.name = "a";
  a.shape = {16};
  device::TensorDecl b = a;
  b.name = "b";
  p.tensors = {a, b};
  device::Statement submit;
  submit.submit.kernel = 0;
  submit.submit.args = {{0, device::ArgType::kInput}, {1, device::ArgType::kOutput}};
  p.orchestration.push_back(submit);
  p.submit_count = 1;
  return p;
}

TEST(RunDispatchTest, OnlyAOneBlockProgramOverLittleDataWithoutCollectorsRunsInline) {
  const config::RunConfig plain;
  EXPECT_TRUE(RunsInline(OneBlockProgram(), plain));

  config::RunConfig pmu;
  pmu.enable_pmu = 1;
  EXPECT_FALSE(RunsInline(OneBlockProgram(), pmu)) << "collectors write files";

  device::Program two_blocks = OneBlockProgram();
  two_blocks.orchestration[0].submit.block_num = 2;
  EXPECT_FALSE(RunsInline(two_blocks, plain));

  // Blocks inside a scope count too.
  device::Program scoped = OneBlockProgram();
  device::Statement scope;
  scope.kind = device::Statement::Kind::kScope;
  scope.body = {scoped.orchestration[0]};
  scoped.orchestration = {scope};
  EXPECT_TRUE(RunsInline(scoped, plain));
  scoped.orchestration[0].body.push_back(scoped.orchestration[0].body[0]);
  EXPECT_FALSE(RunsInline(scoped, plain));

  device::Program busy = OneBlockProgram();
  busy.kernels[0].op = device::KernelOp::kBusy;
  busy.kernels[0].duration_us = 1;
  EXPECT_FALSE(RunsInline(busy, plain)) << "a busy kernel spins for as long as it is told";

  device::Program big = OneBlockProgram();
  big.tensors[1].shape = {static_cast<uint32_t>(kInlineMaxTensorBytes / 4)};  // float32
  EXPECT_FALSE(RunsInline(big, plain)) << "past kInlineMaxTensorBytes with tensor a";
  big.tensors[0].shape = {0};
  EXPECT_TRUE(RunsInline(big, plain)) << "exactly kInlineMaxTensorBytes";

  auto pipeline = ParseJson(Source("examples/vector_pipeline.json"), "vector_pipeline.json");
  ASSERT_TRUE(pipeline.ok());
  auto parsed = device::ParseProgram(*pipeline, "vector_pipeline.json");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_FALSE(RunsInline(*parsed, plain)) << "5 tasks";
}

}  // namespace
}  // namespace dfx::rank_agent
