// What the coordinator prints after a run (docs/design.md §10, docs/run-config.md §2.9): every
// artifact's path and the exact command that would render it. No renderer
// ever runs during a run. Paths are shell-quoted.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "collectors/run_manifest.h"
#include "common/status.h"
#include "config/run_config.h"

namespace dfx::coordinator {

// Prints the artifacts under `dfx_dir` (paths relative to it, any order) with
// their render commands, grouped by directory. The deps hint is printed only
// when the user asked for dep_gen (docs/run-config.md §2.6). `view` is how the commands
// name dfx-view (ViewCommand()).
std::string FormatArtifacts(const std::filesystem::path& dfx_dir, std::vector<std::string> files,
                            const config::RunConfig& requested,
                            const std::string& view = "dfx-view");
void PrintArtifacts(std::FILE* out, const std::filesystem::path& dfx_dir,
                    std::vector<std::string> files, const config::RunConfig& requested,
                    const std::string& view = "dfx-view");

// Writes FormatArtifacts' listing, under a header, to <dfx_dir>/README.txt
// (collectors::kArtifactsReadmeFile; atomically). When `files` holds the run
// report (collectors::kRunReportFile) the header names it first.
Status WriteArtifactsReadme(const std::filesystem::path& dfx_dir, std::vector<std::string> files,
                            const config::RunConfig& requested, const std::string& view);

// How a printed hint names dfx-view so that it works when copied: "dfx-view"
// when PATH finds the dfx-view this coordinator uses, else its shell-quoted
// absolute path (a build tree, an install prefix not on PATH, $DFX_VIEW).
std::string ViewCommand();

// One line on what the chips took, from the emulator's own accounting in
// DispatchDone (every run, with collectors or not, so a plain run and a
// collecting one compare): the makespan on the chip clock of the dispatches
// that finished, their median and the longest, and the agents' host wall
// time. "" when no dispatch reported one.
std::string MakespanSummary(const std::vector<collectors::DispatchEntry>& dispatches);

}  // namespace dfx::coordinator
