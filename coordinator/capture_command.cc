#include "coordinator/capture_command.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include "collectors/artifact_layout.h"
#include "common/subprocess.h"
#include "common/unknown_arguments.h"
#include "common/version.h"
#include "config/run_config.h"
#include "coordinator/capture_control.h"
#include "coordinator/capture_policy.h"

namespace dfx::coordinator {

namespace {

int Fail(const std::string& message, int code) {
  std::fflush(stdout);
  std::fprintf(stderr, "dfx-coordinator capture: %s\n", message.c_str());
  return code;
}

// Which collector key each run-config flag sets; other run-config flags are the run's.
const std::map<std::string, std::string>& CollectorFlags() {
  static const std::map<std::string, std::string> flags = {
      {"--enable-chip-swimlane", "enable_chip_swimlane"},
      {"--chip-swimlane-level", "enable_chip_swimlane"},
      {"--enable-l2-swimlane", "enable_chip_swimlane"},
      {"--enable-dep-gen", "enable_dep_gen"},
      {"--dump-args", "enable_dump_args"},
      {"--enable-pmu", "enable_pmu"},
      {"--enable-scope-stats", "enable_scope_stats"},
  };
  return flags;
}

const std::map<std::string, std::string>& DisableNames() {
  static const std::map<std::string, std::string> names = {
      {"swimlane", "enable_chip_swimlane"},  {"dep-gen", "enable_dep_gen"},
      {"dump-args", "enable_dump_args"},     {"pmu", "enable_pmu"},
      {"scope-stats", "enable_scope_stats"},
  };
  return names;
}

// The flag words ParseRunConfigFlags took out of `before` (leaving `after`).
std::vector<std::string> TakenFlags(const std::vector<std::string>& before,
                                    std::vector<std::string> after) {
  std::vector<std::string> taken;
  for (const std::string& word : before) {
    auto it = std::find(after.begin(), after.end(), word);
    if (it != after.end()) {
      after.erase(it);
      continue;
    }
    if (word.rfind("--", 0) == 0) taken.push_back(word.substr(0, word.find('=')));
  }
  return taken;
}

const char* const kFooter = R"(
The collector flags are the run's (docs/run-config.md §2.1): --enable-chip-swimlane [LEVEL],
--chip-swimlane-level N, --enable-dep-gen, --dump-args [LEVEL], --enable-pmu [N],
--enable-scope-stats. A change applies to dispatches sent after it, on top of the run's flags,
its plan steps and --capture-ranks / --capture-dispatches; later changes win. The run records
each change in run_manifest.json (capture_changes: when, pid and uid, what, which dispatches).
Examples:
  dfx-coordinator capture W --ranks 0-3 --next 3 --enable-chip-swimlane 2
  dfx-coordinator capture W --disable pmu
  dfx-coordinator capture W --off            (no collector on the next dispatches)
  dfx-coordinator capture W --reset          (back to the run's own configuration)
  dfx-coordinator capture W --status
Only the user who started the run can reach its socket (W/.dfx_control/capture.sock, 0700).
Exit status: 0 applied, 1 refused by the run or no run going in W, 2 usage error.
)";

}  // namespace

int CaptureMain(std::vector<std::string> args) {
  const std::vector<std::string> given = args;
  auto parsed = config::ParseRunConfigFlags(args);
  if (!parsed.ok()) return Fail(parsed.status().message(), 2);
  Json set = Json::object();
  const Json values = config::RunConfigToJson(parsed->config);
  for (const std::string& flag : TakenFlags(given, args)) {
    auto it = CollectorFlags().find(flag);
    if (it == CollectorFlags().end()) {
      return Fail(fmt::format("{} is the run's, not a capture's: a capture changes collectors and "
                              "their levels only (see --help)",
                              flag),
                  2);
    }
    set[it->second] = values.at(it->second);
  }

  CLI::App app{
      "dfx-coordinator capture: change what the next dispatches of the L3 run going on in W "
      "capture (collectors on or off, levels), from another terminal"};
  app.name("dfx-coordinator capture");
  std::string work_dir, ranks;
  std::optional<uint32_t> next;
  std::vector<std::string> disable;
  bool off = false, reset = false, status = false;
  double timeout_s = 10;
  app.add_option("work_dir", work_dir, "the --work-dir of the running run")->required();
  app.add_option("--ranks", ranks, "only these ranks, e.g. 0-3 or 1,3 (default: every rank)");
  app.add_option("--next", next,
                 "only the next N dispatches of each of those ranks (default: "
                 "every later dispatch)")
      ->check(CLI::Range(1u, 1000000000u));
  std::vector<std::string> names;
  for (const auto& [name, _] : DisableNames()) names.push_back(name);
  app.add_option("--disable", disable, "turn a collector off (repeatable)")
      ->check(CLI::IsMember(names));
  app.add_flag("--off", off, "turn every collector off");
  app.add_flag("--reset", reset, "drop the earlier changes first (back to the run's own)");
  app.add_flag("--status", status, "change nothing: say how far the run is");
  app.add_option("--timeout", timeout_s, "seconds to wait for the run's answer (default 10)")
      ->check(CLI::Range(0.1, 3600.0));
  app.footer(std::string(kFooter));
  app.set_version_flag("--version", VersionLine("dfx-coordinator"));
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (auto unknown = UnknownArgumentsOf(app, "dfx-coordinator capture")) return Fail(*unknown, 2);
    app.exit(e);
    return 2;
  }
  for (const std::string& name : disable) set[DisableNames().at(name)] = 0;
  if (off) {
    for (const auto& [_, key] : DisableNames()) set[key] = 0;
  }
  for (const char* key : {"enable_dep_gen", "enable_scope_stats"}) {
    if (set.contains(key)) set[key] = set[key].is_boolean() ? set[key] : Json(set[key] != 0);
  }
  if (set.empty() && !reset && !status) {
    return Fail(
        "nothing to change: give a collector flag (e.g. --enable-chip-swimlane 2), "
        "--disable NAME, --off, --reset or --status",
        2);
  }
  CaptureRequest request;
  if (!ranks.empty()) {
    auto list = ParseIndexList("--ranks", ranks);
    if (!list.ok()) return Fail(list.status().message(), 2);
    request.ranks = std::move(*list);
  }
  request.next = next;
  request.set = set;
  request.reset = reset;
  request.status = status;
  request.command = "dfx-coordinator capture";
  for (const std::string& word : given) request.command += " " + ShellQuote(word);

  auto answer = SendControlRequest(work_dir, CaptureRequestToJson(request),
                                   static_cast<int>(timeout_s * 1000));
  if (!answer.ok()) return Fail(answer.status().message(), 1);
  const Json& a = *answer;
  if (!a.is_object() || !a.value("ok", false)) {
    return Fail("the run refused: " + (a.is_object() ? a.value("error", std::string("(no reason)"))
                                                     : std::string("(no answer)")),
                1);
  }
  const Json progress = a.value("progress", Json::object());
  const std::string how_far =
      fmt::format("{} of {} dispatch(es) sent, {} finished", progress.value("sent", 0),
                  progress.value("dispatches", 0), progress.value("finished", 0));
  if (status) {
    std::printf("run in %s: %s\n", ShellQuote(work_dir).c_str(), how_far.c_str());
  } else {
    std::printf(
        "capture change %d applied to the dispatches sent from now on (%s); "
        "run_manifest.json records it under capture_changes\n",
        a.value("change", 0), how_far.c_str());
  }
  return 0;
}

}  // namespace dfx::coordinator
