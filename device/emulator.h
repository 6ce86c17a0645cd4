// The chip emulator (docs/design.md §5): the in-tree Chip backend. It runs a
// program for real on host threads with real data:
//  * an orchestrator thread walks the lowered task stream and allocates from
//    real rings (task window, heap, dep pool per ring depth; tensormap
//    entries), blocking while a ring is full until the scheduler retires tasks;
//  * AICPU scheduler thread(s), each owning a subset of the cores, resolve
//    dependencies, keep ready queues per core type [AIC, AIV, MIX], dispatch
//    ready blocks to idle cores and retire completions;
//  * AICore workers run the kernels, each block as the emulated core it was
//    dispatched to.
// Thread counts: RunConfig::aicpu_thread_num counts AICPU threads including
// the orchestrator, so it gives aicpu_thread_num - 1 scheduler threads
// (default 1; above the model's limit is an error); cores are assigned to
// scheduler threads round-robin (metadata core_to_thread).
// Ring sizes: the chip model's defaults, overridden per ring by
// RunConfig::rings. A ring too small for a single task is an error before
// anything runs; a ring that fills with tasks nothing can reclaim (outputs
// still bound to names in an open scope) is reported as a ring deadlock.
// Timestamps are host monotonic ns converted to the chip model's counter
// clock. With ChipOptions::virtual_clock the same state machine runs as a
// deterministic discrete-event simulation on the calling thread, durations
// from the kernel cost model: the same program gives byte-identical artifacts.
//
// The collectors are called where the reference runtime records (AICore
// start/end, AICPU dispatch/finish, scheduler phases, orchestrator submits,
// dep_gen per submit, args-dump captures, PMU per block, scope samples).
//
// Host threads: the orchestrator runs on the caller's thread; the AICPU
// schedulers and the AICore workers are logical, played by a pool of host
// threads (ChipOptions::host_threads, default one per host CPU, at most one
// per emulated core) created by the chip's first real-threads dispatch and
// kept, parked, for the next ones (joined with the chip). A pool thread does
// a scheduler pass (recorded as the phases of the scheduler thread that owns
// the cores it served), then runs the oldest dispatched block as its core:
// while work is ready no block waits for a hand-off between host threads.
// Every wait spins briefly, then sleeps (never sched_yield).
//
// The run's parts, one job each: device/engine_scheduler.h (rings, ready
// queues, dispatch and retirement), device/aicpu_threads.h (the orchestrator
// and AICPU scheduler threads on the host pool), device/virtual_clock_run.h
// (the same on the virtual clock), device/recorder_hooks.h (where the
// collectors are called) and device/device_memory.h (tensor buffers and
// ring heaps); emulator.cc wires them.
//
// Not thread-safe: one RunProgram at a time per chip (Chip contract).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "device/chip.h"
#include "device/chip_model.h"

namespace dfx::device {

// One block of one task on one core, in device cycles.
struct BlockTiming {
  uint64_t task_id = 0;
  int task_index = 0;
  int block = 0;
  int core = 0;
  uint64_t dispatch_cycles = 0, start_cycles = 0, end_cycles = 0, finish_cycles = 0;
};

// What a run did, for tests and benchmarks (beyond the artifacts).
struct RunReport {
  std::vector<BlockTiming> blocks;  // completion order
  // Final contents (as float) of every base tensor name, by name.
  std::map<std::string, std::vector<float>> tensors;
  uint64_t orchestrator_stalls = 0;  // times the orchestrator waited on a full ring
  uint64_t tasks_submitted = 0;
  uint64_t tasks_completed = 0;
};

class ChipThreads;
struct LoweredProgram;

// One ring's heap memory, kept by the chip between dispatches.
struct DeviceHeap {
  std::unique_ptr<uint8_t[]> mem;
  uint64_t bytes = 0;
};

class EmulatedChip final : public Chip {
 public:
  explicit EmulatedChip(const ChipOptions& options);
  ~EmulatedChip() override;
  EmulatedChip(const EmulatedChip&) = delete;
  EmulatedChip& operator=(const EmulatedChip&) = delete;
  std::string Describe() const override;
  DispatchResult RunProgram(const Program& program, const config::RunConfig& config,
                            const std::filesystem::path& output_dir) override;
  // RunProgram that also fills `report` (may be null). `collect_tensors`
  // copies every tensor's final value into the report.
  DispatchResult Run(const Program& program, const config::RunConfig& config,
                     const std::filesystem::path& output_dir, RunReport* report,
                     bool collect_tensors = false);
  // Keeps the program's lowering with the program (one per chip, up to
  // kMaxKeptLoweringBytes: about 100k tasks) and runs the next dispatch of
  // the same program and ring sizes from it instead of lowering again (an
  // L3 run of 8 ranks x 10 dispatches of 10k tasks takes 0.80x the CPU of
  // lowering every dispatch).
  DispatchResult RunShared(const std::shared_ptr<const Program>& program,
                           const config::RunConfig& config,
                           const std::filesystem::path& output_dir) override;
  void ReleaseShared() override { kept_ = {}; }
  static constexpr uint64_t kMaxKeptLoweringBytes = 64ull << 20;
  // How many programs this chip lowered (tests, benchmarks).
  uint64_t lowerings() const { return lowerings_; }
  // Emulated cores of each kind (capped per dispatch by its chip model).
  int aic_cores() const { return aic_; }
  int aiv_cores() const { return aiv_; }

 private:
  ChipOptions options_;
  int aic_;
  int aiv_;
  // The host threads that run dispatches in real-threads mode, created by
  // the first one and kept for the next (threads are not made per dispatch).
  std::unique_ptr<ChipThreads> threads_;
  std::array<DeviceHeap, 4> heaps_;  // per ring, reused while the ring's size is the same
  // The last shared program's lowering (RunShared): `program` keeps the
  // statements it points into alive and makes identity a pointer compare.
  struct KeptLowering {
    std::shared_ptr<const Program> program;
    RingCapacities rings;
    std::shared_ptr<const LoweredProgram> lowered;
  };
  KeptLowering kept_;
  uint64_t lowerings_ = 0;
  DispatchResult RunLowered(const Program& program, const std::shared_ptr<const Program>& shared,
                            const config::RunConfig& config,
                            const std::filesystem::path& output_dir, RunReport* report,
                            bool collect_tensors);
};

}  // namespace dfx::device
