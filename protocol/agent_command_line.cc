#include "protocol/agent_command_line.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <iterator>

#include "common/file_util.h"
#include "common/metrics_server.h"
#include "common/unknown_arguments.h"
#include "common/version.h"

namespace dfx::protocol {

namespace {

// One row of the table both directions read: the flag, the name of its value
// in --help ("" for a switch), the help text, how ToArgv writes the value
// (nullopt: left out; "" for a switch that is on) and how the parser reads it
// (bounds included; the error names the flag, the value and what is allowed).
template <typename Line>
struct Option {
  const char* flag;
  const char* value_name;
  std::string help;
  std::function<std::optional<std::string>(const Line&)> write;
  std::function<Status(Line&, const std::string&)> read;
};

Status Expected(const char* flag, const std::string& value, const std::string& allowed) {
  return InvalidArgument(
      fmt::format("{} {}: expected {}", flag, value.empty() ? "''" : value, allowed));
}

std::optional<int64_t> ParseInteger(const std::string& text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

std::optional<double> ParseNumber(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (*end != '\0' || errno == ERANGE) return std::nullopt;
  return v;
}

// The field accessors below are generic lambdas ([](auto& l) -> auto& {...})
// so one accessor serves the const writer and the mutable reader.

// Free text (a path or an endpoint); empty = not given.
template <typename Line, typename Field>
Option<Line> Text(const char* flag, const char* value_name, std::string help, Field field) {
  return {flag, value_name, std::move(help),
          [field](const Line& l) -> std::optional<std::string> {
            if (field(l).empty()) return std::nullopt;
            return std::string(field(l));
          },
          [field](Line& l, const std::string& v) {
            field(l) = v;
            return Status::Ok();
          }};
}

// An integer in [min, max] (an int or an optional<int>); `unset` (if any) is
// the value that is never written.
template <typename Line, typename Field>
Option<Line> Integer(const char* flag, const char* value_name, std::string help, int64_t min,
                     int64_t max, std::optional<int64_t> unset, Field field) {
  return {flag, value_name, std::move(help),
          [field, unset](const Line& l) -> std::optional<std::string> {
            std::optional<int64_t> v;
            v = field(l);  // an int, or an optional<int> that may be empty
            if (!v || v == unset) return std::nullopt;
            return std::to_string(*v);
          },
          [field, flag, min, max](Line& l, const std::string& text) {
            std::optional<int64_t> v = ParseInteger(text);
            if (!v || *v < min || *v > max)
              return Expected(flag, text, fmt::format("an integer in [{}, {}]", min, max));
            field(l) = static_cast<int>(*v);
            return Status::Ok();
          }};
}

// A deadline, given in seconds in (0, kMaxTimeoutSeconds]. Written in the
// shortest decimal that reads back as the same Duration.
template <typename Line, typename Field>
Option<Line> Deadline(const char* flag, std::string help, Field field) {
  return {flag, "S", std::move(help),
          [field](const Line& l) -> std::optional<std::string> {
            return fmt::format("{}", ToSeconds(field(l)));
          },
          [field, flag](Line& l, const std::string& text) {
            std::optional<double> v = ParseNumber(text);
            if (!v || !(*v > 0) || *v > kMaxTimeoutSeconds)
              return Expected(
                  flag, text,
                  fmt::format("a positive number of seconds, at most {:.0f}", kMaxTimeoutSeconds));
            field(l) = dfx::Seconds(*v);
            return Status::Ok();
          }};
}

// A byte count, rate or duration of the args-dump drain: a number in
// [0, 1e15] (integral fields truncate); `unset` (if any) is never written.
template <typename Line, typename Field>
Option<Line> Amount(const char* flag, const char* value_name, std::string help,
                    std::optional<double> unset, Field field) {
  return {flag, value_name, std::move(help),
          [field, unset](const Line& l) -> std::optional<std::string> {
            if (unset && static_cast<double>(field(l)) == *unset) return std::nullopt;
            return fmt::format("{}", field(l));
          },
          [field, flag](Line& l, const std::string& text) {
            std::optional<double> v = ParseNumber(text);
            if (!v || !(*v >= 0) || *v > 1e15)
              return Expected(flag, text, "a non-negative number, at most 1e15");
            using T = std::remove_reference_t<decltype(field(l))>;
            field(l) = static_cast<T>(*v);
            return Status::Ok();
          }};
}

// One of `allowed`.
template <typename Line, typename Field>
Option<Line> Choice(const char* flag, const char* value_name, std::string help,
                    std::vector<std::string> allowed, Field field) {
  return {flag, value_name, std::move(help),
          [field](const Line& l) -> std::optional<std::string> { return std::string(field(l)); },
          [field, flag, allowed](Line& l, const std::string& text) {
            if (std::find(allowed.begin(), allowed.end(), text) == allowed.end()) {
              std::string list;
              for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
              return Expected(flag, text, "one of " + list);
            }
            field(l) = text;
            return Status::Ok();
          }};
}

// A switch: written (with no value) when on.
template <typename Line, typename Field>
Option<Line> Switch(const char* flag, std::string help, Field field) {
  return {flag, "", std::move(help),
          [field](const Line& l) -> std::optional<std::string> {
            if (!field(l)) return std::nullopt;
            return std::string();
          },
          [field](Line& l, const std::string&) {
            field(l) = true;
            return Status::Ok();
          }};
}

// The options both forms share: the emulated chips and the log level.
template <typename Line>
void AddChipRows(std::vector<Option<Line>>& rows) {
  rows.push_back(Choice<Line>(
      "--log-level", "LEVEL", "how much the agent logs",
      {std::begin(kAgentLogLevels), std::end(kAgentLogLevels)},
      [](auto& l) -> auto& { return l.chip.log_level; }));
  rows.push_back(Switch<Line>(
      "--virtual-clock",
      "deterministic virtual-clock chips (durations from a cost model, exact repeatable output)",
      [](auto& l) -> auto& { return l.chip.virtual_clock; }));
  rows.push_back(Integer<Line>(
      "--aic-cores", "N", "emulated AIC cores per chip (default 2)", 1, kMaxAgentCores, 0,
      [](auto& l) -> auto& { return l.chip.aic_cores; }));
  rows.push_back(Integer<Line>(
      "--aiv-cores", "N", "emulated AIV cores per chip (default 4)", 1, kMaxAgentCores, 0,
      [](auto& l) -> auto& { return l.chip.aiv_cores; }));
}

const std::vector<Option<AgentCommandLine>>& AgentRows() {
  using L = AgentCommandLine;
  static const std::vector<Option<L>> rows = [] {
    std::vector<Option<L>> r;
    r.push_back(Text<L>(
        "--coordinator", "ENDPOINT",
        "the coordinator to connect to, e.g. tcp://HOST:PORT (required)",
        [](auto& l) -> auto& { return l.coordinator; }));
    r.push_back(
        {"--session", "HEX",
         "the run's session id in hex, as the coordinator prints it (required unless serving)",
         [](const L& l) -> std::optional<std::string> {
           if (l.session_id == 0) return std::nullopt;
           return Hex64(l.session_id);
         },
         [](L& l, const std::string& text) {
           std::string_view digits = text;
           if (digits.rfind("0x", 0) == 0 || digits.rfind("0X", 0) == 0) digits.remove_prefix(2);
           uint64_t id = 0;
           const char* end = digits.data() + digits.size();
           auto [ptr, ec] = std::from_chars(digits.data(), end, id, 16);
           if (digits.empty() || ec != std::errc() || ptr != end || id == 0)
             return Expected("--session", text, "the session id as 1 to 16 hex digits, not zero");
           l.session_id = id;
           return Status::Ok();
         }});
    r.push_back(Integer<L>(
        "--rank", "R",
        "this agent's launcher rank (default: from MPI or the launcher's "
        "environment); with --recover, offer only rank R's spool",
        0, kMaxAgentRank, std::nullopt, [](auto& l) -> auto& { return l.rank; }));
    r.push_back(Integer<L>(
        "--chips", "N", "emulated chips of this agent; it owns ranks R*N .. R*N+N-1", 1,
        kMaxAgentChips, std::nullopt, [](auto& l) -> auto& { return l.chips; }));
    r.push_back(Text<L>(
        "--spool", "DIR",
        "where artifacts wait until the coordinator confirms them (default "
        "$TMPDIR/dfx-spool-<uid>; required with --recover)",
        [](auto& l) -> auto& { return l.spool; }));
    r.push_back(Integer<L>(
        "--total-ranks", "N",
        "the run's rank count: chips that would own ranks >= N are not started", 1,
        kMaxAgentRank + 1, 0, [](auto& l) -> auto& { return l.total_ranks; }));
    r.push_back(Text<L>(
        "--key", "FILE",
        "this agent's CURVE key pair (a .key file of `dfx-coordinator keygen`, mode 0600)",
        [](auto& l) -> auto& { return l.key_file; }));
    r.push_back(Text<L>(
        "--coordinator-key", "FILE",
        "the coordinator's public key (coordinator.pub); the agent talks to no other peer",
        [](auto& l) -> auto& { return l.coordinator_key_file; }));
    r.push_back(Text<L>(
        "--metrics", "tcp://127.0.0.1:PORT",
        "serve only: counters (Prometheus text, GET /metrics) and a health check (GET "
        "/healthz) on this loopback endpoint (0: a free port, logged)",
        [](auto& l) -> auto& { return l.metrics; }));
    r.push_back(Deadline<L>(
        "--connect-timeout", "seconds to wait for the coordinator's first answer",
        [](auto& l) -> auto& { return l.timeouts.connect; }));
    r.push_back(Deadline<L>(
        "--heartbeat-interval", "seconds between heartbeats",
        [](auto& l) -> auto& { return l.timeouts.heartbeat_interval; }));
    r.push_back(Deadline<L>(
        "--heartbeat-timeout", "coordinator silence, in seconds, after which it is gone",
        [](auto& l) -> auto& { return l.timeouts.heartbeat_timeout; }));
    AddChipRows(r);
    return r;
  }();
  return rows;
}

const std::vector<Option<AgentExecCommandLine>>& ExecRows() {
  using L = AgentExecCommandLine;
  static const std::vector<Option<L>> rows = [] {
    std::vector<Option<L>> r;
    r.push_back(Text<L>(
        "--program", "P.json", "the program to run (required)",
        [](auto& l) -> auto& { return l.program; }));
    r.push_back(Text<L>(
        "--program-origin", "NAME", "how errors name the program (default: its path)",
        [](auto& l) -> auto& { return l.program_origin; }));
    r.push_back(Switch<L>(
        "--check-only",
        "only check the program, the run config and the memory budget against the chip "
        "model's capacity; nothing runs or is written",
        [](auto& l) -> auto& { return l.check_only; }));
    r.push_back(Switch<L>(
        "--check-host-memory",
        "with --check-only: check the budget against this host's available memory too",
        [](auto& l) -> auto& { return l.check_host_memory; }));
    r.push_back(Switch<L>(
        "--estimate",
        "with --check-only: print the bytes one dispatch of the program would write, per "
        "collector, as one JSON line",
        [](auto& l) -> auto& { return l.estimate; }));
    r.push_back(Text<L>(
        "--output-dir", "DIR", "where the artifacts land, flat: <work_dir>/dfx_outputs (required)",
        [](auto& l) -> auto& { return l.output_dir; }));
    r.push_back(Text<L>(
        "--work-dir", "DIR",
        "the run's work dir; names the name map (default: the output dir's "
        "parent)",
        [](auto& l) -> auto& { return l.work_dir; }));
    r.push_back({"--pass", "PASS",
                 "which pass of the DFX pass protocol this process runs: single, graph or timing",
                 [](const L& l) -> std::optional<std::string> {
                   return std::string(config::PassKindName(l.pass));
                 },
                 [](L& l, const std::string& text) {
                   std::optional<config::PassKind> pass = config::ParsePassKind(text);
                   if (!pass) return Expected("--pass", text, "one of single, graph, timing");
                   l.pass = *pass;
                   return Status::Ok();
                 }});
    r.push_back(Text<L>(
        "--device-state-dir", "DIR",
        "device-resident tensors persist here between the processes of one run "
        "(default: only for this process)",
        [](auto& l) -> auto& { return l.device_state_dir; }));
    r.push_back(Amount<L>(
        "--dump-drain-bytes-per-sec", "B",
        "emulated host args-dump drain speed (default: as fast as the disk)", 0.0,
        [](auto& l) -> auto& { return l.dump_drain_bytes_per_sec; }));
    r.push_back(Amount<L>(
        "--dump-timeout-ms", "MS",
        "how long a full dump arena may stall the run before the dispatch "
        "fails",
        std::nullopt, [](auto& l) -> auto& { return l.dump_timeout_ms; }));
    r.push_back(Amount<L>(
        "--dump-arena-bytes", "B", "the device-side args-dump buffer (default 128 MiB)", 0.0,
        [](auto& l) -> auto& { return l.dump_arena_bytes; }));
    AddChipRows(r);
    return r;
  }();
  return rows;
}

template <typename Line>
std::vector<std::string> Write(const std::vector<Option<Line>>& rows, const Line& line) {
  std::vector<std::string> argv;
  for (const Option<Line>& o : rows) {
    std::optional<std::string> v = o.write(line);
    if (!v) continue;
    argv.push_back(o.flag);
    if (*o.value_name != '\0') argv.push_back(*v);
  }
  return argv;
}

void ThrowIfError(const Status& s) {
  if (!s.ok()) throw CLI::ValidationError(s.message(), CLI::ExitCodes::ValidationError);
}

template <typename Line>
void Register(CLI::App& app, const std::vector<Option<Line>>& rows, Line* line) {
  const Line defaults;
  for (const Option<Line>& o : rows) {
    if (*o.value_name == '\0') {
      app.add_flag_callback(
          o.flag, [&o, line] { ThrowIfError(o.read(*line, "")); }, o.help);
      continue;
    }
    CLI::Option* option = app.add_option_function<std::string>(
        o.flag, [&o, line](const std::string& v) { ThrowIfError(o.read(*line, v)); }, o.help);
    option->type_name(o.value_name);
    // As before CLI11: a repeated flag takes its last value.
    option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    if (std::optional<std::string> d = o.write(defaults); d && !d->empty()) option->default_str(*d);
  }
}

constexpr const char* kDescription =
    R"(dfx-rank-agent: the per-rank agent of the DFX collection service.
  dfx-rank-agent --coordinator tcp://HOST:PORT --session HEX [--rank R] [--chips N] [--spool DIR]
  dfx-rank-agent serve --coordinator tcp://HOST:PORT [--rank R] [--chips N] [--spool DIR]
  dfx-rank-agent --recover --coordinator tcp://HOST:PORT --session HEX --spool DIR [--rank R]
  dfx-rank-agent exec --program P.json --output-dir DIR [run-config flags]
)";

// What the agent reads from its environment (README "Environment").
constexpr const char* kEnvironment =
    R"(
Environment:
  OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID   the launcher rank when --rank is not given
                                                 (Open MPI, MPICH/Hydra, Slurm srun)
  OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK      set by an MPI launcher: the agent then calls
                                                 MPI_Init and takes its rank from MPI_Comm_rank
  TMPDIR                                         the spool root when --spool is not given
                                                 ($TMPDIR/dfx-spool-<uid>, default /tmp)
)"
// Test builds only (-DDFX_FAULT_HOOKS=ON): a release build holds no DFX_FAULT_* string.
#ifdef DFX_FAULT_HOOKS
    R"(  DFX_FAULT_GRAPH_PASS=1                         tests only: every graph pass fails before it runs
)"
#endif
    R"(Exit status: 0 ok, 1 the run or agent failed, 2 usage error.
)";

}  // namespace

std::vector<std::string> AgentCommandLine::ToArgv() const {
  std::vector<std::string> argv;
  if (mode == AgentMode::kServe) argv.push_back("serve");
  if (mode == AgentMode::kRecover) argv.push_back("--recover");
  for (std::string& a : Write(AgentRows(), *this)) argv.push_back(std::move(a));
  return argv;
}

Status AgentCommandLine::Validate() const {
  if (coordinator.empty()) return InvalidArgument("--coordinator tcp://HOST:PORT is required");
  if (mode != AgentMode::kServe && session_id == 0) {
    return InvalidArgument(
        "--session HEX is required (the coordinator prints it; use `serve` to attach to any "
        "session)");
  }
  if (mode == AgentMode::kRecover && spool.empty()) {
    return InvalidArgument("--recover needs --spool DIR (the spool the run used)");
  }
  DFX_RETURN_IF_ERROR(timeouts.ValidateHeartbeat());
  if (key_file.empty() != coordinator_key_file.empty()) {
    return InvalidArgument(
        "--key FILE and --coordinator-key FILE go together: the agent proves itself with its "
        "key pair and pins the coordinator's public key");
  }
  if (!metrics.empty()) {
    if (mode != AgentMode::kServe) {
      return InvalidArgument(
          "--metrics is for `dfx-rank-agent serve` (an agent left running); a launched agent "
          "lives for one run: give --metrics to `dfx-coordinator run` instead");
    }
    DFX_RETURN_IF_ERROR(metrics::ParseMetricsEndpoint(metrics).status());
  }
  return Status::Ok();
}

Result<std::optional<CurveClient>> ResolveAgentCurve(const AgentCommandLine& line) {
  if (!line.key_file.empty() || !line.coordinator_key_file.empty()) {
    DFX_RETURN_IF_ERROR(line.Validate());
    CurveClient client;
    auto keys = ReadKeyPairFile(line.key_file);
    if (!keys.ok()) return keys.status().WithContext("--key");
    client.keys = *keys;
    auto server = ReadPublicKeyFile(line.coordinator_key_file);
    if (!server.ok()) return server.status().WithContext("--coordinator-key");
    client.server_public_key = *server;
    // The variables of a launcher are not used, and not passed on either.
    (void)TakeCurveClientFromEnvironment();
    return std::optional<CurveClient>(std::move(client));
  }
  DFX_ASSIGN_OR_RETURN(std::optional<CurveClient> from_env, TakeCurveClientFromEnvironment());
  if (from_env) return from_env;
  if (!IsLoopbackEndpoint(line.coordinator)) {
    return InvalidArgument(fmt::format(
        "--coordinator {}: not a loopback address, so this agent must authenticate: give --key "
        "FILE (its key pair) and --coordinator-key FILE (coordinator.pub); make them with "
        "`dfx-coordinator keygen DIR`",
        line.coordinator));
  }
  return std::optional<CurveClient>();
}

std::vector<std::string> AgentExecCommandLine::ToArgv() const {
  std::vector<std::string> argv = {"exec"};
  for (std::string& a : Write(ExecRows(), *this)) argv.push_back(std::move(a));
  for (std::string& f : config::RunConfigToFlags(config)) argv.push_back(std::move(f));
  return argv;
}

Status AgentExecCommandLine::Validate() const {
  if (program.empty()) return InvalidArgument("exec: --program P.json is required");
  if (output_dir.empty()) return InvalidArgument("exec: --output-dir DIR is required");
  return config.Validate();
}

void AddAgentOptions(CLI::App& app, AgentCommandLine* line) { Register(app, AgentRows(), line); }

void AddAgentExecOptions(CLI::App& app, AgentExecCommandLine* line) {
  Register(app, ExecRows(), line);
}

Result<ParsedAgentCommandLine> ParseAgentCommandLine(const std::vector<std::string>& args) {
  ParsedAgentCommandLine out;
  std::vector<std::string> rest = args;
  // The run-config flags take optional values (`--enable-pmu [N]`) that
  // config/ reads exactly as the reference does: they are taken out first.
  const bool exec_first = !args.empty() && args[0] == "exec";
  if (exec_first) {
    rest.erase(rest.begin());
    DFX_ASSIGN_OR_RETURN(config::ParsedRunConfig run_config, config::ParseRunConfigFlags(rest));
    out.exec.config = run_config.config;
    out.warnings = std::move(run_config.warnings);
    rest.insert(rest.begin(), "exec");
  }

  CLI::App app{kDescription, "dfx-rank-agent"};
  AddAgentOptions(app, &out.agent);
  bool recover = false;
  app.add_flag(
      "--recover", recover,
      "offer the spool of a run whose coordinator died to `dfx-coordinator gather`, then exit");
  CLI::App* serve =
      app.add_subcommand("serve", "a long-lived agent that attaches to successive runs");
  AddAgentOptions(*serve, &out.agent);
  CLI::App* exec = app.add_subcommand(
      "exec", "run one program once on a local chip (the L2 run), no coordinator");
  AddAgentExecOptions(*exec, &out.exec);
  exec->footer(config::RunConfigFlagsHelp());
  app.require_subcommand(0, 1);
  for (CLI::App* a : {&app, serve, exec})
    a->set_version_flag("--version", VersionLine("dfx-rank-agent"));
  app.footer(kEnvironment);

  try {
    std::vector<std::string> reversed(rest.rbegin(), rest.rend());  // CLI11 pops from the back
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out.form = ParsedAgentCommandLine::Form::kHelp;
    out.help = app.help();
    return out;
  } catch (const CLI::CallForAllHelp&) {
    out.form = ParsedAgentCommandLine::Form::kHelp;
    out.help = app.help("", CLI::AppFormatMode::All);
    return out;
  } catch (const CLI::CallForVersion& e) {
    out.form = ParsedAgentCommandLine::Form::kHelp;
    out.help = std::string(e.what()) + "\n";
    return out;
  } catch (const CLI::ParseError& e) {
    // A mistyped flag, not the required one it displaced, is the error.
    if (auto unknown = UnknownArgumentsOf(app, "dfx-rank-agent")) return InvalidArgument(*unknown);
    std::string message = e.what();
    if (dynamic_cast<const CLI::ValidationError*>(&e) == nullptr)
      message += " (dfx-rank-agent --help lists the options)";
    return InvalidArgument(message);
  }

  if (exec->parsed()) {
    if (!exec_first) {
      return InvalidArgument(
          "exec must be the first argument: dfx-rank-agent exec --program P.json --output-dir DIR "
          "...");
    }
    out.form = ParsedAgentCommandLine::Form::kExec;
    out.exec.config.Normalize();
    DFX_RETURN_IF_ERROR(out.exec.Validate());
    return out;
  }
  if (serve->parsed()) {
    if (recover) return InvalidArgument("--recover: not a serve option (a recovery agent exits)");
    out.agent.mode = AgentMode::kServe;
  } else if (recover) {
    out.agent.mode = AgentMode::kRecover;
  }
  out.form = ParsedAgentCommandLine::Form::kAgent;
  DFX_RETURN_IF_ERROR(out.agent.Validate());
  return out;
}

}  // namespace dfx::protocol
