// The run's control socket (docs/design.md §3.2, README "On demand"): while
// an L3 run (or the session of an --attach run) goes on, `dfx-coordinator
// capture W ...` from another terminal of the same user changes what the
// next dispatches capture (capture_policy.h). The socket is a unix stream
// socket W/.dfx_control/capture.sock in a directory of mode 0700 that only
// the run's user can enter; every connection is checked again with
// SO_PEERCRED (the peer's uid must be this process's) before a byte is
// read. One request per connection: one JSON object on one line, at most
// kMaxControlRequestBytes, read under a short deadline, parsed strictly;
// one JSON answer line back ({"ok": true, ...} or {"ok": false, "error":
// "..."}). The socket and its directory are removed when the run ends.
//
// Threads: the server is polled by the event loop's thread (never blocks
// longer than the read deadline); the client is a plain function.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "common/json.h"
#include "common/status.h"

namespace dfx::coordinator {

inline constexpr char kControlDirName[] = ".dfx_control";
inline constexpr char kControlSocketName[] = "capture.sock";
inline constexpr size_t kMaxControlRequestBytes = 8192;
inline constexpr size_t kMaxControlAnswerBytes = 1 << 20;

// W/.dfx_control/capture.sock
std::filesystem::path ControlSocketPath(const std::filesystem::path& work_dir);

class CaptureControlServer {
 public:
  struct Peer {
    pid_t pid = 0;
    uid_t uid = 0;
  };
  // Answers a request (already parsed as JSON) from `peer`.
  using Handler = std::function<Json(const Json& request, const Peer& peer)>;

  CaptureControlServer() = default;
  ~CaptureControlServer();
  CaptureControlServer(CaptureControlServer&& other) noexcept;
  CaptureControlServer& operator=(CaptureControlServer&& other) noexcept;
  CaptureControlServer(const CaptureControlServer&) = delete;
  CaptureControlServer& operator=(const CaptureControlServer&) = delete;

  // Makes W/.dfx_control (0700, owned by this user, not a link) and listens
  // on its socket; a socket left by a crashed run is replaced (the caller
  // holds the work dir's lock, so no live run owns it).
  static Result<CaptureControlServer> Open(const std::filesystem::path& work_dir);
  bool open() const { return fd_ >= 0; }
  // Serves the connections waiting now (a few per call), without waiting
  // for new ones.
  void Poll(const Handler& handler);
  // Stops listening and removes the socket and its directory.
  void Close();

 private:
  void Serve(int connection, const Handler& handler);
  int fd_ = -1;
  std::filesystem::path dir_;
};

// The client: sends `request` to the run in `work_dir` and returns its
// answer. An error says plainly when no run is going there.
Result<Json> SendControlRequest(const std::filesystem::path& work_dir, const Json& request,
                                int timeout_ms = 10000);

}  // namespace dfx::coordinator
