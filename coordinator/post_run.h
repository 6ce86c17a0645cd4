// What happens after the passes of a run, the same at L2 and at L3 (spec
// §2.5–§2.7; the seed page's "Swimlane: onboard runs your workload twice"):
// the warning when the best-effort graph pass failed, and the automatic
// conversion of every chip_swimlane_records.json into a merged Perfetto
// trace beside it. Renderers (Graphviz, the scope-stats report) never run
// during a run: only their commands are printed (report.h).
//
// Functions, called from one thread.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace dfx::coordinator {

// The warning printed when a graph pass (the dep_gen capture) failed: what
// failed and why, where deps.json was expected, that the lanes fall back to
// anonymous task(rXtY), and that --enable-dep-gen reruns nothing.
std::string GraphPassWarning(const std::string& what, const std::string& error,
                             const std::filesystem::path& deps_json);

// For every directory of `files` (relative to `dfx_dir`; "" at L2,
// rank<N>/d<K> at L3) that holds chip_swimlane_records.json, runs
// `dfx-view swimlane <records> -o <dir>/merged_swimlane_<YYYYmmdd_HHMMSS>.json
// [--func-names <name map>]` as a child process (bounded by `timeout_s`; its
// console output is shown only when it fails). deps.json is picked up beside
// the records when it exists; without it the lanes are anonymous task(rXtY).
// A failure is printed to `out` (what failed, the raw records kept, the
// command to re-run), never returned. Returns the traces written, relative
// to `dfx_dir`.
std::vector<std::string> ConvertSwimlanes(std::FILE* out, const std::filesystem::path& dfx_dir,
                                          const std::vector<std::string>& files,
                                          double timeout_s = 600);

// The run summary (`dfx-view summary <dfx_dir> --brief`, or the full table
// when `full`) as a child process; its text, or a one-line note saying why
// there is none (no swimlane records, the viewer failed). `view` is how the
// printed "dig further" commands name dfx-view.
std::string RunSummaryText(const std::filesystem::path& dfx_dir, bool full, const std::string& view,
                           double timeout_s = 120);

}  // namespace dfx::coordinator
