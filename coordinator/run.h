// `dfx-coordinator run` as a library call: a RunRequest (what the flags
// say) in, a RunReport (the verdict, what was gathered, what to print on
// stderr and the verdict line) out. The call picks L2 (one program on one
// local chip, `dfx-rank-agent exec`, l2_run.h) or L3 (a plan or --ranks N,
// a session of rank agents, session.h), chooses the launcher, runs the
// plain --bench run when asked, and prints on stdout, as it goes, what the
// command prints there before the verdict (the summary, the artifact
// listing or its README.txt, hints); the run's lower layers print their
// banners and warnings on stdout too. main() parses the flags into a
// request, prints the report's error text and verdict line, and exits with
// its exit code.
//
// Threads: the caller's; one run at a time per work dir (the work dir is
// locked, session.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/session.h"

namespace dfx::coordinator {

// The flags of `dfx-coordinator run`, parsed. The session flags (work dir,
// run config, deadlines, bind, launcher program, access, ...) are kept as
// the SessionOptions they configure; the rest say which run it is.
struct RunRequest {
  std::filesystem::path file;  // PROGRAM.json or PLAN.json
  std::optional<int> ranks;    // --ranks: an L3 run even of one program
  std::string launcher;        // --launcher: "" (mpirun when on PATH), mpirun, srun, local
  std::string launcher_args;   // --launcher-args, as given (split at spaces here)
  bool attach = false;         // --attach: agents started elsewhere
  bool bench = false;          // --bench: a separate plain run after this one
  bool quiet = false;          // -q: only the verdict (and errors)
  bool verbose = false;        // -v: the full summary
  std::string swimlane_traces = "auto";  // --swimlane-traces: auto, eager or lazy
  bool report = true;                    // L3: write dfx_outputs/report.html (--no-report: off)
  // --agent-log-level was given: the L2 exec child then uses
  // session.agent_log_level, else this process's level.
  bool agent_log_level_given = false;
  // The L2 args-dump drain model (negative = not given): an L2-only knob.
  double dump_drain_bytes_per_sec = -1;
  double dump_timeout_ms = -1;
  double dump_arena_bytes = -1;
  // --force: start even when the estimate does not fit where it lands or
  // exceeds session.max_run_bytes (coordinator/run_estimate.h).
  bool force = false;
  // Every session flag; work_dir and config must be set. An empty
  // agent_binary is looked up (beside this binary, $DFX_RANK_AGENT, PATH).
  SessionOptions session;
};

// How `dfx-coordinator run` exits.
enum class RunExit : int {
  kOk = 0,
  kFailed = 1,  // the run failed, or could not start
  kUsage = 2,   // a flag, the program / plan file, or flags that do not go together
};

enum class RunLevel { kL2, kL3 };

struct RunReport {
  RunExit exit = RunExit::kOk;
  // What the command prints on stderr before the verdict: whole lines,
  // "" when nothing went wrong.
  std::string errors;
  // The verdict line ("verdict: ok: ..." or "verdict: FAILED: ...", with
  // its '\n'); unset when the command ends without one (a usage error, a
  // run that could not start, a failed --bench run).
  std::optional<std::string> verdict;
  RunLevel level = RunLevel::kL2;
  bool success = false;
  std::filesystem::path dfx_dir;        // <work_dir>/dfx_outputs
  std::filesystem::path manifest_path;  // the run manifest (L2 and L3)
  std::vector<std::string> artifacts;   // relative to dfx_dir, verified
  size_t dispatch_dirs = 0;             // L3: rank<N>/d<K> directories with artifacts
  std::string summary;                  // L3: one line per failure
  std::optional<double> bench_wall_s;   // --bench: the plain run's wall time
  // L3: SIGINT / SIGTERM / SIGHUP stopped the run; the command then exits
  // 128 + signal (130 / 143 / 129), as a shell reports a process it ended.
  int stop_signal = 0;
  std::optional<std::filesystem::path> run_report;  // L3: dfx_outputs/report.html, when written
};

// Runs what `request` describes; see the file comment.
RunReport RunProgramOrPlan(RunRequest request);

}  // namespace dfx::coordinator
