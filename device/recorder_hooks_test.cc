#include "device/recorder_hooks.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "common/json.h"
#include "config/run_config.h"
#include "device/chip_model.h"
#include "device/generators.h"

namespace dfx::device {
namespace {

namespace fs = std::filesystem;

// Collectors for `config` over the vector pipeline's lowering, as a run of
// it on 2 AIC + 4 AIV cores makes them.
class RecorderHooksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dfx_recorder_hooks_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    ASSERT_TRUE(MakeDirs(dir_).ok());
    program_ = GenerateVectorPipeline();
    const ChipModel& model = GetChipModel(config::BackendType::kA2A3);
    auto lowered = Lower(program_, model.ring_defaults);
    ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
    lp_ = std::make_unique<LoweredProgram>(std::move(*lowered));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<collectors::DfxCollectors> Collectors(const config::RunConfig& config) {
    const ChipModel& model = GetChipModel(config::BackendType::kA2A3);
    collectors::ChipLayout layout;
    layout.backend = model.name;
    layout.clock_freq_hz = model.clock_freq_hz;
    for (int i = 0; i < 2; ++i) layout.core_types.push_back(collectors::CoreKind::kAic);
    for (int i = 0; i < 4; ++i) layout.core_types.push_back(collectors::CoreKind::kAiv);
    layout.sched_threads = 1;
    layout.orch_threads = 1;
    for (int r = 0; r < 4; ++r) {
      layout.task_window_max[r] = static_cast<int64_t>(lp_->rings.task_window[r]);
      layout.heap_max[r] = lp_->rings.heap[r];
      layout.dep_pool_max[r] = static_cast<int64_t>(lp_->rings.dep_pool[r]);
    }
    layout.tensormap_max = static_cast<int64_t>(lp_->rings.tensormap);
    collectors::CapacityHint hint;
    hint.tasks = lp_->tasks.size();
    hint.core_executions = lp_->core_executions;
    hint.tensor_args = lp_->tensor_args;
    hint.edges = lp_->edge_count;
    return std::make_unique<collectors::DfxCollectors>(config, layout, hint, dir_,
                                                       collectors::ArgsDumpOptions{});
  }

  Json Export(collectors::DfxCollectors& dfx, const std::string& file) {
    std::vector<std::string> written;
    Status s = dfx.ExportAll(/*run_succeeded=*/true, &written);
    EXPECT_TRUE(s.ok()) << s.ToString();
    auto j = ReadJsonFile(dir_ / file);
    EXPECT_TRUE(j.ok()) << j.status().ToString();
    return j.ok() ? *j : Json();
  }

  fs::path dir_;
  Program program_;
  std::unique_ptr<LoweredProgram> lp_;
};

TEST_F(RecorderHooksTest, EverySubmitGivesOneDepGenTaskWithItsKernelSlotAndEdges) {
  config::RunConfig config;
  config.enable_dep_gen = true;
  auto dfx = Collectors(config);
  RecorderHooks hooks(dfx.get(), *lp_, /*defer_dep_gen=*/false);
  for (size_t i = 0; i < lp_->tasks.size(); ++i) hooks.Submitted(static_cast<int>(i));
  Json deps = Export(*dfx, "deps.json");
  ASSERT_EQ(deps["tasks"].size(), lp_->tasks.size());
  size_t edges = 0;
  for (const LoweredTask& t : lp_->tasks) edges += t.edges.size();
  EXPECT_EQ(deps["edges"].size(), edges);
  // The pipeline's kernels are AIV: slot 1 of [aic, aiv0, aiv1] holds the func_id.
  for (size_t i = 0; i < lp_->tasks.size(); ++i) {
    const Kernel& k = program_.kernels[lp_->tasks[i].kernel];
    ASSERT_EQ(k.core_type, CoreType::kAiv);
    EXPECT_EQ(deps["tasks"][i]["kernel_ids"], Json::array({-1, k.func_id, -1}));
  }
}

TEST_F(RecorderHooksTest, DeferredDepGenRecordsAreWrittenByTheFlushOnce) {
  config::RunConfig config;
  config.enable_dep_gen = true;
  auto dfx = Collectors(config);
  RecorderHooks hooks(dfx.get(), *lp_, /*defer_dep_gen=*/true);
  hooks.ReserveDeferred(8);
  for (size_t i = 0; i < lp_->tasks.size(); ++i) hooks.Submitted(static_cast<int>(i));
  hooks.FlushDepGen();
  hooks.FlushDepGen();  // nothing left: writes nothing twice
  Json deps = Export(*dfx, "deps.json");
  EXPECT_EQ(deps["tasks"].size(), lp_->tasks.size());
}

TEST_F(RecorderHooksTest, WithoutCollectorsEveryHookIsANoOp) {
  RecorderHooks hooks(nullptr, *lp_, /*defer_dep_gen=*/true);
  EXPECT_EQ(hooks.swimlane_level(), 0);
  EXPECT_FALSE(hooks.records_blocks());
  EXPECT_FALSE(hooks.records_pmu());
  hooks.Submitted(0);
  hooks.FlushDepGen();
  CoreState core(CoreType::kAiv);
  hooks.RecordAicpuTask(0, core, 10);
  hooks.RecordAicoreTask(0, lp_->tasks[0].task_id, 1, 0, 10, 0);
  hooks.RecordPmu(0, core, lp_->tasks[0]);
  DeviceHeap heaps[4];
  DeviceMemory memory(*lp_, heaps, nullptr);
  EXPECT_TRUE(hooks.CaptureStage(0, collectors::DumpStage::kBeforeDispatch, memory).ok());
  EXPECT_TRUE(fs::is_empty(dir_));
}

}  // namespace
}  // namespace dfx::device
