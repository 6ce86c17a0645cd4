// The Chip interface: one accelerator device that runs programs. The only
// in-tree backend is the emulator (docs/design.md §5); a real device backend would
// plug in behind this same interface.
//
// Callers: the rank agent (one dispatch at a time per chip). A Chip is not
// thread-safe: one RunProgram at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "config/run_config.h"
#include "device/program.h"

namespace dfx::device {

// Live progress of the dispatch a chip is running, for the host (the rank
// agent's Progress messages). Written by the chip, read from any thread.
struct ChipProgress {
  std::atomic<uint64_t> tasks_total{0};  // tasks of the running program
  std::atomic<uint64_t> tasks_done{0};   // finished so far
};

// How a chip is built. Which chip model (a2a3 or a5) a program runs on is
// not a property of the chip but of each dispatch: RunProgram's RunConfig
// (backend_type) selects it, so one agent serves runs of either backend.
struct ChipOptions {
  // Emulated cores actually run (the model's core count is larger; the host
  // has few CPUs). 0 = a small default (e.g. 2 AIC + 4 AIV).
  int aic_cores = 0;
  int aiv_cores = 0;
  // Deterministic virtual-clock mode: durations from a cost model, one worker
  // thread, exact repeatable timestamps.
  bool virtual_clock = false;
  // Real-threads mode: host threads that run the emulated cores' blocks
  // (each block still runs as, and is recorded on, the core it was
  // dispatched to). 0 = one per host CPU; capped at the emulated cores.
  int host_threads = 0;
  // Args-dump host drain model (bytes/s; 0 = as fast as the disk) and the
  // producer park backstop after which a dispatch fails.
  double dump_drain_bytes_per_sec = 0;
  uint64_t dump_timeout_ms = 30000;
  // Args-dump arena (the bounded device-side dump buffer); 0 = the
  // collector's default (128 MiB).
  uint64_t dump_arena_bytes = 0;
  // When set, the chip keeps it up to date while a program runs.
  std::shared_ptr<ChipProgress> progress;
};

// One device-resident tensor (TensorDecl::resident): its bytes as the chip's
// device memory holds them between dispatches.
struct ResidentTensor {
  DType dtype = DType::kFloat32;
  std::vector<uint32_t> shape;
  std::vector<uint8_t> bytes;
};
// Device memory of one chip for one session, by tensor name.
using ResidentState = std::map<std::string, ResidentTensor>;

// The L2 form of that memory: an L2 run's passes are separate processes, so
// the state is a file (<work_dir>/device_state/chip0.json) loaded before and
// saved after each run. A missing file is an empty state. Errors name the file.
Result<ResidentState> LoadResidentState(const std::filesystem::path& path);
Status SaveResidentState(const std::filesystem::path& path, const ResidentState& state);

struct DispatchResult {
  Status status;  // OK, or why the dispatch failed
  // Advice for the user that does not fail the dispatch (e.g. a dump_tag
  // that no later dispatch consumes at enable_dump_args=1).
  std::vector<std::string> warnings;
  std::vector<std::string> artifacts;  // files written, relative to output_dir
  uint64_t tasks_executed = 0;
  uint64_t wall_ns = 0;  // host wall time of the execution
  // The emulator's own accounting, with or without collectors: the first
  // block dispatched to the last block retired, in chip cycles and in ns
  // at the model's clock (0 when nothing ran).
  uint64_t makespan_cycles = 0;
  uint64_t makespan_ns = 0;
};

class Chip {
 public:
  virtual ~Chip() = default;
  virtual std::string Describe() const = 0;  // e.g. "emulator: 2 AIC + 4 AIV; ..."
  // Runs `program` once on the chip model `config.backend_type` names, with
  // the collectors `config` enables, writing every artifact flat into
  // `output_dir` (created if needed; nothing is created when no DFX flag is
  // on). An invalid config (Validate) or one the model cannot honour (e.g.
  // more AICPU threads than the model has) is refused before anything runs;
  // a kernel error fails this dispatch only.
  virtual DispatchResult RunProgram(const Program& program, const config::RunConfig& config,
                                    const std::filesystem::path& output_dir) = 0;
  // RunProgram of a program the caller shares and never changes (the rank
  // agent's kept programs): a chip may keep what it derives from it (the
  // emulator: its lowering) for the next run of the same program.
  virtual DispatchResult RunShared(const std::shared_ptr<const Program>& program,
                                   const config::RunConfig& config,
                                   const std::filesystem::path& output_dir) {
    return RunProgram(*program, config, output_dir);
  }
  // Lets go of what RunShared kept (a session ended: its programs go too).
  virtual void ReleaseShared() {}

  // The chip's device-resident tensors: read before a run for every
  // `resident` tensor (its init is used when the name is absent), written
  // back after a successful run. Lives as long as the Chip (the session).
  ResidentState& resident_state() { return resident_; }

 protected:
  ResidentState resident_;
};

std::unique_ptr<Chip> MakeEmulatedChip(const ChipOptions& options);

}  // namespace dfx::device
