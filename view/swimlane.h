// `dfx-view swimlane`: chip_swimlane_records.json (+ deps.json, name map) →
// merged Perfetto / Chrome trace (docs/formats.md §4) and the console task
// statistics (§4.9). The run-level timeline of an L3 run is run_timeline.h.
//
// Reads the records with the streaming reader and writes the trace streaming,
// one event per line. Called from one thread.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>

#include "common/status.h"
#include "view/trace_writer.h"

namespace dfx::view {

struct SwimlaneOptions {
  std::filesystem::path input;                      // records file
  std::optional<std::filesystem::path> output;      // default <input dir>/merged_swimlane.json
                                                    // (.pftrace with kProto)
  TraceFormat format = TraceFormat::kJson;          // --format
  std::optional<std::filesystem::path> deps_json;   // default <input dir>/deps.json
  std::optional<std::filesystem::path> func_names;  // default: unique sibling name_map*.json
  bool overhead = false;
  bool verbose = false;
  bool print_statistics = true;
  TraceFilter filter;  // --window, --no-flows
};

// What RunSwimlane did.
struct SwimlaneReport {
  std::filesystem::path trace;  // written, or the run's own conversion when up to date
  bool up_to_date = false;      // nothing written: the run's own conversion is current
};

// Converts one records file. Warnings go to `err`, statistics and progress to `out`.
Result<SwimlaneReport> RunSwimlane(const SwimlaneOptions& options, std::ostream& out,
                                   std::ostream& err);

}  // namespace dfx::view
