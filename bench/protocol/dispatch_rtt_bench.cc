// Dispatch round-trip benchmark (whole process, real binaries).
//
// For N agents: `dfx-coordinator run` of a one-task program, M dispatches per
// rank, no DFX flag; the round trip of a dispatch is end_ns - start_ns from
// the run manifest (coordinator clock: Dispatch sent -> DispatchDone
// received, including the emulated chip's run). The baseline, in the same
// run: one ROUTER and N DEALER echo threads over the same loopback TCP
// transport, each ping a 64-byte frame, N in flight at once.
//
// usage: dispatch_rtt_bench [--agents 1,4,16,64] [--dispatches M]
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/file_util.h"
#include "common/json.h"
#include "protocol/channel.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Percentiles {
  double p50_us = 0, p99_us = 0;
};

Percentiles Of(std::vector<uint64_t> ns) {
  if (ns.empty()) return {};
  std::sort(ns.begin(), ns.end());
  auto at = [&](double q) {
    return ns[std::min(ns.size() - 1, static_cast<size_t>(q * ns.size()))] / 1e3;
  };
  return {at(0.5), at(0.99)};
}

Percentiles RawRoundTrip(int agents, int rounds) {
  dfx::protocol::Context context;
  auto router = dfx::protocol::RouterChannel::Bind(context, "tcp://127.0.0.1:0");
  if (!router.ok()) return {};
  std::atomic<bool> stop{false};
  std::vector<std::thread> echoes;
  for (int a = 0; a < agents; ++a) {
    echoes.emplace_back([&, a] {
      auto dealer = dfx::protocol::DealerChannel::Connect(context, router->endpoint(),
                                                          fmt::format("echo-{}", a));
      if (!dealer.ok()) return;
      (void)dealer->SendRaw("hello");
      while (!stop) {
        auto r = dealer->Receive(50);
        if (r.ok() && r->frame) (void)dealer->SendRaw(r->frame->bytes);
      }
    });
  }
  std::vector<std::string> ids;
  while (static_cast<int>(ids.size()) < agents) {
    auto r = router->Receive(1000);
    if (r.ok() && r->frame) ids.push_back(r->frame->identity);
  }
  std::vector<uint64_t> samples;
  const std::string ping(64, 'p');
  for (int round = 0; round < rounds; ++round) {
    std::map<std::string, Clock::time_point> sent;
    for (const auto& id : ids) {
      sent[id] = Clock::now();
      (void)router->SendRaw(id, ping);
    }
    for (int got = 0; got < agents;) {
      auto r = router->Receive(1000);
      if (!r.ok() || !r->frame) continue;
      samples.push_back(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                  Clock::now() - sent[r->frame->identity])
                                                  .count()));
      ++got;
    }
  }
  stop = true;
  for (auto& t : echoes) t.join();
  return Of(samples);
}

Percentiles DispatchRoundTrip(const fs::path& dir, int agents, int dispatches, bool* ok) {
  const fs::path work = dir / fmt::format("w{}", agents);
  fs::remove_all(work);
  fs::create_directories(work);
  const char* program = R"({"name": "tiny",
    "kernels": [{"func_id": 0, "name": "add", "core_type": "aiv", "op": "add"}],
    "tensors": [{"name": "a", "shape": [16], "dtype": "FLOAT32", "init": {"range": [0.0, 1.0]}},
                {"name": "b", "shape": [16], "dtype": "FLOAT32"}],
    "orchestration": [{"submit": "add", "args": [{"tensor": "a", "type": "INPUT"},
                       {"tensor": "a", "type": "INPUT"}, {"tensor": "b", "type": "OUTPUT"}]}]})";
  dfx::Json plan;
  plan["programs"] = {{"tiny", "tiny.json"}};
  plan["steps"] = dfx::Json::array();
  for (int i = 0; i < dispatches; ++i)
    plan["steps"].push_back({{"program", "tiny"}, {"ranks", "all"}});
  *ok = dfx::WriteFileAtomic(work / "tiny.json", program).ok() &&
        dfx::WriteJsonFileAtomic(work / "plan.json", plan, 2).ok();
  const std::string coordinator = std::string(DFX_BINARY_DIR) + "/bin/dfx-coordinator";
  std::vector<std::string> argv = {coordinator,
                                   "run",
                                   (work / "plan.json").string(),
                                   "--ranks",
                                   std::to_string(agents),
                                   "--launcher",
                                   "local",
                                   "--work-dir",
                                   work.string(),
                                   "--startup-timeout",
                                   "300",
                                   "--log-level",
                                   "warn"};
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  if (posix_spawn(&pid, coordinator.c_str(), &actions, nullptr, cargv.data(), environ) != 0) {
    *ok = false;
    return {};
  }
  posix_spawn_file_actions_destroy(&actions);
  int status = 0;
  waitpid(pid, &status, 0);
  *ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
  auto manifest = dfx::ReadJsonFile(work / "dfx_outputs/run_manifest.json");
  std::vector<uint64_t> samples;
  if (manifest.ok()) {
    for (const auto& d : (*manifest)["dispatches"]) {
      if (d["status"] == "ok") {
        samples.push_back(d["end_ns"].get<uint64_t>() - d["start_ns"].get<uint64_t>());
      }
    }
  }
  *ok &= static_cast<int>(samples.size()) == agents * dispatches;
  fs::remove_all(work);
  return Of(samples);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> counts = {1, 4, 16, 64};
  int dispatches = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--agents") {
      counts.clear();
      std::string list = argv[i + 1];
      size_t start = 0;
      while (start < list.size()) {
        size_t comma = list.find(',', start);
        if (comma == std::string::npos) comma = list.size();
        counts.push_back(std::stoi(list.substr(start, comma - start)));
        start = comma + 1;
      }
    } else if (flag == "--dispatches") {
      dispatches = std::atoi(argv[i + 1]);
    }
  }
  fs::path dir = fs::temp_directory_path() / fmt::format("dispatch_rtt_bench_{}", ::getpid());
  std::printf("%-7s %14s %14s %16s %16s\n", "agents", "zmq p50 us", "zmq p99 us", "dispatch p50 us",
              "dispatch p99 us");
  bool all_ok = true;
  for (int n : counts) {
    Percentiles raw = RawRoundTrip(n, dispatches * 5);
    bool ok = false;
    Percentiles d = DispatchRoundTrip(dir, n, dispatches, &ok);
    all_ok &= ok;
    std::printf("%-7d %14.0f %14.0f %16.0f %16.0f%s\n", n, raw.p50_us, raw.p99_us, d.p50_us,
                d.p99_us, ok ? "" : "  (RUN FAILED)");
    std::fflush(stdout);
  }
  fs::remove_all(dir);
  return all_ok ? 0 : 1;
}
