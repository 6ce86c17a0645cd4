// What the coordinator prints after a run (design.md §10, spec §2.9): every
// artifact's path and the exact command that would render it. No renderer
// ever runs during a run. Paths are shell-quoted.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/status.h"
#include "config/run_config.h"
#include "protocol/messages.h"

namespace dfx::coordinator {

// Prints the artifacts under `dfx_dir` (paths relative to it, any order) with
// their render commands, grouped by directory. The deps hint is printed only
// when the user asked for dep_gen (spec §2.6).
void PrintArtifacts(std::FILE* out, const std::filesystem::path& dfx_dir,
                    std::vector<std::string> files, const config::RunConfig& requested);

// The automatic post-run conversion (spec §2.5, §2.7): for every directory of
// `files` (relative to `dfx_dir`) that holds chip_swimlane_records.json, runs
// `dfx-view swimlane <records> -o <dir>/merged_swimlane_<YYYYmmdd_HHMMSS>.json
// [--func-names <name map>]` as a child process (bounded by `timeout_s`; its
// console output is discarded unless it fails). deps.json is picked up beside
// the records when it exists; without it the lanes are anonymous task(rXtY).
// A failure is printed to `out` (what failed, the raw records kept, the
// command to re-run), never returned. Returns the traces written, relative to
// `dfx_dir`.
std::vector<std::string> ConvertSwimlanes(std::FILE* out, const std::filesystem::path& dfx_dir,
                                          const std::vector<std::string>& files,
                                          double timeout_s = 600);

}  // namespace dfx::coordinator
