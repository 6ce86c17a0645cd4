// Access control on the wire (docs/design.md §7, docs/design.md §11.13): ZeroMQ CURVE key
// pairs, the files they live in, the environment launched agents receive
// them through, and the rule that says when authentication is required.
//
// A key is 40 characters of Z85 text (32 bytes). The coordinator is a CURVE
// server: it admits only the agent public keys it was given (a ZAP handler
// inside protocol/channel.cc). Agents are CURVE clients that pin the
// coordinator's public key, so neither side talks to an impostor.
//
// Key files (written by `dfx-coordinator keygen`, read by both programs):
//   NAME.key  the key pair, secret: mode 0600, refused when the group or
//             others may read it or when it is a symbolic link
//               # dfx CURVE key pair: keep secret (mode 0600)
//               public-key = <40 Z85 characters>
//               secret-key = <40 Z85 characters>
//   NAME.pub  the public half, to hand out:   public-key = <40 Z85 characters>
//
// Value types and pure functions: any thread.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dfx::protocol {

inline constexpr size_t kCurveKeyChars = 40;  // Z85 of 32 bytes

struct CurveKeyPair {
  std::string public_key;  // Z85
  std::string secret_key;  // Z85
  bool operator==(const CurveKeyPair&) const = default;
};

// What a server (the coordinator's ROUTER) needs: its pair and the public
// keys of the clients it admits.
struct CurveServer {
  CurveKeyPair keys;
  std::vector<std::string> allowed_clients;  // Z85 public keys
};

// What a client (an agent's DEALER) needs: its pair and the server's public key.
struct CurveClient {
  CurveKeyPair keys;
  std::string server_public_key;  // Z85
  bool operator==(const CurveClient&) const = default;
};

// libzmq was built with CURVE (zmq_has("curve")).
bool CurveAvailable();
// A fresh random pair. Unavailable when libzmq has no CURVE.
Result<CurveKeyPair> GenerateCurveKeyPair();
// 40 characters of the Z85 alphabet.
bool IsCurveKey(std::string_view key);

// Key files. Writes go through the atomic writer (the secret one with mode
// 0600). Errors name the file, what is wrong and how to fix it.
Status WriteKeyPairFile(const std::filesystem::path& path, const CurveKeyPair& keys);
Status WritePublicKeyFile(const std::filesystem::path& path, const std::string& public_key);
// A key pair file: refused when it is a link, readable by group or others
// (names `chmod 600`), in a directory the group or others may write to
// (names `chmod go-w`), malformed, or when its public key does not belong to
// its secret key.
Result<CurveKeyPair> ReadKeyPairFile(const std::filesystem::path& path);
// A public key file (a .pub, or a .key whose public half is taken).
Result<std::string> ReadPublicKeyFile(const std::filesystem::path& path);
// Public keys from `path`: one key file, or every *.pub file in a directory
// (not recursive). An empty directory, a directory (or a file's directory)
// the group or others may write to, and a *.pub that is a link are errors
// naming the path and the fix.
Result<std::vector<std::string>> ReadPublicKeys(const std::filesystem::path& path);

// The environment of a launched agent (docs/design.md §7: never its command
// line): the agent's pair and the coordinator's public key.
inline constexpr const char* kEnvAgentPublicKey = "DFX_CURVE_PUBLIC_KEY";
inline constexpr const char* kEnvAgentSecretKey = "DFX_CURVE_SECRET_KEY";
inline constexpr const char* kEnvCoordinatorKey = "DFX_CURVE_SERVER_KEY";
// {"DFX_CURVE_PUBLIC_KEY=...", ...} for SpawnOptions::extra_env.
std::vector<std::string> CurveClientEnvironment(const CurveClient& client);
// The names alone (mpirun -x NAME forwards them without their values).
std::vector<std::string> CurveClientEnvironmentNames();
// Reads the three variables and removes them from this process's
// environment (children do not inherit them). nullopt when none is set; an
// error when only some are, or a value is not a key.
Result<std::optional<CurveClient>> TakeCurveClientFromEnvironment();

// True when `endpoint` can only be reached from this host: tcp:// on
// 127.0.0.0/8, localhost or [::1], ipc:// and inproc://. Authentication is
// required for every other endpoint (a wildcard, a host name, an address).
bool IsLoopbackEndpoint(std::string_view endpoint);

}  // namespace dfx::protocol
