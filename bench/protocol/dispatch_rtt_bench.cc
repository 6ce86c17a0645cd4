// Dispatch round-trip benchmark (whole process, real binaries).
//
// For N agents: `dfx-coordinator run` of a one-task program, M dispatches per
// rank, no DFX flag; the round trip of a dispatch is end_ns - start_ns from
// the run manifest (coordinator clock: Dispatch sent -> DispatchDone
// received, including the emulated chip's run). Each rank's first dispatch
// carries the program text and has it parsed (later ones go by hash): it is
// warm-up, like the echo's first message, so it is left out of the
// percentiles and reported apart. The baseline, in the same run: one ROUTER and N DEALER echo
// threads over the same loopback TCP transport, each ping a 64-byte frame, N in flight at once
// (bench/README.md, the dispatch row). A second baseline, also in every pair: the same echo with each DEALER a
// process of its own (this binary, --echo-peer), as each agent is: a ZeroMQ context, and so an
// I/O thread, per peer, where the threads above share one. Neither speaks CURVE (an agent's
// control channel does).
//
// On a loaded machine one pair of measurements says little (the bare p99
// moved 2.5x between runs), so each agent count runs --repeat pairs, each
// pair the bare echo and then the dispatch run, interleaved; it prints the
// median percentiles and the median and min of the per-pair p99 ratio, and
// the CPU per round trip of both sides: the bare echo's whole process
// (getrusage, the ping rounds only) against the coordinator and its agents
// (RUSAGE_CHILDREN across the run; the M-round run minus the 1-round run of
// the same pair, per extra dispatch).
//
// It also measures what the coordinator process itself costs
// (docs/scaling.md): peak RSS, open descriptors, CPU per dispatch (the
// difference between an M-round and a 1-round run) and CPU per MiB gathered
// (the same rounds with a full args dump of --dump-elems floats per tensor,
// minus the plain ones), and the fan-out of one all-ranks step (first Dispatch
// sent -> last DispatchDone).
//
// usage: dispatch_rtt_bench [--agents 1,4,16,64] [--dispatches M] [--chips-per-agent C]
//                           [--dump-elems E] [--repeat R] [--coordinator PATH]
// --coordinator: another dfx-coordinator (its dfx-rank-agent beside it), e.g.
// a copy of the binaries from before a change, to compare on the same machine.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
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

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double UsageSeconds(int who) {
  rusage u{};
  getrusage(who, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct RawResult {
  Percentiles rtt;
  double cpu_us_per_rtt = 0;  // the whole process (ROUTER, DEALER threads, I/O thread)
};

Percentiles Of(std::vector<uint64_t> ns) {
  if (ns.empty()) return {};
  std::sort(ns.begin(), ns.end());
  auto at = [&](double q) {
    return ns[std::min(ns.size() - 1, static_cast<size_t>(q * ns.size()))] / 1e3;
  };
  return {at(0.5), at(0.99)};
}

// One echo peer as a process of its own (`--echo-peer ENDPOINT ID`), the
// way each agent is one: a ZeroMQ context (and so an I/O thread) of its
// own. It echoes every frame until "stop", which it answers with the CPU
// seconds it used from its first ping on; it also ends once its parent is
// gone (the benchmark killed).
int EchoPeer(const std::string& endpoint, const std::string& id) {
  const pid_t parent = ::getppid();
  dfx::protocol::Context context;
  auto dealer = dfx::protocol::DealerChannel::Connect(context, endpoint, id);
  if (!dealer.ok()) return 1;
  (void)dealer->SendRaw("hello");
  double cpu_start = -1;
  while (::getppid() == parent) {
    auto r = dealer->Receive(200);
    if (!r.ok()) return 1;
    if (!r->frame) continue;
    if (r->frame->bytes.view() == "stop") {
      const double used = cpu_start < 0 ? 0 : UsageSeconds(RUSAGE_SELF) - cpu_start;
      (void)dealer->SendRaw(fmt::format("{:.6f}", used));
      return 0;
    }
    if (cpu_start < 0) cpu_start = UsageSeconds(RUSAGE_SELF);
    (void)dealer->SendRaw(r->frame->bytes);
  }
  return 0;
}

// The bare echo: `rounds` rounds of one 64-byte ping to each of `agents`
// DEALER peers at once. `processes`: each peer a process of its own (the
// agents' shape: one context and I/O thread each); otherwise a thread of
// this process, all sharing its one I/O thread.
RawResult RawRoundTrip(int agents, int rounds, bool processes) {
  dfx::protocol::Context context;
  auto router = dfx::protocol::RouterChannel::Bind(context, "tcp://127.0.0.1:0");
  if (!router.ok()) return {};
  std::atomic<bool> stop{false};
  std::vector<std::thread> echoes;
  std::vector<pid_t> peers;
  for (int a = 0; a < agents; ++a) {
    const std::string id = fmt::format("echo-{}", a);
    if (processes) {
      std::string self = "/proc/self/exe", flag = "--echo-peer", endpoint = router->endpoint(),
                  name = id;
      char* argv[] = {self.data(), flag.data(), endpoint.data(), name.data(), nullptr};
      pid_t pid = -1;
      if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, environ) == 0) {
        peers.push_back(pid);
      }
      continue;
    }
    echoes.emplace_back([&, id] {
      auto dealer = dfx::protocol::DealerChannel::Connect(context, router->endpoint(), id);
      if (!dealer.ok()) return;
      (void)dealer->SendRaw("hello");
      while (!stop) {
        auto r = dealer->Receive(50);
        if (r.ok() && r->frame) (void)dealer->SendRaw(r->frame->bytes);
      }
    });
  }
  std::vector<std::string> ids;
  const auto give_up = Clock::now() + std::chrono::seconds(60);
  while (static_cast<int>(ids.size()) < agents && Clock::now() < give_up) {
    auto r = router->Receive(1000);
    if (r.ok() && r->frame) ids.push_back(r->frame->identity);
  }
  if (static_cast<int>(ids.size()) < agents) {
    stop = true;
    for (auto& t : echoes) t.join();
    for (pid_t pid : peers) {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
    return {};
  }
  std::vector<uint64_t> samples;
  const std::string ping(64, 'p');
  const double cpu_before = UsageSeconds(RUSAGE_SELF);
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
  double cpu = UsageSeconds(RUSAGE_SELF) - cpu_before;
  stop = true;
  for (auto& t : echoes) t.join();
  // Each peer process answers "stop" with its CPU over the rounds.
  if (processes) {
    for (const auto& id : ids) (void)router->SendRaw(id, "stop");
  }
  size_t answered = 0;
  while (answered < peers.size()) {
    auto r = router->Receive(5000);
    if (!r.ok() || !r->frame) break;
    if (r->frame->bytes.size() == 64) continue;  // a ping still on its way
    cpu += std::atof(r->frame->bytes.str().c_str());
    ++answered;
  }
  // A peer that never answered is ended (its pid is still ours: not yet reaped).
  for (pid_t pid : peers) {
    if (answered < peers.size()) ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
  }
  if (answered < peers.size()) return {};
  return {Of(samples), cpu * 1e6 / (double(agents) * rounds)};
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
  double tree_cpu_s = 0;  // the coordinator and every agent it reaped (RUSAGE_CHILDREN)
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

std::string g_coordinator = std::string(DFX_BINARY_DIR) + "/bin/dfx-coordinator";

CoordinatorUse RunCoordinator(const std::vector<std::string>& args) {
  CoordinatorUse use;
  const std::string& coordinator = g_coordinator;
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
  const double children_before = UsageSeconds(RUSAGE_CHILDREN);
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
  use.tree_cpu_s = UsageSeconds(RUSAGE_CHILDREN) - children_before;
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
  // Dispatch sent -> DispatchDone, per dispatch after each rank's first
  // (the first carries the program text, parsed there: it is warm-up, like
  // the bare echo's first message, and reported apart); `all`: every one.
  Percentiles dispatch;
  Percentiles all;
  // Those sent once every rank's first dispatch had ended: a plan's steps
  // are not rounds (a rank gets its next dispatch when its last one is
  // done), so the first k=1 dispatches overlap the other ranks' first ones.
  Percentiles steady;
  Percentiles fan_out;  // one all-ranks step: first sent -> last done
  uint64_t bytes = 0;   // gathered
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
  std::vector<uint64_t> samples, all, steady;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> steps;  // k -> (first start, last end)
  if (manifest.ok()) {
    out.bytes = (*manifest)["bytes_gathered"].get<uint64_t>();
    uint64_t warm_end = 0;  // the last first dispatch's end
    for (const auto& d : (*manifest)["dispatches"]) {
      if (d["k"] == 0 && d["end_ns"].is_number())
        warm_end = std::max<uint64_t>(warm_end, d["end_ns"]);
    }
    for (const auto& d : (*manifest)["dispatches"]) {
      if (d["status"] != "ok") continue;
      const uint64_t start = d["start_ns"], end = d["end_ns"], k = d["k"];
      all.push_back(end - start);
      if (k > 0) samples.push_back(end - start);
      if (start >= warm_end) steady.push_back(end - start);
      auto [it, fresh] = steps.try_emplace(k, start, end);
      if (!fresh) {
        it->second.first = std::min(it->second.first, start);
        it->second.second = std::max(it->second.second, end);
      }
    }
  }
  out.ok_dispatches = all.size();
  out.use.ok &= static_cast<int>(all.size()) == agents * chips * dispatches;
  std::vector<uint64_t> spans;
  for (const auto& [k, span] : steps) spans.push_back(span.second - span.first);
  out.dispatch = Of(samples);
  out.all = Of(all);
  out.steady = Of(steady);
  out.fan_out = Of(spans);
  fs::remove_all(work);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--echo-peer") return EchoPeer(argv[2], argv[3]);
  std::vector<int> counts = {1, 4, 16, 64};
  int dispatches = 20;
  int chips = 1;
  int dump_elems = 16384;  // 64 KiB per tensor dump
  int repeat = 5;
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
    } else if (flag == "--repeat") {
      repeat = std::max(1, std::atoi(argv[i + 1]));
    } else if (flag == "--coordinator") {
      g_coordinator = argv[i + 1];
    } else {
      std::fprintf(stderr, "dispatch_rtt_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (dispatches < 2) dispatches = 2;
  fs::path dir = fs::temp_directory_path() / fmt::format("dispatch_rtt_bench_{}", ::getpid());
  std::printf("# %s, %d pair(s) per agent count (bare echo, then the run), load average %s\n",
              g_coordinator.c_str(), repeat,
              [] {
                auto load = dfx::ReadFile("/proc/loadavg");
                return load.ok() ? load->substr(0, load->find(' ', load->find(' ') + 1) + 5)
                                 : std::string("?");
              }()
                  .c_str());
  // Percentiles are medians over the pairs; p50 x / p99 x are the medians
  // of the per-pair ratios (bench/README.md's row is the p99 ratio).
  // "proc": the bare echo with each peer a process of its own, as agents are.
  std::printf("%-6s %-5s %9s %9s %10s %10s %7s %7s %9s %8s %5s %8s %8s %7s %10s %7s\n", "agents",
              "chips", "zmq p50", "zmq p99", "disp p50", "disp p99", "p50 x", "p99 x", "fanout50",
              "RSS MB", "fds", "ms/disp", "ms/MiB", "wall s", "proc p99", "p99 x p");
  bool all_ok = true;
  for (int n : counts) {
    std::vector<double> zmq50, zmq99, disp50, disp99, x50, x99, fanout, wall;
    std::vector<double> raw_cpu, tree_cpu, coord_cpu, all99, x99_all, steady99, x99_steady;
    std::vector<double> proc99, xproc99, proc_cpu;
    uint64_t peak_rss_kb = 0;
    int peak_fds = 0;
    bool ok = true;
    const double extra = double(n) * chips * (dispatches - 1);
    for (int rep = 0; rep < repeat; ++rep) {
      RawResult raw = RawRoundTrip(n, dispatches * 5, false);
      RawResult proc = RawRoundTrip(n, dispatches * 5, true);
      // Marginal CPU per dispatch: `dispatches` rounds minus one.
      RunResult one = RunOnce(dir, n, chips, 1, 16, {});
      RunResult many = RunOnce(dir, n, chips, dispatches, 16, {});
      ok &= one.use.ok && many.use.ok;
      zmq50.push_back(raw.rtt.p50_us);
      zmq99.push_back(raw.rtt.p99_us);
      disp50.push_back(many.dispatch.p50_us);
      disp99.push_back(many.dispatch.p99_us);
      if (raw.rtt.p50_us > 0) x50.push_back(many.dispatch.p50_us / raw.rtt.p50_us);
      if (raw.rtt.p99_us > 0) x99.push_back(many.dispatch.p99_us / raw.rtt.p99_us);
      all99.push_back(many.all.p99_us);
      if (raw.rtt.p99_us > 0) x99_all.push_back(many.all.p99_us / raw.rtt.p99_us);
      steady99.push_back(many.steady.p99_us);
      if (raw.rtt.p99_us > 0) x99_steady.push_back(many.steady.p99_us / raw.rtt.p99_us);
      fanout.push_back(many.fan_out.p50_us);
      wall.push_back(many.use.wall_s);
      raw_cpu.push_back(raw.cpu_us_per_rtt);
      proc99.push_back(proc.rtt.p99_us);
      if (proc.rtt.p99_us > 0) xproc99.push_back(many.dispatch.p99_us / proc.rtt.p99_us);
      proc_cpu.push_back(proc.cpu_us_per_rtt);
      ok &= proc.rtt.p99_us > 0;
      tree_cpu.push_back((many.use.tree_cpu_s - one.use.tree_cpu_s) * 1e6 / extra);
      coord_cpu.push_back((many.use.cpu_s - one.use.cpu_s) * 1e6 / extra);
      peak_rss_kb = std::max(peak_rss_kb, many.use.peak_rss_kb);
      peak_fds = std::max(peak_fds, many.use.peak_fds);
      std::printf(
          "       pair %d: zmq p50/p99 %.0f/%.0f us, dispatch p50/p99 %.0f/%.0f us, p99 x %.2f "
          "(with first dispatches: p99 %.0f us, %.2f x); CPU per round trip: bare %.0f us, "
          "dispatch %.0f us; bare echo from %d processes: p50/p99 %.0f/%.0f us, p99 x %.2f, CPU "
          "per round trip %.0f us\n",
          rep + 1, raw.rtt.p50_us, raw.rtt.p99_us, many.dispatch.p50_us, many.dispatch.p99_us,
          raw.rtt.p99_us > 0 ? many.dispatch.p99_us / raw.rtt.p99_us : 0, many.all.p99_us,
          raw.rtt.p99_us > 0 ? many.all.p99_us / raw.rtt.p99_us : 0, raw.cpu_us_per_rtt,
          tree_cpu.back(), n, proc.rtt.p50_us, proc.rtt.p99_us,
          proc.rtt.p99_us > 0 ? many.dispatch.p99_us / proc.rtt.p99_us : 0, proc.cpu_us_per_rtt);
      std::fflush(stdout);
    }
    // Marginal CPU per MiB gathered: rounds with a full args dump, once.
    RunResult many = RunOnce(dir, n, chips, dispatches, 16, {});
    RunResult dump = RunOnce(dir, n, chips, dispatches, dump_elems, {"--dump-args", "2"});
    ok &= many.use.ok && dump.use.ok && dump.bytes > 0;
    all_ok &= ok;
    const double mib = dump.bytes / double(1 << 20);
    const double per_mib_ms = mib > 0 ? (dump.use.cpu_s - many.use.cpu_s) * 1e3 / mib : 0;
    peak_rss_kb = std::max(peak_rss_kb, dump.use.peak_rss_kb);
    peak_fds = std::max(peak_fds, dump.use.peak_fds);
    std::printf(
        "%-6d %-5d %9.0f %9.0f %10.0f %10.0f %7.1f %7.1f %9.0f %8.1f %5d %8.3f %8.2f %7.1f %10.0f "
        "%7.2f%s\n",
        n, chips, Median(zmq50), Median(zmq99), Median(disp50), Median(disp99), Median(x50),
        Median(x99), Median(fanout), peak_rss_kb / 1024.0, peak_fds, Median(coord_cpu) / 1e3,
        per_mib_ms, Median(wall), Median(proc99), Median(xproc99), ok ? "" : "  (RUN FAILED)");
    std::printf(
        "       p99 x over %zu pair(s): median %.2f, min %.2f, max %.2f (each rank's first "
        "dispatch, which carries the program, left out; with it: p99 %.0f us, median %.2f x)\n",
        x99.size(), Median(x99), x99.empty() ? 0 : *std::min_element(x99.begin(), x99.end()),
        x99.empty() ? 0 : *std::max_element(x99.begin(), x99.end()), Median(all99),
        Median(x99_all));
    std::printf(
        "       after the warm-up (only dispatches sent once every rank's first one had ended): "
        "p99 %.0f us, median %.2f x, min %.2f, max %.2f\n",
        Median(steady99), Median(x99_steady),
        x99_steady.empty() ? 0 : *std::min_element(x99_steady.begin(), x99_steady.end()),
        x99_steady.empty() ? 0 : *std::max_element(x99_steady.begin(), x99_steady.end()));
    std::printf(
        "       p99 x against the bare echo from %d processes, over %zu pair(s): median %.2f, min "
        "%.2f, max %.2f; its CPU per round trip %.0f us\n",
        n, xproc99.size(), Median(xproc99),
        xproc99.empty() ? 0 : *std::min_element(xproc99.begin(), xproc99.end()),
        xproc99.empty() ? 0 : *std::max_element(xproc99.begin(), xproc99.end()), Median(proc_cpu));
    const double bare = Median(raw_cpu), disp = Median(tree_cpu);
    std::printf(
        "       CPU per round trip (medians): bare echo %.0f us (its whole process), dispatch "
        "%.0f us (coordinator %.0f us + agents), %.1f x\n",
        bare, disp, Median(coord_cpu), bare > 0 ? disp / bare : 0);
    std::printf("       (%d rounds with dumps: coordinator CPU %.2f s for %.1f MiB)\n", dispatches,
                dump.use.cpu_s, mib);
    std::fflush(stdout);
  }
  fs::remove_all(dir);
  return all_ok ? 0 : 1;
}
