// Where the coordinator listens and what agents dial (docs/design.md §8): the
// one owner of turning a --bind that names a host name or an interface into
// something ZeroMQ can bind, and of the endpoint agents are told to dial
// (--advertise, or one derived from the bind).
//
// ZeroMQ binds "tcp://ADDRESS:PORT" and "tcp://INTERFACE:PORT" but takes any
// other word for an interface name ("No such device" for a host name), and
// a wildcard bind ("0.0.0.0", "*", "::") is no address another host can
// dial. So:
//   --bind tcp://HOSTNAME:P   resolved here to one of its addresses (IPv4 first)
//   --bind tcp://eth0:P       kept (ZeroMQ binds the interface's address)
//   --bind tcp://0.0.0.0:P    kept; agents need --advertise, or this host's
//                             name when it resolves to a non-loopback address
//
// Pure functions over strings plus the resolver / interface table of this
// host (getaddrinfo, getifaddrs): any thread.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace dfx::protocol {

// "tcp://HOST:PORT" split. HOST keeps no brackets (an IPv6 literal was
// "[::1]"); PORT is digits, "*" or empty when the endpoint has none.
struct TcpEndpoint {
  std::string host;
  std::string port;
  std::string ToString() const;  // brackets an IPv6 host again
};

// Splits a tcp:// endpoint; `flag` names the option in the error.
Result<TcpEndpoint> ParseTcpEndpoint(std::string_view endpoint, std::string_view flag);

// The endpoint to hand to ZeroMQ for `--bind`: an IP literal, a wildcard,
// an interface name or a non-tcp endpoint unchanged; a host name replaced
// by one of its addresses. Error (naming --bind, the word and what it may
// be) when the host is none of these.
Result<std::string> ResolveBindEndpoint(const std::string& bind);

// True for 0.0.0.0, "*", "::" and "[::]": listening everywhere, dialable nowhere.
bool IsWildcardHost(std::string_view host);

// The endpoint agents dial. `bound` is what the socket reports (real port);
// `advertise` is --advertise ("" = derive). A given advertise keeps its
// host; a missing or 0 port takes the bound one. Derived: the bound address
// when it is not a wildcard; for a wildcard, this host's name when it
// resolves to an address that is not loopback; otherwise an error saying to
// give --advertise.
Result<std::string> AdvertisedEndpoint(const std::string& bound, const std::string& advertise);

// This host's name (gethostname), `unknown` when it cannot be read.
std::string ThisHostName(const std::string& unknown = "");

}  // namespace dfx::protocol
