#include "common/metrics_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "common/log.h"

namespace dfx::metrics {
namespace {

Status BadEndpoint(std::string_view flag, std::string_view text, std::string_view why) {
  return InvalidArgument(fmt::format(
      "{} {}: {}; expected tcp://127.0.0.1:PORT (or tcp://localhost:PORT, tcp://[::1]:PORT; "
      "PORT 0 picks a free one)",
      flag, text, why));
}

bool IsLoopbackV4(const std::string& host) {
  in_addr address{};
  return ::inet_pton(AF_INET, host.c_str(), &address) == 1 && (ntohl(address.s_addr) >> 24) == 127;
}

std::string StatusLine(int code) {
  switch (code) {
    case 200:
      return "200 OK";
    case 400:
      return "400 Bad Request";
    case 404:
      return "404 Not Found";
    default:
      return "405 Method Not Allowed";
  }
}

std::string Respond(int code, std::string_view content_type, const std::string& body,
                    bool head_only, std::string_view extra_header = {}) {
  return fmt::format(
      "HTTP/1.0 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n{}",
      StatusLine(code), content_type, body.size(), extra_header, head_only ? "" : body);
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<MetricsEndpoint> ParseMetricsEndpoint(std::string_view text, std::string_view flag) {
  constexpr std::string_view kScheme = "tcp://";
  if (text.substr(0, kScheme.size()) != kScheme) return BadEndpoint(flag, text, "not tcp://");
  std::string_view rest = text.substr(kScheme.size());
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) return BadEndpoint(flag, text, "no port");
  std::string host(rest.substr(0, colon));
  const std::string_view port_text = rest.substr(colon + 1);
  int port = -1;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port < 0 || port > 65535) {
    return BadEndpoint(flag, text,
                       fmt::format("the port '{}' is not a number 0..65535", port_text));
  }
  MetricsEndpoint endpoint;
  endpoint.port = port;
  if (host == "localhost") {
    endpoint.host = "127.0.0.1";
  } else if (host == "[::1]") {
    endpoint.host = "::1";
  } else if (IsLoopbackV4(host)) {
    endpoint.host = host;
  } else {
    return BadEndpoint(flag, text,
                       fmt::format("'{}' is not a loopback address (the endpoint has no "
                                   "authentication, so it listens on this host only; scrape it "
                                   "from here, or through a proxy that authenticates)",
                                   host));
  }
  return endpoint;
}

HttpRequest ParseHttpRequest(std::string_view bytes, size_t max_bytes) {
  HttpRequest r;
  size_t end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos) end = bytes.find("\n\n");
  if (end == std::string_view::npos || end > max_bytes) {
    if (bytes.size() < max_bytes && end == std::string_view::npos) return r;  // more to come
    r.state = HttpRequest::State::kBad;
    r.error = fmt::format("the request line and headers exceed {} bytes", max_bytes);
    return r;
  }
  r.state = HttpRequest::State::kBad;
  std::string_view line = bytes.substr(0, bytes.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const size_t first = line.find(' ');
  const size_t second = first == std::string_view::npos ? first : line.find(' ', first + 1);
  if (second == std::string_view::npos || line.find(' ', second + 1) != std::string_view::npos) {
    r.error = "the request line is not METHOD /path HTTP/1.x";
    return r;
  }
  const std::string_view method = line.substr(0, first);
  const std::string_view target = line.substr(first + 1, second - first - 1);
  const std::string_view version = line.substr(second + 1);
  for (char c : method) {
    if (c < 'A' || c > 'Z') {
      r.error = "the method is not an upper-case word";
      return r;
    }
  }
  if (method.empty() || method.size() > 16) {
    r.error = "the method is not an upper-case word";
    return r;
  }
  if (target.empty() || target.front() != '/') {
    r.error = "the target is not a path starting with /";
    return r;
  }
  for (char c : target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      r.error = "the target holds a control character";
      return r;
    }
  }
  if (version != "HTTP/1.0" && version != "HTTP/1.1") {
    r.error = "the version is not HTTP/1.0 or HTTP/1.1";
    return r;
  }
  r.state = HttpRequest::State::kComplete;
  r.method = std::string(method);
  r.path = std::string(target.substr(0, target.find('?')));
  return r;
}

std::string HttpResponse(const HttpRequest& request, const Registry& registry,
                         const std::function<std::string()>& health) {
  constexpr std::string_view kText = "text/plain; charset=utf-8";
  if (request.state != HttpRequest::State::kComplete) {
    return Respond(400, kText, "bad request: " + request.error + "\n", false);
  }
  const bool head = request.method == "HEAD";
  if (request.method != "GET" && !head) {
    return Respond(405, kText, "only GET (or HEAD) /metrics and /healthz\n", false,
                   "Allow: GET, HEAD\r\n");
  }
  if (request.path == "/metrics") {
    return Respond(200, "text/plain; version=0.0.4; charset=utf-8", registry.Text(), head);
  }
  if (request.path == "/healthz") {
    return Respond(200, kText, health ? "ok " + health() + "\n" : std::string("ok\n"), head);
  }
  return Respond(404, kText, "not found: GET /metrics or /healthz\n", head);
}

// --- the server -------------------------------------------------------------

struct MetricsServer::Impl {
  struct Client {
    int fd = -1;
    std::string in;
    std::string out;
    size_t sent = 0;
    bool answering = false;
    int64_t deadline_ms = 0;
  };

  MetricsServerOptions options;
  int listen_fd = -1;
  int wake[2] = {-1, -1};
  std::vector<Client> clients;
  std::thread thread;

  ~Impl() {
    if (thread.joinable()) {
      const char byte = 1;
      (void)!::write(wake[1], &byte, 1);
      thread.join();
    }
    for (Client& c : clients) ::close(c.fd);
    for (int fd : {listen_fd, wake[0], wake[1]}) {
      if (fd >= 0) ::close(fd);
    }
  }

  void Accept(int64_t now) {
    while (true) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or a client that left already
      if (static_cast<int>(clients.size()) >= options.max_clients) {
        ::close(fd);  // bounded: the busy server turns the newest away
        continue;
      }
      clients.push_back(Client{fd, {}, {}, 0, false, now + options.idle_timeout_ms});
    }
  }

  // False when the client is done (answered, gone or broken).
  bool Serve(Client& c, short revents, int64_t now) {
    if (!c.answering && (revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      char buffer[1024];
      const size_t room = options.max_request_bytes + 1 - c.in.size();
      const ssize_t n = ::recv(c.fd, buffer, std::min(sizeof(buffer), room), 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return false;
      if (n > 0) {
        c.in.append(buffer, static_cast<size_t>(n));
        c.deadline_ms = now + options.idle_timeout_ms;
      }
      HttpRequest request = ParseHttpRequest(c.in, options.max_request_bytes);
      if (request.state == HttpRequest::State::kIncomplete) return true;
      c.out = HttpResponse(request, *options.registry, options.health);
      c.answering = true;
    }
    if (c.answering) {
      const ssize_t n =
          ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) return errno == EAGAIN || errno == EINTR;
      c.sent += static_cast<size_t>(n);
      c.deadline_ms = now + options.idle_timeout_ms;
      if (c.sent < c.out.size()) return true;
      // Answered. Whatever else it sent is read away (bounded) before the
      // close, so the kernel does not reset the connection under the answer.
      char sink[4096];
      for (int i = 0; i < 16 && ::recv(c.fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; ++i) {
      }
      ::shutdown(c.fd, SHUT_WR);
      return false;
    }
    return true;
  }

  void Loop() {
    std::vector<pollfd> fds;
    while (true) {
      const int64_t now = NowMs();
      int timeout = 1000;
      fds.clear();
      fds.push_back({wake[0], POLLIN, 0});
      fds.push_back({listen_fd, POLLIN, 0});
      for (const Client& c : clients) {
        fds.push_back({c.fd, static_cast<short>(c.answering ? POLLOUT : POLLIN), 0});
        timeout = static_cast<int>(std::clamp<int64_t>(c.deadline_ms - now, 0, timeout));
      }
      if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) return;
      if (fds[0].revents != 0) return;  // stop
      const int64_t after = NowMs();
      std::vector<Client> kept;
      for (size_t i = 0; i < clients.size(); ++i) {
        Client& c = clients[i];
        const short revents = fds[i + 2].revents;
        const bool alive = (revents == 0 || Serve(c, revents, after)) && after < c.deadline_ms;
        if (alive) {
          kept.push_back(std::move(c));
        } else {
          ::close(c.fd);  // answered, gone, broken or idle past its deadline
        }
      }
      clients = std::move(kept);
      if (fds[1].revents != 0) Accept(after);
    }
  }
};

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl, int port)
    : impl_(std::move(impl)), port_(port) {}

MetricsServer::~MetricsServer() = default;

std::string MetricsServer::url() const {
  const std::string& host = impl_->options.endpoint.host;
  return host.find(':') != std::string::npos ? fmt::format("http://[{}]:{}", host, port_)
                                             : fmt::format("http://{}:{}", host, port_);
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::Start(MetricsServerOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  const MetricsEndpoint& e = impl->options.endpoint;
  const std::string where =
      fmt::format("--metrics tcp://{}:{}",
                  e.host.find(':') != std::string::npos ? "[" + e.host + "]" : e.host, e.port);
  const bool v6 = e.host.find(':') != std::string::npos;
  impl->listen_fd =
      ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (impl->listen_fd < 0 || ::pipe2(impl->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Unavailable(fmt::format("{}: cannot make a socket: {}", where, std::strerror(errno)));
  }
  const int one = 1;
  ::setsockopt(impl->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage address{};
  socklen_t length = 0;
  if (v6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&address);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(e.port));
    ::inet_pton(AF_INET6, e.host.c_str(), &a->sin6_addr);
    length = sizeof(*a);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&address);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(e.port));
    ::inet_pton(AF_INET, e.host.c_str(), &a->sin_addr);
    length = sizeof(*a);
  }
  if (::bind(impl->listen_fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(impl->listen_fd, 16) != 0) {
    return Unavailable(
        fmt::format("{}: cannot listen there: {} (pick another port, or 0 for a "
                    "free one)",
                    where, std::strerror(errno)));
  }
  length = sizeof(address);
  ::getsockname(impl->listen_fd, reinterpret_cast<sockaddr*>(&address), &length);
  const int port = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&address)->sin6_port
                            : reinterpret_cast<sockaddr_in*>(&address)->sin_port);
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Loop(); });
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl), port));
}

Result<std::unique_ptr<MetricsServer>> ServeMetrics(std::string_view flag_value,
                                                    std::string program,
                                                    std::function<std::string()> status) {
  DFX_ASSIGN_OR_RETURN(MetricsEndpoint endpoint, ParseMetricsEndpoint(flag_value));
  MetricsServerOptions options;
  options.endpoint = endpoint;
  const auto started = std::chrono::steady_clock::now();
  options.health = [program = std::move(program), status = std::move(status), started] {
    const auto up = std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::steady_clock::now() - started);
    std::string line = fmt::format("{}, pid {}, up {} s", program, ::getpid(), up.count());
    if (status) line += ", " + status();
    return line;
  };
  DFX_ASSIGN_OR_RETURN(std::unique_ptr<MetricsServer> server,
                       MetricsServer::Start(std::move(options)));
  DFX_LOG_INFO("metrics: {}/metrics (Prometheus text), health: {}/healthz", server->url(),
               server->url());
  return server;
}

}  // namespace dfx::metrics
