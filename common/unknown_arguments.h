// The usage error for arguments that no flag or operand of a command took
// (`dfx-coordinator run --bogus x`). CLI11 checks required options before
// it reports extras, so a mistyped flag used to surface as "--work-dir is
// required"; every main asks this first when CLI11 throws, and the message
// names the flag and the --help that lists what the command takes.
//
// Header-only and CLI11-free: `App` is a CLI::App (anything with
// remaining(), get_subcommands() and get_name()), so common/ does not link
// CLI11. Thread-compatible; pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dfx {

// "run: unknown flag --bogus (`dfx-coordinator run --help` lists what it
// takes)" for program "dfx-coordinator" and subcommands {"run"}: the
// caller prefixes its own name, as with its other errors. Several are
// listed; arguments that are not flags are called unexpected. `unknown` is
// not empty.
inline std::string UnknownArgumentsMessage(const std::string& program,
                                           const std::vector<std::string>& subcommands,
                                           const std::vector<std::string>& unknown) {
  std::vector<std::string> flags, others;
  for (const std::string& a : unknown) (a.size() > 1 && a[0] == '-' ? flags : others).push_back(a);
  auto join = [](const std::vector<std::string>& items) {
    std::string text;
    for (const std::string& i : items) text += (text.empty() ? "" : " ") + i;
    return text;
  };
  std::string text = join(subcommands);
  if (!text.empty()) text += ": ";
  if (!flags.empty())
    text += (flags.size() == 1 ? "unknown flag " : "unknown flags ") + join(flags);
  if (!others.empty()) {
    text += flags.empty() ? "unexpected argument" : "; unexpected argument";
    text += (others.size() == 1 ? " " : "s ") + join(others);
  }
  std::string command = program;
  if (!subcommands.empty()) command += " " + join(subcommands);
  return text + " (`" + command + " --help` lists what it takes)";
}

// The message for what `app` (and the subcommands the command line chose)
// left unparsed, or nullopt when every argument was taken. `program` is the
// binary's name ("dfx-view").
template <typename App>
std::optional<std::string> UnknownArgumentsOf(const App& app, const std::string& program) {
  std::vector<std::string> subcommands;
  std::vector<std::string> unknown = app.remaining(false);
  for (const App* sub = &app;;) {
    auto chosen = sub->get_subcommands();
    if (chosen.empty()) break;
    sub = chosen.front();
    subcommands.push_back(sub->get_name());
    for (std::string& a : sub->remaining(false)) unknown.push_back(std::move(a));
  }
  if (unknown.empty()) return std::nullopt;
  return UnknownArgumentsMessage(program, subcommands, unknown);
}

}  // namespace dfx
