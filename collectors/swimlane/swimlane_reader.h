// A minimal streaming reader of chip_swimlane_records.json (artifacts.md §2.3)
// and the (core_id, reg_task_id) join of §2.6. Used by the collectors' tests to
// check what the writer wrote; the full viewers live in view/.
//
// Streaming: rows are converted into the compact structs below as the parser
// meets them and discarded from the JSON tree, so memory is proportional to
// the rows kept, not to a DOM of the file.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"

namespace dfx::collectors {

struct SwimlaneAicoreRow {
  uint32_t core_id = 0;
  uint64_t task_token_raw = 0;
  uint32_t reg_task_id = 0;
  uint64_t start_cycles = 0;
  uint64_t end_cycles = 0;
  uint32_t receive_to_start_cycles = 0;  // 0 for legacy 5-column rows
};

struct SwimlaneAicpuRow {
  uint32_t core_id = 0;
  uint32_t reg_task_id = 0;
  uint64_t dispatch_cycles = 0;
  uint64_t finish_cycles = 0;
};

struct SwimlaneRecords {
  int level = 0;
  Json metadata;  // the metadata object as written
  std::vector<SwimlaneAicoreRow> aicore_tasks;
  std::vector<SwimlaneAicpuRow> aicpu_tasks;
  bool has_scheduler_phases = false;                // key present
  std::vector<std::vector<Json>> scheduler_phases;  // [thread][phase object]
  bool has_orchestrator_phases = false;             // key present
  std::vector<std::vector<Json>> orchestrator_phases;
  std::vector<std::string> top_level_keys;  // in file order
};

// Reads and validates (level in 1..4, clock_freq_hz > 0) a records file.
Result<SwimlaneRecords> ReadSwimlaneRecords(const std::filesystem::path& path);

// One logical execution after the §2.6 join, in cycles (not µs).
struct SwimlaneTask {
  uint64_t task_id = 0;  // task_token_raw
  uint32_t core_id = 0;
  uint32_t reg_task_id = 0;
  uint64_t start_cycles = 0, end_cycles = 0;
  uint64_t dispatch_cycles = 0, finish_cycles = 0;  // 0 at level 1
  uint32_t receive_to_start_cycles = 0;
};

struct SwimlaneJoin {
  std::vector<SwimlaneTask> tasks;  // sorted by task_id (stable)
  uint64_t unmatched_aicpu = 0;     // aicpu rows with no AICore row
};

// Level 1: one task per AICore row. Level >= 2: one task per AICPU row that
// matches an AICore row on (core_id, reg_task_id); others are counted.
SwimlaneJoin JoinSwimlaneTasks(const SwimlaneRecords& records);

}  // namespace dfx::collectors
