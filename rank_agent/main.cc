// dfx-rank-agent: parse flags, build the agent, run it (style.md §1).
//
//   dfx-rank-agent --coordinator tcp://H:P --session HEX [--rank R] [--chips N] [--spool DIR]
//   dfx-rank-agent serve --coordinator tcp://H:P [--rank R] [--chips N] [--spool DIR]
//   dfx-rank-agent --recover --coordinator tcp://H:P --session HEX --spool DIR
//   dfx-rank-agent exec --program P.json --output-dir DIR [DFX / run-config flags]
#include <fmt/format.h>
#include <malloc.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "common/log.h"
#include "config/run_config.h"
#include "rank_agent/agent.h"
#include "rank_agent/exec.h"
#include "rank_agent/rank_env.h"

namespace {

namespace fs = std::filesystem;
using dfx::Result;
using dfx::Status;

constexpr const char* kUsage = R"(usage:
  dfx-rank-agent --coordinator tcp://HOST:PORT --session HEX [--rank R] [--chips N] [--spool DIR]
  dfx-rank-agent serve --coordinator tcp://HOST:PORT [--rank R] [--chips N] [--spool DIR]
  dfx-rank-agent --recover --coordinator tcp://HOST:PORT --session HEX --spool DIR
  dfx-rank-agent exec --program P.json --output-dir DIR [DFX / run-config flags]
                      [--pass single|graph|timing] [--device-state-dir DIR]
                      [--dump-drain-bytes-per-sec B] [--dump-timeout-ms MS] [--dump-arena-bytes B]
options:
  --connect-timeout S     seconds to wait for the coordinator's first answer (default 30)
  --heartbeat-interval S  seconds between heartbeats (default 0.2)
  --heartbeat-timeout S   coordinator silence, in seconds, after which it is gone (default 10)
  --virtual-clock         deterministic virtual-clock chip mode
  --aic-cores N / --aiv-cores N   emulated cores per chip
  --log-level LEVEL       trace, debug, info, warn, error (default info)
)";

dfx::rank_agent::RankAgent* g_agent = nullptr;

void OnSignal(int) {
  if (g_agent != nullptr) g_agent->Stop();  // atomic store + pipe write: async-signal-safe
}

int Fail(const std::string& message, int code = 2) {
  std::fprintf(stderr, "dfx-rank-agent: %s\n", message.c_str());
  return code;
}

// A tiny flag reader: --name VALUE or --name=VALUE; errors name the flag.
struct Flags {
  std::vector<std::string> args;
  size_t i = 0;
  std::string name;
  std::optional<std::string> inline_value;

  bool Next() {
    if (i >= args.size()) return false;
    const std::string& a = args[i++];
    inline_value.reset();
    name = a;
    if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = a.substr(0, eq);
      inline_value = a.substr(eq + 1);
    }
    return true;
  }
  Result<std::string> Value() {
    if (inline_value) return *inline_value;
    if (i >= args.size()) return dfx::InvalidArgument(name + ": missing value");
    return args[i++];
  }
  Result<double> Seconds() {
    DFX_ASSIGN_OR_RETURN(std::string v, Value());
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0' || !(d > 0) || d > 1e6) {
      return dfx::InvalidArgument(name + " " + v + ": expected a positive number of seconds");
    }
    return d;
  }
  Result<int> Int(int min, int max) {
    DFX_ASSIGN_OR_RETURN(std::string v, Value());
    char* end = nullptr;
    long n = std::strtol(v.c_str(), &end, 10);
    if (end == v.c_str() || *end != '\0' || n < min || n > max) {
      return dfx::InvalidArgument(
          fmt::format("{} {}: expected an integer in [{}, {}]", name, v, min, max));
    }
    return static_cast<int>(n);
  }
};

int RunExecMode(std::vector<std::string> args) {
  auto parsed = dfx::config::ParseRunConfigFlags(args);
  if (!parsed.ok()) return Fail(parsed.status().message());
  for (const auto& w : parsed->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  dfx::rank_agent::ExecOptions options;
  options.config = parsed->config;
  Flags flags{args};
  std::string log_level = "info";
  while (flags.Next()) {
    if (flags.name == "--program") {
      auto v = flags.Value();
      if (!v.ok()) return Fail(v.status().message());
      options.program_path = *v;
    } else if (flags.name == "--output-dir") {
      auto v = flags.Value();
      if (!v.ok()) return Fail(v.status().message());
      options.output_dir = *v;
    } else if (flags.name == "--work-dir") {
      auto v = flags.Value();
      if (!v.ok()) return Fail(v.status().message());
      options.work_dir = *v;
    } else if (flags.name == "--virtual-clock") {
      options.chip.virtual_clock = true;
    } else if (flags.name == "--aic-cores" || flags.name == "--aiv-cores") {
      auto v = flags.Int(1, 64);
      if (!v.ok()) return Fail(v.status().message());
      (flags.name == "--aic-cores" ? options.chip.aic_cores : options.chip.aiv_cores) = *v;
    } else if (flags.name == "--log-level") {
      auto v = flags.Value();
      if (!v.ok()) return Fail(v.status().message());
      log_level = *v;
    } else if (flags.name == "--pass") {
      auto v = flags.Value();
      if (!v.ok()) return Fail(v.status().message());
      if (*v != "single" && *v != "graph" && *v != "timing")
        return Fail("exec: --pass " + *v + ": expected single, graph or timing");
      options.pass = *v;
    } else if (flags.name == "--device-state-dir") {
      auto v = flags.Value();
      if (!v.ok()) return Fail(v.status().message());
      options.device_state_dir = *v;
    } else if (flags.name == "--dump-drain-bytes-per-sec" || flags.name == "--dump-timeout-ms" ||
               flags.name == "--dump-arena-bytes") {
      auto v = flags.Value();
      if (!v.ok()) return Fail(v.status().message());
      char* end = nullptr;
      const double d = std::strtod(v->c_str(), &end);
      if (end == v->c_str() || *end != '\0' || d < 0 || d > 1e15)
        return Fail(fmt::format("exec: {} {}: expected a non-negative number", flags.name, *v));
      if (flags.name == "--dump-drain-bytes-per-sec") {
        options.chip.dump_drain_bytes_per_sec = d;
      } else if (flags.name == "--dump-timeout-ms") {
        options.chip.dump_timeout_ms = static_cast<uint64_t>(d);
      } else {
        options.chip.dump_arena_bytes = static_cast<uint64_t>(d);
      }
    } else {
      return Fail(fmt::format("exec: unknown argument '{}'\n{}", flags.name, kUsage));
    }
  }
  dfx::log::Init("dfx-rank-agent exec", log_level);
  if (options.program_path.empty()) return Fail("exec: --program P.json is required");
  if (options.output_dir.empty()) return Fail("exec: --output-dir DIR is required");
  options.config.Normalize();
  if (auto s = options.config.Validate(); !s.ok()) return Fail(s.message());
  auto result = dfx::rank_agent::RunExec(options);
  if (!result.ok()) return Fail(result.status().message(), 1);
  for (const auto& w : result->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  std::printf("ran %s: %llu tasks, %zu artifacts in %s\n", options.program_path.c_str(),
              static_cast<unsigned long long>(result->tasks_executed), result->artifacts.size(),
              options.output_dir.c_str());
  for (const auto& a : result->artifacts) std::printf("  %s\n", a.c_str());
  return 0;
}

int RunAgentMode(std::vector<std::string> args, bool serve) {
  dfx::rank_agent::AgentOptions options;
  options.mode = serve ? dfx::protocol::AgentMode::kServe : dfx::protocol::AgentMode::kOneShot;
  std::optional<int> flag_rank;
  std::string log_level = "info";
  bool have_session = false;
  Flags flags{std::move(args)};
  while (flags.Next()) {
    const std::string& f = flags.name;
    if (f == "--coordinator") {
      auto v = flags.Value();
      if (!v.ok()) return Fail(v.status().message());
      options.coordinator = *v;
    } else if (f == "--session") {
      auto v = flags.Value();
      if (!v.ok()) return Fail(v.status().message());
      char* end = nullptr;
      unsigned long long id = std::strtoull(v->c_str(), &end, 16);
      if (v->empty() || *end != '\0' || id == 0) {
        return Fail("--session " + *v + ": expected the session id as non-zero hex digits");
      }
      options.session_id = id;
      have_session = true;
    } else if (f == "--rank") {
      auto v = flags.Int(0, 1 << 20);
      if (!v.ok()) return Fail(v.status().message());
      flag_rank = *v;
    } else if (f == "--chips") {
      auto v = flags.Int(1, 64);
      if (!v.ok()) return Fail(v.status().message());
      options.chips = *v;
    } else if (f == "--spool") {
      auto v = flags.Value();
      if (!v.ok()) return Fail(v.status().message());
      options.spool_root = *v;
    } else if (f == "--recover") {
      options.mode = dfx::protocol::AgentMode::kRecover;
    } else if (f == "--connect-timeout" || f == "--heartbeat-interval" ||
               f == "--heartbeat-timeout") {
      auto v = flags.Seconds();
      if (!v.ok()) return Fail(v.status().message());
      int ms = static_cast<int>(*v * 1000);
      if (f == "--connect-timeout") options.connect_timeout_ms = ms;
      if (f == "--heartbeat-interval") options.heartbeat_interval_ms = std::max(1, ms);
      if (f == "--heartbeat-timeout") options.heartbeat_timeout_ms = ms;
    } else if (f == "--virtual-clock") {
      options.chip.virtual_clock = true;
    } else if (f == "--aic-cores" || f == "--aiv-cores") {
      auto v = flags.Int(1, 64);
      if (!v.ok()) return Fail(v.status().message());
      (f == "--aic-cores" ? options.chip.aic_cores : options.chip.aiv_cores) = *v;
    } else if (f == "--log-level") {
      auto v = flags.Value();
      if (!v.ok()) return Fail(v.status().message());
      log_level = *v;
    } else if (f == "--help" || f == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      return Fail(fmt::format("unknown argument '{}'\n{}", f, kUsage));
    }
  }
  if (options.coordinator.empty()) return Fail("--coordinator tcp://HOST:PORT is required");
  if (!serve && !have_session) {
    return Fail(
        "--session HEX is required (the coordinator prints it; use `serve` to attach to "
        "any session)");
  }
  if (options.mode == dfx::protocol::AgentMode::kRecover && options.spool_root.empty()) {
    return Fail("--recover needs --spool DIR (the spool the run used)");
  }

  dfx::rank_agent::MpiScope mpi;
  std::optional<dfx::rank_agent::LaunchRank> mpi_rank;
  if (!flag_rank && options.mode != dfx::protocol::AgentMode::kRecover) {
    mpi_rank = mpi.InitIfLaunched();
  }
  const bool recover = options.mode == dfx::protocol::AgentMode::kRecover;
  auto rank = recover ? Result<dfx::rank_agent::LaunchRank>(
                            dfx::rank_agent::LaunchRank{flag_rank.value_or(0), 1, "spool"})
                      : dfx::rank_agent::ResolveRank(flag_rank, mpi_rank);
  if (!rank.ok()) return Fail(rank.status().message());
  // Several chips per agent: ranks are dense in launcher-rank order. A
  // recovery agent with --rank R offers rank R's spool only.
  options.first_rank = recover ? rank->rank : rank->rank * options.chips;
  options.recover_only_first_rank = recover && flag_rank.has_value();
  if (options.spool_root.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    options.spool_root = fs::path(tmp != nullptr ? tmp : "/tmp") /
                         fmt::format("dfx-spool-{}", static_cast<unsigned>(::getuid()));
  }
  dfx::log::Init(fmt::format("dfx-rank-agent rank {}", options.first_rank), log_level);
  DFX_LOG_INFO("rank {} (from {}), {} chip(s), coordinator {}, spool {}", options.first_rank,
               rank->source, options.chips, options.coordinator, options.spool_root.string());

  dfx::protocol::Context context;
  dfx::rank_agent::RankAgent agent(context, options);
  g_agent = &agent;
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  Status s = agent.Run();
  g_agent = nullptr;
  if (!s.ok()) return Fail(s.message(), 1);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Artifact chunks are 1 MiB buffers allocated and freed per chunk; keep
  // them in the heap instead of mmap/munmap + page faults for every one.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "exec") {
    return RunExecMode(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  if (!args.empty() && args[0] == "serve") {
    return RunAgentMode(std::vector<std::string>(args.begin() + 1, args.end()), true);
  }
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  return RunAgentMode(std::move(args), false);
}
