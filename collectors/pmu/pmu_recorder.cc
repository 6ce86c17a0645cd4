// PMU recorder and pmu.csv writer (docs/formats.md §10).
//
// Counters are DERIVED from the work the task really did (PmuWork), never
// random. Constants: a request granule is 32 bytes (one UB/L1/L2 request),
// an L2 line is 128 bytes, an icache line holds 16 instructions (64 B).
//
// Derivation table (a2a3 column  /  a5 column  <-  formula):
//
//  type 1 ARITHMETIC_UTILIZATION
//    cube_fp16_exec              <- ceil(cube_fp_ops / 4096)   (one 16x16x16 fractal)
//    cube_int8_exec              <- ceil(cube_int_ops / 8192)  (one 16x32x16 fractal)
//    vec_fp32_exec               <- ceil(vec_fp32_ops / 64)    (64 lanes)
//    vec_fp16_128lane_exec       <- floor(vec_fp16_ops / 128)
//    vec_fp16_64lane_exec        <- ceil((vec_fp16_ops mod 128) / 64)  (the tail)
//    vec_int32_exec              <- ceil(vec_int_ops / 64)
//    vec_misc_exec               <- ceil(vec_misc_ops / 64)
//    a5 cube_fp_instr_busy / cube_int_instr_busy <- cube_cycles split by fp:int op share
//  type 2 PIPE_UTILIZATION
//    vec/cube/scalar/mte1/mte2/mte3 busy <- the matching *_cycles of the work
//    icache_req                  <- instructions
//    icache_miss                 <- distinct code lines = ceil(min(instructions, 4096) / 16);
//                                   all of them miss the first time this func runs on
//                                   this core (cold), 1/16 of them otherwise (conflicts)
//    a5 pmu_fix_instr_busy       <- fixpipe: ceil(bytes_written_l0c / 128) cycles
//  type 4 MEMORY (requests = bytes / 32)
//    ub/l1 read/write            <- bytes_read/written_ub, _l1
//    l2_read_req / l2_write_req  <- bytes_read_gm / bytes_written_gm (all GM traffic goes via L2)
//    main_read_req               <- L2 read misses x 128 / 32 (the L2 model below)
//    main_write_req              <- L2 victims (dirty write-backs) x 128 / 32
//    a5: main read/write from GM bytes; UB reads/writes split MTE (ext) vs vector:
//        MTE share = the GM-side bytes (UB->GM, GM->UB), vector share = the rest
//  type 5 MEMORY_L0 (requests = bytes / 32)
//    l0a/l0b read                <- bytes_read_l0, half A half B
//    l0a/l0b write               <- bytes_read_l1 (MTE1 L1->L0 moves), half A half B
//    l0c write                   <- bytes_written_l0c; l0c read (accumulate + fixpipe drain)
//                                   <- bytes_written_l0c
//  type 6 RESOURCE_CONFLICT (bank model over UB traffic: 16 banks in 4 groups; each
//    cycle in which a read and a write are both in flight collides on the same group
//    with p = 1/4 and the same bank with p = 1/16)
//    overlap = min(ub read requests, ub write requests)
//    bankgroup_stall_cycles      <- overlap / 4
//    bank_stall_cycles           <- overlap / 16
//    vec_resc_conflict_cycles    <- max(0, vec_cycles - vector instructions issued)
//    a5: stu_pmu_wctl_ub_cflt = bank stalls, ldu_pmu_ib_ub_cflt = bank-group stalls,
//        pmu_idc_aic_vec_instr_vf_busy_o = vec_cycles, idu_pmu_ins_iss_cnt = instructions
//  type 7 MEMORY_UB (bandwidth counters in 32-byte beats)
//    ub_read_bw_mte / ub_write_bw_mte   <- UB<->GM bytes moved by MTE (min of the two sides)
//    l2_write_bw                 <- bytes_written_gm
//    main_mem_write_bw           <- L2 victim bytes
//    ub_read_bw_vector / ub_write_bw_vector <- UB bytes not moved by MTE
//    ub_read_bw_scalar / ub_write_bw_scalar <- scalar_cycles / 8, scalar_cycles / 16
//    a5: total UB read/write beats, fixpipe->UB = min(l0c, ub writes), MTE and vector splits
//  type 8 L2_CACHE (per-core L2 share model, 128-byte lines)
//    Reads and writes of a func that is new on this core miss (first touch, allocate);
//    a func re-run on the same core hits except 1/8 of its lines (capacity). Each
//    miss allocates a line in the core's share (L2 bytes / cores); allocations past the
//    share evict a victim. AIC reads count on read port r0, AIV reads on r1.
//
// Storage: one preallocated shard per AICPU thread, each alone on its cache
// lines, with a cursor only that thread's writer moves (a load and a store,
// no atomic read-modify-write); rows are written per shard in collection
// order.
#include <algorithm>
#include <atomic>
#include <vector>

#include "collectors/internal/lazy_array.h"
#include "collectors/internal/record_text.h"
#include "collectors/pmu/pmu_columns.h"
#include "collectors/recorders.h"
#include "common/json_stream.h"
#include "common/log.h"
#include "config/run_config.h"

namespace dfx::collectors {
namespace {

using pmu_columns::EventColumns;
using pmu_columns::kMaxCounters;

constexpr uint64_t kGranule = 32;
constexpr uint64_t kL2Line = 128;
constexpr uint64_t kL2BytesA2A3 = 192ull << 20;
constexpr uint64_t kL2BytesA5 = 128ull << 20;

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
uint32_t Sat(uint64_t v) { return static_cast<uint32_t>(std::min<uint64_t>(v, UINT32_MAX)); }

struct Row {
  uint64_t task_id;
  uint64_t total_cycles;
  uint32_t core_id;
  int32_t func_id;
  uint8_t core_type;
  uint32_t counters[kMaxCounters];
};

struct alignas(64) Shard {
  internal::LazyArray<Row> rows;               // pages mapped as rows land in them
  alignas(64) std::atomic<uint64_t> count{0};  // read by PrefaultAhead meanwhile
};

// Per-core model state, touched only by the core's writer.
struct CoreState {
  int32_t last_func = -1;    // icache / L2 warmth
  uint64_t l2_resident = 0;  // lines allocated in this core's L2 share
};

struct L2Result {
  uint64_t read_hit, read_miss, write_hit, write_miss, read_victim, write_victim;
};

}  // namespace

struct PmuRecorder::Impl {
  int event_type = 2;
  bool a5 = false;
  const EventColumns* table = nullptr;
  int columns = 0;
  std::vector<Shard> shards;
  std::vector<CoreState> cores;
  uint64_t l2_share_lines = 0;
  std::atomic<uint64_t> dropped{0};

  L2Result L2(CoreState& core, bool cold, const PmuWork& w) {
    L2Result r{};
    uint64_t rl = CeilDiv(w.bytes_read_gm, kL2Line);
    uint64_t wl = CeilDiv(w.bytes_written_gm, kL2Line);
    r.read_miss = cold ? rl : rl / 8;
    r.read_hit = rl - r.read_miss;
    r.write_miss = cold ? wl : wl / 8;
    r.write_hit = wl - r.write_miss;
    auto allocate = [&](uint64_t lines) {
      uint64_t free = l2_share_lines - std::min(core.l2_resident, l2_share_lines);
      uint64_t victims = lines > free ? lines - free : 0;
      core.l2_resident = std::min(l2_share_lines, core.l2_resident + lines);
      return victims;
    };
    r.read_victim = allocate(r.read_miss);
    r.write_victim = allocate(r.write_miss);
    return r;
  }

  // The counters of `event_type` for one execution of `w` into c[0..columns).
  void Derive(const PmuWork& w, CoreKind kind, CoreState& core, int32_t func_id, uint32_t* c) {
    const bool cold = core.last_func != func_id;
    core.last_func = func_id;
    switch (event_type) {
      case 1:
        DeriveArithmetic(w, c);
        break;
      case 2:
        DerivePipe(w, cold, c);
        break;
      case 4:
        DeriveMemory(w, core, cold, c);
        break;
      case 5:
        DeriveMemoryL0(w, c);
        break;
      case 6:
        DeriveResourceConflict(w, c);
        break;
      case 7:
        DeriveMemoryUb(w, core, cold, c);
        break;
      case 8:
        DeriveL2Cache(w, kind, core, cold, c);
        break;
      default:
        break;
    }
  }

  // Requests of kGranule bytes.
  static uint32_t Requests(uint64_t bytes) { return Sat(CeilDiv(bytes, kGranule)); }
  // UB bytes moved by MTE: UB -> GM (read) and GM -> UB (written).
  static uint64_t UbMteRead(const PmuWork& w) {
    return std::min(w.bytes_read_ub, w.bytes_written_gm);
  }
  static uint64_t UbMteWrite(const PmuWork& w) {
    return std::min(w.bytes_written_ub, w.bytes_read_gm);
  }

  // Type 1, ARITHMETIC_UTILIZATION.
  void DeriveArithmetic(const PmuWork& w, uint32_t* c) const {
    if (!a5) {
      c[0] = Sat(CeilDiv(w.cube_fp_ops, 4096));
      c[1] = Sat(CeilDiv(w.cube_int_ops, 8192));
      c[2] = Sat(CeilDiv(w.vec_fp32_ops, 64));
      c[3] = Sat(w.vec_fp16_ops / 128);
      c[4] = Sat(CeilDiv(w.vec_fp16_ops % 128, 64));
      c[5] = Sat(CeilDiv(w.vec_int_ops, 64));
      c[6] = Sat(CeilDiv(w.vec_misc_ops, 64));
      return;
    }
    uint64_t ops = w.cube_fp_ops + w.cube_int_ops;
    uint64_t fp =
        ops ? static_cast<uint64_t>(static_cast<long double>(w.cube_cycles) * w.cube_fp_ops / ops)
            : 0;
    c[0] = Sat(fp);
    c[1] = Sat(ops ? w.cube_cycles - fp : 0);
  }

  // Type 2, PIPE_UTILIZATION.
  void DerivePipe(const PmuWork& w, bool cold, uint32_t* c) const {
    const uint64_t distinct_lines = CeilDiv(std::min<uint64_t>(w.instructions, 4096), 16);
    const uint64_t icache_miss = cold ? distinct_lines : distinct_lines / 16;
    c[0] = Sat(w.vec_cycles);
    c[1] = Sat(w.cube_cycles);
    c[2] = Sat(w.scalar_cycles);
    c[3] = Sat(w.mte1_cycles);
    c[4] = Sat(w.mte2_cycles);
    c[5] = Sat(w.mte3_cycles);
    if (!a5) {
      c[6] = Sat(icache_miss);
      c[7] = Sat(w.instructions);
    } else {
      c[6] = Sat(w.instructions);
      c[7] = Sat(icache_miss);
      c[8] = Sat(CeilDiv(w.bytes_written_l0c, 128));
    }
  }

  // Type 4, MEMORY.
  void DeriveMemory(const PmuWork& w, CoreState& core, bool cold, uint32_t* c) {
    if (!a5) {
      L2Result l2 = L2(core, cold, w);
      c[0] = Requests(w.bytes_read_ub);
      c[1] = Requests(w.bytes_written_ub);
      c[2] = Requests(w.bytes_read_l1);
      c[3] = Requests(w.bytes_written_l1);
      c[4] = Requests(w.bytes_read_gm);
      c[5] = Requests(w.bytes_written_gm);
      c[6] = Sat(l2.read_miss * (kL2Line / kGranule));
      c[7] = Sat((l2.read_victim + l2.write_victim) * (kL2Line / kGranule));
      return;
    }
    const uint64_t ub_mte_rd = UbMteRead(w), ub_mte_wr = UbMteWrite(w);
    c[0] = Requests(w.bytes_read_gm);
    c[1] = Requests(w.bytes_written_gm);
    c[2] = Requests(ub_mte_rd);
    c[3] = Requests(w.bytes_read_ub - ub_mte_rd);
    c[4] = Requests(ub_mte_wr);
    c[5] = Requests(w.bytes_written_ub - ub_mte_wr);
    c[6] = Requests(w.bytes_read_l1);
    c[7] = Requests(w.bytes_written_l1);
  }

  // Type 5, MEMORY_L0.
  void DeriveMemoryL0(const PmuWork& w, uint32_t* c) const {
    const uint32_t l0_rd_half = Requests(w.bytes_read_l0 / 2);
    const uint32_t l0_wr_half = Requests(w.bytes_read_l1 / 2);
    const uint32_t l0c = Requests(w.bytes_written_l0c);
    c[0] = l0_rd_half;
    c[1] = l0_wr_half;
    c[2] = l0_rd_half;
    c[3] = l0_wr_half;
    c[4] = l0c;  // a5: fixpipe drains every accumulated byte
    c[5] = l0c;  // a5: accumulate reads
    if (a5) c[6] = l0c;
  }

  // Type 6, RESOURCE_CONFLICT.
  void DeriveResourceConflict(const PmuWork& w, uint32_t* c) const {
    const uint64_t overlap =
        std::min(CeilDiv(w.bytes_read_ub, kGranule), CeilDiv(w.bytes_written_ub, kGranule));
    if (!a5) {
      const uint64_t vec_instr = CeilDiv(w.vec_fp32_ops, 64) + CeilDiv(w.vec_fp16_ops, 128) +
                                 CeilDiv(w.vec_int_ops, 64) + CeilDiv(w.vec_misc_ops, 64);
      const uint64_t conflict = w.vec_cycles > vec_instr ? w.vec_cycles - vec_instr : 0;
      c[0] = Sat(overlap / 4);
      c[1] = Sat(overlap / 16);
      c[2] = Sat(conflict);
      return;
    }
    c[0] = Sat(overlap / 16);
    c[1] = Sat(overlap / 4);
    c[2] = Sat(w.vec_cycles);
    c[3] = Sat(w.instructions);
  }

  // Type 7, MEMORY_UB.
  void DeriveMemoryUb(const PmuWork& w, CoreState& core, bool cold, uint32_t* c) {
    const uint64_t ub_mte_rd = UbMteRead(w), ub_mte_wr = UbMteWrite(w);
    if (!a5) {
      L2Result l2 = L2(core, cold, w);
      c[0] = Requests(ub_mte_rd);
      c[1] = Requests(w.bytes_written_gm);
      c[2] = Sat((l2.read_victim + l2.write_victim) * (kL2Line / kGranule));
      c[3] = Requests(ub_mte_wr);
      c[4] = Requests(w.bytes_read_ub - ub_mte_rd);
      c[5] = Requests(w.bytes_written_ub - ub_mte_wr);
      c[6] = Sat(w.scalar_cycles / 8);
      c[7] = Sat(w.scalar_cycles / 16);
      return;
    }
    c[0] = Requests(w.bytes_read_ub);
    c[1] = Requests(w.bytes_written_ub);
    c[2] = Requests(std::min(w.bytes_written_l0c, w.bytes_written_ub));
    c[3] = Requests(ub_mte_wr);
    c[4] = Requests(ub_mte_rd);
    c[5] = Requests(w.bytes_read_ub - ub_mte_rd);
    c[6] = Requests(w.bytes_written_ub - ub_mte_wr);
  }

  // Type 8, L2_CACHE.
  void DeriveL2Cache(const PmuWork& w, CoreKind kind, CoreState& core, bool cold, uint32_t* c) {
    L2Result l2 = L2(core, cold, w);
    if (!a5) {
      const bool r0 = kind == CoreKind::kAic;
      c[0] = Sat(l2.write_hit);
      c[1] = Sat(l2.write_miss);
      c[2] = Sat(r0 ? l2.read_hit : 0);
      c[3] = Sat(r0 ? l2.read_miss : 0);
      c[4] = Sat(r0 ? 0 : l2.read_hit);
      c[5] = Sat(r0 ? 0 : l2.read_miss);
      return;
    }
    c[0] = Sat(l2.read_hit);
    c[1] = Sat(l2.read_miss);
    c[2] = Sat(l2.read_victim);
    c[3] = Sat(l2.write_hit);
    c[4] = Sat(l2.write_miss);
    c[5] = Sat(l2.write_victim);
  }
};

PmuRecorder::PmuRecorder(int event_type, const ChipLayout& layout, const CapacityHint& hint)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (!config::IsValidPmuEventType(event_type)) {
    DFX_LOG_WARN("Invalid PMU event type {}, using default (PIPE_UTILIZATION=2)", event_type);
    event_type = 2;
  }
  m.event_type = event_type;
  m.a5 = layout.backend == "a5";
  m.table = &pmu_columns::ColumnsOf(m.a5, event_type);
  m.columns = pmu_columns::CountOf(*m.table);
  const size_t threads = static_cast<size_t>(std::max(1, layout.sched_threads));
  m.shards = std::vector<Shard>(threads);
  // A shard may retire every execution when one thread serves all cores.
  const uint64_t per_shard = std::max<uint64_t>(hint.core_executions, 1024);
  for (auto& s : m.shards) s.rows.Reset(per_shard);
  m.cores.resize(std::max<size_t>(layout.core_types.size(), 1));
  m.l2_share_lines = (m.a5 ? kL2BytesA5 : kL2BytesA2A3) / kL2Line / m.cores.size();
}

PmuRecorder::~PmuRecorder() = default;

void PmuRecorder::PrefaultAhead() const {
  // Which scheduler thread retires a task depends on how the run goes.
  for (const Shard& s : impl_->shards)
    s.rows.PopulateAhead(s.count.load(std::memory_order_relaxed));
}

void PmuRecorder::Record(uint32_t thread, uint32_t core_id, uint64_t task_id, int32_t func_id,
                         CoreKind core_type, const PmuWork& work) {
  Impl& m = *impl_;
  if (thread >= m.shards.size() || core_id >= m.cores.size()) {
    m.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Shard& s = m.shards[thread];
  const uint64_t i = s.count.load(std::memory_order_relaxed);  // one writer per shard
  if (i >= s.rows.size()) {
    m.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  s.rows.MapAhead(i);
  s.count.store(i + 1, std::memory_order_relaxed);
  Row& r = s.rows[i];
  r.task_id = task_id;
  r.total_cycles = work.total_cycles;
  r.core_id = core_id;
  r.func_id = func_id;
  r.core_type = static_cast<uint8_t>(core_type);
  std::fill(r.counters, r.counters + kMaxCounters, 0u);
  m.Derive(work, core_type, m.cores[core_id], func_id, r.counters);
}

std::vector<std::string> PmuRecorder::CounterColumns() const {
  std::vector<std::string> out;
  for (int i = 0; i < impl_->columns; ++i) out.emplace_back(impl_->table->names[i]);
  return out;
}

Status PmuRecorder::Export(const fs::path& path) const {
  const Impl& m = *impl_;
  uint64_t rows = 0;
  for (const auto& s : m.shards) rows += std::min<uint64_t>(s.count.load(), s.rows.size());
  uint64_t dropped = m.dropped.load();
  if (dropped > 0) {
    DFX_LOG_WARN(
        "PMU reconcile: {} records dropped on device side (buffers full). Raise the "
        "CapacityHint core_executions bound.",
        dropped);
  }
  if (rows == 0) return NotFound("no PMU rows collected (" + path.string() + " not written)");
  ChunkedWriter w;
  DFX_RETURN_IF_ERROR(w.Open(path));
  w.Append(pmu_columns::kFixedHeader.view());
  for (int i = 0; i < m.columns; ++i) {
    w.Append(',');
    w.Append(m.table->names[i]);
  }
  w.Append(JoinedText<",", pmu_columns::kEventType, "\n">);
  for (size_t t = 0; t < m.shards.size(); ++t) {
    const Shard& s = m.shards[t];
    uint64_t n = std::min<uint64_t>(s.count.load(), s.rows.size());
    internal::RecordText x(w);
    for (uint64_t i = 0; i < n; ++i) {
      const Row& r = s.rows[i];
      x.Int(t).Char(',').Int(r.core_id).Lit(",0x").Hex16(r.task_id).Char(',').Int(r.func_id);
      x.Char(',').Int(r.core_type).Char(',').Int(r.total_cycles);
      for (int k = 0; k < m.columns; ++k) x.Char(',').Int(r.counters[k]);
      x.Char(',').Int(m.event_type).Char('\n');
    }
  }
  return w.Commit();
}

}  // namespace dfx::collectors
