// `dfx-view swimlane --run W/dfx_outputs`: the run-level timeline of an L3
// run, every rank<N>/d<K>/chip_swimlane_records.json merged into one trace,
// each rank in its own pid range, each dispatch at its start from the run
// manifest (keys documented in run_timeline.cc). Called from one thread.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>

#include "common/status.h"

namespace dfx::view {

// `run_dir` is W/dfx_outputs. Default output: <run_dir>/merged_run_swimlane.json.
// Progress and the summary go to `out`, warnings to `err`.
Status RunSwimlaneForRun(const std::filesystem::path& run_dir,
                         const std::optional<std::filesystem::path>& output, bool verbose,
                         std::ostream& out, std::ostream& err);

}  // namespace dfx::view
