#include "device/generators.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "device/lowering.h"
#include "device/program_loader.h"

namespace dfx::device {
namespace {

namespace fs = std::filesystem;

TEST(GeneratorsTest, LayeredDagHasTheRequestedTaskCountAndIsValid) {
  LayeredDagOptions o;
  o.tasks = 5000;
  o.width = 16;
  Program p = GenerateLayeredDag(o);
  EXPECT_EQ(p.submit_count, 5000);
  EXPECT_EQ(p.orchestration.size(), 5000u);
  Status s = ValidateProgram(p);
  EXPECT_TRUE(s.ok()) << s.ToString();
  // Both core types are used.
  bool aic = false, aiv = false;
  for (const Statement& st : p.orchestration) {
    CoreType t = p.kernels[st.submit.kernel].core_type;
    aic |= t == CoreType::kAic;
    aiv |= t == CoreType::kAiv;
  }
  EXPECT_TRUE(aic && aiv);
  // Deterministic: same options, same program.
  EXPECT_EQ(ProgramToJson(GenerateLayeredDag(o)).dump(), ProgramToJson(p).dump());
}

TEST(GeneratorsTest, HundredThousandTaskDagGeneratesAndLowers) {
  LayeredDagOptions o;
  o.tasks = 100000;
  o.width = 32;
  Program p = GenerateLayeredDag(o);
  ASSERT_EQ(p.submit_count, 100000);
  auto lp = Lower(p, GetChipModel(config::BackendType::kA5).ring_defaults);
  ASSERT_TRUE(lp.ok()) << lp.status().ToString();
  EXPECT_EQ(lp->tasks.back().task_id, 99999u);
}

TEST(GeneratorsTest, AttentionDecodeShape) {
  AttentionDecodeOptions o;
  o.layers = 3;
  o.heads = 4;
  Program p = GenerateAttentionDecode(o);
  EXPECT_EQ(p.submit_count, 3 * (4 * 3 + 2));
  Status s = ValidateProgram(p);
  EXPECT_TRUE(s.ok()) << s.ToString();
  const Statement& layer = p.orchestration[0];
  ASSERT_EQ(layer.kind, Statement::Kind::kScope);
  EXPECT_EQ(layer.body[0].kind, Statement::Kind::kDumpTag);
  const Statement& head = layer.body[1];
  ASSERT_EQ(head.kind, Statement::Kind::kScope);
  EXPECT_EQ(p.kernels[head.body[0].submit.kernel].core_type, CoreType::kAic);
  EXPECT_EQ(p.kernels[head.body[1].submit.kernel].op, KernelOp::kSoftmax);
  EXPECT_EQ(head.body[1].submit.block_num, 2);
  EXPECT_EQ(head.body[1].json_path, "$.orchestration[0].body[1].body[1]");
}

// The committed examples are generator output: keep them in sync.
TEST(GeneratorsTest, CommittedExamplesMatchTheirGenerators) {
  fs::path dir = fs::path(DFX_SOURCE_DIR) / "examples";
  LayeredDagOptions dag;
  dag.tasks = 2000;
  dag.width = 16;
  dag.seed = 7;
  struct Case {
    const char* file;
    Program program;
  } cases[] = {{"vector_pipeline.json", GenerateVectorPipeline()},
               {"attention_decode.json", GenerateAttentionDecode({})},
               {"large_dag_2k.json", GenerateLayeredDag(dag)}};
  for (const Case& c : cases) {
    auto loaded = LoadProgram(dir / c.file);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    EXPECT_EQ(ProgramToJson(*loaded).dump(), ProgramToJson(c.program).dump())
        << c.file << " is stale; regenerate it (see examples/README.md)";
  }
}

}  // namespace
}  // namespace dfx::device
