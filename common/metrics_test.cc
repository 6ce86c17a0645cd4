#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "common/metrics.h"
#include "common/metrics_server.h"

namespace dfx::metrics {
namespace {

TEST(MetricsRegistryTest, TextIsThePrometheusExpositionFormat) {
  Registry r;
  r.Get("dfx_sessions_total", "Sessions served.").Add();
  r.Get("dfx_dispatches_total", "Dispatches by status.", "status", "ok").Add(3);
  r.Get("dfx_dispatches_total", "ignored: the family's help is its first", "status", "fail\"ed\n")
      .Add();
  r.Get("dfx_bytes_total", "Back\\slash\nand line feed.");
  EXPECT_EQ(r.Text(),
            "# HELP dfx_sessions_total Sessions served.\n"
            "# TYPE dfx_sessions_total counter\n"
            "dfx_sessions_total 1\n"
            "# HELP dfx_dispatches_total Dispatches by status.\n"
            "# TYPE dfx_dispatches_total counter\n"
            "dfx_dispatches_total{status=\"ok\"} 3\n"
            "dfx_dispatches_total{status=\"fail\\\"ed\\n\"} 1\n"
            "# HELP dfx_bytes_total Back\\\\slash\\nand line feed.\n"
            "# TYPE dfx_bytes_total counter\n"
            "dfx_bytes_total 0\n");
  EXPECT_EQ(r.Value("dfx_dispatches_total", "ok"), 3u);
  EXPECT_EQ(r.Value("dfx_nothing_total"), 0u);
}

TEST(MetricsRegistryTest, CountersAreSharedAndSafeAcrossThreads) {
  Registry r;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&r] {
      for (int i = 0; i < 1000; ++i) r.Get("dfx_x_total", "x").Add(2);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(r.Value("dfx_x_total"), 8000u);
}

TEST(MetricsRegistryTest, ProgramsDeclareTheirCountersAtZero) {
  DeclareAgentCounters();
  const std::string text = Process().Text();
  for (const char* name :
       {"dfx_sessions_total", "dfx_artifact_bytes_spooled_total", "dfx_artifact_bytes_sent_total",
        "dfx_reconnects_total", "dfx_handshakes_refused_total"}) {
    EXPECT_NE(text.find(std::string("# TYPE ") + name + " counter\n"), std::string::npos) << name;
  }
  EXPECT_NE(text.find("dfx_dispatches_total{status=\"ok\"} "), std::string::npos) << text;
}

TEST(MetricsEndpointTest, OnlyLoopbackIsAccepted) {
  auto ok = ParseMetricsEndpoint("tcp://127.0.0.1:9100");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->host, "127.0.0.1");
  EXPECT_EQ(ok->port, 9100);
  EXPECT_EQ(ParseMetricsEndpoint("tcp://localhost:0")->host, "127.0.0.1");
  EXPECT_EQ(ParseMetricsEndpoint("tcp://[::1]:1")->host, "::1");
  EXPECT_EQ(ParseMetricsEndpoint("tcp://127.3.4.5:1")->host, "127.3.4.5");
  auto wild = ParseMetricsEndpoint("tcp://0.0.0.0:9100");
  ASSERT_FALSE(wild.ok());
  EXPECT_NE(wild.status().message().find("--metrics tcp://0.0.0.0:9100"), std::string::npos);
  EXPECT_NE(wild.status().message().find("not a loopback address"), std::string::npos);
  EXPECT_NE(wild.status().message().find("tcp://127.0.0.1:PORT"), std::string::npos);
  for (const char* bad : {"http://127.0.0.1:1", "tcp://127.0.0.1", "tcp://127.0.0.1:70000",
                          "tcp://127.0.0.1:x", "tcp://example.com:1", "tcp://10.0.0.1:1"}) {
    EXPECT_FALSE(ParseMetricsEndpoint(bad).ok()) << bad;
  }
}

TEST(HttpRequestTest, ParsesTheRequestLineOnceTheHeadersEnd) {
  using State = HttpRequest::State;
  EXPECT_EQ(ParseHttpRequest("GET /metrics HTTP/1.1\r\nHost: x\r\n", 4096).state,
            State::kIncomplete);
  HttpRequest r = ParseHttpRequest("GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n", 4096);
  ASSERT_EQ(r.state, State::kComplete) << r.error;
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.path, "/metrics");
  EXPECT_EQ(ParseHttpRequest("GET /healthz HTTP/1.0\n\n", 4096).path, "/healthz");
  for (const char* bad :
       {"GET /metrics\r\n\r\n", "get /metrics HTTP/1.1\r\n\r\n", "GET metrics HTTP/1.1\r\n\r\n",
        "GET /a b HTTP/1.1\r\n\r\n", "GET /metrics HTTP/2.0\r\n\r\n", "\r\n\r\n"}) {
    HttpRequest b = ParseHttpRequest(bad, 4096);
    EXPECT_EQ(b.state, State::kBad) << bad;
    EXPECT_FALSE(b.error.empty()) << bad;
  }
  // Bounded: headers that do not end within the limit are a bad request.
  HttpRequest big = ParseHttpRequest("GET / HTTP/1.1\r\nX: " + std::string(100, 'a'), 64);
  EXPECT_EQ(big.state, State::kBad);
  EXPECT_NE(big.error.find("exceed 64 bytes"), std::string::npos) << big.error;
}

TEST(HttpRequestTest, ResponsesSayWhatWasAsked) {
  Registry r;
  r.Get("dfx_a_total", "A.").Add(7);
  auto get = [&](const std::string& line) {
    return HttpResponse(ParseHttpRequest(line + "\r\n\r\n", 4096), r, [] { return "fine"; });
  };
  const std::string metrics = get("GET /metrics HTTP/1.1");
  EXPECT_EQ(metrics.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << metrics;
  EXPECT_NE(metrics.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(metrics.find("\r\n\r\n# HELP dfx_a_total A.\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("dfx_a_total 7\n"), std::string::npos);
  EXPECT_NE(get("GET /healthz HTTP/1.0").find("\r\n\r\nok fine\n"), std::string::npos);
  EXPECT_EQ(get("GET /nope HTTP/1.0").rfind("HTTP/1.0 404", 0), 0u);
  EXPECT_EQ(get("POST /metrics HTTP/1.0").rfind("HTTP/1.0 405", 0), 0u);
  EXPECT_EQ(get("GARBAGE").rfind("HTTP/1.0 400", 0), 0u);
  const std::string head = get("HEAD /metrics HTTP/1.0");
  EXPECT_EQ(head.substr(head.find("\r\n\r\n")), "\r\n\r\n");
}

// A plain TCP client: sends `request`, reads until the server closes.
std::string Exchange(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return "connect failed";
  }
  (void)!::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out;
  char buffer[4096];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 30000) <= 0) break;  // bounded
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

TEST(MetricsServerTest, ServesMetricsAndHealthAndClosesIdleClients) {
  Registry r;
  r.Get("dfx_a_total", "A.").Add(2);
  MetricsServerOptions o;
  o.endpoint = *ParseMetricsEndpoint("tcp://127.0.0.1:0");
  o.registry = &r;
  o.health = [] { return "test"; };
  o.idle_timeout_ms = 300;
  o.max_request_bytes = 256;
  auto server = MetricsServer::Start(o);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const int port = (*server)->port();
  EXPECT_GT(port, 0);
  EXPECT_EQ((*server)->url(), "http://127.0.0.1:" + std::to_string(port));
  EXPECT_NE(Exchange(port, "GET /metrics HTTP/1.1\r\n\r\n").find("dfx_a_total 2\n"),
            std::string::npos);
  r.Get("dfx_a_total", "A.").Add();
  EXPECT_NE(Exchange(port, "GET /metrics HTTP/1.1\r\n\r\n").find("dfx_a_total 3\n"),
            std::string::npos);
  EXPECT_NE(Exchange(port, "GET /healthz HTTP/1.0\r\n\r\n").find("ok test\n"), std::string::npos);
  EXPECT_EQ(Exchange(port, std::string(1000, 'A')).rfind("HTTP/1.0 400", 0), 0u);
  // A client that never finishes its request is closed (read returns at
  // the close, with nothing answered).
  EXPECT_EQ(Exchange(port, "GET /metrics HTTP/1.1\r\n"), "");
  // The port is taken while the server lives.
  MetricsServerOptions same = o;
  same.endpoint.port = port;
  auto second = MetricsServer::Start(same);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("cannot listen there"), std::string::npos);
}

}  // namespace
}  // namespace dfx::metrics
