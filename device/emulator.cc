#include "device/emulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

#include "collectors/recorders.h"
#include "common/clock.h"
#include "common/file_util.h"
#include "common/json.h"
#include "common/log.h"
#include "device/aicpu_threads.h"
#include "device/chip_threads.h"
#include "device/device_memory.h"
#include "device/engine_scheduler.h"
#include "device/kernels.h"
#include "device/lowering.h"
#include "device/memory_budget.h"
#include "device/recorder_hooks.h"
#include "device/virtual_clock_run.h"

namespace dfx::device {

namespace fs = std::filesystem;
using collectors::CoreKind;

namespace {

// AICPU scheduler threads of a run: RunConfig::aicpu_thread_num counts the
// orchestrator too; one on the virtual clock; never more than the cores.
int SchedThreads(const ChipOptions& opt, const ChipModel& model, const config::RunConfig& config,
                 int cores) {
  int threads = 1;
  if (!opt.virtual_clock && config.aicpu_thread_num > 1)
    threads = std::min(config.aicpu_thread_num - 1, model.max_aicpu_threads - 1);
  return std::max(1, std::min(threads, cores));
}

// One run, wired from its parts: the device memory, the recorders' hooks,
// the scheduling state machine, and the runner the chip's options pick
// (the virtual clock on this thread, or the AICPU threads on the chip's
// host threads).
class Engine final {
 public:
  Engine(const ChipOptions& opt, const ChipModel& model, int aic, int aiv, const LoweredProgram& lp,
         const config::RunConfig& config, collectors::DfxCollectors* dfx, RunReport* report,
         ChipThreads* host_threads, DeviceHeap* heaps, ResidentState* resident)
      : opt_(opt),
        model_(model),
        lp_(lp),
        report_(report),
        memory_(lp, heaps, resident),
        hooks_(dfx, lp, /*defer_dep_gen=*/!opt.virtual_clock),
        sched_(opt, model, lp, aic, aiv, SchedThreads(opt, model, config, aic + aiv), &hooks_,
               &memory_, report) {
    hooks_.MapCoresToThreads(sched_.cores());
    if (!opt.virtual_clock)
      threads_ =
          std::make_unique<AicpuThreads>(sched_, hooks_, lp, opt, model, host_threads, report);
  }

  Status Run() {
    if (opt_.progress) {
      opt_.progress->tasks_done.store(0, std::memory_order_relaxed);
      opt_.progress->tasks_total.store(lp_.tasks.size(), std::memory_order_relaxed);
    }
    DFX_RETURN_IF_ERROR(memory_.Allocate());
    if (threads_) {
      threads_->Run();
    } else {
      RunVirtualClock(sched_, hooks_, model_);
    }
    return sched_.status();
  }

  // Writes the resident tensors back to the chip's device memory.
  void SaveResident() { memory_.SaveResident(); }
  // Copies every tensor's final value into the report.
  void CollectTensors() { memory_.CollectTensors(sched_.submitted(), report_); }
  uint64_t submitted() const { return sched_.submitted(); }
  uint64_t completed() const { return sched_.completed(); }
  uint64_t makespan_cycles() const { return sched_.makespan_cycles(); }
  uint64_t stalls() const { return sched_.stalls(); }

 private:
  const ChipOptions& opt_;
  const ChipModel& model_;
  const LoweredProgram& lp_;
  RunReport* report_;
  DeviceMemory memory_;
  RecorderHooks hooks_;
  EngineScheduler sched_;
  std::unique_ptr<AicpuThreads> threads_;  // real-threads runs only
};

// The dispatch's AICPU threads within the chip model's, and its memory
// within the model's and this host's (memory_budget.h): a program larger
// than the chip or the host is refused by name, not met by std::bad_alloc
// (or the OOM killer).
Status CheckFits(const ChipModel& model, const Program& program, const config::RunConfig& config,
                 uint64_t dump_arena_bytes) {
  if (config.aicpu_thread_num > model.max_aicpu_threads) {
    return InvalidArgument(
        "aicpu_thread_num " + std::to_string(config.aicpu_thread_num) + " exceeds the " +
        model.name + " limit of " + std::to_string(model.max_aicpu_threads) +
        " AICPU threads; expected 0 (default) to " + std::to_string(model.max_aicpu_threads));
  }
  return CheckMemoryBudget(program, config, dump_arena_bytes,
                           HostMemoryToCheck(program, config, dump_arena_bytes));
}

}  // namespace

EmulatedChip::EmulatedChip(const ChipOptions& options) : options_(options) {
  aic_ = options.aic_cores > 0 ? options.aic_cores : 2;
  aiv_ = options.aiv_cores > 0 ? options.aiv_cores : 4;
}

EmulatedChip::~EmulatedChip() = default;

std::string EmulatedChip::Describe() const {
  const ChipModel& a2a3 = GetChipModel(config::BackendType::kA2A3);
  const ChipModel& a5 = GetChipModel(config::BackendType::kA5);
  return "emulator: " + std::to_string(aic_) + " AIC + " + std::to_string(aiv_) + " AIV; " +
         a2a3.name + " (" + std::to_string(a2a3.clock_freq_hz / 1000000) + " MHz) or " + a5.name +
         " (" + std::to_string(a5.clock_freq_hz / 1000000) +
         " MHz) as each dispatch's backend_type says" +
         (options_.virtual_clock ? ", virtual clock" : "");
}

DispatchResult EmulatedChip::RunProgram(const Program& program, const config::RunConfig& config,
                                        const fs::path& output_dir) {
  return Run(program, config, output_dir, nullptr);
}

DispatchResult EmulatedChip::Run(const Program& program, const config::RunConfig& config,
                                 const fs::path& output_dir, RunReport* report,
                                 bool collect_tensors) {
  return RunLowered(program, nullptr, config, output_dir, report, collect_tensors);
}

DispatchResult EmulatedChip::RunShared(const std::shared_ptr<const Program>& program,
                                       const config::RunConfig& config,
                                       const fs::path& output_dir) {
  return RunLowered(*program, program, config, output_dir, nullptr, false);
}

DispatchResult EmulatedChip::RunLowered(const Program& program,
                                        const std::shared_ptr<const Program>& shared,
                                        const config::RunConfig& config_in,
                                        const fs::path& output_dir, RunReport* report,
                                        bool collect_tensors) {
  DispatchResult result;
  uint64_t t0 = MonotonicClock::Instance().NowNs();
  config::RunConfig config = config_in;
  config.Normalize();
  if (Status s = config.Validate(); !s.ok()) {
    result.status = s;
    return result;
  }
  // The dispatch's RunConfig selects the chip model; the emulated core
  // counts are the host's, capped by the model.
  const ChipModel& model = GetChipModel(config.backend_type);
  const int aic = std::min(aic_, model.max_cores);
  const int aiv = std::min(aiv_, model.max_cores);
  // What the chip model allows, and the memory budget before allocating.
  if (Status s = CheckFits(model, program, config, options_.dump_arena_bytes); !s.ok()) {
    result.status = s;
    return result;
  }
  RingCapacities rings = ResolveRings(model, config.rings);
  // Lowering is a pure function of (program, ring sizes): a shared program
  // run again with the same rings reuses the lowering kept from its last run.
  std::shared_ptr<const LoweredProgram> lowered;
  if (shared && kept_.program == shared && kept_.rings == rings) {
    lowered = kept_.lowered;
  } else {
    if (shared) kept_ = {};  // the old one goes before the new one is made
    ++lowerings_;
    Result<LoweredProgram> made = Lower(program, rings);
    if (!made.ok()) {
      result.status = made.status();
      return result;
    }
    lowered = std::make_shared<const LoweredProgram>(std::move(*made));
    if (shared && LoweredBytes(*lowered) <= kMaxKeptLoweringBytes) kept_ = {shared, rings, lowered};
  }
  const LoweredProgram& lp = *lowered;

  std::unique_ptr<collectors::DfxCollectors> dfx;
  int sched_threads = 1;
  if (!options_.virtual_clock && config.aicpu_thread_num > 1)
    sched_threads = std::max(1, std::min(config.aicpu_thread_num - 1, model.max_aicpu_threads - 1));
  sched_threads = std::min(sched_threads, aic + aiv);
  if (config.AnyDfx()) {
    if (Status s = MakeDirs(output_dir); !s.ok()) {
      result.status = s;
      return result;
    }
    collectors::ChipLayout layout;
    layout.backend = model.name;
    layout.clock_freq_hz = model.clock_freq_hz;
    for (int i = 0; i < aic; ++i) layout.core_types.push_back(CoreKind::kAic);
    for (int i = 0; i < aiv; ++i) layout.core_types.push_back(CoreKind::kAiv);
    layout.sched_threads = sched_threads;
    layout.orch_threads = 1;
    for (int r = 0; r < 4; ++r) {
      layout.task_window_max[r] = static_cast<int64_t>(rings.task_window[r]);
      layout.heap_max[r] = rings.heap[r];
      layout.dep_pool_max[r] = static_cast<int64_t>(rings.dep_pool[r]);
    }
    layout.tensormap_max = static_cast<int64_t>(rings.tensormap);
    collectors::CapacityHint hint;
    hint.tasks = lp.tasks.size();
    hint.core_executions = lp.core_executions;
    hint.scope_samples = 2 * lp.scopes.size();
    hint.tensor_args = lp.tensor_args;
    hint.edges = lp.edge_count;
    collectors::ArgsDumpOptions dump;
    dump.level = config.enable_dump_args > 0 ? config.enable_dump_args : 1;
    dump.drain_bytes_per_sec = options_.dump_drain_bytes_per_sec;
    dump.drain_timeout_ms = options_.dump_timeout_ms;
    if (options_.dump_arena_bytes > 0) dump.arena_bytes = options_.dump_arena_bytes;
    dfx = std::make_unique<collectors::DfxCollectors>(config, layout, hint, output_dir, dump);
  }

  if (!options_.virtual_clock && !threads_) threads_ = std::make_unique<ChipThreads>();
  auto engine = std::make_unique<Engine>(options_, model, aic, aiv, lp, config, dfx.get(), report,
                                         threads_.get(), heaps_.data(), &resident_);
  Status run = engine->Run();
  if (run.ok()) engine->SaveResident();
  if (collect_tensors) engine->CollectTensors();
  if (config.enable_dump_args == 1) result.warnings = lp.warnings;
  result.tasks_executed = engine->completed();
  result.makespan_cycles = engine->makespan_cycles();
  result.makespan_ns = static_cast<uint64_t>(static_cast<long double>(result.makespan_cycles) *
                                             1e9L / static_cast<long double>(model.clock_freq_hz));
  if (report) {
    report->orchestrator_stalls = engine->stalls();
    report->tasks_submitted = engine->submitted();
    report->tasks_completed = engine->completed();
  }
  if (dfx) {
    // The collectors export on a thread of their own while this one frees
    // the run's state: neither touches the other's memory (recorders keep
    // copies), and a one-file export leaves the host's other core idle.
    // Freeing a 100k-task run's state is a few tens of ms of free() into
    // the malloc arena of the thread that built it. The export must not
    // share that arena: when it ran here with the frees on a second
    // thread, each of its large allocations consolidated the other
    // thread's freed chunks under the arena's lock (malloc_consolidate and
    // unlink_chunk were a fifth of a level-1 export's samples, which took
    // 40-60 ms for a 5.6 MB file). A new thread gets an arena of its own.
    Status exported;
    std::jthread exporter([&] { exported = dfx->ExportAll(run.ok(), &result.artifacts); });
    engine.reset();
    lowered.reset();  // frees it unless kept
    exporter.join();
    if (run.ok() && !exported.ok()) run = exported;
  }
  result.status = run;
  result.wall_ns = MonotonicClock::Instance().NowNs() - t0;
  return result;
}

Result<ResidentState> LoadResidentState(const fs::path& path) {
  ResidentState state;
  std::error_code ec;
  if (!fs::exists(path, ec)) return state;
  DFX_ASSIGN_OR_RETURN(Json j, ReadJsonFile(path));
  if (!j.is_object() || !j.contains("tensors") || !j["tensors"].is_object())
    return JsonError(path.string(), "$.tensors", "an object of resident tensors by name", j);
  for (auto& [name, t] : j["tensors"].items()) {
    const std::string at = "$.tensors." + name;
    if (!t.is_object() || !t.contains("dtype") || !t["dtype"].is_string() || !t.contains("shape") ||
        !t["shape"].is_array() || !t.contains("hex") || !t["hex"].is_string())
      return JsonError(path.string(), at, "{dtype, shape, hex}", t);
    auto dtype = ParseDType(t["dtype"].get<std::string>());
    if (!dtype) return JsonError(path.string(), at + ".dtype", "a dtype name", t["dtype"]);
    ResidentTensor r;
    r.dtype = *dtype;
    for (const auto& d : t["shape"]) {
      if (!d.is_number_unsigned()) return JsonError(path.string(), at + ".shape", "sizes", d);
      r.shape.push_back(d.get<uint32_t>());
    }
    const std::string hex = t["hex"].get<std::string>();
    if (hex.size() % 2 != 0) return JsonError(path.string(), at + ".hex", "hex bytes", t["hex"]);
    r.bytes.resize(hex.size() / 2);
    for (size_t i = 0; i < r.bytes.size(); ++i) {
      char* end = nullptr;
      const std::string byte = hex.substr(2 * i, 2);
      r.bytes[i] = static_cast<uint8_t>(std::strtoul(byte.c_str(), &end, 16));
      if (end != byte.c_str() + 2)
        return JsonError(path.string(), at + ".hex", "hex bytes", t["hex"]);
    }
    state[name] = std::move(r);
  }
  return state;
}

Status SaveResidentState(const fs::path& path, const ResidentState& state) {
  Json tensors = Json::object();
  for (const auto& [name, r] : state) {
    std::string hex;
    hex.reserve(2 * r.bytes.size());
    for (uint8_t b : r.bytes) hex += fmt::format("{:02x}", b);
    Json t;
    t["dtype"] = DTypeName(r.dtype);
    t["shape"] = r.shape;
    // Readable form for people and tests; the bytes are the truth.
    Json values = Json::array();
    const uint64_t numel = r.bytes.size() / DTypeSize(r.dtype);
    for (uint64_t i = 0; i < numel && i < 64; ++i)
      values.push_back(LoadElement(r.bytes.data(), r.dtype, i));
    t["values"] = values;
    t["hex"] = hex;
    tensors[name] = t;
  }
  Json j;
  j["tensors"] = tensors;
  DFX_RETURN_IF_ERROR(MakeDirs(path.parent_path()));
  return WriteJsonFileAtomic(path, j, 2);
}

std::unique_ptr<Chip> MakeEmulatedChip(const ChipOptions& options) {
  return std::make_unique<EmulatedChip>(options);
}

}  // namespace dfx::device
