#include "device/output_estimate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

#include "collectors/pmu/pmu_columns.h"
#include "common/clock.h"
#include "device/chip_model.h"
#include "device/dtype.h"
#include "device/lowering.h"

namespace dfx::device {

namespace {

// Text length of a number as the writers print it (decimal).
uint64_t Digits(uint64_t v) {
  uint64_t n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}
uint64_t SignedDigits(int64_t v) {
  return v < 0 ? 1 + Digits(static_cast<uint64_t>(-v)) : Digits(static_cast<uint64_t>(v));
}
constexpr uint64_t Len(std::string_view s) { return s.size(); }

// "[a,b]" (deps.json) or "[a, b]" (args dump), of `shape` and its
// row-major strides.
uint64_t DimsLen(const Shape& shape, uint64_t separator) {
  uint64_t n = 2;
  for (size_t i = 0; i < shape.size(); ++i) n += Digits(shape[i]) + (i ? separator : 0);
  return n;
}
uint64_t StridesLen(const Shape& shape, uint64_t separator) {
  uint64_t n = 2, stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    n += Digits(stride) + (i + 1 < shape.size() ? separator : 0);
    stride *= shape[i];
  }
  return n;
}

const char* ArgTypeText(ArgType t) { return ArgTypeName(t); }

// deps.json (docs/formats.md §6.2), record by record as DepGenRecorder writes it.
uint64_t DepsBytes(const LoweredProgram& lp) {
  const Program& prog = *lp.program;
  uint64_t n = Len("{\"tasks\":[") + Len("],\"tensors\":[") + Len("],\"edges\":[") + Len("]}\n");
  uint64_t edges = 0;
  for (size_t i = 0; i < lp.tasks.size(); ++i) {
    const LoweredTask& t = lp.tasks[i];
    const Kernel& k = prog.kernels[t.kernel];
    n += (i ? 1 : 0) + Len("{\"task_id\":\"") + Digits(t.task_id) +
         Len("\",\"scope\":\"auto\",\"early_dispatch\":false,\"kernel_ids\":[") +
         SignedDigits(k.func_id) + Len(",-1,-1") + Len("],\"block_num\":") +
         Digits(static_cast<uint64_t>(t.block_num)) + Len(",\"args\":[") + Len("]}") +
         (t.manual ? 2 : 0);
    for (size_t a = 0; a < t.args.size(); ++a) {
      const LoweredArg& arg = t.args[a];
      const uint64_t dtype = std::strlen(DTypeName(lp.buffers[arg.buffer].dtype)) + 2;
      n += (a ? 1 : 0) + Len("{\"idx\":") + Digits(a) + Len(",\"type\":\"") +
           std::strlen(ArgTypeText(arg.type)) + 1 + Len(",\"tensor_id\":\"") +
           Digits(arg.tensor_id) + Len("\",\"dtype\":") + dtype + Len(",\"shape\":") +
           DimsLen(arg.shape, 1) + Len(",\"start_offset\":\"") + Digits(arg.offset) +
           Len("\",\"strides\":") + StridesLen(arg.shape, 1) + 1;
    }
    for (const LoweredEdge& e : t.edges) {
      const bool tensormap = e.source == collectors::EdgeSource::kTensormap;
      const bool is_explicit = e.source == collectors::EdgeSource::kExplicit;
      n +=
          (edges++ ? 1 : 0) + Len("{\"pred\":\"") + Digits(lp.tasks[e.pred].task_id) +
          Len("\",\"succ\":\"") + Digits(t.task_id) + Len("\",\"arg\":") +
          SignedDigits(is_explicit ? -1 : e.arg) + Len(",\"source\":\"") +
          (tensormap     ? Len("tensormap")
           : is_explicit ? Len("explicit")
                         : Len("creator")) +
          (tensormap ? Len("\",\"flags\":[\"wait\"]") : Len("\",\"flags\":[\"wait\",\"retain\"]")) +
          1;
      if (tensormap) {
        n += Len(",\"overlap\":\"") + 1 +
             (e.overlap == collectors::Overlap::kCovered ? Len("covered") : Len("other"));
      }
      if (!is_explicit && e.arg >= 0 && e.arg < static_cast<int>(t.args.size())) {
        const LoweredArg& c = t.args[static_cast<size_t>(e.arg)];
        n += Len(",\"tensor_id\":\"") + Digits(c.tensor_id) + Len("\",\"consumer_dtype\":") +
             std::strlen(DTypeName(lp.buffers[c.buffer].dtype)) + 2 + Len(",\"consumer_shape\":") +
             DimsLen(c.shape, 1) + Len(",\"consumer_start_offset\":\"") + Digits(c.offset) +
             Len("\",\"consumer_strides\":") + StridesLen(c.shape, 1);
      }
      if (tensormap) {
        n += Len(",\"producer_shape\":") + DimsLen(e.producer_shape, 1) +
             Len(",\"producer_start_offset\":\"") + Digits(e.producer_offset) +
             Len("\",\"producer_strides\":") + StridesLen(e.producer_shape, 1);
      }
    }
  }
  for (size_t i = 0; i < lp.tensors.size(); ++i) {
    const collectors::DepGenTensorRecord& t = lp.tensors[i];
    n += (i ? 1 : 0) + Len("{\"tensor_id\":\"") + Digits(t.tensor_id) +
         Len("\",\"buffer_addr\":\"") + Digits(t.buffer_addr) + Len("\",\"version\":") +
         SignedDigits(t.version) + Len(",\"dtype\":") + std::strlen(t.dtype) + 2 +
         Len(",\"buffer_numel\":\"") + Digits(t.buffer_numel) + Len("\"}");
  }
  return n;
}

// A scalar's "value" as the args-dump writer prints it (docs/formats.md §8.3).
uint64_t ScalarValueLen(const Scalar& scalar) {
  const uint64_t bits = ScalarBits(scalar.dtype, scalar.value);
  const std::string_view dtype = DTypeName(scalar.dtype);
  if (dtype == "FLOAT32") {
    float f;
    const uint32_t b32 = static_cast<uint32_t>(bits);
    std::memcpy(&f, &b32, sizeof f);
    if (std::isnan(f)) return Len("null");
    if (std::isinf(f)) return f > 0 ? Len("\"$Inf\"") : Len("\"-$Inf\"");
    const std::string s = fmt::format("{:g}", static_cast<double>(f));
    return s.size() + (s.find_first_of(".e") == std::string::npos ? 2 : 0);
  }
  if (dtype == "INT32") return SignedDigits(static_cast<int32_t>(static_cast<uint32_t>(bits)));
  if (dtype == "UINT32") return Digits(static_cast<uint32_t>(bits));
  if (dtype == "INT64") return SignedDigits(static_cast<int64_t>(bits));
  if (dtype == "BOOL") return bits != 0 ? Len("true") : Len("false");
  return Digits(bits);
}

// args_dump/args_dump.json + args.bin (docs/formats.md §8), entry by entry
// as RecorderHooks::CaptureStage records them.
uint64_t ArgsDumpBytes(const LoweredProgram& lp, int level) {
  constexpr uint64_t kArena = 128ull << 20;  // the collector's default arena
  const Program& prog = *lp.program;
  uint64_t entries = 0, before = 0, after = 0, in = 0, out = 0, inout = 0;
  uint64_t text = 0, bin = 0;
  auto entry = [&](const LoweredTask& t, size_t index, const LoweredArg* a, bool before_stage,
                   uint64_t payload, const Scalar* scalar) {
    const Kernel& k = prog.kernels[t.kernel];
    ++entries;
    (before_stage ? before : after)++;
    const ArgType type = a ? a->type : ArgType::kInput;
    const std::string_view role = type == ArgType::kInput   ? "input"
                                  : type == ArgType::kInout ? "inout"
                                                            : "output";
    (type == ArgType::kInput ? in : type == ArgType::kInout ? inout : out)++;
    const DType dtype = a ? lp.buffers[a->buffer].dtype : scalar->dtype;
    uint64_t n = Len(",\n  {\"task_id\": \"0x0000000000000000\", \"func_id\": [") +
                 SignedDigits(k.func_id) + Len("], \"arg_index\": ") + Digits(index) +
                 Len(", \"role\": \"") + role.size() + Len("\", \"stage\": \"") +
                 (before_stage ? Len("before_dispatch") : Len("after_completion")) +
                 Len("\", \"kind\": \"tensor\", \"dtype\": ") + std::strlen(DTypeName(dtype)) + 2 +
                 Len(", \"is_contiguous\": true, \"shape\": [") + Len("], \"strides\": [") +
                 Len("], \"start_offset\": ") + Len(", \"numel\": ") + Len(", \"bin_offset\": ") +
                 Len(", \"bin_size\": ") + Len(", \"truncated\": false, \"overwritten\": false}");
    if (a) {
      n += DimsLen(a->shape, 2) - 2 + StridesLen(a->shape, 2) - 2 + Digits(a->offset) +
           Digits(a->numel);
    } else {
      n += Len(", \"value\": ") + ScalarValueLen(*scalar) + Len("0") + Len("1");
    }
    n += Digits(payload > 0 ? bin : 0) + Digits(payload);
    text += n;
    bin += payload;
  };
  for (const LoweredTask& t : lp.tasks) {
    if (level == 1 && !t.any_dump) continue;
    for (int stage = 0; stage < 2; ++stage) {
      const bool before_stage = stage == 0;
      for (size_t i = 0; i < t.args.size(); ++i) {
        const LoweredArg& a = t.args[i];
        const bool reads = a.type == ArgType::kInput || a.type == ArgType::kInout;
        const bool writes = a.type != ArgType::kInput;
        if (before_stage ? !reads : !writes) continue;
        if (level == 1 && !a.dump) continue;
        uint64_t payload = 0;
        if (level == 2 || a.dump) {
          payload = a.numel * DTypeSize(lp.buffers[a.buffer].dtype);
          if (payload > kArena) payload = kArena / 2;
        }
        entry(t, i, &a, before_stage, payload, nullptr);
      }
      if (before_stage && level == 2) {
        const auto& scalars = t.statement->submit.scalars;
        for (size_t i = 0; i < scalars.size(); ++i)
          entry(t, t.args.size() + i, nullptr, true, 0, &scalars[i]);
      }
    }
  }
  if (entries == 0) return 0;
  const bool has_bin = level != 3 || bin > 0;
  text += Len("{\"run_dir\": \"args_dump\", \"bin_format\": {\"type\": \"logical_contiguous\", "
              "\"byte_order\": \"little_endian\"}, \"dump_args_level\": 1, \"total_args\": , "
              "\"before_dispatch\": , \"after_completion\": , \"input_args\": , \"output_args\": "
              ", \"inout_args\": , \"truncated_args\": 0, \"dropped_records\": 0, "
              "\"dropped_overwrite\": 0, \"bin_file\": ,\n \"args\": [") +
          Digits(entries) + Digits(before) + Digits(after) + Digits(in) + Digits(out) +
          Digits(inout) + (has_bin ? Len("\"args.bin\"") : Len("null")) + Len("\n ]}\n") - 1;
  return text + bin;
}

// The number of scheduler phase records per block, measured: a dispatch
// and a complete phase per block; releases and batching (one phase over
// several blocks) roughly cancel (1.84 to 2.4 per block over the programs
// of bench/estimate).
constexpr double kSchedPhasesPerBlock = 2.0;

// chip_swimlane_records.json (docs/formats.md §2.3).
uint64_t SwimlaneBytes(const LoweredProgram& lp, int level, int aic, int aiv, int sched_threads,
                       uint64_t clock_freq_hz) {
  const int cores = aic + aiv;
  // Timestamps are the host's monotonic clock on the model's counter; an
  // hour of margin for a run that starts later or lasts long.
  const uint64_t now_ns = MonotonicClock::Instance().NowNs() + 3600ull * 1000000000ull;
  const uint64_t ts = Digits(static_cast<uint64_t>(static_cast<double>(now_ns) *
                                                   static_cast<double>(clock_freq_hz) / 1e9));
  // receive_to_start: a few microseconds on the chip clock.
  const uint64_t receive = Digits(clock_freq_hz / 200000);
  uint64_t n = Len("{\n  \"chip_swimlane_level\": 1,\n  \"metadata\": {\"clock_freq_hz\": ") +
               Digits(clock_freq_hz) + Len(", \"num_cores\": ") + Digits(cores) +
               Len(", \"core_types\": [") + cores * Len("\"aiv\", ") - 2 + Len("]}");
  if (level >= 3) n += Len(", \"core_to_thread\": [") + cores * 3 - 2 + 1;
  n += Len(",\n  \"aicore_tasks\": [") + Len("\n  ]") + Len("\n}\n");
  if (level >= 2) n += Len(",\n  \"aicpu_tasks\": [") + Len("\n  ]");
  uint64_t row = 0;
  for (const LoweredTask& t : lp.tasks) {
    const Kernel& k = lp.program->kernels[t.kernel];
    const int of_type = std::max(1, k.core_type == CoreType::kAic ? aic : aiv);
    for (int b = 0; b < t.block_num; ++b, ++row) {
      const uint64_t reg = Digits(row / static_cast<uint64_t>(cores) + 1);
      const uint64_t core = Digits(static_cast<uint64_t>(of_type));
      n += Len(",\n    [") + core + 2 + Digits(t.task_id) + 2 + reg + 2 + ts + 2 + ts + 2 +
           receive + 1;
      if (level >= 2) n += Len(",\n    [") + core + 2 + reg + 2 + ts + 2 + ts + 1;
    }
  }
  if (level >= 3) {
    const uint64_t phases = static_cast<uint64_t>(kSchedPhasesPerBlock * lp.core_executions) + 2;
    const uint64_t iter = Digits(phases / 2 / static_cast<uint64_t>(sched_threads) + 1);
    // Half dispatch (with pop_hit / pop_miss), half complete.
    const uint64_t common =
        Len(",\n      {\"kind\": \"complete\", \"start_cycles\": , \"end_cycles\": , "
            "\"loop_iter\": , \"tasks_processed\": 1, \"shared_at_start\": [0, 0, 0], "
            "\"shared_at_end\": [0, 0, 0]}") +
        2 * ts + iter;
    const uint64_t dispatch_extra = Len(", \"pop_hit\": 1, \"pop_miss\": 1");
    n += Len(",\n  \"aicpu_scheduler_phases\": [") + Len("\n  ]") +
         static_cast<uint64_t>(sched_threads) * Len("\n    [\n    ]");
    n += phases * common + phases / 2 * dispatch_extra;
  }
  if (level >= 4 && !lp.tasks.empty()) {
    n += Len(",\n  \"aicpu_orchestrator_phases\": [") + Len("\n    [\n    ]") + Len("\n  ]");
    for (size_t i = 0; i < lp.tasks.size(); ++i) {
      n += Len(",\n      {\"submit_idx\": , \"task_id\": , \"start_cycles\": , \"end_cycles\": }") +
           Digits(i) + Digits(lp.tasks[i].task_id) + 2 * ts;
    }
  }
  return lp.core_executions == 0 ? 0 : n;
}

// pmu.csv (docs/formats.md §10.2): one row per block. Counter values grow
// with the data a block touches: their digits are modelled from its first
// argument's elements (measured on bench/estimate's programs).
uint64_t PmuBytes(const LoweredProgram& lp, bool a5, int event_type, int cores) {
  if (lp.core_executions == 0) return 0;
  const auto& columns = collectors::pmu_columns::ColumnsOf(a5, event_type);
  const int counters = collectors::pmu_columns::CountOf(columns);
  uint64_t n = collectors::pmu_columns::kFixedHeader.view().size() + Len(",event_type\n");
  for (int i = 0; i < counters; ++i) n += 1 + std::strlen(columns.names[i]);
  double rows = 0;
  for (const LoweredTask& t : lp.tasks) {
    const uint64_t numel = t.args.empty() ? 1 : std::max<uint64_t>(1, t.args[0].numel);
    const double counter_digits = 0.8 + 0.3 * static_cast<double>(Digits(numel));
    const double row =
        1 + 1 + static_cast<double>(Digits(static_cast<uint64_t>(cores))) + 1 + 18 + 1 +
        static_cast<double>(SignedDigits(lp.program->kernels[t.kernel].func_id)) + 1 + 1 + 1 +
        static_cast<double>(Digits(numel) + 1) + counters * (1 + counter_digits) + 1 +
        static_cast<double>(Digits(static_cast<uint64_t>(event_type))) + 1;
    rows += row * t.block_num;
  }
  return n + static_cast<uint64_t>(rows);
}

// scope_stats/scope_stats.jsonl (docs/formats.md §11.2): a header line and
// a begin and an end line per scope; the occupancy figures are modelled at
// half of what the program fills.
uint64_t ScopeStatsBytes(const LoweredProgram& lp, const RingCapacities& rings) {
  uint64_t n = Len("{\"version\": 6, \"fatal\": false, \"dropped\": 0, \"total\": , "
                   "\"task_window_max\": [, , , ], \"heap_max\": [, , , ], \"dep_pool_max\": "
                   "[, , , ], \"tensormap_max\": }\n") +
               Digits(2 * lp.scopes.size()) + Digits(rings.tensormap);
  for (int r = 0; r < 4; ++r)
    n += Digits(rings.task_window[r]) + Digits(rings.heap[r]) + Digits(rings.dep_pool[r]);
  uint64_t heap = 0;
  for (const LoweredTask& t : lp.tasks) heap += t.heap_bytes;
  const uint64_t window = Digits(lp.tasks.size() / 2);
  const uint64_t heap_digits = Digits(std::min(heap, rings.heap[0]) / 2);
  const uint64_t dep = Digits(lp.edge_count / 2);
  const uint64_t tensormap = Digits(std::min<uint64_t>(lp.tensors.size(), rings.tensormap) / 2);
  for (const LoweredScope& s : lp.scopes) {
    const uint64_t line =
        Len("{\"site\": \"\", \"phase\": \"\", \"depth\": , \"ring\": , \"task_window_start\": , "
            "\"task_window_end\": , \"heap_start\": , \"heap_end\": , \"dep_pool_start\": , "
            "\"dep_pool_end\": , \"tensormap\": }\n") +
        s.site.size() + Digits(static_cast<uint64_t>(s.depth)) + 1 + 2 * window + 2 * heap_digits +
        2 * dep + tensormap;
    n += 2 * line + Len("begin") + Len("end");
  }
  return n;
}

// name_map*.json (docs/formats.md §3), indented by 2.
uint64_t NameMapBytes(const Program& prog) {
  uint64_t n =
      Len("{\n  \"level\": 2,\n  \"orchestrator_name\": \"\",\n  \"callable_id_to_name\": ") +
      prog.name.size() + Len("\n}");
  if (prog.kernels.empty()) return n + 2;
  n += Len("{\n  }");
  for (size_t i = 0; i < prog.kernels.size(); ++i) {
    n += (i ? 2 : 0) + Len("\n    \"\": \"\"") + SignedDigits(prog.kernels[i].func_id) +
         prog.kernels[i].name.size();
  }
  return n;
}

// The merged trace dfx-view swimlane writes (docs/formats.md §4): bytes per
// record of the records file it converts (slices, counters, their labels)
// and, with deps.json beside the records, per edge (flows) and per block
// (kernel names), fitted by least squares (relative error) on 56 real runs:
// 7 programs x levels 1-4 x dep_gen off/on (bench/estimate), worst error
// 12%.
uint64_t MergedTraceBytes(const LoweredProgram& lp, int level, bool with_deps) {
  if (lp.core_executions == 0) return 0;
  const double blocks = static_cast<double>(lp.core_executions);
  const double phases = kSchedPhasesPerBlock * blocks + 2;
  const double tasks = static_cast<double>(lp.tasks.size());
  const double edges = with_deps ? static_cast<double>(lp.edge_count) : 0;
  const double deps_blocks = with_deps ? blocks : 0;
  double n = 110 + 292 * blocks + 57 * deps_blocks + 229 * edges;
  if (level >= 2) n += 267 * blocks + 93 * deps_blocks + 173 * edges;
  if (level >= 3) n += 746 * phases + 132 * edges;
  if (level >= 4) n += 259 * tasks + 84 * edges;
  return static_cast<uint64_t>(n);
}

}  // namespace

Result<DispatchBytes> EstimateDispatchBytes(const Program& program,
                                            const config::RunConfig& config_in,
                                            const EstimateCores& cores) {
  config::RunConfig config = config_in;
  config.Normalize();
  const ChipModel& model = GetChipModel(config.backend_type);
  const RingCapacities rings = ResolveRings(model, config.rings);
  DFX_ASSIGN_OR_RETURN(LoweredProgram lp, Lower(program, rings));
  // The emulator's defaults and caps (device/emulator.cc).
  const int aic = std::min(cores.aic > 0 ? cores.aic : 2, model.max_cores);
  const int aiv = std::min(cores.aiv > 0 ? cores.aiv : 4, model.max_cores);
  int sched_threads = 1;
  if (config.aicpu_thread_num > 1)
    sched_threads = std::max(1, std::min(config.aicpu_thread_num - 1, model.max_aicpu_threads - 1));
  sched_threads = std::min(sched_threads, aic + aiv);

  DispatchBytes out;
  out.tasks = lp.tasks.size();
  out.blocks = lp.core_executions;
  out.scopes = lp.scopes.size();
  const int level = config.enable_chip_swimlane;
  if (level > 0) {
    out.chip_swimlane = SwimlaneBytes(lp, level, aic, aiv, sched_threads, model.clock_freq_hz);
    out.merged_trace = MergedTraceBytes(lp, level, config.enable_dep_gen);
  }
  if (config.enable_dep_gen) out.deps = DepsBytes(lp);
  if (config.enable_dump_args > 0) out.args_dump = ArgsDumpBytes(lp, config.enable_dump_args);
  if (config.enable_pmu > 0)
    out.pmu =
        PmuBytes(lp, config.backend_type == config::BackendType::kA5, config.enable_pmu, aic + aiv);
  if (config.enable_scope_stats) out.scope_stats = ScopeStatsBytes(lp, rings);
  if (level > 0 || config.enable_dep_gen) out.name_map = NameMapBytes(program);
  return out;
}

}  // namespace dfx::device
