// The columns of pmu.csv (docs/formats.md §10), written once for its writer
// (PmuRecorder::Export), its reader (pmu_reader.h) and the PMU summary:
// six fixed columns, the counters of the run's event type (per backend),
// then kEventType. Constants only.
#pragma once

#include <cstddef>

#include "collectors/key_text.h"

namespace dfx::collectors::pmu_columns {

// The fixed columns, in file order, before the counters.
inline constexpr KeyText kThreadId = "thread_id";
inline constexpr KeyText kCoreId = "core_id";
inline constexpr KeyText kTaskId = "task_id";  // "0x" and 16 hex digits
inline constexpr KeyText kFuncId = "func_id";
inline constexpr KeyText kCoreType = "core_type";
inline constexpr KeyText kTotalCycles = "pmu_total_cycles";
inline constexpr const char* kFixed[] = {kThreadId.c_str(), kCoreId.c_str(),
                                         kTaskId.c_str(),   kFuncId.c_str(),
                                         kCoreType.c_str(), kTotalCycles.c_str()};
// The header's fixed part, "thread_id,core_id,...,pmu_total_cycles".
inline constexpr auto kFixedHeader = JoinedKey<kThreadId, ",", kCoreId, ",", kTaskId, ",", kFuncId,
                                               ",", kCoreType, ",", kTotalCycles>;
// The last column.
inline constexpr KeyText kEventType = "event_type";

// PIPE_UTILIZATION's busy-cycle counters, named here for the summary's
// per-pipe utilisation (a2a3, then a5).
inline constexpr KeyText kVecBusy = "vec_busy_cycles";
inline constexpr KeyText kCubeBusy = "cube_busy_cycles";
inline constexpr KeyText kScalarBusy = "scalar_busy_cycles";
inline constexpr KeyText kMte1Busy = "mte1_busy_cycles";
inline constexpr KeyText kMte2Busy = "mte2_busy_cycles";
inline constexpr KeyText kMte3Busy = "mte3_busy_cycles";
inline constexpr KeyText kA5VecBusy = "pmu_idc_aic_vec_busy_o";
inline constexpr KeyText kA5CubeBusy = "cube_instr_busy";
inline constexpr KeyText kA5ScalarBusy = "scalar_instr_busy";
inline constexpr KeyText kA5Mte1Busy = "mte1_instr_busy";
inline constexpr KeyText kA5Mte2Busy = "mte2_instr_busy";
inline constexpr KeyText kA5Mte3Busy = "mte3_instr_busy";
inline constexpr KeyText kA5FixpipeBusy = "pmu_fix_instr_busy";

// The counter columns of one event type, in file order (nullptr after the last).
inline constexpr int kMaxCounters = 10;
struct EventColumns {
  int type;
  const char* names[kMaxCounters];
};

inline constexpr EventColumns kA2A3Columns[] = {
    {1,
     {"cube_fp16_exec", "cube_int8_exec", "vec_fp32_exec", "vec_fp16_128lane_exec",
      "vec_fp16_64lane_exec", "vec_int32_exec", "vec_misc_exec"}},
    {2,
     {kVecBusy.c_str(), kCubeBusy.c_str(), kScalarBusy.c_str(), kMte1Busy.c_str(),
      kMte2Busy.c_str(), kMte3Busy.c_str(), "icache_miss", "icache_req"}},
    {4,
     {"ub_read_req", "ub_write_req", "l1_read_req", "l1_write_req", "l2_read_req", "l2_write_req",
      "main_read_req", "main_write_req"}},
    {5,
     {"l0a_read_req", "l0a_write_req", "l0b_read_req", "l0b_write_req", "l0c_read_req",
      "l0c_write_req"}},
    {6, {"bankgroup_stall_cycles", "bank_stall_cycles", "vec_resc_conflict_cycles"}},
    {7,
     {"ub_read_bw_mte", "l2_write_bw", "main_mem_write_bw", "ub_write_bw_mte", "ub_read_bw_vector",
      "ub_write_bw_vector", "ub_read_bw_scalar", "ub_write_bw_scalar"}},
    {8,
     {"write_cache_hit", "write_cache_miss_allocate", "r0_read_cache_hit",
      "r0_read_cache_miss_allocate", "r1_read_cache_hit", "r1_read_cache_miss_allocate"}},
};

inline constexpr EventColumns kA5Columns[] = {
    {1, {"cube_fp_instr_busy", "cube_int_instr_busy"}},
    {2,
     {kA5VecBusy.c_str(), kA5CubeBusy.c_str(), kA5ScalarBusy.c_str(), kA5Mte1Busy.c_str(),
      kA5Mte2Busy.c_str(), kA5Mte3Busy.c_str(), "icache_req", "icache_miss",
      kA5FixpipeBusy.c_str()}},
    {4,
     {"bif_sc_pmu_read_main_instr_core", "bif_sc_pmu_write_main_instr_core",
      "pmu_aiv_ext_rd_ub_instr", "ub_pmu_vec_rd_ub_acc", "pmu_aiv_ext_wr_ub_instr",
      "ub_pmu_vec_wr_ub_acc", "pmu_rd_l1_instr", "pmu_wr_l1_instr"}},
    {5,
     {"cube_sc_pmu_read_l0a_instr", "pmu_wr_l0a_instr", "cube_sc_pmu_read_l0b_instr",
      "pmu_wr_l0b_instr", "fixp_rd_l0c_instr", "cube_sc_pmu_read_l0c_instr",
      "cube_sc_pmu_write_l0c_instr"}},
    {6,
     {"stu_pmu_wctl_ub_cflt", "ldu_pmu_ib_ub_cflt", "pmu_idc_aic_vec_instr_vf_busy_o",
      "idu_pmu_ins_iss_cnt"}},
    {7,
     {"pmu_rd_acc_ub_instr_p", "pmu_wr_acc_ub_instr_p", "pmu_fix_wr_ub_instr",
      "mte_sc_pmu_write_acc_ub_instr_0", "mte_sc_pmu_read_acc_ub_instr_0", "ub_pmu_vec_rd_ub_acc",
      "ub_pmu_vec_wr_ub_acc"}},
    {8,
     {"bif_sc_pmu_ar_close_l2_hit_core", "bif_sc_pmu_ar_close_l2_miss_core",
      "bif_sc_pmu_ar_close_l2_victim_core", "bif_sc_pmu_aw_close_l2_hit_core",
      "bif_sc_pmu_aw_close_l2_miss_core", "bif_sc_pmu_aw_close_l2_victim_core"}},
};

// The counter columns of `type` on the a5 backend (`a5`) or a2a3;
// PIPE_UTILIZATION's (type 2) for a type without a table.
constexpr const EventColumns& ColumnsOf(bool a5, int type) {
  const EventColumns* tables = a5 ? kA5Columns : kA2A3Columns;
  for (size_t i = 0; i < std::size(kA2A3Columns); ++i) {
    if (tables[i].type == type) return tables[i];
  }
  return tables[1];
}

// How many counters `columns` names.
constexpr int CountOf(const EventColumns& columns) {
  int n = 0;
  while (n < kMaxCounters && columns.names[n] != nullptr) ++n;
  return n;
}

}  // namespace dfx::collectors::pmu_columns
