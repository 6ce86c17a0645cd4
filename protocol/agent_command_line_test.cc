#include "protocol/agent_command_line.h"

#include <gtest/gtest.h>

namespace dfx::protocol {
namespace {

using Form = ParsedAgentCommandLine::Form;

AgentCommandLine ParseAgent(const std::vector<std::string>& argv) {
  auto parsed = ParseAgentCommandLine(argv);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (!parsed.ok()) return {};
  EXPECT_EQ(parsed->form, Form::kAgent);
  return parsed->agent;
}

std::string ErrorOf(const std::vector<std::string>& argv) {
  auto parsed = ParseAgentCommandLine(argv);
  EXPECT_FALSE(parsed.ok());
  if (parsed.ok()) return "";
  EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument);
  return parsed.status().message();
}

AgentCommandLine EveryAgentOption() {
  AgentCommandLine line;
  line.coordinator = "tcp://10.0.0.7:5555";
  line.session_id = 0x00c0ffee12345678;
  line.rank = 3;
  line.chips = 4;
  line.spool = "/var/spool/my dfx";
  line.timeouts.connect = std::chrono::seconds(60);
  // Not a whole number of ms, nor a short decimal of seconds: must still read back exactly.
  line.timeouts.heartbeat_interval = Seconds(0.1 + 0.2) + std::chrono::nanoseconds(7);
  line.timeouts.heartbeat_timeout = Seconds(kMaxTimeoutSeconds);
  line.chip.log_level = "warn";
  line.chip.virtual_clock = true;
  line.chip.aic_cores = 1;
  line.chip.aiv_cores = 64;
  line.total_ranks = 10;
  line.key_file = "/keys/agents/host a.key";
  line.coordinator_key_file = "/keys/coordinator.pub";
  return line;
}

TEST(AgentCommandLineTest, EveryFormReadsBackAsTheStructItWasWrittenFrom) {
  AgentCommandLine one_shot = EveryAgentOption();
  EXPECT_EQ(ParseAgent(one_shot.ToArgv()), one_shot);

  AgentCommandLine serve = EveryAgentOption();
  serve.mode = AgentMode::kServe;
  serve.session_id = 0;  // adopts the coordinator's
  ASSERT_EQ(serve.ToArgv().front(), "serve");
  EXPECT_EQ(ParseAgent(serve.ToArgv()), serve);

  AgentCommandLine recover = EveryAgentOption();
  recover.mode = AgentMode::kRecover;
  ASSERT_EQ(recover.ToArgv().front(), "--recover");
  EXPECT_EQ(ParseAgent(recover.ToArgv()), recover);

  // Defaults and unset values survive too (no rank: it comes from MPI).
  AgentCommandLine minimal;
  minimal.coordinator = "tcp://127.0.0.1:1";
  minimal.session_id = 1;
  EXPECT_EQ(ParseAgent(minimal.ToArgv()), minimal);
}

TEST(AgentCommandLineTest, ExecReadsBackWithItsRunConfig) {
  AgentExecCommandLine line;
  line.program = "/p/prog.json";
  line.output_dir = "/w/dfx_outputs";
  line.work_dir = "/w";
  line.config.backend_type = config::BackendType::kA5;
  line.config.execution_mode = config::ExecutionMode::kOnboard;
  line.config.enable_chip_swimlane = 3;
  line.config.enable_dep_gen = true;
  line.config.enable_dump_args = 2;
  line.config.enable_pmu = 4;
  line.config.enable_scope_stats = true;
  line.config.aicpu_thread_num = 3;
  line.config.rings.task_window = {64, 64, 128, 128};
  line.config.Normalize();
  line.pass = config::PassKind::kTiming;
  line.device_state_dir = "/w/device_state";
  line.dump_drain_bytes_per_sec = 1.5e6;
  line.dump_timeout_ms = 0;
  line.dump_arena_bytes = 1 << 20;
  line.chip.virtual_clock = true;
  line.chip.aiv_cores = 2;
  line.chip.log_level = "debug";
  line.program_origin = "plan.json's attn";
  line.check_only = true;
  line.check_host_memory = true;
  ASSERT_EQ(line.ToArgv().front(), "exec");
  auto parsed = ParseAgentCommandLine(line.ToArgv());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->form, Form::kExec);
  EXPECT_EQ(parsed->exec, line);
}

TEST(AgentCommandLineTest, WritesWhatTheLauncherUsedToWriteByHand) {
  AgentCommandLine line;
  line.coordinator = "tcp://127.0.0.1:5555";
  line.session_id = 0xab;
  line.rank = 1;
  line.spool = "/w/.dfx_spool";
  line.timeouts.connect = std::chrono::seconds(60);
  line.chip.log_level = "warn";
  EXPECT_EQ(line.ToArgv(), (std::vector<std::string>{
                               "--coordinator", "tcp://127.0.0.1:5555", "--session",
                               "00000000000000ab", "--rank", "1", "--chips", "1", "--spool",
                               "/w/.dfx_spool", "--connect-timeout", "60", "--heartbeat-interval",
                               "0.2", "--heartbeat-timeout", "10", "--log-level", "warn"}));
}

TEST(AgentCommandLineTest, SecondsAreBoundedTheSameWayInBothDirections) {
  const std::vector<std::string> base = {"--coordinator", "tcp://h:1", "--session", "1"};
  auto with = [&](std::string flag, std::string value) {
    std::vector<std::string> argv = base;
    argv.push_back(std::move(flag));
    argv.push_back(std::move(value));
    return argv;
  };
  EXPECT_EQ(ParseAgent(with("--connect-timeout", "1000000")).timeouts.connect,
            std::chrono::seconds(1000000));
  EXPECT_EQ(ParseAgent(with("--heartbeat-interval", "0.05")).timeouts.heartbeat_interval,
            std::chrono::milliseconds(50));
  for (const char* flag : {"--connect-timeout", "--heartbeat-interval", "--heartbeat-timeout"}) {
    for (const char* bad : {"1000000.5", "1e7", "0", "-1", "inf", "nan", "soon", ""}) {
      const std::string error = ErrorOf(with(flag, bad));
      EXPECT_NE(error.find(flag), std::string::npos) << error;
      EXPECT_NE(error.find(std::string(bad).empty() ? "''" : bad), std::string::npos) << error;
      EXPECT_NE(error.find("a positive number of seconds, at most 1000000"), std::string::npos)
          << error;
    }
  }
}

TEST(AgentCommandLineTest, BadValuesNameTheFlagTheValueAndWhatIsAllowed) {
  const std::vector<std::string> base = {"--coordinator", "tcp://h:1", "--session", "1"};
  auto error = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), extra.begin(), extra.end());
    return ErrorOf(argv);
  };
  EXPECT_EQ(error({"--chips", "65"}), "--chips 65: expected an integer in [1, 64]");
  EXPECT_EQ(error({"--chips=two"}), "--chips two: expected an integer in [1, 64]");
  EXPECT_EQ(error({"--rank", "-1"}), "--rank -1: expected an integer in [0, 1048576]");
  EXPECT_EQ(error({"--aic-cores", "0"}), "--aic-cores 0: expected an integer in [1, 64]");
  EXPECT_EQ(error({"--log-level", "loud"}),
            "--log-level loud: expected one of trace, debug, info, warn, error, critical, off");
  EXPECT_EQ(ErrorOf({"--coordinator", "tcp://h:1", "--session", "12g"}),
            "--session 12g: expected the session id as 1 to 16 hex digits, not zero");
  EXPECT_NE(ErrorOf({"--coordinator", "tcp://h:1", "--session", "0"}).find("not zero"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--coordinator", "tcp://h:1", "--session", "11112222333344445"})
                .find("1 to 16 hex digits"),
            std::string::npos);
  // What the launcher prints is what the agent reads, with or without 0x.
  EXPECT_EQ(ParseAgent({"--coordinator", "x", "--session", "0x00000000000000AB"}).session_id,
            0xabu);
  // Unknown flags and stray words are named; run-config flags belong to exec.
  EXPECT_NE(error({"--bogus"}).find("--bogus"), std::string::npos);
  EXPECT_NE(error({"--enable-dep-gen"}).find("--enable-dep-gen"), std::string::npos);
  EXPECT_NE(error({"stray"}).find("stray"), std::string::npos);
  EXPECT_NE(error({"--chips"}).find("--chips"), std::string::npos);
}

TEST(AgentCommandLineTest, RequiredFlagsDependOnTheForm) {
  EXPECT_EQ(ErrorOf({"--session", "1"}), "--coordinator tcp://HOST:PORT is required");
  EXPECT_NE(ErrorOf({"--coordinator", "x"}).find("--session HEX is required"), std::string::npos);
  EXPECT_EQ(ParseAgent({"serve", "--coordinator", "x", "--rank", "2"}).mode, AgentMode::kServe);
  EXPECT_EQ(ErrorOf({"--recover", "--coordinator", "x", "--session", "1"}),
            "--recover needs --spool DIR (the spool the run used)");
  EXPECT_NE(ErrorOf({"serve", "--coordinator", "x", "--recover"}).find("--recover"),
            std::string::npos);
  // Options may come before the subcommand, and a repeated flag takes its last value.
  AgentCommandLine serve =
      ParseAgent({"--chips", "2", "serve", "--coordinator", "x", "--chips", "3", "--chips=5"});
  EXPECT_EQ(serve.mode, AgentMode::kServe);
  EXPECT_EQ(serve.chips, 5);

  EXPECT_EQ(ErrorOf({"exec", "--output-dir", "o"}), "exec: --program P.json is required");
  EXPECT_EQ(ErrorOf({"exec", "--program", "p"}), "exec: --output-dir DIR is required");
  EXPECT_NE(ErrorOf({"--log-level", "info", "exec", "--program", "p", "--output-dir", "o"})
                .find("exec must be the first argument"),
            std::string::npos);
  EXPECT_EQ(ErrorOf({"exec", "--program", "p", "--output-dir", "o", "--pass", "both"}),
            "--pass both: expected one of single, graph, timing");
  EXPECT_EQ(ErrorOf({"exec", "--program", "p", "--output-dir", "o", "--dump-timeout-ms", "-5"}),
            "--dump-timeout-ms -5: expected a non-negative number, at most 1e15");
  // The connecting forms' flags are not exec's.
  EXPECT_NE(ErrorOf({"exec", "--program", "p", "--output-dir", "o", "--coordinator", "x"})
                .find("--coordinator"),
            std::string::npos);
}

TEST(AgentCommandLineTest, ExecTakesTheRunConfigFlagsAsConfigReadsThem) {
  auto parsed =
      ParseAgentCommandLine({"exec", "--program", "p.json", "--enable-pmu", "--output-dir", "o",
                             "--dump-args", "2", "--enable-chip-swimlane", "--platform", "a5sim"});
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->exec.program, "p.json");
  EXPECT_EQ(parsed->exec.output_dir, "o");
  EXPECT_EQ(parsed->exec.config.enable_pmu, 2);  // bare = 2
  EXPECT_EQ(parsed->exec.config.enable_dump_args, 2);
  EXPECT_EQ(parsed->exec.config.enable_chip_swimlane, 4);  // bare = 4
  EXPECT_EQ(parsed->exec.config.backend_type, config::BackendType::kA5);
  EXPECT_TRUE(parsed->exec.config.save_kernels) << "normalised: forced on by a DFX flag";
  ASSERT_EQ(parsed->warnings.size(), 1u);
  EXPECT_NE(parsed->warnings[0].find("--backend-type"), std::string::npos);
  EXPECT_NE(ErrorOf({"exec", "--program", "p", "--output-dir", "o", "--chip-swimlane-level", "9"})
                .find("--chip-swimlane-level 9"),
            std::string::npos);
}

TEST(AgentCommandLineTest, HeartbeatsMustLeaveRoomForOneLateBeat) {
  const std::vector<std::string> base = {"--coordinator", "tcp://h:1", "--session", "1"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), more.begin(), more.end());
    return argv;
  };
  const std::string tiny = ErrorOf(with({"--heartbeat-timeout", "0.000001"}));
  EXPECT_NE(tiny.find("--heartbeat-timeout 1e-06: expected at least 3 × --heartbeat-interval = "
                      "0.6 s"),
            std::string::npos)
      << tiny;
  EXPECT_NE(ErrorOf(with({"--heartbeat-interval", "0.001"})).find("at least 0.01 s"),
            std::string::npos);
  EXPECT_EQ(ParseAgent(with({"--heartbeat-interval", "0.1", "--heartbeat-timeout", "0.3"}))
                .timeouts.heartbeat_timeout,
            std::chrono::milliseconds(300));
}

TEST(AgentCommandLineTest, KeysGoTogetherAndOffLoopbackTheyAreRequired) {
  const std::string half = ErrorOf({"serve", "--coordinator", "tcp://h:1", "--key", "a.key"});
  EXPECT_NE(half.find("--key FILE and --coordinator-key FILE go together"), std::string::npos)
      << half;
  AgentCommandLine remote;
  remote.mode = AgentMode::kServe;
  remote.coordinator = "tcp://10.1.2.3:5555";
  auto refused = ResolveAgentCurve(remote);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("dfx-coordinator keygen"), std::string::npos)
      << refused.status().message();
  AgentCommandLine local = remote;
  local.coordinator = "tcp://127.0.0.1:5555";
  auto plain = ResolveAgentCurve(local);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_FALSE(plain->has_value()) << "loopback without keys stays possible";
  local.key_file = "/nonexistent/agent.key";
  local.coordinator_key_file = "/nonexistent/coordinator.pub";
  auto missing = ResolveAgentCurve(local);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--key: /nonexistent/agent.key"), std::string::npos)
      << missing.status().message();
}

TEST(AgentCommandLineTest, HelpDescribesTheFormAsked) {
  auto top = ParseAgentCommandLine({"--help"});
  ASSERT_TRUE(top.ok());
  EXPECT_EQ(top->form, Form::kHelp);
  for (const char* text : {"serve", "exec", "--recover", "--connect-timeout", "--coordinator"})
    EXPECT_NE(top->help.find(text), std::string::npos) << text << " in\n" << top->help;

  auto serve = ParseAgentCommandLine({"serve", "--help"});
  ASSERT_TRUE(serve.ok());
  EXPECT_EQ(serve->form, Form::kHelp);
  EXPECT_NE(serve->help.find("--heartbeat-timeout"), std::string::npos) << serve->help;
  EXPECT_EQ(serve->help.find("offer the spool of a run whose coordinator died"), std::string::npos)
      << serve->help;

  auto exec = ParseAgentCommandLine({"exec", "-h"});
  ASSERT_TRUE(exec.ok());
  EXPECT_EQ(exec->form, Form::kHelp);
  for (const char* text : {"--program", "--pass", "--dump-timeout-ms", "--enable-dep-gen"})
    EXPECT_NE(exec->help.find(text), std::string::npos) << text << " in\n" << exec->help;
  EXPECT_EQ(exec->help.find("--coordinator"), std::string::npos) << exec->help;
}

}  // namespace
}  // namespace dfx::protocol
