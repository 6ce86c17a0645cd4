// What the run-level viewers (summary, export, the run timeline) read: the
// dispatch directories of a run and, per dispatch, its records, deps.json,
// name map and program name. One place decides what an input directory is
// and how a dispatch's siblings are found, so the viewers agree.
//
// Functions over the filesystem; thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "collectors/dep_gen/deps_reader.h"
#include "collectors/name_map.h"
#include "collectors/swimlane/swimlane_reader.h"
#include "common/status.h"

namespace dfx::view {

// One dispatch directory of a run.
struct RunDispatch {
  int32_t rank = 0;
  uint32_t k = 0;
  std::filesystem::path dir;  // holds its artifacts
  std::string program;        // the plan's name (dispatch_program.json) or the orchestrator's
};

// The dispatches under `input`, by (rank, k): W/dfx_outputs of an L3 run
// (every rank<N>/d<K>/), one rank<N>/d<K>/ directory, or the flat
// dfx_outputs/ of an L2 run (rank 0, d0). Directories without
// chip_swimlane_records.json are listed too (callers say what is missing).
// The error names `input` and what was expected.
Result<std::vector<RunDispatch>> ListRunDispatches(const std::filesystem::path& input);

// The input a run-level viewer uses when none is given: ./dfx_outputs when
// it exists, else the current directory when it looks like one (a run
// manifest, rank<N>/ directories or records in it); nullopt otherwise.
std::optional<std::filesystem::path> DefaultRunInput();

// The name map of the artifacts in `dir`: `explicit_path` when given (an
// unreadable one is an error), else the unique sibling name_map*.json. A
// sibling that cannot be read, or several siblings, give a warning on `err`
// and an empty map (lanes then fall back to func_<id> names).
Result<collectors::NameMap> LoadNameMapFor(
    const std::filesystem::path& dir, const std::optional<std::filesystem::path>& explicit_path,
    const std::string& what, std::ostream& err);

// deps.json at `path` when it exists and reads; a warning on `err` when it
// exists but cannot be read.
std::optional<collectors::TaskGraph> LoadDepsIfPresent(const std::filesystem::path& path,
                                                       std::ostream& err);

// One dispatch's timing data, loaded.
struct DispatchData {
  collectors::SwimlaneRecords records;
  std::optional<collectors::TaskGraph> deps;
  collectors::NameMap names;
};

// Reads the records (all of them in memory, phases streamed), deps.json and
// name map of `d`. NotFound when the dispatch has no records.
Result<DispatchData> LoadDispatch(const RunDispatch& d, std::ostream& err);

}  // namespace dfx::view
