// `dfx-view swimlane`: chip_swimlane_records.json (+ deps.json, name map) →
// merged Perfetto / Chrome trace (artifacts.md §4) and the console task
// statistics (§4.9). Also the run-level timeline (`--run W/dfx_outputs`) that
// merges every rank<N>/d<K>/chip_swimlane_records.json into one trace.
//
// Both read records with the streaming reader and write the trace streaming,
// one event per line. Called from one thread.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>

#include "common/status.h"

namespace dfx::view {

struct SwimlaneOptions {
  std::filesystem::path input;                      // records file
  std::optional<std::filesystem::path> output;      // default <input dir>/merged_swimlane.json
  std::optional<std::filesystem::path> deps_json;   // default <input dir>/deps.json
  std::optional<std::filesystem::path> func_names;  // default: unique sibling name_map*.json
  bool overhead = false;
  bool verbose = false;
  bool print_statistics = true;
};

// Converts one records file. Warnings go to `err`, statistics and progress to `out`.
Status RunSwimlane(const SwimlaneOptions& options, std::ostream& out, std::ostream& err);

// Run-level timeline: `run_dir` is W/dfx_outputs holding rank<N>/d<K>/ folders
// and optionally run_manifest.json (keys documented in swimlane.cc).
// Default output: <run_dir>/merged_run_swimlane.json.
Status RunSwimlaneForRun(const std::filesystem::path& run_dir,
                         const std::optional<std::filesystem::path>& output, bool verbose,
                         std::ostream& out, std::ostream& err);

}  // namespace dfx::view
