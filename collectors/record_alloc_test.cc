// Recording never allocates: this binary replaces the global operator new with
// a counting one and drives a burst of every Record call after construction.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>

#include "collectors/recorders.h"

namespace {
// Only allocations made by the recording (test) thread count: the args-dump
// drain thread is the host side and may allocate (it opens args.bin).
std::atomic<uint64_t> g_allocations{0};
thread_local bool t_counting = false;
}  // namespace

void* operator new(std::size_t size) {
  if (t_counting) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  if (t_counting) g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
// The replaced operator new above allocates with malloc, so free is the
// matching deallocation; GCC 12 cannot see through the replacement.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace dfx::collectors {
namespace {

TEST(RecordAlloc, BurstOfRecordsAllocatesNothing) {
  ChipLayout layout;
  layout.core_types = {CoreKind::kAic, CoreKind::kAiv, CoreKind::kAiv};
  layout.sched_threads = 2;
  CapacityHint hint{.tasks = 2000,
                    .core_executions = 2000,
                    .scope_samples = 4000,
                    .tensor_args = 4000,
                    .edges = 4000};
  SwimlaneRecorder swimlane(4, layout, hint);
  DepGenRecorder dep_gen(hint);
  PmuRecorder pmu(8, layout, hint);
  ScopeStatsRecorder scope(layout, hint);
  ArgsDumpOptions dump_options;
  dump_options.level = 2;
  dump_options.arena_bytes = 1 << 16;
  auto dump_dir = std::filesystem::temp_directory_path() / "dfx_alloc_test_unused";
  ArgsDumpRecorder dump(dump_options, hint, dump_dir);

  DepGenTaskRecord task;
  task.arg_count = 2;
  DepGenEdgeRecord edges[2];
  SchedPhaseRecord phase;
  phase.kind = SchedPhaseKind::kDispatch;
  PmuWork work;
  work.bytes_read_gm = 4096;
  work.instructions = 100;
  ScopeSample sample;
  std::strcpy(sample.site, "orch.cc:1");
  DumpArgMeta meta;
  std::strcpy(meta.dtype, "FLOAT32");
  uint8_t payload[64] = {};

  // The counter sees allocations at all (guards against a silently unused override).
  t_counting = true;
  const uint64_t probe = g_allocations.load();
  void* probe_block = ::operator new(16);  // a direct call is never elided
  ::operator delete(probe_block);
  ASSERT_EQ(g_allocations.load() - probe, 1u);
  const uint64_t before = g_allocations.load();
  for (uint32_t i = 0; i < 1500; ++i) {
    uint32_t core = i % 3;
    swimlane.RecordAicoreTask(core, i, i, i, i + 1, 1);
    swimlane.RecordAicpuTask(core, i, i, i + 2);
    swimlane.RecordSchedPhase(i % 2, phase);
    swimlane.RecordOrchPhase(0, i, i, i, i + 1);
    task.task_id = i;
    dep_gen.RecordSubmit(task, edges);
    pmu.Record(i % 2, core, i, static_cast<int32_t>(i % 5), CoreKind::kAiv, work);
    scope.Record(sample);
    meta.task_id = i;
    meta.kind = i % 2 ? DumpKind::kScalar : DumpKind::kTensor;
    ASSERT_TRUE(dump.Capture(meta, i % 2 ? std::span<const uint8_t>() : payload).ok());
  }
  // Overflow paths (drop and count) must not allocate either.
  for (uint32_t i = 0; i < 3000; ++i) swimlane.RecordAicoreTask(0, i, i, i, i, 0);
  const uint64_t after = g_allocations.load();
  t_counting = false;
  EXPECT_EQ(after - before, 0u) << "Record/Capture allocated " << (after - before) << " times";
  EXPECT_GT(swimlane.dropped_records(), 0u);
  ASSERT_TRUE(dump.Export().ok());
  std::filesystem::remove_all(dump_dir);
}

}  // namespace
}  // namespace dfx::collectors
