// Recorder hot-path cost (docs/design.md §5: "the cost of each level is measured").
//
// Every recorder benchmark has a BASELINE in the same run: a bare store of a
// struct of the same size as what the recorder stores, into a preallocated
// array, with the same wrap-around. The ratio recorder / baseline is the
// overhead of the recorder's bookkeeping (atomic cursor, level guard, drop
// check, lock for args dump).
//
// Recorders have a finite capacity; when one fills, timing pauses and a fresh
// one is built, so the numbers are the store path, never the drop path.
#include <benchmark/benchmark.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "collectors/internal/lazy_array.h"
#include "collectors/recorders.h"

namespace dfx::collectors {
namespace {

constexpr uint64_t kCapacity = 1 << 20;

ChipLayout Layout() {
  ChipLayout l;
  l.core_types.assign(8, CoreKind::kAiv);
  l.sched_threads = 1;
  l.orch_threads = 1;
  return l;
}

CapacityHint Hint() {
  return CapacityHint{.tasks = kCapacity,
                      .core_executions = kCapacity,
                      .scope_samples = kCapacity,
                      .tensor_args = 2 * kCapacity,
                      .edges = kCapacity};
}

// The baseline: store one N-byte struct into a preallocated array.
template <size_t N>
struct Blob {
  uint8_t bytes[N];
};

template <size_t N>
void BM_BaselineStore(benchmark::State& state) {
  std::vector<Blob<N>> array(kCapacity);
  Blob<N> value;
  std::memset(&value, 7, sizeof value);
  uint64_t i = 0;
  for (auto _ : state) {
    value.bytes[0] = static_cast<uint8_t>(i);
    array[i & (kCapacity - 1)] = value;
    ++i;
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(array.data());
}

// Sizes of what each recorder stores per call (see the recorder sources).
constexpr size_t kAicoreRow = 40;  // token, start, end, core, reg, receive
constexpr size_t kAicpuRow = 24;   // dispatch, finish, core, reg
constexpr size_t kOrchRow = 32;    // task, start, end, submit_idx
constexpr size_t kPmuRow = 72;     // ids, total cycles, 10 counters
BENCHMARK_TEMPLATE(BM_BaselineStore, kAicoreRow)->Name("Baseline/store_40B_aicore_row");
BENCHMARK_TEMPLATE(BM_BaselineStore, kAicoreRow + kAicpuRow)
    ->Name("Baseline/store_64B_level2_task");
BENCHMARK_TEMPLATE(BM_BaselineStore, kAicoreRow + kAicpuRow + sizeof(SchedPhaseRecord))
    ->Name("Baseline/store_level3_task");
BENCHMARK_TEMPLATE(BM_BaselineStore, kAicoreRow + kAicpuRow + sizeof(SchedPhaseRecord) + kOrchRow)
    ->Name("Baseline/store_level4_task");
BENCHMARK_TEMPLATE(BM_BaselineStore, kPmuRow)->Name("Baseline/store_72B_pmu_row");
BENCHMARK_TEMPLATE(BM_BaselineStore, sizeof(ScopeSample))->Name("Baseline/store_scope_sample");
// dep_gen stores a 40-byte header + 2 args + 2 edges for the submit below.
BENCHMARK_TEMPLATE(BM_BaselineStore, 40 + 2 * sizeof(DepGenArg) + 2 * sizeof(DepGenEdgeRecord))
    ->Name("Baseline/store_depgen_submit_2args_2edges");
BENCHMARK_TEMPLATE(BM_BaselineStore, sizeof(DumpArgMeta) + 24)
    ->Name("Baseline/store_args_dump_entry");

// One logical task's swimlane calls at `level` (an AICore row, then what the level adds).
void BM_Swimlane(benchmark::State& state) {
  const int level = static_cast<int>(state.range(0));
  auto rec = std::make_unique<SwimlaneRecorder>(level, Layout(), Hint());
  SchedPhaseRecord phase;
  phase.kind = SchedPhaseKind::kDispatch;
  uint32_t i = 0;
  for (auto _ : state) {
    if (i == kCapacity) {
      state.PauseTiming();
      rec = std::make_unique<SwimlaneRecorder>(level, Layout(), Hint());
      i = 0;
      state.ResumeTiming();
    }
    const uint32_t core = i & 7;
    rec->RecordAicoreTask(core, i, i, i, i + 10, 1);
    rec->RecordAicpuTask(core, i, i, i + 12);
    phase.start_cycles = i;
    rec->RecordSchedPhase(0, phase);
    rec->RecordOrchPhase(0, i, i, i, i + 1);
    ++i;
  }
  state.counters["dropped"] = static_cast<double>(rec->dropped_records());
}
BENCHMARK(BM_Swimlane)->Name("Swimlane/task_all_calls_at_level")->DenseRange(1, 4);

// The guard alone: a level-1 recorder refusing a level-2 call.
void BM_SwimlaneGuard(benchmark::State& state) {
  SwimlaneRecorder rec(1, Layout(), CapacityHint{});
  uint32_t i = 0;
  for (auto _ : state) {
    rec.RecordAicpuTask(i & 7, i, i, i + 1);
    ++i;
  }
}
BENCHMARK(BM_SwimlaneGuard)->Name("Swimlane/level1_refuses_aicpu_call");

void BM_DepGenSubmit(benchmark::State& state) {
  auto rec = std::make_unique<DepGenRecorder>(Hint());
  DepGenTaskRecord task;
  task.arg_count = 2;
  task.args[0].has_tensor = true;
  DepGenEdgeRecord edges[2];
  edges[1].source = EdgeSource::kCreator;
  uint64_t i = 0;
  for (auto _ : state) {
    if (i == kCapacity / 2) {
      state.PauseTiming();
      rec = std::make_unique<DepGenRecorder>(Hint());
      i = 0;
      state.ResumeTiming();
    }
    task.task_id = i++;
    rec->RecordSubmit(task, edges);
  }
}
BENCHMARK(BM_DepGenSubmit)->Name("DepGen/RecordSubmit_2args_2edges");

void BM_PmuRecord(benchmark::State& state) {
  ChipLayout layout = Layout();
  auto rec = std::make_unique<PmuRecorder>(static_cast<int>(state.range(0)), layout, Hint());
  PmuWork work;
  work.total_cycles = 9000;
  work.vec_cycles = 4000;
  work.bytes_read_gm = 4096;
  work.bytes_written_gm = 2048;
  work.bytes_read_ub = 8192;
  work.bytes_written_ub = 6144;
  work.instructions = 320;
  uint64_t i = 0;
  for (auto _ : state) {
    if (i == kCapacity) {
      state.PauseTiming();
      rec = std::make_unique<PmuRecorder>(static_cast<int>(state.range(0)), layout, Hint());
      i = 0;
      state.ResumeTiming();
    }
    rec->Record(0, static_cast<uint32_t>(i & 7), i, static_cast<int32_t>(i & 3), CoreKind::kAiv,
                work);
    ++i;
  }
}
BENCHMARK(BM_PmuRecord)->Name("Pmu/Record_event_type")->Arg(2)->Arg(4)->Arg(8);

void BM_ScopeStatsRecord(benchmark::State& state) {
  auto rec = std::make_unique<ScopeStatsRecorder>(Layout(), Hint());
  ScopeSample sample;
  std::strcpy(sample.site, "orch.cc:42");
  uint64_t i = 0;
  for (auto _ : state) {
    if (i == kCapacity) {
      state.PauseTiming();
      rec = std::make_unique<ScopeStatsRecorder>(Layout(), Hint());
      i = 0;
      state.ResumeTiming();
    }
    sample.heap_end = i++;
    rec->Record(sample);
  }
}
BENCHMARK(BM_ScopeStatsRecord)->Name("ScopeStats/Record");

void BM_ArgsDumpScalar(benchmark::State& state) {
  auto dir = std::filesystem::temp_directory_path() / "dfx_collectors_bench_dump";
  ArgsDumpOptions options;
  options.level = 2;
  options.arena_bytes = 1 << 20;
  options.max_records = kCapacity;
  auto rec = std::make_unique<ArgsDumpRecorder>(options, CapacityHint{}, dir);
  DumpArgMeta meta;
  meta.kind = DumpKind::kScalar;
  std::strcpy(meta.dtype, "FLOAT32");
  uint64_t i = 0;
  for (auto _ : state) {
    if (i == kCapacity) {
      state.PauseTiming();
      rec = std::make_unique<ArgsDumpRecorder>(options, CapacityHint{}, dir);
      i = 0;
      state.ResumeTiming();
    }
    meta.task_id = i++;
    benchmark::DoNotOptimize(rec->Capture(meta, {}));
  }
  rec.reset();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_ArgsDumpScalar)->Name("ArgsDump/Capture_scalar");

// Fresh record pages: what a writer pays to fill 64 MiB of 64-byte records
// in a LazyArray whose pages no one has touched (a fresh mapping each
// iteration: storage over 256 KiB is the array's own, its first 256 KiB in
// 4 KiB pages and the rest advised for transparent huge pages), against the
// same writes into pages already touched (the baseline, same run).
// items_per_second counts 4 KiB pages (1e6 / it = us per page). Ways: 0
// `faults` (a page fault per page, or per huge page), 1 `map_ahead` (the
// writer maps 256 KiB at a time), 2 `prefaulted` (the pages were populated
// and read by Populate before the timing: what the collectors' prefault
// thread does off the recording threads), 3 `touched` (the baseline). On a
// VM that shadows page tables the first user access to a page costs the
// hypervisor's fault even after the guest mapped it: ~11 us per 4 KiB page
// and ~135 us per 2 MiB one here, which is why the arrays use huge pages.
void BM_FreshPages(benchmark::State& state) {
  struct Rec {
    uint64_t v[8];
  };
  constexpr size_t kBytes = 64 << 20;
  constexpr size_t kRecs = kBytes / sizeof(Rec);
  const int64_t way = state.range(0);
  for (auto _ : state) {
    state.PauseTiming();
    auto rows = std::make_unique<internal::LazyArray<Rec>>(kRecs);
    if (way == 2) rows->Populate(0, kRecs);
    if (way == 3) std::memset(rows->data(), 0, kBytes);
    state.ResumeTiming();
    for (size_t i = 0; i < kRecs; ++i) {
      if (way == 1) rows->MapAhead(i);
      (*rows)[i].v[0] = i;
    }
    benchmark::DoNotOptimize(rows->data());
    state.PauseTiming();
    rows.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(kBytes / 4096));  // pages
}
BENCHMARK(BM_FreshPages)
    ->Name("FreshPages/64MiB_way")
    ->ArgName("faults_mapahead_prefaulted_touched")
    ->DenseRange(0, 3)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dfx::collectors

BENCHMARK_MAIN();
