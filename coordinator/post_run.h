// What happens after the passes of a run, the same at L2 and at L3
// (docs/run-config.md §2.5–§2.7; an onboard swimlane run runs the workload
// twice):
// the warning when the best-effort graph pass failed, and the automatic
// conversion of every chip_swimlane_records.json into a merged Perfetto
// trace beside it. Renderers (Graphviz, the scope-stats report) never run
// during a run: only their commands are printed (report.h).
//
// Functions, called from one thread (ConvertSwimlanes starts its own
// threads and joins them before it returns).
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/timeouts.h"

namespace dfx::coordinator {

// The warning printed when a graph pass (the dep_gen capture) failed: what
// failed and why, where deps.json was expected, that the lanes fall back to
// anonymous task(rXtY), and that --enable-dep-gen reruns nothing.
std::string GraphPassWarning(const std::string& what, const std::string& error,
                             const std::filesystem::path& deps_json);

// For every directory of `files` (relative to `dfx_dir`; "" at L2,
// rank<N>/d<K> at L3) that holds chip_swimlane_records.json, runs
// `dfx-view swimlane <records> -o <dir>/merged_swimlane_<YYYYmmdd_HHMMSS>.json
// [--func-names <name map>]` as a child process (bounded by `timeout`
// each; its console output is shown only when it fails), up to
// ConvertJobs(jobs, directories) of them at a time. deps.json is picked up
// beside the records when it exists; without it the lanes are anonymous
// task(rXtY). A failure is printed to `out` (what failed, the raw records
// kept, the command to re-run), never returned; dfx-view writes under a
// temporary name and renames when complete, so a failed or killed converter
// leaves no half-written trace under the final name. Returns the traces written, relative to
// `dfx_dir`; traces and failures both in directory order (sorted), however
// the conversions interleaved.
std::vector<std::string> ConvertSwimlanes(std::FILE* out, const std::filesystem::path& dfx_dir,
                                          const std::vector<std::string>& files,
                                          Timeouts::Duration timeout, unsigned jobs = 0);

// When an L3 run writes its per-dispatch merged traces (--swimlane-traces).
// A sim L3 run of 8 ranks x 10 dispatches spent 55% of its wall converting
// 80 traces (2.4x the bytes gathered) that nobody had asked for yet; the
// reference converts onboard runs only.
enum class SwimlaneTraces {
  kAuto,   // onboard: eager, as the reference; sim: lazy
  kEager,  // after the run, one merged trace per rank<N>/d<K> (ConvertSwimlanes)
  kLazy,   // none after the run: printed how to get them (LazySwimlaneHint)
};
// Whether an L3 run converts after the run (kAuto resolved by `onboard`).
bool ConvertSwimlanesEagerly(SwimlaneTraces mode, bool onboard);
// What a lazy L3 run prints instead of converting: one line with the
// commands that write the run-level trace (`dfx-view swimlane --run
// <dfx_dir>`) and one dispatch's trace (the first of `files`, relative to
// `dfx_dir`), and where every dispatch's command is listed; "" when `files`
// holds no records. `view` names dfx-view as ViewCommand() does.
std::string LazySwimlaneHint(const std::filesystem::path& dfx_dir,
                             const std::vector<std::string>& files, const std::string& view);

// How many conversions run at once: `requested`, or with 0 the number of
// cores (at least 1); never more than `conversions` (nor fewer than 1).
unsigned ConvertJobs(unsigned requested, size_t conversions);

// The run summary (`dfx-view summary <dfx_dir> --brief`, or the full table
// when `full`) as a child process; its text, or a one-line note saying why
// there is none (no swimlane records, the viewer failed). `view` is how the
// printed "dig further" commands name dfx-view. With a `report` path the same
// process writes the run report there too (`--report`, from the summary it
// computed anyway); a report that could not be written is not there after.
std::string RunSummaryText(const std::filesystem::path& dfx_dir, bool full, const std::string& view,
                           const std::filesystem::path& report = {}, double timeout_s = 120);

}  // namespace dfx::coordinator
