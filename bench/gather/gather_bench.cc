// Gather benchmark (whole process, real binaries):
//
//  * gather throughput: N spools of S MiB each are streamed to
//    `dfx-coordinator gather` by N recovery agents (the same chunked,
//    credit-controlled, XXH64-checked path a live run uses, written to disk
//    through AtomicFileWriter);
//  * two baselines, measured in the same run: N sender PROCESSES (this
//    binary, --raw-sender: one ZeroMQ context each, like the agents) with
//    one DEALER each blasting the same number of bytes in 1 MiB frames (the
//    gather's chunk size) to one ROUTER in this process over the same
//    loopback TCP transport; the receiver either discards the frames ("raw
//    zmq") or hands them to a writer thread that write(2)s each one to a
//    file per sender in the directory the gather writes to ("raw+disk"). Both are timed from
//    spawning the sender processes until every byte arrived (and, for raw+disk, is written), as the
//    gather is timed from spawning the coordinator until it exits;
//  * a third baseline, "raw+curve": the raw senders and ROUTER speaking
//    CURVE, as the gather's launched agents and coordinator must (design.md
//    §7: CURVE on loopback for launched agents too), discarding the frames:
//    what encryption alone leaves of raw ZeroMQ on this machine;
//  * the coordinator's peak RSS (VmHWM) for each size, to show it does not
//    grow with artifact size.
//
// The gather writes every byte to disk (page cache, no fsync) under --dir,
// so "ratio" (vs raw zmq) charges it for the disk writes and "ratio disk"
// (vs raw+disk) does not.
//
// The gather's recovery agents run on the coordinator's host, so by default
// they stream over the local bulk path (ipc://, no CURVE; README "Security");
// the last column, "gather curve", is the same gather with
// DFX_BULK_TRANSPORT=curve (everything over CURVE, as before that path existed).
//
// usage: gather_bench [--agents N] [--sizes MiB,MiB,...] [--dir DIR] [--bin-dir DIR]
// --bin-dir: where dfx-coordinator and dfx-rank-agent are (default: this
// build's bin/), e.g. a copy of an earlier build's, for a paired comparison.
#include <fcntl.h>
#include <fmt/format.h>
#include <malloc.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/file_util.h"
#include "common/json.h"
#include "protocol/channel.h"
#include "protocol/curve.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string self_path;                                // this binary, for the sender processes
fs::path bin_dir = fs::path(DFX_BINARY_DIR) / "bin";  // the coordinator and agent gathered with

// --raw-sender ENDPOINT ID BYTES: one DEALER sends BYTES in 1 MiB frames.
// With DFX_BENCH_CURVE="server-public client-public client-secret" in its
// environment (as the coordinator hands launched agents their keys), it
// speaks CURVE.
int RawSender(const std::string& endpoint, const std::string& id, uint64_t bytes) {
  dfx::protocol::Context context;
  dfx::protocol::SocketOptions options;
  options.linger_ms = -1;  // close() waits until every frame left
  if (const char* keys = std::getenv("DFX_BENCH_CURVE")) {
    const std::string k = keys;
    const size_t n = dfx::protocol::kCurveKeyChars;
    if (k.size() != 3 * n + 2) return 1;
    dfx::protocol::CurveClient client;
    client.server_public_key = k.substr(0, n);
    client.keys.public_key = k.substr(n + 1, n);
    client.keys.secret_key = k.substr(2 * n + 2, n);
    options.curve_client = client;
  }
  auto dealer = dfx::protocol::DealerChannel::Connect(context, endpoint, id, options);
  if (!dealer.ok()) return 1;
  const std::string frame(1 << 20, 'z');
  for (uint64_t sent = 0; sent < bytes; sent += frame.size()) {
    for (;;) {
      auto r = dealer->SendRaw(frame);
      if (!r.ok()) return 1;
      if (*r == dfx::protocol::SendResult::kSent) break;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  return 0;
}

// `extra_env` ("NAME=value"; may be empty) is added to this process's environment.
pid_t Spawn(std::vector<std::string> argv, std::string extra_env = {}) {
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
  if (!extra_env.empty()) env.push_back(extra_env.data());
  env.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0].c_str(), nullptr, nullptr, cargv.data(), env.data()) != 0)
    return -1;
  return pid;
}

// MB/s of N sender processes pushing `bytes_each` to one ROUTER; with
// `write_dir`, every frame is written to <write_dir>/raw-<sender>.bin; with
// `curve`, the senders and the ROUTER speak CURVE (as the gather's agents
// and coordinator must: design.md §7), with keys made for this run.
double RawZmqThroughput(int agents, uint64_t bytes_each, const fs::path& write_dir,
                        bool curve = false) {
  dfx::protocol::Context context;
  dfx::protocol::SocketOptions options;
  std::string sender_env;
  if (curve) {
    auto server = dfx::protocol::GenerateCurveKeyPair();
    auto client = dfx::protocol::GenerateCurveKeyPair();
    if (!server.ok() || !client.ok()) return 0;
    options.curve_server = dfx::protocol::CurveServer{*server, {client->public_key}};
    sender_env = fmt::format("DFX_BENCH_CURVE={} {} {}", server->public_key, client->public_key,
                             client->secret_key);
  }
  auto router = dfx::protocol::RouterChannel::Bind(context, "tcp://127.0.0.1:0", options);
  if (!router.ok()) return 0;
  std::map<std::string, int> files;
  const auto start = Clock::now();
  std::vector<pid_t> senders;
  for (int a = 0; a < agents; ++a) {
    senders.push_back(Spawn({self_path, "--raw-sender", router->endpoint(),
                             fmt::format("raw-{}", a), std::to_string(bytes_each)},
                            sender_env));
  }
  // raw+disk: a writer thread write(2)s the received frames (no copy), as
  // the coordinator's does, behind a queue bounded like its credit window.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<int, dfx::protocol::FrameBytes>> queue;
  bool done = false;
  bool write_failed = false;
  const size_t max_queued = 8 * static_cast<size_t>(agents);
  std::thread writer;
  if (!write_dir.empty()) {
    writer = std::thread([&] {
      for (;;) {
        std::pair<int, dfx::protocol::FrameBytes> item;
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return done || !queue.empty(); });
          if (queue.empty()) return;
          item = std::move(queue.front());
          queue.pop_front();
        }
        cv.notify_all();
        const auto& bytes = item.second;
        if (::write(item.first, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) {
          write_failed = true;
        }
      }
    });
  }
  uint64_t received = 0;
  const uint64_t total = bytes_each * agents;
  while (received < total) {
    auto r = router->Receive(1000);
    if (!r.ok()) break;
    if (!r->frame) continue;
    received += r->frame->bytes.size();
    if (write_dir.empty()) continue;
    int& fd = files[r->frame->identity];
    if (fd == 0) {
      fd = ::open((write_dir / (r->frame->identity + ".bin")).c_str(),
                  O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return queue.size() < max_queued; });
    queue.emplace_back(fd, std::move(r->frame->bytes));
    cv.notify_all();
  }
  if (writer.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
    }
    cv.notify_all();
    writer.join();
  }
  for (auto& [id, fd] : files) ::close(fd);
  const double secs = Seconds(start, Clock::now());
  if (write_failed) return 0;
  for (pid_t pid : senders) {
    int status = 0;
    if (pid > 0) waitpid(pid, &status, 0);
  }
  for (auto& [id, fd] : files) fs::remove(write_dir / (id + ".bin"));
  return received / secs / 1e6;
}

void FillSpoolFile(const fs::path& path, uint64_t bytes, uint64_t seed) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  std::vector<uint64_t> block((1 << 20) / 8);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (uint64_t written = 0; written < bytes; written += block.size() * 8) {
    for (auto& w : block) {  // xorshift64: incompressible, cheap
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      w = x;
    }
    out.write(reinterpret_cast<const char*>(block.data()),
              static_cast<std::streamsize>(std::min<uint64_t>(block.size() * 8, bytes - written)));
  }
}

struct GatherResult {
  double mb_per_s = 0;
  double peak_rss_mib = 0;
  bool ok = false;
};

GatherResult RunGather(const fs::path& dir, int agents, uint64_t bytes_each,
                       bool force_curve = false) {
  GatherResult result;
  const fs::path work = dir / fmt::format("w_{}x{}", agents, bytes_each >> 20);
  fs::remove_all(work);
  const uint64_t session = 0x5eed000000000000ull | bytes_each;
  const fs::path spool = work / ".dfx_spool";
  for (int r = 0; r < agents; ++r) {
    FillSpoolFile(spool / dfx::Hex64(session) / fmt::format("rank{}/d0/args_dump/args.bin", r),
                  bytes_each, static_cast<uint64_t>(r + 1));
  }
  ::sync();  // the generated spool's writeback must not overlap the timed gather
  dfx::Json record;
  record["session"] = dfx::Hex64(session);
  record["spool"] = fs::absolute(spool).string();
  if (!dfx::WriteJsonFileAtomic(work / "dfx_outputs/.session.json", record, 2).ok()) return result;
  const std::string coordinator = (bin_dir / "dfx-coordinator").string();
  // It runs the dfx-rank-agent beside it.
  std::vector<std::string> argv = {coordinator,   "gather",      "--work-dir",
                                   work.string(), "--log-level", "warn"};
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = -1;
  const auto start = Clock::now();
  // Its stdout lists every recovered file: keep the table readable.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
  std::string curve_env = "DFX_BULK_TRANSPORT=curve";
  if (force_curve) env.push_back(curve_env.data());
  env.push_back(nullptr);
  const int spawned =
      posix_spawn(&pid, coordinator.c_str(), &actions, nullptr, cargv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return result;
  // The coordinator's own high-water mark (VmHWM), sampled until it exits
  // (wait4's ru_maxrss would also count the recovery agents it reaped).
  int status = 0;
  uint64_t hwm_kb = 0;
  const std::string status_path = fmt::format("/proc/{}/status", pid);
  for (;;) {
    std::ifstream in(status_path);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmHWM:", 0) == 0)
        hwm_kb = std::max<uint64_t>(hwm_kb, std::stoull(line.substr(6)));
    }
    if (waitpid(pid, &status, WNOHANG) == pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const double secs = Seconds(start, Clock::now());
  result.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  for (int r = 0; r < agents; ++r) {
    std::error_code ec;
    auto size =
        fs::file_size(work / fmt::format("dfx_outputs/rank{}/d0/args_dump/args.bin", r), ec);
    result.ok &= !ec && size == bytes_each;
  }
  result.mb_per_s = bytes_each * agents / secs / 1e6;
  result.peak_rss_mib = hwm_kb / 1024.0;
  fs::remove_all(work);
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  // The same malloc tuning as dfx-coordinator and dfx-rank-agent (1 MiB
  // buffers stay in the heap instead of fresh mmap pages per frame), so the
  // raw baselines do not pay page faults the gather avoids.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  self_path = fs::canonical("/proc/self/exe").string();
  if (argc == 5 && std::string(argv[1]) == "--raw-sender") {
    return RawSender(argv[2], argv[3], std::stoull(argv[4]));
  }
  int agents = 4;
  std::vector<uint64_t> sizes_mib = {64, 256};
  fs::path dir = fs::temp_directory_path() / fmt::format("gather_bench_{}", ::getpid());
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--agents") {
      agents = std::atoi(argv[i + 1]);
    } else if (flag == "--sizes") {
      sizes_mib.clear();
      std::string list = argv[i + 1];
      size_t start = 0;
      while (start < list.size()) {
        size_t comma = list.find(',', start);
        if (comma == std::string::npos) comma = list.size();
        sizes_mib.push_back(std::stoull(list.substr(start, comma - start)));
        start = comma + 1;
      }
    } else if (flag == "--dir") {
      dir = argv[i + 1];
    } else if (flag == "--bin-dir") {
      bin_dir = argv[i + 1];
    } else {
      std::fprintf(stderr,
                   "usage: gather_bench [--agents N] [--sizes MiB,...] [--dir DIR] "
                   "[--bin-dir DIR]\n");
      return 2;
    }
  }
  fs::create_directories(dir);
  std::printf("%-7s %-10s %13s %14s %12s %7s %11s %14s %15s %12s %18s\n", "agents", "MiB/agent",
              "raw zmq MB/s", "raw+disk MB/s", "gather MB/s", "ratio", "ratio disk",
              "coord RSS MiB", "raw+curve MB/s", "ratio curve", "gather curve MB/s");
  bool all_ok = true;
  for (uint64_t mib : sizes_mib) {
    const uint64_t bytes = mib << 20;
    const double raw = RawZmqThroughput(agents, bytes, {});
    const double raw_disk = RawZmqThroughput(agents, bytes, dir);
    const double raw_curve = RawZmqThroughput(agents, bytes, {}, /*curve=*/true);
    const GatherResult g = RunGather(dir, agents, bytes);
    const GatherResult gc = RunGather(dir, agents, bytes, /*force_curve=*/true);
    all_ok &= g.ok && gc.ok;
    std::printf(
        "%-7d %-10llu %13.0f %14.0f %12.0f %6.0f%% %10.0f%% %14.1f %15.0f %11.0f%% %18.0f%s\n",
        agents, static_cast<unsigned long long>(mib), raw, raw_disk, g.mb_per_s,
        raw > 0 ? 100.0 * g.mb_per_s / raw : 0.0,
        raw_disk > 0 ? 100.0 * g.mb_per_s / raw_disk : 0.0, g.peak_rss_mib, raw_curve,
        raw_curve > 0 ? 100.0 * g.mb_per_s / raw_curve : 0.0, gc.mb_per_s,
        g.ok && gc.ok ? "" : "  (GATHER FAILED)");
    std::fflush(stdout);
  }
  fs::remove_all(dir);
  return all_ok ? 0 : 1;
}
