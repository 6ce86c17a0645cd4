// `dfx-view export`: the task table of a run — one row per task row of every
// dispatch (rank, dispatch, program, task, kernel, core, start, end,
// dispatch, finish and, where pmu.csv exists, its counters) — as CSV or as
// an SQLite database, so it can be queried the way `nsys export` output is.
//
// Columns, in order: rank, dispatch, program, task_id ("0x" + 16 hex
// digits), task ("t3" / "r1t3"), func_id (-1 = unknown), kernel, core_id,
// core_type (aic | aiv), start_us, end_us, dispatch_us, finish_us (empty /
// NULL below level 2), exec_us, then every PMU counter column met in the
// run (pmu_total_cycles first; empty / NULL where a row has none). Times are
// µs from the dispatch's own base on its chip clock, rounded to 3 decimals.
// SQLite: table `tasks` with those columns, plus table `dispatches` (rank,
// dispatch, program, rows). The file is written under a temporary name and
// renamed when complete.
//
// Functions; called from one thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>

#include "common/status.h"

namespace dfx::view {

struct ExportOptions {
  std::filesystem::path input;                  // as ListRunDispatches takes it
  std::string format = "csv";                   // csv | sqlite
  std::optional<std::filesystem::path> output;  // default <input>/tasks.csv | tasks.sqlite
};

struct ExportResult {
  std::filesystem::path output;
  uint64_t rows = 0;
  uint64_t dispatches = 0;
};

Result<ExportResult> ExportTasks(const ExportOptions& options, std::ostream& err);

}  // namespace dfx::view
