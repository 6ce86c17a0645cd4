#include "protocol/endpoint.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <net/if.h>
#include <netdb.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace dfx::protocol {

namespace {

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[16];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

bool IsLoopbackAddress(const std::string& address) {
  return address.rfind("127.", 0) == 0 || address == "::1";
}

// Every address `host` resolves to, IPv4 first; the resolver's error text
// when it resolves to none.
Result<std::vector<std::string>> Resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &list); rc != 0) {
    return NotFound(::gai_strerror(rc));
  }
  std::vector<std::string> v4, v6;
  for (addrinfo* a = list; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ai_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, text,
                  sizeof(text));
      if (std::find(v4.begin(), v4.end(), text) == v4.end()) v4.push_back(text);
    } else if (a->ai_family == AF_INET6) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, text,
                  sizeof(text));
      if (std::find(v6.begin(), v6.end(), text) == v6.end()) v6.push_back(text);
    }
  }
  ::freeaddrinfo(list);
  v4.insert(v4.end(), v6.begin(), v6.end());
  if (v4.empty()) return NotFound("no IPv4 or IPv6 address");
  return v4;
}

}  // namespace

std::string ThisHostName(const std::string& unknown) {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return unknown;
  return buf;
}

std::string TcpEndpoint::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format("tcp://{}{}{}:{}", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

bool IsWildcardHost(std::string_view host) {
  return host == "*" || host == "0.0.0.0" || host == "::" || host == "[::]";
}

Result<TcpEndpoint> ParseTcpEndpoint(std::string_view endpoint, std::string_view flag) {
  const auto bad = [&](std::string_view why) {
    return InvalidArgument(
        fmt::format("{} {}: {}; expected tcp://HOST:PORT (HOST a name, an address or an "
                    "interface; PORT a number, 0 for any free one)",
                    flag, endpoint, why));
  };
  if (endpoint.rfind("tcp://", 0) != 0) return bad("not a tcp:// endpoint");
  std::string_view rest = endpoint.substr(6);
  if (rest.find(';') != std::string_view::npos) {
    return bad("a source address (IFACE;HOST:PORT) is not supported here");
  }
  TcpEndpoint out;
  std::string_view after;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return bad("an IPv6 address without its closing ]");
    out.host = std::string(rest.substr(1, close - 1));
    after = rest.substr(close + 1);
  } else {
    const size_t colon = rest.rfind(':');
    out.host = std::string(rest.substr(0, colon));
    after = colon == std::string_view::npos ? std::string_view() : rest.substr(colon);
  }
  if (out.host.empty()) return bad("no host");
  if (!after.empty()) {
    if (after.front() != ':') return bad("text after the host that is not :PORT");
    out.port = std::string(after.substr(1));
    const bool digits =
        !out.port.empty() && out.port.size() <= 5 &&
        std::all_of(out.port.begin(), out.port.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (out.port != "*" && (!digits || std::stoi(out.port) > 65535)) {
      return bad(fmt::format("port '{}' is not a number in 0..65535", out.port));
    }
  }
  return out;
}

Result<std::string> ResolveBindEndpoint(const std::string& bind) {
  if (bind.rfind("tcp://", 0) != 0) return bind;  // ipc://, inproc://: ZeroMQ's to judge
  DFX_ASSIGN_OR_RETURN(TcpEndpoint e, ParseTcpEndpoint(bind, "--bind"));
  if (e.port.empty()) {
    return InvalidArgument(
        fmt::format("--bind {}: no port; add :PORT (:0 picks a free one)", bind));
  }
  if (IsWildcardHost(e.host) || IsIpLiteral(e.host)) return bind;
  if (::if_nametoindex(e.host.c_str()) != 0) return bind;  // an interface: ZeroMQ binds it
  auto addresses = Resolve(e.host);
  if (!addresses.ok()) {
    return InvalidArgument(fmt::format(
        "--bind {}: '{}' is not an IP address, not a network interface of this host (`ip -br "
        "addr` lists them) and not a host name it can resolve ({}); give one of those, e.g. "
        "tcp://0.0.0.0:{} with --advertise tcp://{}:{}",
        bind, e.host, addresses.status().message(), e.port, e.host, e.port));
  }
  e.host = addresses->front();
  return e.ToString();
}

Result<std::string> AdvertisedEndpoint(const std::string& bound, const std::string& advertise) {
  if (bound.rfind("tcp://", 0) != 0) {
    if (!advertise.empty()) {
      return InvalidArgument(fmt::format(
          "--advertise {}: the coordinator listens on {}, which is not tcp://; drop --advertise",
          advertise, bound));
    }
    return bound;
  }
  DFX_ASSIGN_OR_RETURN(TcpEndpoint b, ParseTcpEndpoint(bound, "the bound endpoint"));
  if (!advertise.empty()) {
    auto given = ParseTcpEndpoint(advertise, "--advertise");
    if (!given.ok()) return given.status();
    if (IsWildcardHost(given->host)) {
      return InvalidArgument(fmt::format(
          "--advertise {}: '{}' is a wildcard, not an address agents can dial; give this host's "
          "name or an address of it that the agents' hosts reach",
          advertise, given->host));
    }
    // No port (or 0): the one the coordinator really bound.
    const std::string port = given->port.empty() || given->port == "0" ? b.port : given->port;
    if (port == "*") {
      return InvalidArgument(fmt::format("--advertise {}: give a port number, or none", advertise));
    }
    return TcpEndpoint{given->host, port}.ToString();
  }
  if (!IsWildcardHost(b.host)) return bound;
  const std::string name = ThisHostName();
  if (!name.empty()) {
    auto addresses = Resolve(name);
    if (addresses.ok() && std::any_of(addresses->begin(), addresses->end(),
                                      [](const std::string& a) { return !IsLoopbackAddress(a); })) {
      return TcpEndpoint{name, b.port}.ToString();
    }
  }
  return InvalidArgument(fmt::format(
      "--bind {}: listens on every interface, but agents need one address to dial, and this "
      "host's name '{}' resolves to no address but loopback; give --advertise tcp://HOST:{} "
      "(HOST: a name or address of this host that the agents' hosts reach)",
      bound, name, b.port));
}

}  // namespace dfx::protocol
