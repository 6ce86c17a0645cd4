#include "device/engine_scheduler.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/json.h"
#include "device/program_loader.h"

namespace dfx::device {
namespace {

// A program over [4,4] FLOAT32 tensors with a copy kernel (aiv) and an add
// kernel (aiv); `orch` is the orchestration array.
Program Parse(const std::string& orch) {
  auto j = ParseJson(R"({"name": "s", "kernels": [
      {"func_id": 0, "name": "cp", "core_type": "aiv", "op": "copy"},
      {"func_id": 1, "name": "add", "core_type": "aiv", "op": "add"}],
    "tensors": [{"name": "a", "shape": [4, 4], "dtype": "FLOAT32"},
                {"name": "x", "shape": [4, 4], "dtype": "FLOAT32"},
                {"name": "y", "shape": [4, 4], "dtype": "FLOAT32"},
                {"name": "z", "shape": [4, 4], "dtype": "FLOAT32"},
                {"name": "q", "shape": [4, 4], "dtype": "FLOAT32"}],
    "orchestration": )" + orch +
                         "}",
                     "t.json");
  EXPECT_TRUE(j.ok());
  auto p = ParseProgram(*j, "t.json");
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return *p;
}

std::string Copy(const std::string& in, const std::string& out, int blocks = 1) {
  return R"({"submit": "cp", "block_num": )" + std::to_string(blocks) +
         R"(, "args": [{"tensor": ")" + in + R"(", "type": "INPUT"}, {"tensor": ")" + out +
         R"(", "type": "OUTPUT"}]})";
}

// The scheduler over a lowered program with no collectors, on `aiv` AIV
// cores and one AICPU scheduler thread; the test plays the runner.
class SchedulerTest : public ::testing::Test {
 protected:
  void Start(const Program& program, int aiv, RingCapacities rings = Model().ring_defaults) {
    program_ = program;
    auto lowered = Lower(program_, rings);
    ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
    lp_ = std::make_unique<LoweredProgram>(std::move(*lowered));
    memory_ = std::make_unique<DeviceMemory>(*lp_, heaps_, nullptr);
    hooks_ = std::make_unique<RecorderHooks>(nullptr, *lp_, /*defer_dep_gen=*/false);
    sched_ = std::make_unique<EngineScheduler>(options_, Model(), *lp_, 0, aiv, 1, hooks_.get(),
                                               memory_.get(), &report_);
  }
  static const ChipModel& Model() { return GetChipModel(config::BackendType::kA2A3); }

  // Submits until the stream ends or a ring blocks; the ring's reason, or "".
  std::string SubmitAll() {
    std::string why;
    while (!sched_->StreamDone())
      if (!sched_->OrchestratorStep(0, &why)) return why;
    return "";
  }
  // One dispatch phase at `now`: the (task index, block) each core got, in
  // core order.
  std::vector<std::pair<int, int>> Dispatch(uint64_t now) {
    std::vector<std::pair<int, int>> got;
    sched_->DispatchPhase(
        0, now, [now] { return now; }, [now] { return now; },
        [&](int core) { got.emplace_back(sched_->core(core).task, sched_->core(core).block); });
    return got;
  }

  ChipOptions options_;
  Program program_;
  DeviceHeap heaps_[4];
  RunReport report_;
  std::unique_ptr<LoweredProgram> lp_;
  std::unique_ptr<DeviceMemory> memory_;
  std::unique_ptr<RecorderHooks> hooks_;
  std::unique_ptr<EngineScheduler> sched_;
};

using Blocks = std::vector<std::pair<int, int>>;

TEST_F(SchedulerTest, ADiamondRunsEachTaskOnlyAfterItsProducers) {
  // t0: a->x; t1: x->y; t2: x->z; t3: y+z->q.
  Start(Parse("[" + Copy("a", "x") + "," + Copy("x", "y") + "," + Copy("x", "z") +
              R"(, {"submit": "add", "args": [{"tensor": "y", "type": "INPUT"},
                   {"tensor": "z", "type": "INPUT"}, {"tensor": "q", "type": "OUTPUT"}]}])"),
        /*aiv=*/2);
  ASSERT_EQ(SubmitAll(), "");
  EXPECT_EQ(sched_->submitted(), 4u);
  EXPECT_EQ(Dispatch(100), (Blocks{{0, 0}}));  // only the source is ready
  EXPECT_EQ(Dispatch(101), Blocks{});          // nothing else until it retires
  sched_->RetireBlock(0, 150);
  EXPECT_EQ(Dispatch(160), (Blocks{{1, 0}, {2, 0}}));  // both branches, in core order
  sched_->RetireBlock(0, 200);
  EXPECT_EQ(Dispatch(210), Blocks{});  // the join waits for its second producer
  sched_->RetireBlock(1, 220);
  EXPECT_EQ(Dispatch(230), (Blocks{{3, 0}}));
  sched_->RetireBlock(0, 300);
  EXPECT_TRUE(sched_->status().ok());
  EXPECT_EQ(sched_->completed(), 4u);
  EXPECT_FALSE(sched_->InFlight());
  EXPECT_EQ(sched_->makespan_cycles(), 200u);  // first dispatch at 100, last retire at 300
  // The report lists blocks in completion order.
  ASSERT_EQ(report_.blocks.size(), 4u);
  EXPECT_EQ(report_.blocks[0].task_index, 0);
  EXPECT_EQ(report_.blocks[1].task_index, 1);
  EXPECT_EQ(report_.blocks[2].task_index, 2);
  EXPECT_EQ(report_.blocks[3].task_index, 3);
  EXPECT_EQ(report_.blocks[3].finish_cycles, 300u);
}

TEST_F(SchedulerTest, ATasksBlocksGoToIdleCoresOneAtATime) {
  Start(Parse("[" + Copy("a", "x", /*blocks=*/3) + "]"), /*aiv=*/2);
  ASSERT_EQ(SubmitAll(), "");
  EXPECT_EQ(Dispatch(10), (Blocks{{0, 0}, {0, 1}}));
  sched_->RetireBlock(1, 20);
  EXPECT_EQ(Dispatch(30), (Blocks{{0, 2}}));  // the core that became idle
  sched_->RetireBlock(0, 40);
  EXPECT_EQ(sched_->completed(), 0u);  // one block still running
  sched_->RetireBlock(1, 50);
  EXPECT_EQ(sched_->completed(), 1u);
}

TEST_F(SchedulerTest, AFullTaskWindowThatNothingCanFreeIsARingDeadlock) {
  RingCapacities rings = Model().ring_defaults;
  rings.task_window[0] = 1;
  // Both outputs stay bound to their names: the first task's slot is never
  // reclaimed, so the second submit can never go through.
  Start(Parse("[" + Copy("a", "x") + "," + Copy("a", "y") + "]"), /*aiv=*/1, rings);
  const std::string why = SubmitAll();
  EXPECT_EQ(why, "ring 0 task window (1 slots)");
  EXPECT_EQ(sched_->submitted(), 1u);
  ASSERT_EQ(Dispatch(0).size(), 1u);
  sched_->RetireBlock(0, 10);
  EXPECT_EQ(sched_->NextSubmitBlocked(), why);  // retired, but still referenced
  EXPECT_FALSE(sched_->InFlight());
  const Status deadlock = sched_->DeadlockError(why);
  EXPECT_NE(deadlock.message().find("ring deadlock: submit of task t1"), std::string::npos)
      << deadlock.ToString();
  EXPECT_NE(deadlock.message().find("ring_task_window"), std::string::npos);
}

TEST_F(SchedulerTest, AFailedKernelFailsTheRunOnceAndStopsDispatching) {
  Start(Parse("[" + Copy("a", "x") + "," + Copy("a", "y") + "]"), /*aiv=*/1);
  int fails = 0;
  sched_->set_on_fail([&] { ++fails; });
  ASSERT_EQ(SubmitAll(), "");
  ASSERT_EQ(Dispatch(0), (Blocks{{0, 0}}));
  sched_->core(0).kernel_status = Internal("boom");
  sched_->RetireBlock(0, 10);
  EXPECT_TRUE(sched_->failed());
  EXPECT_EQ(fails, 1);
  EXPECT_NE(sched_->status().message().find("kernel \"cp\" (func_id 0) failed on task t0"),
            std::string::npos)
      << sched_->status().ToString();
  EXPECT_NE(sched_->status().message().find("boom"), std::string::npos);
  EXPECT_EQ(Dispatch(20), Blocks{});  // the ready task is not dispatched
  EXPECT_FALSE(sched_->InFlight());
}

}  // namespace
}  // namespace dfx::device
