// The --metrics endpoint (README "Running agents as a service"): a small
// HTTP/1.0 server on a loopback TCP port that answers
//   GET /metrics   200, the registry's counters in the Prometheus text
//                  format 0.0.4 (common/metrics.h)
//   GET /healthz   200, "ok" and a short status line of the program's
//   anything else  404 (another path), 405 (another method), 400 (not an
//                  HTTP request, or a request line and headers over 4 KiB)
// and closes every connection after its answer.
//
// It trusts no client (docs/design.md §11.13): a request is read into a
// bounded buffer, a client that sends nothing for idle_timeout_ms is
// closed, and at most max_clients are served at once (more are closed at
// once). It listens on loopback only: it has no authentication.
//
// Threads: one thread of its own polls the listening socket and the clients;
// `health` is called on it. Start and the destructor on the owner's thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/metrics.h"
#include "common/status.h"

namespace dfx::metrics {

// What --metrics names: a loopback address and a port (0: any free one).
struct MetricsEndpoint {
  std::string host;  // "127.0.0.1", "::1"
  int port = 0;
};

// Parses `tcp://HOST:PORT` where HOST is 127.x.y.z, localhost or [::1].
// Errors name `flag`, the value, what was wrong and what would be right
// (another address: it has no authentication, so it listens on loopback only).
Result<MetricsEndpoint> ParseMetricsEndpoint(std::string_view text,
                                             std::string_view flag = "--metrics");

// One request as far as the server reads it.
struct HttpRequest {
  enum class State { kIncomplete, kBad, kComplete };
  State state = State::kIncomplete;
  std::string method;  // "GET"
  std::string path;    // "/metrics" (without a query string)
  std::string error;   // kBad: why
};

// Parses the request line of `bytes` (what a client sent so far) once its
// headers have ended (an empty line). Incomplete while they have not and
// `bytes` is under `max_bytes`; bad when they have not by then, or when the
// request line is not `METHOD /path HTTP/1.x`.
HttpRequest ParseHttpRequest(std::string_view bytes, size_t max_bytes);

// The whole response to `request` (status line, headers, body).
std::string HttpResponse(const HttpRequest& request, const Registry& registry,
                         const std::function<std::string()>& health);

struct MetricsServerOptions {
  MetricsEndpoint endpoint;
  const Registry* registry = &Process();
  // The status line after "ok" on /healthz (e.g. "dfx-rank-agent rank 0:
  // waiting for a coordinator"); called on the server's thread.
  std::function<std::string()> health;
  size_t max_request_bytes = 4096;
  int idle_timeout_ms = 5000;
  int max_clients = 16;
};

class MetricsServer {
 public:
  // Listens and starts the thread. Errors name the endpoint (in use,
  // refused by the system).
  static Result<std::unique_ptr<MetricsServer>> Start(MetricsServerOptions options);
  // Stops the thread and closes every socket.
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // The bound port (the real one when 0 was asked for).
  int port() const { return port_; }
  // "http://127.0.0.1:PORT".
  std::string url() const;

 private:
  struct Impl;
  explicit MetricsServer(std::unique_ptr<Impl> impl, int port);
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

// What a program does with its --metrics FLAG_VALUE: parses it, starts the
// server (its /healthz answers "ok PROGRAM, pid P, up N s" and what
// `status` adds) and logs where it listens, at info. A bad value is an
// InvalidArgument (a usage error: exit 2), a port it cannot have is
// Unavailable. The server runs until the returned pointer is reset.
Result<std::unique_ptr<MetricsServer>> ServeMetrics(std::string_view flag_value,
                                                    std::string program,
                                                    std::function<std::string()> status = {});

}  // namespace dfx::metrics
