// Dispatch round-trip benchmark (whole process, real binaries).
//
// For N agents: `dfx-coordinator run` of a one-task program, M dispatches per
// rank, no DFX flag; the round trip of a dispatch is end_ns - start_ns from
// the run manifest (coordinator clock: Dispatch sent -> DispatchDone
// received, including the emulated chip's run). The baseline, in the same
// run: one ROUTER and N DEALER echo threads over the same loopback TCP
// transport, each ping a 64-byte frame, N in flight at once.
//
// It also measures what the coordinator process itself costs (issue 10,
// docs/scaling.md): peak RSS, open descriptors, CPU per dispatch (the
// difference between an M-round and a 1-round run) and CPU per MiB gathered
// (the same rounds with a full args dump of --dump-elems floats per tensor,
// minus the plain ones), and the fan-out of one all-ranks step (first Dispatch
// sent -> last DispatchDone).
//
// usage: dispatch_rtt_bench [--agents 1,4,16,64] [--dispatches M] [--chips-per-agent C]
//                           [--dump-elems E]
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
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

// What the coordinator process itself used (never its agents): peak RSS
// (VmHWM), most open descriptors, CPU (utime + stime), sampled from /proc
// every 20 ms while it runs and once more as a zombie.
struct CoordinatorUse {
  bool ok = false;
  double wall_s = 0;
  uint64_t peak_rss_kb = 0;
  int peak_fds = 0;
  double cpu_s = 0;
};

double ProcCpuSeconds(pid_t pid) {
  auto read = dfx::ReadFile(fs::path("/proc") / std::to_string(pid) / "stat");
  if (!read.ok()) return 0;
  const std::string& stat = *read;
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::vector<std::string> fields;
  size_t at = close + 2;
  while (at < stat.size() && fields.size() < 15) {
    size_t space = stat.find(' ', at);
    if (space == std::string::npos) space = stat.size();
    fields.push_back(stat.substr(at, space - at));
    at = space + 1;
  }
  if (fields.size() < 13) return 0;
  // Fields 14 and 15 of stat (utime, stime): 12 and 13 after the state.
  return (std::stod(fields[11]) + std::stod(fields[12])) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

void SampleProc(pid_t pid, CoordinatorUse* use) {
  const fs::path proc = fs::path("/proc") / std::to_string(pid);
  if (auto read = dfx::ReadFile(proc / "status"); read.ok()) {
    const std::string& status = *read;
    const size_t at = status.find("VmHWM:");
    if (at != std::string::npos) {
      use->peak_rss_kb = std::max<uint64_t>(use->peak_rss_kb, std::stoull(status.substr(at + 6)));
    }
  }
  std::error_code ec;
  int fds = 0;
  for (auto it = fs::directory_iterator(proc / "fd", ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    ++fds;
  }
  use->peak_fds = std::max(use->peak_fds, fds);
}

CoordinatorUse RunCoordinator(const std::vector<std::string>& args) {
  CoordinatorUse use;
  const std::string coordinator = std::string(DFX_BINARY_DIR) + "/bin/dfx-coordinator";
  std::vector<std::string> argv = {coordinator};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  const auto start = Clock::now();
  const int rc = posix_spawn(&pid, coordinator.c_str(), &actions, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return use;
  for (;;) {
    siginfo_t info{};
    // WNOWAIT: an exited coordinator stays a zombie, so its CPU can still be read.
    if (waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) break;
    SampleProc(pid, &use);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  use.cpu_s = ProcCpuSeconds(pid);
  int status = 0;
  waitpid(pid, &status, 0);
  use.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  use.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return use;
}

// One program on every rank, `dispatches` times; `tensor_elems` floats per
// tensor (its args dump is what a gathered MiB costs).
bool WritePlan(const fs::path& work, int dispatches, int tensor_elems) {
  const std::string program = fmt::format(R"({{"name": "tiny",
    "kernels": [{{"func_id": 0, "name": "add", "core_type": "aiv", "op": "add"}}],
    "tensors": [{{"name": "a", "shape": [{0}], "dtype": "FLOAT32", "init": {{"range": [0.0, 1.0]}}}},
                {{"name": "b", "shape": [{0}], "dtype": "FLOAT32"}}],
    "orchestration": [{{"submit": "add", "args": [{{"tensor": "a", "type": "INPUT"}},
                       {{"tensor": "a", "type": "INPUT"}}, {{"tensor": "b", "type": "OUTPUT"}}]}}]}})",
                                          tensor_elems);
  dfx::Json plan;
  plan["programs"] = {{"tiny", "tiny.json"}};
  plan["steps"] = dfx::Json::array();
  for (int i = 0; i < dispatches; ++i)
    plan["steps"].push_back({{"program", "tiny"}, {"ranks", "all"}});
  return dfx::WriteFileAtomic(work / "tiny.json", program).ok() &&
         dfx::WriteJsonFileAtomic(work / "plan.json", plan, 2).ok();
}

struct RunResult {
  CoordinatorUse use;
  Percentiles dispatch;  // Dispatch sent -> DispatchDone, per dispatch
  Percentiles fan_out;   // one all-ranks step: first sent -> last done
  uint64_t bytes = 0;    // gathered
  size_t ok_dispatches = 0;
};

RunResult RunOnce(const fs::path& dir, int agents, int chips, int dispatches, int tensor_elems,
                  const std::vector<std::string>& dfx_flags) {
  RunResult out;
  const fs::path work = dir / fmt::format("w{}", agents);
  fs::remove_all(work);
  fs::create_directories(work);
  if (!WritePlan(work, dispatches, tensor_elems)) return out;
  std::vector<std::string> args = {"run",
                                   (work / "plan.json").string(),
                                   "--ranks",
                                   std::to_string(agents * chips),
                                   "--chips-per-agent",
                                   std::to_string(chips),
                                   "--launcher",
                                   "local",
                                   "--work-dir",
                                   work.string(),
                                   "--startup-timeout",
                                   "600",
                                   "--log-level",
                                   "warn"};
  args.insert(args.end(), dfx_flags.begin(), dfx_flags.end());
  out.use = RunCoordinator(args);
  auto manifest = dfx::ReadJsonFile(work / "dfx_outputs/run_manifest.json");
  if (!manifest.ok()) manifest = dfx::ReadJsonFile(work / "run_manifest.json");
  std::vector<uint64_t> samples;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> steps;  // k -> (first start, last end)
  if (manifest.ok()) {
    out.bytes = (*manifest)["bytes_gathered"].get<uint64_t>();
    for (const auto& d : (*manifest)["dispatches"]) {
      if (d["status"] != "ok") continue;
      const uint64_t start = d["start_ns"], end = d["end_ns"], k = d["k"];
      samples.push_back(end - start);
      auto [it, fresh] = steps.try_emplace(k, start, end);
      if (!fresh) {
        it->second.first = std::min(it->second.first, start);
        it->second.second = std::max(it->second.second, end);
      }
    }
  }
  out.ok_dispatches = samples.size();
  out.use.ok &= static_cast<int>(samples.size()) == agents * chips * dispatches;
  std::vector<uint64_t> spans;
  for (const auto& [k, span] : steps) spans.push_back(span.second - span.first);
  out.dispatch = Of(samples);
  out.fan_out = Of(spans);
  fs::remove_all(work);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> counts = {1, 4, 16, 64};
  int dispatches = 20;
  int chips = 1;
  int dump_elems = 16384;  // 64 KiB per tensor dump
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
    } else if (flag == "--chips-per-agent") {
      chips = std::atoi(argv[i + 1]);
    } else if (flag == "--dump-elems") {
      dump_elems = std::atoi(argv[i + 1]);
    }
  }
  if (dispatches < 2) dispatches = 2;
  fs::path dir = fs::temp_directory_path() / fmt::format("dispatch_rtt_bench_{}", ::getpid());
  // p50 x / p99 x: the dispatch percentile over the bare one (issue 13's row
  // is the p99 ratio).
  std::printf("%-6s %-5s %9s %9s %10s %10s %7s %7s %9s %8s %5s %8s %8s %7s\n", "agents", "chips",
              "zmq p50", "zmq p99", "disp p50", "disp p99", "p50 x", "p99 x", "fanout50", "RSS MB",
              "fds", "ms/disp", "ms/MiB", "wall s");
  bool all_ok = true;
  for (int n : counts) {
    Percentiles raw = RawRoundTrip(n, dispatches * 5);
    // Marginal coordinator CPU per dispatch: `dispatches` rounds minus one.
    RunResult one = RunOnce(dir, n, chips, 1, 16, {});
    RunResult many = RunOnce(dir, n, chips, dispatches, 16, {});
    // Marginal CPU per MiB gathered: the same rounds with a full args dump.
    RunResult dump = RunOnce(dir, n, chips, dispatches, dump_elems, {"--dump-args", "2"});
    const bool ok = one.use.ok && many.use.ok && dump.use.ok && dump.bytes > 0;
    all_ok &= ok;
    const double per_dispatch_ms =
        (many.use.cpu_s - one.use.cpu_s) * 1e3 / (double(n) * chips * (dispatches - 1));
    const double mib = dump.bytes / double(1 << 20);
    const double per_mib_ms = mib > 0 ? (dump.use.cpu_s - many.use.cpu_s) * 1e3 / mib : 0;
    std::printf(
        "%-6d %-5d %9.0f %9.0f %10.0f %10.0f %7.1f %7.1f %9.0f %8.1f %5d %8.3f %8.2f %7.1f%s\n", n,
        chips, raw.p50_us, raw.p99_us, many.dispatch.p50_us, many.dispatch.p99_us,
        raw.p50_us > 0 ? many.dispatch.p50_us / raw.p50_us : 0,
        raw.p99_us > 0 ? many.dispatch.p99_us / raw.p99_us : 0, many.fan_out.p50_us,
        std::max(many.use.peak_rss_kb, dump.use.peak_rss_kb) / 1024.0,
        std::max(many.use.peak_fds, dump.use.peak_fds), per_dispatch_ms, per_mib_ms,
        many.use.wall_s, ok ? "" : "  (RUN FAILED)");
    std::printf(
        "       (coordinator CPU: 1 round %.2f s in %.1f s wall; %d rounds %.2f s; %d rounds with "
        "dumps %.2f s for %.1f MiB)\n",
        one.use.cpu_s, one.use.wall_s, dispatches, many.use.cpu_s, dispatches, dump.use.cpu_s, mib);
    std::fflush(stdout);
  }
  fs::remove_all(dir);
  return all_ok ? 0 : 1;
}
