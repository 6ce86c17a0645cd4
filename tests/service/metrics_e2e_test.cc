// The --metrics endpoints end to end (README "Running agents as a service"):
// a real serve agent and a real coordinator that attaches to it, each with
// --metrics on a loopback port, scraped with a plain TCP client over two
// real runs; every counter is checked against what happened (the plan's
// dispatches, the manifest's artifact sizes, one session per run, the
// agent's reconnection to the second run's coordinator, a peer whose key
// is not admitted).
//
// The coordinator's counters are read while it is held between its session
// and its exit: DFX_VIEW names a stand-in viewer that waits for the test's
// word before it runs the real dfx-view (the run report is drawn after the
// session), so nothing here depends on timing.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <map>
#include <random>
#include <regex>

#include "protocol/channel.h"
#include "tests/l3/e2e_util.h"

namespace dfx::e2e {
namespace {

using Samples = std::map<std::string, uint64_t>;

// GET `path` from 127.0.0.1:`port` over a plain TCP socket: the whole answer.
std::string HttpGet(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
    (void)!::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    char buffer[4096];
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, 30000) > 0) {
      const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      out.append(buffer, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return out;
}

// The samples of a Prometheus text exposition: "name" or "name{l=\"v\"}" ->
// value. Checks the format as it goes: every family has HELP and TYPE
// counter before its samples.
Samples Scrape(int port) {
  const std::string answer = HttpGet(port, "/metrics");
  EXPECT_EQ(answer.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << answer;
  EXPECT_NE(answer.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << answer;
  const size_t body = answer.find("\r\n\r\n");
  Samples samples;
  if (body == std::string::npos) return samples;
  std::istringstream lines(answer.substr(body + 4));
  std::string line, typed;
  while (std::getline(lines, line)) {
    if (line.rfind("# HELP ", 0) == 0) continue;
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string kind;
      words >> typed >> kind;
      EXPECT_EQ(kind, "counter") << line;
      continue;
    }
    const size_t space = line.rfind(' ');
    const std::string key = line.substr(0, space);
    EXPECT_EQ(key.substr(0, key.find('{')), typed) << "a sample without its TYPE: " << line;
    EXPECT_TRUE(key.substr(0, key.find('{')).ends_with("_total")) << line;
    samples[key] = std::stoull(line.substr(space + 1));
  }
  return samples;
}

// The port a program logged for its endpoint ("metrics: http://127.0.0.1:P/metrics").
int LoggedPort(const Process& p) {
  static const std::regex logged(R"(metrics: http://127\.0\.0\.1:(\d+)/metrics)");
  std::smatch m;
  const std::string err = p.err();
  return std::regex_search(err, m, logged) ? std::stoi(m[1]) : 0;
}

std::string FreeFixedEndpoint() {
  protocol::Context context;
  std::mt19937 pick(std::random_device{}());
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int port = std::uniform_int_distribution<int>(20000, 29999)(pick);
    const std::string candidate = "tcp://127.0.0.1:" + std::to_string(port);
    if (protocol::RouterChannel::Bind(context, candidate).ok()) return candidate;
  }
  return "";
}

fs::path Keygen(const fs::path& dir) {
  auto r = RunCommand({Bin("dfx-coordinator"), "keygen", (dir / "keys").string(), "--agent",
                       "host0", "--agent", "intruder"},
                      dir, 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // The intruder's public key is not among the admitted ones.
  fs::rename(dir / "keys/agents/intruder.pub", dir / "intruder.pub");
  return dir / "keys";
}

// A dfx-view that says it was reached and waits (bounded) for `go`.
fs::path HoldingViewer(const fs::path& dir) {
  const fs::path script = dir / "held-dfx-view";
  std::ofstream(script) << "#!/bin/sh\n: > '" << (dir / "reached").string() << "'\n"
                        << "i=0; while [ ! -e '" << (dir / "go").string()
                        << "' ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\n"
                        << "exec '" << Bin("dfx-view") << "' \"$@\"\n";
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

uint64_t ManifestArtifactBytes(const fs::path& work, size_t* dispatches) {
  Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
  uint64_t bytes = 0;
  *dispatches = 0;
  for (const auto& d : m["dispatches"]) {
    ++*dispatches;
    for (const auto& a : d["artifacts"]) bytes += a["size"].get<uint64_t>();
  }
  return bytes;
}

TEST(MetricsTest, AServeAgentAndACoordinatorCountWhatHappened) {
  const fs::path dir = TestDir("metrics");
  const fs::path keys = Keygen(dir);
  const std::string endpoint = FreeFixedEndpoint();
  ASSERT_FALSE(endpoint.empty());
  ASSERT_TRUE(
      WriteFileAtomic(dir / "plan.json", R"({"programs": {"vec": ")" +
                                             Source("examples/vector_pipeline.json").string() +
                                             R"("}, "steps": [{"program": "vec", "rank": 0},
                                   {"program": "vec", "rank": 0}, {"program": "vec", "rank": 0}]})")
          .ok());
  auto serve = [&](const std::string& name) {
    return std::vector<std::string>{Bin("dfx-rank-agent"),
                                    "serve",
                                    "--coordinator",
                                    endpoint,
                                    "--rank",
                                    "0",
                                    "--spool",
                                    (dir / ("spool_" + name)).string(),
                                    "--key",
                                    (keys / ("agents/" + name + ".key")).string(),
                                    "--coordinator-key",
                                    (keys / "coordinator.pub").string(),
                                    "--metrics",
                                    "tcp://127.0.0.1:0",
                                    "--log-level",
                                    "info"};
  };
  Process agent(serve("host0"), dir);
  Process intruder(serve("intruder"), dir);
  int agent_port = 0, intruder_port = 0;
  ASSERT_TRUE(WaitFor([&] { return (agent_port = LoggedPort(agent)) > 0; }, 60)) << agent.err();
  ASSERT_TRUE(WaitFor([&] { return (intruder_port = LoggedPort(intruder)) > 0; }, 60))
      << intruder.err();
  const std::string health = HttpGet(agent_port, "/healthz");
  EXPECT_EQ(health.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << health;
  EXPECT_NE(health.find("\r\n\r\nok dfx-rank-agent serve rank 0, pid "), std::string::npos)
      << health;
  EXPECT_NE(health.find("0 session(s) served"), std::string::npos) << health;
  EXPECT_EQ(Scrape(agent_port)["dfx_sessions_total"], 0u);
  EXPECT_EQ(HttpGet(agent_port, "/nothing").rfind("HTTP/1.0 404", 0), 0u);

  auto run = [&](const std::string& name, std::vector<std::string> env) {
    return std::make_unique<Process>(
        std::vector<std::string>{Bin("dfx-coordinator"), "run", (dir / "plan.json").string(),
                                 "--ranks", "1", "--attach", "--bind", endpoint, "--keys",
                                 keys.string(), "--work-dir", (dir / name).string(),
                                 "--enable-dep-gen", "--enable-chip-swimlane", "--metrics",
                                 "tcp://127.0.0.1:0", "--startup-timeout", "120"},
        dir, env);
  };
  auto first = run("w1", {"DFX_VIEW=" + HoldingViewer(dir).string()});
  int coordinator_port = 0;
  ASSERT_TRUE(WaitFor([&] { return (coordinator_port = LoggedPort(*first)) > 0; }, 120))
      << first->err();
  EXPECT_NE(HttpGet(coordinator_port, "/healthz").find("ok dfx-coordinator run, pid "),
            std::string::npos);
  ASSERT_TRUE(WaitFor([&] { return fs::exists(dir / "reached"); }, 240)) << first->err();
  // The session is over, the process still lives: its counters are final.
  // The intruder is turned away at the handshake again and again (its
  // backoff starts at 1 s), so one refusal has been counted or soon is.
  Samples c;
  EXPECT_TRUE(WaitFor(
      [&] {
        c = Scrape(coordinator_port);
        return c["dfx_handshakes_refused_total"] > 0;
      },
      60))
      << first->err();
  std::ofstream(dir / "go").flush();
  ASSERT_TRUE(first->Wait(240)) << first->err();
  ASSERT_EQ(first->exit_code(), 0) << first->err();
  size_t dispatches = 0;
  const uint64_t artifact_bytes = ManifestArtifactBytes(dir / "w1", &dispatches);
  EXPECT_EQ(dispatches, 3u);
  EXPECT_GT(artifact_bytes, 0u);
  EXPECT_EQ(c["dfx_sessions_total"], 1u);
  EXPECT_EQ(c["dfx_dispatches_total{status=\"ok\"}"], dispatches);
  EXPECT_EQ(c["dfx_dispatches_total{status=\"failed\"}"], 0u);
  EXPECT_EQ(c["dfx_artifact_bytes_received_total"], artifact_bytes);
  EXPECT_EQ(c["dfx_chunks_without_credit_total"], 0u);
  EXPECT_TRUE(c.count("dfx_credits_withheld_total"));

  Samples a = Scrape(agent_port);
  EXPECT_EQ(a["dfx_sessions_total"], 1u);
  EXPECT_EQ(a["dfx_dispatches_total{status=\"ok\"}"], dispatches);
  EXPECT_EQ(a["dfx_artifact_bytes_spooled_total"], artifact_bytes);
  EXPECT_EQ(a["dfx_artifact_bytes_sent_total"], artifact_bytes);
  EXPECT_EQ(a["dfx_reconnects_total"], 0u) << "one coordinator, one connection";
  EXPECT_EQ(a["dfx_handshakes_refused_total"], 0u);
  EXPECT_GT(Scrape(intruder_port)["dfx_handshakes_refused_total"], 0u) << intruder.err();
  EXPECT_EQ(Scrape(intruder_port)["dfx_sessions_total"], 0u);

  // A second run: the agent connects to a new coordinator (a reconnection
  // of its socket) and serves a second session; its counters add up.
  auto second = run("w2", {});
  ASSERT_TRUE(second->Wait(240)) << second->err();
  ASSERT_EQ(second->exit_code(), 0) << second->err();
  const uint64_t second_bytes = ManifestArtifactBytes(dir / "w2", &dispatches);
  a = Scrape(agent_port);
  EXPECT_EQ(a["dfx_sessions_total"], 2u);
  EXPECT_EQ(a["dfx_dispatches_total{status=\"ok\"}"], 3u + dispatches);
  EXPECT_EQ(a["dfx_artifact_bytes_sent_total"], artifact_bytes + second_bytes);
  EXPECT_EQ(a["dfx_reconnects_total"], 1u) << agent.err();
  EXPECT_NE(HttpGet(agent_port, "/healthz").find("2 session(s) served"), std::string::npos);

  agent.Signal(SIGTERM);
  intruder.Signal(SIGTERM);
  EXPECT_TRUE(agent.Wait(60));
  EXPECT_TRUE(intruder.Wait(60));
  EXPECT_EQ(agent.exit_code(), 0) << agent.err();
  fs::remove_all(dir);
}

// Refusals name the flag, what was wrong and what would be right.
TEST(MetricsTest, ANonLoopbackOrMisplacedMetricsEndpointIsRefused) {
  const fs::path dir = TestDir("metrics_refused");
  auto agent = RunCommand({Bin("dfx-rank-agent"), "serve", "--coordinator", "tcp://127.0.0.1:1",
                           "--metrics", "tcp://0.0.0.0:9464"},
                          dir, 60);
  EXPECT_EQ(agent.exit_code, 2) << agent.err;
  EXPECT_NE(agent.err.find("--metrics tcp://0.0.0.0:9464"), std::string::npos) << agent.err;
  EXPECT_NE(agent.err.find("not a loopback address"), std::string::npos) << agent.err;
  auto oneshot = RunCommand({Bin("dfx-rank-agent"), "--coordinator", "tcp://127.0.0.1:1",
                             "--session", "ab", "--metrics", "tcp://127.0.0.1:0"},
                            dir, 60);
  EXPECT_EQ(oneshot.exit_code, 2) << oneshot.err;
  EXPECT_NE(oneshot.err.find("give --metrics to `dfx-coordinator run`"), std::string::npos)
      << oneshot.err;
  auto coordinator =
      RunCommand({Bin("dfx-coordinator"), "run", Source("examples/vector_pipeline.json").string(),
                  "--ranks", "1", "--launcher", "local", "--work-dir", (dir / "w").string(),
                  "--metrics", "tcp://192.0.2.1:9464"},
                 dir, 60);
  EXPECT_EQ(coordinator.exit_code, 2) << coordinator.err;
  EXPECT_NE(coordinator.err.find("not a loopback address"), std::string::npos) << coordinator.err;
  EXPECT_FALSE(fs::exists(dir / "w/dfx_outputs")) << "refused before anything ran";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dfx::e2e
