// The command line of dfx-rank-agent (docs/design.md §3, §8): one description used
// by both directions, so the launcher that builds it and the agent that
// parses it cannot drift apart.
//
//   dfx-rank-agent --coordinator tcp://H:P --session HEX [--rank R] [--chips N] [--spool DIR] ...
//   dfx-rank-agent serve --coordinator tcp://H:P [--rank R] [--chips N] [--spool DIR] ...
//   dfx-rank-agent --recover --coordinator tcp://H:P --session HEX --spool DIR [--rank R] ...
//   dfx-rank-agent exec --program P.json --output-dir DIR [run-config flags] ...
//
// The launcher fills an AgentCommandLine (or an AgentExecCommandLine) and
// spawns `agent_binary` + ToArgv(); the agent's main calls
// ParseAgentCommandLine. Both read one table of flag names, help texts and
// bounds (agent_command_line.cc), and ToArgv followed by the parser gives the
// same struct back. The run-config flags of `exec` are config/'s
// (RunConfigToFlags / ParseRunConfigFlags), reused as they are.
//
// Plain value types and pure functions: any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/timeouts.h"
#include "config/pass_plan.h"
#include "config/run_config.h"
#include "protocol/curve.h"
#include "protocol/messages.h"

namespace CLI {
class App;
}

namespace dfx::protocol {

// The most emulated chips (and cores of one kind per chip) one agent runs.
inline constexpr int kMaxAgentChips = 64;
inline constexpr int kMaxAgentCores = 64;
// The largest launcher rank --rank accepts.
inline constexpr int kMaxAgentRank = 1 << 20;
// What --log-level accepts (spdlog's level names).
inline constexpr const char* kAgentLogLevels[] = {"trace", "debug",    "info", "warn",
                                                  "error", "critical", "off"};

// The emulated chips of either form, and how much the agent logs.
struct AgentChipFlags {
  bool virtual_clock = false;      // --virtual-clock: deterministic virtual-clock chips
  int aic_cores = 0;               // --aic-cores N, 1..kMaxAgentCores; 0 = not given (chip default)
  int aiv_cores = 0;               // --aiv-cores N, likewise
  std::string log_level = "info";  // --log-level, one of kAgentLogLevels
  bool operator==(const AgentChipFlags&) const = default;
};

// A connecting agent: one-shot (started for one session), serve (the `serve`
// subcommand: a long-lived agent that adopts each session), or recover
// (--recover: offers a dead run's spool to `dfx-coordinator gather`).
struct AgentCommandLine {
  AgentMode mode = AgentMode::kOneShot;
  std::string coordinator;  // --coordinator tcp://HOST:PORT (required)
  // --session HEX: the run's session id; required unless mode is kServe,
  // where 0 means "adopt the coordinator's".
  uint64_t session_id = 0;
  // --rank R (0..kMaxAgentRank): the launcher rank; unset = from MPI or the
  // launcher's environment. Recover: offer only rank R's spool.
  std::optional<int> rank;
  int chips = 1;      // --chips N (1..kMaxAgentChips): chips of this agent, ranks R*N .. R*N+N-1
  std::string spool;  // --spool DIR; empty = $TMPDIR/dfx-spool-<uid> (recover: required)
  // --total-ranks N (1..kMaxAgentRank+1): the run's rank count; an agent
  // whose chips would reach past it drives only the ranks below it (the last
  // agent of --ranks 4 --chips-per-agent 3 drives rank 3 only). 0 = no limit.
  int total_ranks = 0;
  // Access (docs/design.md §7; protocol/curve.h). --key FILE: this agent's key
  // pair; --coordinator-key FILE: the coordinator's public key, pinned.
  // Both or neither; launched agents get theirs through the environment.
  std::string key_file;
  std::string coordinator_key_file;
  // --metrics tcp://127.0.0.1:PORT (serve only): the Prometheus endpoint
  // (common/metrics_server.h); empty = none.
  std::string metrics;
  // Deadlines, each given in seconds in (0, kMaxTimeoutSeconds]:
  // --connect-timeout (timeouts.connect: the coordinator's first answer),
  // --heartbeat-interval (how often the agent says it lives) and
  // --heartbeat-timeout (coordinator silence = gone). The rest of Timeouts
  // is not the agent's.
  Timeouts timeouts;
  AgentChipFlags chip;

  // The arguments after the program name, e.g. {"--coordinator", "tcp://...",
  // "--session", "00000000000000ab", "--rank", "1", ...}; serve starts with
  // "serve", recover with "--recover". Unset values (no rank, empty spool,
  // session 0, switches off, cores 0) are left out; everything else is
  // written, so the agent never falls back on a default of its own.
  std::vector<std::string> ToArgv() const;
  // What the parser requires beyond each flag's bounds: --coordinator; a
  // session unless serving; a spool when recovering; sane heartbeats; both
  // key flags or neither. Messages name the flag.
  Status Validate() const;
  bool operator==(const AgentCommandLine&) const = default;
};

// The agent's CURVE credentials: from --key / --coordinator-key, else from
// the launcher's environment (TakeCurveClientFromEnvironment), else none —
// which is refused unless the coordinator endpoint is loopback-only
// (IsLoopbackEndpoint). Errors name the flag or variable and how to fix it.
Result<std::optional<CurveClient>> ResolveAgentCurve(const AgentCommandLine& line);

// `dfx-rank-agent exec`: one program, once, on one local chip; the artifacts
// flat in `output_dir` (the L2 run, docs/design.md §8).
struct AgentExecCommandLine {
  std::string program;  // --program P.json (required)
  // --program-origin NAME: how errors name the program (default: its path;
  // the coordinator's pre-check reads a copy of what the user gave).
  std::string program_origin;
  // --check-only: load the program, check the run config and the memory
  // budget (the chip model's capacity; the host's too with
  // --check-host-memory), then exit: no chip is made, nothing is written.
  bool check_only = false;
  bool check_host_memory = false;
  // --estimate: with --check-only, print what one dispatch of the program
  // would write, per collector, as one JSON line (device/output_estimate.h).
  bool estimate = false;
  std::string output_dir;    // --output-dir DIR (required): <work_dir>/dfx_outputs
  std::string work_dir;      // --work-dir DIR: names the L2 name map; empty = output_dir's parent
  config::RunConfig config;  // the run-config flags (config/run_config.h), normalised
  config::PassKind pass = config::PassKind::kSingle;  // --pass single|graph|timing
  std::string device_state_dir;  // --device-state-dir DIR: device memory between processes
  // The emulated host args-dump drain (ChipOptions), each in [0, 1e15].
  double dump_drain_bytes_per_sec = 0;  // --dump-drain-bytes-per-sec B; 0 = disk speed
  uint64_t dump_timeout_ms = 30000;     // --dump-timeout-ms MS
  uint64_t dump_arena_bytes = 0;        // --dump-arena-bytes B; 0 = the collector's default
  AgentChipFlags chip;

  // {"exec", "--program", P, ..., <RunConfigToFlags(config)>}. Left out
  // as in AgentCommandLine::ToArgv: empty paths, switches off, cores 0, and
  // a drain speed or arena size of 0 (the defaults they stand for).
  std::vector<std::string> ToArgv() const;
  // --program and --output-dir are given; the RunConfig validates.
  Status Validate() const;
  bool operator==(const AgentExecCommandLine&) const = default;
};

// Registers every option of the connecting forms on `app` (the top level,
// or the `serve` subcommand), writing into `*line` while `app` parses.
// --recover and the subcommands are the parser's; see below. A bad value
// throws CLI::ValidationError whose message names the flag, the value and
// what is allowed. `line` must outlive the parse.
void AddAgentOptions(CLI::App& app, AgentCommandLine* line);
// The same for `exec` (without the run-config flags: they are parsed by
// config::ParseRunConfigFlags before CLI11 sees the arguments).
void AddAgentExecOptions(CLI::App& app, AgentExecCommandLine* line);

// What a dfx-rank-agent command line asks for.
struct ParsedAgentCommandLine {
  enum class Form { kAgent, kExec, kHelp };
  Form form = Form::kAgent;
  AgentCommandLine agent;     // kAgent
  AgentExecCommandLine exec;  // kExec
  std::string
      help;  // kHelp: the --help text (the subcommand's, if one was named) or --version line
  std::vector<std::string> warnings;  // deprecated run-config spellings, to print
};

// Parses `args` (argv without the program name); `exec` must come first. A
// usage error (an unknown flag or stray word, a bad value, a missing
// required flag) is an InvalidArgument whose message names the flag, the
// bad value and what is allowed; the caller prints it and exits 2. A
// repeated flag takes its last value.
Result<ParsedAgentCommandLine> ParseAgentCommandLine(const std::vector<std::string>& args);

}  // namespace dfx::protocol
