#include "protocol/endpoint.h"

#include <gtest/gtest.h>

namespace dfx::protocol {
namespace {

TEST(EndpointTest, ParsesHostAndPort) {
  auto e = ParseTcpEndpoint("tcp://10.1.2.3:5555", "--bind");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->host, "10.1.2.3");
  EXPECT_EQ(e->port, "5555");
  auto v6 = ParseTcpEndpoint("tcp://[::1]:7", "--bind");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->ToString(), "tcp://[::1]:7");
  for (const char* bad : {"udp://x:1", "tcp://:5", "tcp://h:99999", "tcp://h:ab", "tcp://[::1"}) {
    auto r = ParseTcpEndpoint(bad, "--bind");
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("--bind"), std::string::npos);
    }
  }
}

TEST(EndpointTest, BindResolvesHostNamesAndKeepsAddressesAndInterfaces) {
  EXPECT_EQ(*ResolveBindEndpoint("tcp://127.0.0.1:0"), "tcp://127.0.0.1:0");
  EXPECT_EQ(*ResolveBindEndpoint("tcp://0.0.0.0:0"), "tcp://0.0.0.0:0");
  EXPECT_EQ(*ResolveBindEndpoint("tcp://*:0"), "tcp://*:0");
  EXPECT_EQ(*ResolveBindEndpoint("tcp://lo:0"), "tcp://lo:0");  // an interface: ZeroMQ binds it
  EXPECT_EQ(*ResolveBindEndpoint("ipc:///tmp/x"), "ipc:///tmp/x");
  auto localhost = ResolveBindEndpoint("tcp://localhost:0");
  ASSERT_TRUE(localhost.ok()) << localhost.status().message();
  EXPECT_TRUE(*localhost == "tcp://127.0.0.1:0" || *localhost == "tcp://[::1]:0") << *localhost;
  auto unknown = ResolveBindEndpoint("tcp://no-such-host.invalid:0");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("--bind tcp://no-such-host.invalid:0"),
            std::string::npos);
  EXPECT_NE(unknown.status().message().find("not a network interface"), std::string::npos);
  EXPECT_FALSE(ResolveBindEndpoint("tcp://127.0.0.1").ok());  // no port
}

TEST(EndpointTest, AdvertisedEndpointIsGivenOrDerived) {
  EXPECT_EQ(*AdvertisedEndpoint("tcp://10.0.0.1:4000", ""), "tcp://10.0.0.1:4000");
  EXPECT_EQ(*AdvertisedEndpoint("tcp://0.0.0.0:4000", "tcp://head.example:0"),
            "tcp://head.example:4000");
  EXPECT_EQ(*AdvertisedEndpoint("tcp://0.0.0.0:4000", "tcp://head.example"),
            "tcp://head.example:4000");
  EXPECT_EQ(*AdvertisedEndpoint("tcp://0.0.0.0:4000", "tcp://10.9.9.9:5000"),
            "tcp://10.9.9.9:5000");
  auto wildcard = AdvertisedEndpoint("tcp://0.0.0.0:4000", "tcp://0.0.0.0:4000");
  ASSERT_FALSE(wildcard.ok());
  EXPECT_NE(wildcard.status().message().find("--advertise"), std::string::npos);
  EXPECT_FALSE(AdvertisedEndpoint("ipc:///tmp/s", "tcp://h:1").ok());
  // A wildcard bind is derived from this host's name, or refused naming --advertise.
  auto derived = AdvertisedEndpoint("tcp://0.0.0.0:4000", "");
  if (derived.ok()) {
    EXPECT_NE(*derived, "tcp://0.0.0.0:4000");
    EXPECT_NE(derived->find(":4000"), std::string::npos);
  } else {
    EXPECT_NE(derived.status().message().find("--advertise tcp://HOST:4000"), std::string::npos);
  }
}

}  // namespace
}  // namespace dfx::protocol
