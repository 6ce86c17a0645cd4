#include "protocol/curve.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "common/file_util.h"
#include "common/input_file.h"

namespace dfx::protocol {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPublicLine = "public-key = ";
constexpr const char* kSecretLine = "secret-key = ";
constexpr uint64_t kMaxKeyFileBytes = 4096;

bool IsZ85Char(char c) {
  static constexpr std::string_view kAlphabet =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  return kAlphabet.find(c) != std::string_view::npos;
}

// The value of the "<name> = " line of a key file, or "".
std::string FieldOf(const std::string& text, const char* prefix) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.rfind(prefix, 0) == 0) return std::string(line.substr(std::strlen(prefix)));
    start = end + 1;
  }
  return "";
}

// Reads a key file under the rules of docs/design.md §11.13: no link, bounded size.
Result<std::string> ReadKeyFileText(const fs::path& path) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (ec || !fs::exists(st)) return NotFound(path.string() + ": no such key file");
  if (fs::is_symlink(st)) {
    return InvalidArgument(path.string() +
                           ": is a symbolic link; key files are never read through links: "
                           "give the real file");
  }
  if (fs::is_regular_file(st)) {
    const uint64_t size = fs::file_size(path, ec);
    if (!ec && size > kMaxKeyFileBytes) {
      return InvalidArgument(fmt::format("{}: {} bytes is not a key file (at most {})",
                                         path.string(), size, kMaxKeyFileBytes));
    }
  }
  // A FIFO, device or directory is refused by what it is, without waiting.
  return ReadInputFile(path, kMaxKeyFileBytes);
}

Status BadKey(const fs::path& path, const char* field) {
  return InvalidArgument(fmt::format(
      "{}: expected a line \"{}<40 Z85 characters>\" (as `dfx-coordinator keygen` writes)",
      path.string(), field));
}

}  // namespace

bool CurveAvailable() { return zmq_has("curve") != 0; }

Result<CurveKeyPair> GenerateCurveKeyPair() {
  if (!CurveAvailable()) {
    return Unavailable("this libzmq was built without CURVE (zmq_has(\"curve\") is false)");
  }
  char pub[kCurveKeyChars + 1] = {};
  char sec[kCurveKeyChars + 1] = {};
  if (zmq_curve_keypair(pub, sec) != 0) {
    return Internal(fmt::format("zmq_curve_keypair failed: {}", zmq_strerror(zmq_errno())));
  }
  return CurveKeyPair{pub, sec};
}

bool IsCurveKey(std::string_view key) {
  return key.size() == kCurveKeyChars && std::all_of(key.begin(), key.end(), IsZ85Char);
}

Status WriteKeyPairFile(const fs::path& path, const CurveKeyPair& keys) {
  const std::string text = fmt::format(
      "# dfx CURVE key pair: keep secret (mode 0600). Its public half is in the .pub file.\n"
      "{}{}\n{}{}\n",
      kPublicLine, keys.public_key, kSecretLine, keys.secret_key);
  return WriteFileAtomic(path, text, 0600);
}

Status WritePublicKeyFile(const fs::path& path, const std::string& public_key) {
  return WriteFileAtomic(path,
                         std::string("# dfx CURVE public key\n") + kPublicLine + public_key + "\n");
}

namespace {

// Whoever may write to the directory of a key file may replace the key (or
// add one to the keys admitted): such a directory is refused.
Status CheckKeyDirectory(const fs::path& dir, const char* what) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) == 0) {
    return Status::Ok();  // a missing directory fails where the file is read
  }
  return InvalidArgument(fmt::format(
      "{}: mode {:04o} lets the group or others write to this directory of {}, so anyone of "
      "them could replace or add a key; run `chmod go-w {}`",
      dir.string(), st.st_mode & 07777, what, dir.string()));
}

fs::path DirectoryOf(const fs::path& file) {
  return file.has_parent_path() ? file.parent_path() : fs::path(".");
}

}  // namespace

Result<CurveKeyPair> ReadKeyPairFile(const fs::path& path) {
  DFX_ASSIGN_OR_RETURN(std::string text, ReadKeyFileText(path));
  DFX_RETURN_IF_ERROR(CheckKeyDirectory(DirectoryOf(path), "a secret key"));
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
    return InvalidArgument(fmt::format(
        "{}: mode {:04o} lets the group or others read this secret key; run `chmod 600 {}`",
        path.string(), st.st_mode & 07777, path.string()));
  }
  CurveKeyPair keys{FieldOf(text, kPublicLine), FieldOf(text, kSecretLine)};
  if (!IsCurveKey(keys.secret_key)) return BadKey(path, kSecretLine);
  if (!IsCurveKey(keys.public_key)) return BadKey(path, kPublicLine);
  char derived[kCurveKeyChars + 1] = {};
  if (zmq_curve_public(derived, keys.secret_key.c_str()) != 0 || keys.public_key != derived) {
    return InvalidArgument(path.string() +
                           ": its public key does not belong to its secret key; make a new "
                           "pair with `dfx-coordinator keygen`");
  }
  return keys;
}

Result<std::string> ReadPublicKeyFile(const fs::path& path) {
  DFX_ASSIGN_OR_RETURN(std::string text, ReadKeyFileText(path));
  std::string key = FieldOf(text, kPublicLine);
  if (!IsCurveKey(key)) return BadKey(path, kPublicLine);
  return key;
}

Result<std::vector<std::string>> ReadPublicKeys(const fs::path& path) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (!fs::is_directory(st) || fs::is_symlink(st)) {
    DFX_RETURN_IF_ERROR(CheckKeyDirectory(DirectoryOf(path), "admitted public keys"));
    DFX_ASSIGN_OR_RETURN(std::string key, ReadPublicKeyFile(path));
    return std::vector<std::string>{key};
  }
  DFX_RETURN_IF_ERROR(CheckKeyDirectory(path, "admitted public keys"));
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (entry.path().extension() != ".pub") continue;
    if (entry.is_symlink(ec)) {
      return InvalidArgument(entry.path().string() +
                             ": is a symbolic link; an admitted key is never read through a "
                             "link (its target could change): copy the key file here instead");
    }
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    return InvalidArgument(path.string() +
                           ": holds no *.pub public key; make agent keys with "
                           "`dfx-coordinator keygen DIR --agent NAME`");
  }
  std::vector<std::string> keys;
  for (const fs::path& f : files) {
    DFX_ASSIGN_OR_RETURN(std::string key, ReadPublicKeyFile(f));
    keys.push_back(std::move(key));
  }
  return keys;
}

std::vector<std::string> CurveClientEnvironment(const CurveClient& client) {
  return {std::string(kEnvAgentPublicKey) + "=" + client.keys.public_key,
          std::string(kEnvAgentSecretKey) + "=" + client.keys.secret_key,
          std::string(kEnvCoordinatorKey) + "=" + client.server_public_key};
}

std::vector<std::string> CurveClientEnvironmentNames() {
  return {kEnvAgentPublicKey, kEnvAgentSecretKey, kEnvCoordinatorKey};
}

Result<std::optional<CurveClient>> TakeCurveClientFromEnvironment() {
  std::string values[3];
  int set = 0;
  const char* names[3] = {kEnvAgentPublicKey, kEnvAgentSecretKey, kEnvCoordinatorKey};
  for (int i = 0; i < 3; ++i) {
    if (const char* v = std::getenv(names[i])) {
      values[i] = v;
      ++set;
    }
    ::unsetenv(names[i]);
  }
  if (set == 0) return std::optional<CurveClient>();
  for (int i = 0; i < 3; ++i) {
    if (!IsCurveKey(values[i])) {
      return InvalidArgument(fmt::format(
          "environment: {} must hold a 40-character Z85 CURVE key (set by the launcher, "
          "together with {}, {} and {})",
          names[i], names[0], names[1], names[2]));
    }
  }
  CurveClient client{{values[0], values[1]}, values[2]};
  char derived[kCurveKeyChars + 1] = {};
  if (zmq_curve_public(derived, client.keys.secret_key.c_str()) != 0 ||
      client.keys.public_key != derived) {
    return InvalidArgument(
        fmt::format("environment: {} does not belong to {}", names[0], names[1]));
  }
  return std::optional<CurveClient>(std::move(client));
}

bool IsLoopbackEndpoint(std::string_view endpoint) {
  if (endpoint.rfind("ipc://", 0) == 0 || endpoint.rfind("inproc://", 0) == 0) return true;
  if (endpoint.rfind("tcp://", 0) != 0) return false;
  std::string_view rest = endpoint.substr(6);
  // "tcp://iface;host:port" (a source address): judge the destination.
  if (size_t semi = rest.find(';'); semi != std::string_view::npos) rest = rest.substr(semi + 1);
  std::string_view host;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return false;
    host = rest.substr(1, close - 1);
  } else {
    host = rest.substr(0, rest.rfind(':'));
  }
  if (host == "localhost" || host == "::1") return true;
  if (host.rfind("127.", 0) != 0) return false;
  // 127.a.b.c, digits and dots only.
  return std::all_of(host.begin(), host.end(),
                     [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

}  // namespace dfx::protocol
