// dfx-coordinator: parse flags, build the run, print what it produced.
//
//   dfx-coordinator run PROGRAM.json --work-dir W [DFX flags]              (L2, one chip)
//   dfx-coordinator run PLAN.json --ranks N --work-dir W [--launcher mpirun|local] [--attach]
//                   [--bind tcp://127.0.0.1:PORT] [DFX flags] [deadline flags]      (L3)
//   dfx-coordinator estimate PROGRAM.json|PLAN.json [--ranks N] [--format json] [DFX flags]
//   dfx-coordinator gather --work-dir W [--spool DIR] [--attach --bind ENDPOINT]
//   dfx-coordinator keygen DIR [--agent NAME]...                 (CURVE keys, docs/design.md §7)
//   dfx-coordinator capture W [--ranks LIST] [--next N] [collector flags] [--off] ...
//                   (on demand: what the next dispatches of the run in W capture)
//
// Exit codes: 0 everything succeeded, 1 the run (or gather) failed, 2 usage error.
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/heap.h"
#include "common/log.h"
#include "common/metrics_server.h"
#include "common/subprocess.h"
#include "common/timeouts.h"
#include "common/unknown_arguments.h"
#include "common/version.h"
#include "config/run_config.h"
#include "coordinator/access.h"
#include "coordinator/capture_command.h"
#include "coordinator/capture_policy.h"
#include "coordinator/cli_validators.h"
#include "coordinator/gather.h"
#include "coordinator/post_run.h"
#include "coordinator/report.h"
#include "coordinator/run.h"
#include "coordinator/run_estimate.h"
#include "coordinator/session.h"
#include "coordinator/stop_signals.h"
#include "protocol/agent_command_line.h"
#include "protocol/messages.h"

namespace {

namespace fs = std::filesystem;
namespace dc = dfx::coordinator;
using dc::ByteCount;
using dc::LogLevel;
using dc::PositiveSeconds;
using dc::RunByteBudget;
constexpr double kMaxSeconds = dc::kMaxFlagSeconds;

int Fail(const std::string& message, int code = 1) {
  std::fflush(stdout);
  std::fprintf(stderr, "dfx-coordinator: %s\n", message.c_str());
  return code;
}

// A deadline flag, given in seconds, into its Timeouts member.
CLI::Option* AddDeadline(CLI::App& app, const std::string& flag, dfx::Timeouts::Duration& field,
                         const std::string& help) {
  return app
      .add_option_function<double>(
          flag, [&field](double seconds) { field = dfx::Seconds(seconds); }, help)
      ->check(PositiveSeconds());
}

// --reconnect-window SECONDS (run and gather): 0 turns it off.
CLI::Option* AddReconnectWindow(CLI::App& app, dfx::Timeouts& timeouts) {
  return app
      .add_option_function<double>(
          "--reconnect-window",
          [&timeouts](double seconds) { timeouts.reconnect_window = dfx::Seconds(seconds); },
          "how long an agent whose connection dropped (or went silent) may take to come back "
          "and resume before its ranks fail (default: --heartbeat-timeout; 0: fail at once)")
      ->check(CLI::Range(0.0, kMaxSeconds).description("SECONDS"));
}

// The access flags (coordinator/access.h), shared by run and gather.
void AddAccessOptions(CLI::App& app, dc::AccessFlags& a) {
  app.add_option("--keys", a.keys_dir,
                 "a `dfx-coordinator keygen` directory: this coordinator's key pair "
                 "(coordinator.key) and the agent public keys it admits (agents/*.pub)");
  app.add_option("--key", a.key_file, "this coordinator's CURVE key pair (a .key file, mode 0600)");
  app.add_option("--agent-keys", a.agent_keys,
                 "the public keys of the agents admitted: a .pub file or a directory of them");
}

// A server keeps its descriptors for agents and files: the soft limit is
// raised to the hard one (a flood of half-open connections then has more
// to exhaust, and each lives only the handshake deadline).
void RaiseDescriptorLimit() {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &rl);
  }
}

std::optional<fs::path> FindAgent(std::string* error) {
  auto agent = dfx::FindProjectBinary("dfx-rank-agent", "DFX_RANK_AGENT", {"../rank_agent"});
  if (!agent.ok()) {
    *error = agent.status().message();
    return std::nullopt;
  }
  return *agent;
}

void AddWireCompression(CLI::App& app, std::string& mode) {
  app.add_option("--wire-compression", mode,
                 "artifact chunks on the wire: auto (default: zstd unless the coordinator is on "
                 "the agent's host, raw for data that does not shrink; says what it chose), "
                 "zstd, off")
      ->check(CLI::IsMember({"auto", "zstd", "off"}));
}

struct RunFlags {
  std::string file;
  std::string work_dir;
  std::optional<int> ranks;
  std::string launcher;
  std::string launcher_args;
  bool attach = false;
  bool bench = false;
  bool virtual_clock = false;
  std::string log_level = "info";
  bool log_level_given = false;  // --log-level on the command line (beats $SPDLOG_LEVEL)
  bool agent_log_level_given = false;
  bool quiet = false;                    // -q: only the verdict
  std::string swimlane_traces = "auto";  // --swimlane-traces
  bool no_report = false;                // --no-report
  bool verbose = false;                  // -v: debug log lines and the full summary
  double dump_drain = -1, dump_timeout = -1, dump_arena = -1;
  std::string wire_compression = "auto";                         // --wire-compression
  std::string metrics;                                           // --metrics tcp://127.0.0.1:PORT
  std::optional<std::string> capture_ranks, capture_dispatches;  // --capture-*: checked in Run
  bool force = false;                                            // --force
};

constexpr const char* kMetricsHelp =
    "serve counters (Prometheus text, GET /metrics) and a health check (GET /healthz) on this "
    "loopback endpoint while it runs: tcp://127.0.0.1:PORT (0: a free port, logged)";

// --metrics: the server lives until the caller's pointer goes; *exit is set
// when it cannot start (2: a bad value, 1: the port cannot be had).
std::unique_ptr<dfx::metrics::MetricsServer> StartMetrics(const std::string& endpoint,
                                                          const std::string& program, int* exit) {
  *exit = 0;
  if (endpoint.empty()) return nullptr;
  dfx::metrics::DeclareCoordinatorCounters();
  auto server = dfx::metrics::ServeMetrics(endpoint, program);
  if (server.ok()) return std::move(*server);
  *exit = Fail(server.status().message(),
               server.status().code() == dfx::Code::kInvalidArgument ? 2 : 1);
  return nullptr;
}

// The environment every subcommand reads (README "Environment").
const char* const kEnvironment = R"(
Environment:
  DFX_RANK_AGENT  the dfx-rank-agent to start (default: beside this binary, then PATH)
  DFX_VIEW        the dfx-view that converts swimlane records (default: likewise)
  TMPDIR          where agents spool when --spool is not given (default /tmp)
  DFX_BULK_TRANSPORT  gather: auto or curve, when --bulk-transport is not given
Exit status: 0 everything succeeded, 1 the run or gather failed, 2 usage error.
Schemas of programs, plans and run_manifest.json: share/dfx/schemas/ (schemas/ in the source).
)";

const char* const kRunFooter = R"(
L2 (one chip, artifacts flat in W/dfx_outputs/): a PROGRAM.json without --ranks/--launcher/--attach.
L3 (a plan or --ranks N): artifacts in W/dfx_outputs/rank<N>/d<K>/, manifest in run_manifest.json.
)";

void AddRunOptions(CLI::App& run, RunFlags& f, dc::SessionOptions& so) {
  run.add_option("file", f.file, "PROGRAM.json (L2, or with --ranks all ranks) or PLAN.json (L3)")
      ->required();
  run.add_option("--work-dir", f.work_dir, "where dfx_outputs/ goes (created)")->required();
  run.add_option("--ranks", f.ranks, "number of ranks (L3)")->check(CLI::Range(1, 4096));
  run.add_option("--launcher", f.launcher, "how agents start (default: mpirun when on PATH)")
      ->check(CLI::IsMember({"mpirun", "srun", "local"}));
  run.add_option("--launcher-binary", so.launcher_binary,
                 "the mpirun / srun program to start (default: mpirun / srun on PATH)");
  run.add_option("--launcher-args", f.launcher_args,
                 "words passed to mpirun / srun before the agent, e.g. \"--hostfile H --map-by "
                 "node\" or \"--nodes 2\" (split at spaces; quote with ' or \")");
  run.add_option("--agent-command", so.agent_command,
                 "what mpirun / srun start on each host (default: this dfx-rank-agent's absolute "
                 "path; a bare name is looked up on each host's PATH)");
  run.add_flag("--attach", f.attach,
               "wait for `dfx-rank-agent serve` agents started elsewhere instead of launching");
  run.add_option("--bind", so.bind,
                 "where the coordinator listens: tcp://ADDRESS|HOSTNAME|INTERFACE|0.0.0.0:PORT")
      ->default_str("tcp://127.0.0.1:0");
  run.add_option("--advertise", so.advertise,
                 "what agents dial, tcp://HOST[:PORT] (default: the bind address; needed when "
                 "--bind is a wildcard and this host's name resolves only to loopback)");
  run.add_option("--chips-per-agent", so.chips_per_agent, "chips (ranks) each agent drives")
      ->check(CLI::Range(1, 64));
  run.add_option("--spool", so.spool_root, "agents' spool root (default W/.dfx_spool)");
  AddDeadline(run, "--startup-timeout", so.timeouts.startup,
              "spawn + HELLO + READY of every rank (default 60)");
  AddDeadline(run, "--heartbeat-interval", so.timeouts.heartbeat_interval, "(default 0.2)");
  AddDeadline(run, "--heartbeat-timeout", so.timeouts.heartbeat_timeout,
              "a silent agent is dead after this (default 10)");
  AddReconnectWindow(run, so.timeouts);
  AddDeadline(run, "--dispatch-timeout", so.timeouts.dispatch,
              "one dispatch, run + stream (default 3600)");
  run.add_option("--convert-jobs", so.convert_jobs,
                 "post-run swimlane conversions (one dfx-view per dispatch) run at once "
                 "(default 0: one per core)")
      ->check(CLI::Range(0u, 4096u));
  run.add_option("--swimlane-traces", f.swimlane_traces,
                 "L3: when the per-dispatch merged traces are written: eager (after the run, "
                 "--convert-jobs at a time), lazy (on demand: the run prints the dfx-view "
                 "commands), auto (default: eager onboard, as the reference; lazy in sim)")
      ->check(CLI::IsMember({"auto", "eager", "lazy"}));
  run.add_flag("--no-report", f.no_report,
               "L3: do not write the run report (dfx_outputs/report.html, one HTML page of "
               "charts written after every L3 run with swimlane records; `dfx-view report` "
               "writes it later)");
  AddDeadline(run, "--shutdown-timeout", so.timeouts.shutdown,
              "agents exiting after the run (default 10)");
  run.add_option("--agent-log-level", so.agent_log_level,
                 "log level of launched agents (default warn, or this process's level when it is "
                 "quieter: -q, --log-level error|critical|off)")
      ->check(LogLevel())
      ->each([&f](const std::string&) { f.agent_log_level_given = true; });
  run.add_option("--metrics", f.metrics, kMetricsHelp);
  run.add_option("--log-level", f.log_level,
                 "this process's log lines on stderr: trace|debug|info|warn|error|critical|off "
                 "(default info, or $SPDLOG_LEVEL)")
      ->check(LogLevel())
      ->each([&f](const std::string&) { f.log_level_given = true; });
  run.add_flag("-q,--quiet", f.quiet,
               "print only the verdict (and errors); the summary stays a `dfx-view summary` away");
  run.add_flag("-v,--verbose", f.verbose,
               "debug log lines (one per dispatch) and the full summary (every dispatch)");
  run.add_flag("--virtual-clock", f.virtual_clock, "deterministic virtual-clock chips");
  run.add_flag("--bench", f.bench,
               "after the run, a separate plain run without DFX flags; prints its wall time");
  run.add_option("--max-artifact-bytes", so.max_artifact_bytes,
                 "the largest artifact an agent may announce (default 8G); a larger one is "
                 "refused and recorded")
      ->transform(ByteCount());
  run.add_option("--max-run-bytes", so.max_run_bytes,
                 "the byte budget of the run (e.g. 20G; default 0: none): checked against the "
                 "estimate before the run starts (`dfx-coordinator estimate` shows it; --force "
                 "starts anyway), then enforced as streams begin: a stream that would pass it "
                 "is refused, recorded and left in its agent's spool for a later `gather "
                 "--max-run-bytes`; never truncated")
      ->transform(RunByteBudget());
  AddWireCompression(run, f.wire_compression);
  AddAccessOptions(run, so.access);
  run.add_option("--capture-ranks", f.capture_ranks,
                 "L3: run the collectors only on these ranks, e.g. 0,3-5; elsewhere the "
                 "program runs without them (the manifest says: not captured, by request)");
  run.add_option("--capture-dispatches", f.capture_dispatches,
                 "L3: run the collectors only in these dispatches d<K> of each rank, e.g. 1-2");
  run.add_flag("--force", f.force,
               "start even when the estimate exceeds --max-run-bytes or the free space where "
               "dfx_outputs/ (or the local agents' spools) land");
  run.add_option("--dump-drain-bytes-per-sec", f.dump_drain,
                 "L2: the emulated host args-dump drain (default: disk speed)")
      ->check(CLI::Range(0.0, 1e15));
  run.add_option("--dump-timeout-ms", f.dump_timeout, "L2: dump park backstop (default 30000)")
      ->check(CLI::Range(0.0, 1e15));
  run.add_option("--dump-arena-bytes", f.dump_arena, "L2: dump arena (default 128 MiB)")
      ->check(CLI::Range(0.0, 1e15));
  run.footer(std::string(dfx::config::RunConfigFlagsHelp()) + kRunFooter + kEnvironment);
}

// Prints what the run reported after what it printed itself: its errors
// on stderr, then the verdict on stdout.
int PrintRunReport(const dc::RunReport& report) {
  if (!report.errors.empty()) {
    std::fflush(stdout);
    std::fputs(report.errors.c_str(), stderr);
    std::fflush(stderr);
  }
  if (report.verdict) {
    std::fputs(report.verdict->c_str(), stdout);
    std::fflush(stdout);
  }
  if (report.stop_signal != 0) return dc::ExitCodeForSignal(report.stop_signal);
  return static_cast<int>(report.exit);
}

int Run(RunFlags& f, dc::SessionOptions& so, const dfx::config::ParsedRunConfig& parsed) {
  if (f.quiet && f.verbose) return Fail("-q/--quiet and -v/--verbose exclude each other", 2);
  // -q and -v pick a level unless one was given; $SPDLOG_LEVEL counts as given.
  std::string level = f.log_level;
  if (!f.log_level_given && f.quiet) level = "error";
  if (!f.log_level_given && f.verbose) level = "debug";
  dfx::log::Init("dfx-coordinator", level, !f.log_level_given && !f.quiet && !f.verbose);
  // The agents' lines reach the same console: a quieter level governs them too.
  if (!f.agent_log_level_given) {
    const auto own = spdlog::default_logger_raw()->level();
    if (own > spdlog::level::warn) {
      const auto name = spdlog::level::to_string_view(own);
      so.agent_log_level = std::string(name.data(), name.size());  // error, critical or off
    }
  }
  for (const auto& w : parsed.warnings) DFX_LOG_WARN("{}", w);
  int metrics_exit = 0;
  auto metrics = StartMetrics(f.metrics, "dfx-coordinator run", &metrics_exit);
  if (metrics_exit != 0) return metrics_exit;
  so.config = parsed.config;
  so.work_dir = f.work_dir;
  for (auto [flag, text, list] :
       {std::tuple{"--capture-ranks", &f.capture_ranks, &so.capture.ranks},
        std::tuple{"--capture-dispatches", &f.capture_dispatches, &so.capture.dispatches}}) {
    if (!*text) continue;
    auto parsed_list = dc::ParseIndexList(flag, **text);
    if (!parsed_list.ok()) return Fail(parsed_list.status().message(), 2);
    *list = std::move(*parsed_list);
  }
  so.virtual_clock = f.virtual_clock;
  (void)dfx::protocol::ParseWireCompression(f.wire_compression, &so.wire_compression);
  so.live_progress = ::isatty(STDERR_FILENO) != 0;
#ifdef DFX_FAULT_HOOKS
  // Test-only fault injection (the gather tests kill the coordinator mid-stream),
  // compiled in only with -DDFX_FAULT_HOOKS=ON (cmake/fault_hooks.cmake).
  if (const char* fault = std::getenv("DFX_FAULT_COORDINATOR_KILL_AFTER_CHUNKS")) {
    so.fault_kill_after_chunks = std::strtoull(fault, nullptr, 10);
  }
  if (const char* fault = std::getenv("DFX_FAULT_COORDINATOR_WRITE_DELAY_MS")) {
    so.fault_write_delay_ms =
        static_cast<uint32_t>(std::min(std::strtoul(fault, nullptr, 10), 60000ul));
  }
#endif
  dc::RunRequest request;
  request.file = f.file;
  request.ranks = f.ranks;
  request.launcher = f.launcher;
  request.launcher_args = f.launcher_args;
  request.attach = f.attach;
  request.bench = f.bench;
  request.quiet = f.quiet;
  request.verbose = f.verbose;
  request.swimlane_traces = f.swimlane_traces;
  request.report = !f.no_report;
  request.agent_log_level_given = f.agent_log_level_given;
  request.dump_drain_bytes_per_sec = f.dump_drain;
  request.dump_timeout_ms = f.dump_timeout;
  request.dump_arena_bytes = f.dump_arena;
  request.force = f.force;
  request.session = so;
  return PrintRunReport(dc::RunProgramOrPlan(std::move(request)));
}

struct EstimateFlags {
  std::string file, work_dir = ".", launcher, swimlane_traces = "auto", format = "text";
  std::optional<int> ranks;
  bool attach = false, no_report = false;
};

void AddEstimateOptions(CLI::App& est, EstimateFlags& f, dc::SessionOptions& so) {
  est.add_option("file", f.file, "PROGRAM.json (L2, or with --ranks all ranks) or PLAN.json (L3)")
      ->required();
  est.add_option("--work-dir", f.work_dir,
                 "where the run's dfx_outputs/ would go (default: the current directory)");
  est.add_option("--ranks", f.ranks, "number of ranks (L3)")->check(CLI::Range(1, 4096));
  est.add_option("--launcher", f.launcher, "as for run: local agents spool under the work dir")
      ->check(CLI::IsMember({"mpirun", "srun", "local"}));
  est.add_flag("--attach", f.attach, "as for run (agents started elsewhere spool there)");
  est.add_option("--spool", so.spool_root, "local agents' spool root (default W/.dfx_spool)");
  est.add_option("--swimlane-traces", f.swimlane_traces,
                 "as for run: whether the L3 merged traces are written (auto: onboard only)")
      ->check(CLI::IsMember({"auto", "eager", "lazy"}));
  est.add_flag("--no-report", f.no_report, "as for run: no report.html");
  est.add_option("--max-run-bytes", so.max_run_bytes,
                 "as for run: say whether the estimate is within this budget")
      ->transform(RunByteBudget());
  est.add_option("--format", f.format, "text (a table) or json (with a top-level total_bytes)")
      ->check(CLI::IsMember({"text", "json"}));
  est.footer(std::string(R"(
Prints, per rank, dispatch and collector, the bytes the run would write, their total, and
where they land with the free space there. Nothing runs: the estimate comes from each
program's tasks, blocks, args, tensors dumped and scopes (the agents' loader and lowering)
and the per-record sizes of each writer. `run` prints the same total in one line before it
starts and refuses to start when it will not fit (--force starts anyway).

)") + dfx::config::RunConfigFlagsHelp());
}

int Estimate(EstimateFlags& f, dc::SessionOptions& so, const dfx::config::ParsedRunConfig& parsed) {
  dfx::log::Init("dfx-coordinator estimate", "warn");
  for (const auto& w : parsed.warnings) DFX_LOG_WARN("{}", w);
  so.config = parsed.config;
  so.work_dir = f.work_dir;
  so.swimlane_traces = f.swimlane_traces == "eager"  ? dc::SwimlaneTraces::kEager
                       : f.swimlane_traces == "lazy" ? dc::SwimlaneTraces::kLazy
                                                     : dc::SwimlaneTraces::kAuto;
  auto estimate = dc::EstimateFile(f.file, f.ranks, f.launcher, f.attach, so, !f.no_report);
  if (!estimate.ok()) return Fail("estimate: " + estimate.status().message());
  const std::string text =
      f.format == "json" ? dc::EstimateJson(*estimate) : dc::EstimateText(*estimate);
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  if (dfx::Status fits = dc::CheckEstimate(*estimate, so.max_run_bytes); !fits.ok())
    std::fprintf(stderr, "dfx-coordinator: estimate: `run` would refuse: %s\n",
                 fits.message().c_str());
  return 0;
}

struct GatherFlags {
  std::string work_dir, spool, log_level = "info";
  std::string wire_compression = "auto";  // --wire-compression
  bool no_report = false;                 // --no-report
  std::string metrics;                    // --metrics tcp://127.0.0.1:PORT
};

void AddGatherOptions(CLI::App& gather, GatherFlags& f, dc::GatherOptions& o) {
  gather.add_option("--work-dir", f.work_dir, "the work dir of the run to gather")->required();
  gather.add_option("--spool", f.spool, "the spool to read (default: the ones the run recorded)");
  gather.add_flag("--no-report", f.no_report,
                  "do not rewrite the run report (dfx_outputs/report.html) after recovering files");
  AddDeadline(gather, "--timeout", o.timeouts.gather, "give up after this (default 120)");
  AddReconnectWindow(gather, o.timeouts);
  gather.add_flag("--attach", o.attach,
                  "serve agents on other hosts stream their spools (needs --bind)");
  gather.add_option("--bind", o.bind, "where the serve agents connect (e.g. the run's --bind)");
  gather.add_option("--advertise", o.advertise,
                    "what the serve agents dial, tcp://HOST[:PORT] (default: from --bind)");
  gather.add_option("--log-level", f.log_level, "(info)")->check(LogLevel());
  gather.add_option("--metrics", f.metrics, kMetricsHelp);
  gather
      .add_option("--max-artifact-bytes", o.max_artifact_bytes,
                  "the largest artifact an agent may announce (default 8G)")
      ->transform(ByteCount());
  gather
      .add_option("--max-run-bytes", o.max_run_bytes,
                  "the bytes this gather may fetch (default 0: no budget); a file past it stays "
                  "in its spool for a gather with a larger budget")
      ->transform(RunByteBudget());
  AddWireCompression(gather, f.wire_compression);
  gather
      .add_option("--bulk-transport", o.bulk_transport,
                  "how recovery agents on this host send artifacts: auto = an ipc:// socket "
                  "admitted by uid, pid and a token given over CURVE (no encryption); curve = "
                  "over CURVE (default: $DFX_BULK_TRANSPORT, else auto)")
      ->check(CLI::IsMember({"auto", "curve"}));
  AddAccessOptions(gather, o.access);
}

struct KeygenFlags {
  std::string dir;
  std::vector<std::string> agents;
};

void AddKeygenOptions(CLI::App& keygen, KeygenFlags& f) {
  keygen.add_option("dir", f.dir, "the key directory (created, mode 0700)")->required();
  keygen.add_option("--agent", f.agents,
                    "an agent key pair to make (repeatable; default: one named \"agent\")");
  keygen.footer(R"(
Writes DIR/coordinator.key (0600), DIR/coordinator.pub and DIR/agents/NAME.key (0600) +
DIR/agents/NAME.pub; existing pairs are kept. Then:
  dfx-coordinator run PLAN --attach --bind tcp://0.0.0.0:5555 --keys DIR ...
  dfx-rank-agent serve --coordinator tcp://HOST:5555 --key DIR/agents/NAME.key \
      --coordinator-key DIR/coordinator.pub
Give each host only its agent's .key and coordinator.pub.
)");
}

int Keygen(KeygenFlags& f) {
  if (f.agents.empty()) f.agents.push_back("agent");
  auto written = dc::WriteKeyDirectory(f.dir, f.agents);
  if (!written.ok()) return Fail("keygen: " + written.status().message());
  for (const fs::path& p : *written) std::printf("wrote %s\n", dfx::ShellQuote(p.string()).c_str());
  const fs::path dir = f.dir;
  std::printf("coordinator: --keys %s\nagent NAME:  --key %s --coordinator-key %s\n",
              dfx::ShellQuote(dir.string()).c_str(),
              dfx::ShellQuote((dir / dc::kAgentKeysDir / "NAME.key").string()).c_str(),
              dfx::ShellQuote((dir / dc::kCoordinatorPublicKeyFile).string()).c_str());
  return 0;
}

int Gather(GatherFlags& f, dc::GatherOptions& options, bool bulk_flag_given) {
  dfx::log::Init("dfx-coordinator gather", f.log_level);
  if (const char* env = std::getenv("DFX_BULK_TRANSPORT"); env != nullptr && !bulk_flag_given) {
    if (std::string(env) != "auto" && std::string(env) != "curve") {
      return Fail(fmt::format("DFX_BULK_TRANSPORT={}: expected auto or curve", env), 2);
    }
    options.bulk_transport = env;
  }

  options.work_dir = f.work_dir;
  options.spool_root = f.spool;
  (void)dfx::protocol::ParseWireCompression(f.wire_compression, &options.wire_compression);
  if (options.attach && options.bind.empty()) {
    return Fail(
        "gather: --attach needs --bind ENDPOINT (where the serve agents connect, e.g. the run's "
        "--bind)",
        2);
  }
  std::string error;
  auto agent = FindAgent(&error);
  if (!agent) return Fail(error);
  options.agent_binary = *agent;
  int metrics_exit = 0;
  auto metrics = StartMetrics(f.metrics, "dfx-coordinator gather", &metrics_exit);
  if (metrics_exit != 0) return metrics_exit;
  auto out = dc::RunGather(options);
  if (!out.ok()) return Fail(out.status().message());
  const fs::path dfx_dir = dfx::collectors::DfxOutputsDir(options.work_dir);
  std::printf("gather of session %s: %zu file(s) recovered\n", dfx::Hex64(out->session_id).c_str(),
              out->recovered.size());
  for (const auto& r : out->recovered) {
    std::printf("  %s\n", dfx::ShellQuote((dfx_dir / r).string()).c_str());
  }
  // The run report of what is there now (docs/formats.md §16.6), drawn by
  // the summary's dfx-view; nothing when the run has no swimlane records.
  if (!f.no_report && !out->recovered.empty()) {
    const fs::path report = dfx_dir / dfx::collectors::kRunReportFile;
    (void)dc::RunSummaryText(dfx_dir, false, dc::ViewCommand(), report);
    std::error_code ec;
    if (fs::is_regular_file(report, ec)) {
      std::printf("open the run report in a browser: %s\n",
                  dfx::ShellQuote(report.string()).c_str());
    }
  }
  std::fflush(stdout);
  for (const auto& failed : out->failed)
    std::fprintf(stderr, "  not recovered: %s\n", failed.c_str());
  return out->success ? 0 : 1;
}

int Main(int argc, char** argv) {
  CLI::App app{
      "dfx-coordinator: runs programs (L2) and plans (L3) on emulated chips with the Runtime DFX "
      "collectors, and gathers every artifact into <work_dir>/dfx_outputs/"};
  app.name("dfx-coordinator");
  app.require_subcommand(1);
  RunFlags run_flags;
  dc::SessionOptions so;
  CLI::App* run = app.add_subcommand("run", "run a program (L2) or a plan (L3)");
  AddRunOptions(*run, run_flags, so);
  GatherFlags gather_flags;
  dc::GatherOptions gather_options;
  CLI::App* gather =
      app.add_subcommand("gather", "collect what agents still spool after a coordinator crash");
  AddGatherOptions(*gather, gather_flags, gather_options);
  KeygenFlags keygen_flags;
  CLI::App* keygen = app.add_subcommand(
      "keygen", "make CURVE key pairs: the coordinator's and its agents' (see --help)");
  AddKeygenOptions(*keygen, keygen_flags);
  EstimateFlags estimate_flags;
  dc::SessionOptions estimate_options;
  CLI::App* estimate = app.add_subcommand(
      "estimate", "the bytes a run would write, per rank, dispatch and collector (nothing runs)");
  AddEstimateOptions(*estimate, estimate_flags, estimate_options);
  // Listed here; its words are parsed by CaptureMain (intercepted below).
  app.add_subcommand("capture",
                     "change what the next dispatches of a running L3 run capture, from another "
                     "terminal (capture --help)");
  CLI::App* help = app.add_subcommand("help", "show the help of a command");
  std::string help_topic;
  help->add_option("command", help_topic, "run, estimate, gather, keygen or capture");
  const std::string version = dfx::VersionLine("dfx-coordinator");
  for (CLI::App* a : {&app, run, estimate, gather, keygen, help})
    a->set_version_flag("--version", version);
  app.footer(kEnvironment);
  gather->footer(kEnvironment);

  // The run-config flags (optional values, legacy spellings) are parsed by
  // their one owner, config::ParseRunConfigFlags, before CLI11 sees the rest.
  std::vector<std::string> args(argv + 1, argv + argc);
  // `capture` parses its own words (collector flags, --ranks, --next, ...).
  if (!args.empty() && args[0] == "capture") {
    return dc::CaptureMain(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  if (args.size() == 2 && args[0] == "help" && args[1] == "capture") {
    return dc::CaptureMain({"--help"});
  }
  dfx::config::ParsedRunConfig parsed;
  if (!args.empty() && (args[0] == "run" || args[0] == "estimate")) {
    std::vector<std::string> rest(args.begin() + 1, args.end());
    auto config = dfx::config::ParseRunConfigFlags(rest);
    if (!config.ok()) return Fail(config.status().message(), 2);
    parsed = *config;
    rest.insert(rest.begin(), args[0]);
    args = std::move(rest);
  }
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A mistyped flag, not the required one it displaced, is the error.
    if (auto unknown = dfx::UnknownArgumentsOf(app, "dfx-coordinator")) return Fail(*unknown, 2);
    app.exit(e);
    return 2;
  }
  if (help->parsed()) {
    if (help_topic == "run") {
      std::fputs(run->help("dfx-coordinator").c_str(), stdout);
    } else if (help_topic == "estimate") {
      std::fputs(estimate->help("dfx-coordinator").c_str(), stdout);
    } else if (help_topic == "gather") {
      std::fputs(gather->help("dfx-coordinator").c_str(), stdout);
    } else if (help_topic == "keygen") {
      std::fputs(keygen->help("dfx-coordinator").c_str(), stdout);
    } else if (help_topic.empty()) {
      std::fputs(app.help().c_str(), stdout);
    } else {
      return Fail("help " + help_topic +
                      ": unknown command; commands: run, estimate, gather, keygen, capture",
                  2);
    }
    return 0;
  }
  if (keygen->parsed()) return Keygen(keygen_flags);
  if (estimate->parsed()) return Estimate(estimate_flags, estimate_options, parsed);
  RaiseDescriptorLimit();
  if (run->parsed()) return Run(run_flags, so, parsed);
  return Gather(gather_flags, gather_options, gather->count("--bulk-transport") > 0);
}

}  // namespace

int main(int argc, char** argv) {
  dfx::TuneHeap();  // before anything is allocated in earnest
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    return Fail(std::string("internal error: ") + e.what());
  }
}
