#include "coordinator/access.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <system_error>

#include "common/file_util.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;

namespace {

bool PlainName(const std::string& name) {
  return !name.empty() && name.size() <= 64 && name[0] != '.' &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c == '.';
         });
}

// Writes NAME.key / NAME.pub in `dir` unless NAME.key exists (then it is
// read, so a broken existing pair is reported, never silently replaced).
Status EnsurePair(const fs::path& dir, const std::string& name, std::vector<fs::path>* written) {
  const fs::path key = dir / (name + ".key");
  const fs::path pub = dir / (name + ".pub");
  std::error_code ec;
  if (fs::exists(fs::symlink_status(key, ec))) {
    DFX_ASSIGN_OR_RETURN(protocol::CurveKeyPair existing, protocol::ReadKeyPairFile(key));
    if (!fs::exists(fs::symlink_status(pub, ec))) {
      DFX_RETURN_IF_ERROR(protocol::WritePublicKeyFile(pub, existing.public_key));
      written->push_back(pub);
    }
    return Status::Ok();
  }
  DFX_ASSIGN_OR_RETURN(protocol::CurveKeyPair pair, protocol::GenerateCurveKeyPair());
  DFX_RETURN_IF_ERROR(protocol::WriteKeyPairFile(key, pair));
  DFX_RETURN_IF_ERROR(protocol::WritePublicKeyFile(pub, pair.public_key));
  written->push_back(key);
  written->push_back(pub);
  return Status::Ok();
}

const char* const kHowToMakeKeys =
    "make keys with `dfx-coordinator keygen DIR --agent NAME`, then run with --keys DIR and start "
    "each agent with --key DIR/agents/NAME.key --coordinator-key DIR/coordinator.pub";

}  // namespace

Result<Access> ResolveAccess(const AccessFlags& flags, const std::string& bind, bool launching) {
  fs::path key_file = flags.key_file;
  fs::path agent_keys = flags.agent_keys;
  if (!flags.keys_dir.empty()) {
    std::error_code ec;
    if (!fs::is_directory(flags.keys_dir, ec)) {
      return InvalidArgument(
          fmt::format("--keys {}: not a directory; {}", flags.keys_dir.string(), kHowToMakeKeys));
    }
    if (key_file.empty()) key_file = flags.keys_dir / kCoordinatorKeyFile;
    if (agent_keys.empty()) agent_keys = flags.keys_dir / kAgentKeysDir;
  }
  Access access;
  if (!flags.any() && !launching) {
    if (!protocol::IsLoopbackEndpoint(bind)) {
      return InvalidArgument(fmt::format(
          "--bind {}: agents on other hosts could connect, so authentication is required and no "
          "key was given; {} (or bind a loopback address such as tcp://127.0.0.1:PORT)",
          bind, kHowToMakeKeys));
    }
    access.description =
        "no authentication: loopback only, but any process on this host may connect (give "
        "--keys DIR to admit only known agents)";
    return access;
  }
  if (!agent_keys.empty() && key_file.empty()) {
    return InvalidArgument(fmt::format(
        "--agent-keys {}: needs --key FILE (or --keys DIR): agents pin the coordinator's public "
        "key, so it must not change from run to run",
        agent_keys.string()));
  }
  if (!launching && agent_keys.empty()) {
    return InvalidArgument(fmt::format(
        "--key {}: no agent key would be admitted, so no agent could attach; give --agent-keys "
        "DIR|FILE (or --keys DIR); {}",
        key_file.string(), kHowToMakeKeys));
  }
  protocol::CurveServer server;
  if (!key_file.empty()) {
    auto keys = protocol::ReadKeyPairFile(key_file);
    if (!keys.ok()) return keys.status().WithContext(flags.key_file.empty() ? "--keys" : "--key");
    server.keys = *keys;
  } else {
    DFX_ASSIGN_OR_RETURN(server.keys, protocol::GenerateCurveKeyPair());
  }
  size_t known = 0;
  if (!agent_keys.empty()) {
    auto keys = protocol::ReadPublicKeys(agent_keys);
    if (!keys.ok()) {
      return keys.status().WithContext(flags.agent_keys.empty() ? "--keys" : "--agent-keys");
    }
    known = keys->size();
    server.allowed_clients = std::move(*keys);
  }
  if (launching) {
    // The launched agents' pair lives as long as this run, in their
    // environment only.
    protocol::CurveClient launched;
    DFX_ASSIGN_OR_RETURN(launched.keys, protocol::GenerateCurveKeyPair());
    launched.server_public_key = server.keys.public_key;
    server.allowed_clients.push_back(launched.keys.public_key);
    access.launched_agents = std::move(launched);
  }
  access.description =
      fmt::format("CURVE: admits {}{}{}", known > 0 ? fmt::format("{} agent key(s)", known) : "",
                  known > 0 && launching ? " and " : "",
                  launching ? "the agents it launches (a key pair of this run)" : "");
  access.server = std::move(server);
  return access;
}

Result<std::vector<fs::path>> WriteKeyDirectory(const fs::path& dir,
                                                const std::vector<std::string>& agents) {
  for (const std::string& name : agents) {
    if (!PlainName(name)) {
      return InvalidArgument(fmt::format(
          "--agent {}: expected a plain name (letters, digits, '-', '_', '.'; at most 64)", name));
    }
  }
  std::vector<fs::path> written;
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(dir, ec))) {
    return InvalidArgument(dir.string() + ": is a symbolic link; give the real key directory");
  }
  DFX_RETURN_IF_ERROR(MakeDirs(dir));
  // The directory holds secrets: only its owner may list it.
  if (::chmod(dir.c_str(), 0700) != 0) {
    return InvalidArgument(dir.string() + ": cannot make it private (chmod 700)");
  }
  DFX_RETURN_IF_ERROR(EnsurePair(dir, "coordinator", &written));
  DFX_RETURN_IF_ERROR(MakeDirsNoLinks(dir, kAgentKeysDir));
  // It holds the agents' secret keys, and whoever may write to it could
  // admit a key of their own (ReadPublicKeys refuses such a directory).
  if (::chmod((dir / kAgentKeysDir).c_str(), 0700) != 0) {
    return InvalidArgument((dir / kAgentKeysDir).string() + ": cannot make it private (chmod 700)");
  }
  for (const std::string& name : agents) {
    DFX_RETURN_IF_ERROR(EnsurePair(dir / kAgentKeysDir, name, &written));
  }
  return written;
}

}  // namespace dfx::coordinator
