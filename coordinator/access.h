// Who may connect to the coordinator (docs/design.md §7): the rule that turns the
// key flags and the bind address into the ROUTER's CURVE server and the
// credentials launched agents receive, and `dfx-coordinator keygen`'s key
// directory.
//
//   DIR/coordinator.key   the coordinator's key pair (0600)    --keys DIR or --key FILE
//   DIR/coordinator.pub   its public key: agents pin it          dfx-rank-agent --coordinator-key
//   DIR/agents/NAME.key   an agent's key pair (0600)             dfx-rank-agent --key
//   DIR/agents/NAME.pub   the agent public keys admitted         --keys DIR or --agent-keys
//   DIR|FILE
//
// The rule: agents the coordinator launches (local, mpirun, gather's
// recovery agents) always speak CURVE with a pair made for this run alone,
// passed through their environment; keys given with --keys / --key /
// --agent-keys admit agents started elsewhere. Without keys, a coordinator
// that launches nobody may bind only a loopback address (the quickstart and
// tests); any other bind is refused with the command that makes keys.
//
// Value types and pure functions (ResolveAccess reads key files): any thread.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "protocol/curve.h"

namespace dfx::coordinator {

inline constexpr const char* kCoordinatorKeyFile = "coordinator.key";
inline constexpr const char* kCoordinatorPublicKeyFile = "coordinator.pub";
inline constexpr const char* kAgentKeysDir = "agents";

// The key flags of `run` and `gather`.
struct AccessFlags {
  std::filesystem::path keys_dir;    // --keys DIR: a keygen directory
  std::filesystem::path key_file;    // --key FILE: the coordinator's key pair
  std::filesystem::path agent_keys;  // --agent-keys DIR|FILE: the agent public keys admitted
  bool any() const { return !keys_dir.empty() || !key_file.empty() || !agent_keys.empty(); }
};

struct Access {
  // The ROUTER's CURVE server; unset = no authentication (loopback only).
  std::optional<protocol::CurveServer> server;
  // What launched agents are given (through their environment).
  std::optional<protocol::CurveClient> launched_agents;
  // One line for the log: who is admitted.
  std::string description;
};

// Applies the rule above for a coordinator bound at `bind` that launches
// agents itself (`launching`) or not. Errors name the flag and the fix.
Result<Access> ResolveAccess(const AccessFlags& flags, const std::string& bind, bool launching);

// `dfx-coordinator keygen DIR --agent NAME...`: creates DIR (0700) with the
// coordinator's pair (kept if it exists) and one pair per agent name (an
// existing one is kept too), all in the layout above. Returns the files it
// wrote, for the user.
Result<std::vector<std::filesystem::path>> WriteKeyDirectory(
    const std::filesystem::path& dir, const std::vector<std::string>& agents);

}  // namespace dfx::coordinator
