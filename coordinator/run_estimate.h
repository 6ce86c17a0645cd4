// What a run will write, before it runs (`dfx-coordinator estimate`, and the
// line `run` prints before it starts; README "Large runs"): per rank,
// dispatch and collector, the bytes, their total, and where they land with
// the free space there.
//
// The per-dispatch bytes of each program come from the agents' own loader
// and lowering (`dfx-rank-agent exec --check-only --estimate`,
// device/output_estimate.h: task counts, blocks, args, tensors dumped,
// edges, scopes, and per-record sizes), the same call that checks the
// program before a run (coordinator/program_check.h); the plan's expansion
// says how often each program runs on which rank; the coordinator's own
// files (dispatch_program.json, run_manifest.json, README.txt, report.html,
// the merged traces when the run converts them) are added here.
//
// Plain functions on the caller's thread; EstimateRun starts one agent
// process per program of the plan and reads the file systems' free space.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "collectors/dispatch_bytes.h"
#include "common/status.h"
#include "coordinator/plan.h"
#include "coordinator/session.h"

namespace dfx::coordinator {

struct RunEstimate {
  bool l3 = false;
  int ranks = 1;
  std::string file;  // the program or plan, as given
  struct Dispatch {
    int rank = 0;
    uint32_t k = 0;
    std::string program;
    collectors::DispatchBytes bytes;  // its merged_trace is 0 when the run converts none
    uint64_t fixed = 0;               // L3: dispatch_program.json
    uint64_t Total() const;
  };
  std::vector<Dispatch> dispatches;
  uint64_t run_files = 0;  // run_manifest.json, README.txt, report.html, .session.json
  // Where the bytes land: dfx_outputs/ first, then (L3, local agents) the
  // spools, which hold a dispatch's files until the coordinator has them.
  struct Place {
    std::string what;                    // "dfx_outputs" or "spools"
    std::filesystem::path path;          // the directory (it may not exist yet)
    uint64_t bytes = 0;                  // what lands there at most at once
    std::optional<uint64_t> free_bytes;  // of its file system; unset when unknown
    bool shares_with_previous = false;   // the same file system as the place before
  };
  std::vector<Place> places;
  uint64_t total_bytes = 0;  // every dispatch's plus the run files

  // Bytes per collector over the run: {"chip_swimlane", B}, ... in the
  // order of docs/formats.md §0.1, then "name_map", "merged_trace",
  // "dispatch_files" and "run_files".
  std::vector<std::pair<std::string, uint64_t>> ByCollector() const;
};

// What the run `file` (with `ranks` given or not: L2 or L3 as `run`
// decides) writes under `options` (config, work_dir, spool_root, launcher,
// swimlane_traces, agent_binary). `report` says whether an L3 run writes
// report.html. `plan` is the plan (a one-program plan at L2). Errors: a
// program the agents refuse (their words), a plan naming ranks that do not
// exist. The programs are checked in a scratch directory under
// `check_dir` (default: the work dir, as before every run).
Result<RunEstimate> EstimateRun(const Plan& plan, bool l3, const SessionOptions& options,
                                bool report, const std::filesystem::path& check_dir = {});

// `dfx-coordinator estimate FILE`: reads FILE (a program or a plan, bounded
// as `run` reads it), decides L2 or L3 as `run` does (a plan, --ranks,
// --launcher or --attach: L3), finds the agent, and estimates, writing
// nothing under the work dir (the programs are checked under $TMPDIR).
// Errors name the file or flag.
Result<RunEstimate> EstimateFile(const std::filesystem::path& file, std::optional<int> ranks,
                                 const std::string& launcher, bool attach, SessionOptions options,
                                 bool report);

// The table (text) and its JSON form (a top-level total_bytes).
std::string EstimateText(const RunEstimate& estimate);
std::string EstimateJson(const RunEstimate& estimate);
// The one line `run` logs (info) before it starts: "estimate: ... " (no newline).
std::string EstimateLine(const RunEstimate& estimate);

// Why the run must not start, or OK: the estimate does not fit the free
// space where it lands, or exceeds `max_run_bytes` (0 = no budget). Each
// message names the numbers and how to proceed (--force among them).
Status CheckEstimate(const RunEstimate& estimate, uint64_t max_run_bytes);

// "1.2 MiB" (1024-based), as every line of the estimate prints bytes.
std::string EstimateBytesText(uint64_t bytes);

}  // namespace dfx::coordinator
