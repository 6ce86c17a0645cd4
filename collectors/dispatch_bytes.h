// What one dispatch of a program writes, per artifact, as estimated before
// the run (device/output_estimate.h makes it; `dfx-rank-agent exec
// --check-only --estimate` prints it as one JSON line; the coordinator's
// run estimate, coordinator/run_estimate.h, reads it). Plain value type and
// its JSON codec; any thread.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace dfx::collectors {

struct DispatchBytes {
  uint64_t tasks = 0;   // submits
  uint64_t blocks = 0;  // SPMD blocks run (sum of block_num)
  uint64_t scopes = 0;  // scopes, the root one included
  // Bytes per artifact (0 = the collector is off or writes nothing).
  uint64_t chip_swimlane = 0;  // chip_swimlane_records.json
  uint64_t deps = 0;           // deps.json
  uint64_t args_dump = 0;      // args_dump/args_dump.json + args_dump/args.bin
  uint64_t pmu = 0;            // pmu.csv
  uint64_t scope_stats = 0;    // scope_stats/scope_stats.jsonl
  uint64_t name_map = 0;       // name_map*.json (swimlane or dep_gen on)
  // merged_swimlane_*.json, were the records converted (dfx-view swimlane):
  // the caller decides whether the run converts them.
  uint64_t merged_trace = 0;
  bool operator==(const DispatchBytes&) const = default;
};

// {"tasks":N,"blocks":N,"scopes":N,"chip_swimlane":B,...}: one line.
std::string DispatchBytesJson(const DispatchBytes& bytes);
// The line back; `origin` names its source in errors (every key required,
// each a non-negative integer).
Result<DispatchBytes> ParseDispatchBytes(const std::string& text, const std::string& origin);

}  // namespace dfx::collectors
