// Gather benchmark (whole process, real binaries):
//
//  * gather throughput: N spools of S MiB each are streamed to
//    `dfx-coordinator gather` by N recovery agents (the same chunked,
//    credit-controlled, XXH64-checked path a live run uses, written to disk
//    through AtomicFileWriter);
//  * two baselines, measured in the same run: N sender PROCESSES (this
//    binary, --raw-sender: one ZeroMQ context each, like the agents) with
//    one DEALER each blasting the same number of bytes in 1 MiB frames (the
//    gather's chunk size) to one ROUTER in this process over the transport
//    the gather's agents use (ipc://, the local bulk path; --raw-transport
//    tcp: loopback TCP); the receiver either discards the frames ("raw
//    zmq") or hands them to a writer thread that write(2)s each one to a
//    file per sender in the directory the gather writes to ("raw+disk").
//    Both are timed from spawning the sender processes until every byte
//    arrived (and, for raw+disk, is written), as the gather is timed from
//    spawning the coordinator until it exits;
//  * a third baseline, "raw+curve": the raw senders and ROUTER speaking
//    CURVE, as the gather's launched agents and coordinator must (docs/design.md
//    §7: CURVE on loopback for launched agents too), discarding the frames:
//    what encryption alone leaves of raw ZeroMQ on this machine;
//  * the coordinator's peak RSS (VmHWM) for each size, to show it does not
//    grow with artifact size.
//
// The gather writes every byte to disk (page cache, no fsync) under --dir,
// so "vs raw" (raw zmq, whose receiver writes nothing) charges it for the
// coordinator's disk writes and "vs raw+disk" (whose receiver writes every
// frame into the same directory) does not: like with like.
//
// The spools are made the way a live agent leaves them: each artifact with
// its checksum kept at write (<dispatch dir>/.xxh64/<rel>,
// rank_agent/spool_sum.h), so the recovery agents send without hashing, as
// they do after a real run.
//
// The machine this runs on is shared and its load moves the figures by 2x
// from one run to the next; so every case is measured --reps times,
// interleaved (raw, gather, raw+disk, ... in one repetition, the reverse
// order in the next), and each ratio is taken within one repetition (a
// paired ratio) before its median and minimum over the repetitions are
// printed. Each repetition is one line ("rep N"); the last line per size is
// the summary (medians of MB/s, median and min of the ratios).
//
// The gather's recovery agents run on the coordinator's host, so by default
// they stream over the local bulk path (ipc://, no CURVE; README "Security");
// "gather curve" is the same gather with DFX_BULK_TRANSPORT=curve
// (everything over CURVE, as before that path existed), and "raw+curve" the
// raw senders and ROUTER speaking CURVE; --no-curve leaves both out.
//
// --raw-sender / --raw-receive alone: the raw ZeroMQ halves link_bench.sh
// puts on either side of a rate-limited link.
// usage: gather_bench [--agents N] [--sizes MiB,MiB,...] [--reps R] [--dir DIR]
//                     [--bin-dir DIR] [--raw-transport ipc|tcp] [--no-curve] [--warm-pages]
// --warm-pages: each case (the gather, raw+disk) right after a file of its
// size was written into --dir and deleted (see WarmPages).
// --bin-dir: where dfx-coordinator and dfx-rank-agent are (default: this
// build's bin/), e.g. a copy of an earlier build's, for a paired comparison.
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/file_util.h"
#include "common/heap.h"
#include "common/json.h"
#include "protocol/channel.h"
#include "protocol/curve.h"
#include "rank_agent/spool_sum.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string self_path;                                // this binary, for the sender processes
fs::path bin_dir = fs::path(DFX_BINARY_DIR) / "bin";  // the coordinator and agent gathered with
bool raw_over_ipc = true;  // --raw-transport: the raw baselines' transport

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

// --raw-receive ENDPOINT BYTES: one ROUTER takes BYTES in all (from any
// number of --raw-sender processes, e.g. in another network namespace:
// bench/gather/link_bench.sh), discards them and exits 0.
int RawReceive(const std::string& endpoint, uint64_t bytes) {
  dfx::protocol::Context context;
  auto router = dfx::protocol::RouterChannel::Bind(context, endpoint, {});
  if (!router.ok()) {
    std::fprintf(stderr, "gather_bench: %s\n", router.status().ToString().c_str());
    return 1;
  }
  uint64_t received = 0;
  int idle_s = 0;
  while (received < bytes && idle_s < 120) {
    auto r = router->Receive(1000);
    if (!r.ok()) return 1;
    if (!r->frame) {
      ++idle_s;
      continue;
    }
    idle_s = 0;
    received += r->frame->bytes.size();
  }
  return received >= bytes ? 0 : 1;
}

// CPU seconds (user + system) used so far by this process (its threads:
// the raw receivers) and by its waited-for descendants (the raw senders; the
// coordinator and, as it waits for them, its agents).
double CpuSeconds(int who) {
  rusage u{};
  ::getrusage(who, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}
double CpuSelfAndChildren() { return CpuSeconds(RUSAGE_SELF) + CpuSeconds(RUSAGE_CHILDREN); }

// One case's throughput and the CPU it took (every process of it: on a
// loaded machine the CPU per byte moves much less than the wall does).
struct Measured {
  double mb_per_s = 0;
  double cpu_s = 0;
};

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
// and coordinator must: docs/design.md §7), with keys made for this run.
Measured RawZmqThroughput(int agents, uint64_t bytes_each, const fs::path& write_dir,
                          bool curve = false) {
  dfx::protocol::Context context;
  dfx::protocol::SocketOptions options;
  std::string sender_env;
  if (curve) {
    auto server = dfx::protocol::GenerateCurveKeyPair();
    auto client = dfx::protocol::GenerateCurveKeyPair();
    if (!server.ok() || !client.ok()) return {};
    options.curve_server = dfx::protocol::CurveServer{*server, {client->public_key}};
    sender_env = fmt::format("DFX_BENCH_CURVE={} {} {}", server->public_key, client->public_key,
                             client->secret_key);
  }
  // The gather's own transport: ipc:// (the local bulk path), or loopback TCP.
  std::string endpoint = "tcp://127.0.0.1:0";
  std::string ipc_dir;
  if (raw_over_ipc) {
    char tmpl[] = "/tmp/gather-bench-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return {};
    ipc_dir = tmpl;
    endpoint = "ipc://" + ipc_dir + "/raw";
  }
  struct RemoveDir {
    std::string path;
    ~RemoveDir() {
      std::error_code ec;
      if (!path.empty()) fs::remove_all(path, ec);
    }
  } remove_ipc_dir{ipc_dir};
  auto router = dfx::protocol::RouterChannel::Bind(context, endpoint, options);
  if (!router.ok()) return {};
  std::map<std::string, int> files;
  const double cpu_start = CpuSelfAndChildren();
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
  if (write_failed) return {};
  for (pid_t pid : senders) {
    int status = 0;
    if (pid > 0) waitpid(pid, &status, 0);
  }
  for (auto& [id, fd] : files) fs::remove(write_dir / (id + ".bin"));
  return Measured{received / secs / 1e6, CpuSelfAndChildren() - cpu_start};
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
  double cpu_s = 0;  // the coordinator's and its agents'
  double peak_rss_mib = 0;
  // From the last write into a gathered file (its mtime) to the
  // coordinator's exit: the verify, rename and ack of the last file, and
  // the recovery agents deleting their acknowledged spool files, which the
  // coordinator waits for (they exit on its Shutdown once they have).
  double tail_s = 0;
  bool ok = false;
};

// --warm-pages: before each case, write a file a little larger than the
// `bytes` the case writes into `dir` and delete it, so the page cache the
// case then fills is made of pages this guest touched a moment ago. On a
// VM whose balloon reports free pages to the host (virtio-balloon free
// page reporting, this machine), pages free for ~2 s are handed back and
// each first touch after that traps to the host: a buffered write of
// 1 GiB took 1.4-2.6 s of CPU from cold pages and 0.23-0.27 s from warm
// ones. Bare metal has no such cost; this shows the gather without it.
bool warm_pages = false;

void WarmPages(const fs::path& dir, uint64_t bytes) {
  const fs::path path = dir / "warm_pages.tmp";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  std::vector<char> block(1 << 20, 'w');
  for (uint64_t done = 0; done < bytes + bytes / 8; done += block.size()) {
    if (::write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())) break;
  }
  ::close(fd);
  ::unlink(path.c_str());  // dirty pages dropped unwritten: they return to the free lists
}

GatherResult RunGather(const fs::path& dir, int agents, uint64_t bytes_each,
                       bool force_curve = false) {
  GatherResult result;
  const fs::path work = dir / fmt::format("w_{}x{}", agents, bytes_each >> 20);
  fs::remove_all(work);
  const uint64_t session = 0x5eed000000000000ull | bytes_each;
  const fs::path spool = work / ".dfx_spool";
  for (int r = 0; r < agents; ++r) {
    // As a live agent leaves it: the artifact, and its checksum kept at write.
    const fs::path dispatch_dir = spool / dfx::Hex64(session) / fmt::format("rank{}/d0", r);
    const std::string rel = "args_dump/args.bin";
    FillSpoolFile(dispatch_dir / rel, bytes_each, static_cast<uint64_t>(r + 1));
    if (dfx::Status s = dfx::rank_agent::WriteSum(dispatch_dir, rel); !s.ok()) {
      std::fprintf(stderr, "gather_bench: %s\n", s.message().c_str());
      return result;
    }
  }
  ::sync();  // the generated spool's writeback must not overlap the timed gather
  if (warm_pages) WarmPages(dir, bytes_each * agents);
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
  const double cpu_start = CpuSeconds(RUSAGE_CHILDREN);
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
  const auto exited = std::chrono::system_clock::now();  // the clock of file times
  result.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::optional<std::chrono::system_clock::time_point> last_write;
  for (int r = 0; r < agents; ++r) {
    const fs::path gathered = work / fmt::format("dfx_outputs/rank{}/d0/args_dump/args.bin", r);
    std::error_code ec;
    auto size = fs::file_size(gathered, ec);
    result.ok &= !ec && size == bytes_each;
    struct stat st {};
    if (::stat(gathered.c_str(), &st) == 0) {
      const auto mtime = std::chrono::system_clock::time_point(
          std::chrono::duration_cast<std::chrono::system_clock::duration>(
              std::chrono::seconds(st.st_mtim.tv_sec) +
              std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
      if (!last_write || mtime > *last_write) last_write = mtime;
    }
  }
  if (last_write) result.tail_s = std::chrono::duration<double>(exited - *last_write).count();
  result.mb_per_s = bytes_each * agents / secs / 1e6;
  result.cpu_s = CpuSeconds(RUSAGE_CHILDREN) - cpu_start;
  result.peak_rss_mib = hwm_kb / 1024.0;
  fs::remove_all(work);
  return result;
}

// The median of `v` (the mean of the middle two for an even count); 0 if empty.
double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Min(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}

double Ratio(double a, double b) { return b > 0 ? a / b : 0; }

}  // namespace

int main(int argc, char** argv) {
  // The same heap as dfx-coordinator and dfx-rank-agent (1 MiB buffers stay
  // in the heap instead of fresh mmap pages per frame, on huge pages), so
  // the raw baselines do not pay page faults the gather avoids.
  dfx::TuneHeap();
  self_path = fs::canonical("/proc/self/exe").string();
  if (argc == 5 && std::string(argv[1]) == "--raw-sender") {
    return RawSender(argv[2], argv[3], std::stoull(argv[4]));
  }
  if (argc == 4 && std::string(argv[1]) == "--raw-receive") {
    return RawReceive(argv[2], std::stoull(argv[3]));
  }
  int agents = 4;
  int reps = 3;
  bool curve = true;
  std::vector<uint64_t> sizes_mib = {64, 256};
  fs::path dir = fs::temp_directory_path() / fmt::format("gather_bench_{}", ::getpid());
  const char* usage =
      "usage: gather_bench [--agents N] [--sizes MiB,...] [--reps R] [--dir DIR] "
      "[--bin-dir DIR] [--raw-transport ipc|tcp] [--no-curve] [--warm-pages]\n";
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--no-curve") {
      curve = false;
      continue;
    }
    if (flag == "--warm-pages") {
      warm_pages = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "gather_bench: %s needs a value\n%s", flag.c_str(), usage);
      return 2;
    }
    const std::string value = argv[++i];
    if (flag == "--agents") {
      agents = std::atoi(value.c_str());
    } else if (flag == "--reps") {
      reps = std::atoi(value.c_str());
    } else if (flag == "--sizes") {
      sizes_mib.clear();
      size_t start = 0;
      while (start < value.size()) {
        size_t comma = value.find(',', start);
        if (comma == std::string::npos) comma = value.size();
        sizes_mib.push_back(std::stoull(value.substr(start, comma - start)));
        start = comma + 1;
      }
    } else if (flag == "--dir") {
      dir = value;
    } else if (flag == "--bin-dir") {
      bin_dir = value;
    } else if (flag == "--raw-transport" && (value == "ipc" || value == "tcp")) {
      raw_over_ipc = value == "ipc";
    } else {
      std::fprintf(stderr, "gather_bench: unknown flag %s\n%s", flag.c_str(), usage);
      return 2;
    }
  }
  if (agents < 1 || agents > 256 || reps < 1 || reps > 100 || sizes_mib.empty()) {
    std::fprintf(stderr, "gather_bench: --agents 1..256, --reps 1..100, --sizes non-empty\n%s",
                 usage);
    return 2;
  }
  fs::create_directories(dir);
  std::printf(
      "# %d repetition(s) per size, cases interleaved; ratios are paired (within a "
      "repetition), then median [min]; raw baselines over %s\n",
      reps, raw_over_ipc ? "ipc:// (the local bulk path's transport)" : "loopback TCP");
  std::printf("%-7s %-9s %8s %8s %8s %12s %12s %12s %12s %7s %9s %8s %12s\n", "agents", "MiB/agent",
              "raw MB/s", "raw+disk", "gather", "vs raw", "vs raw+disk", "cpu vs raw",
              "cpu vs disk", "RSS MiB", "raw+curve", "g. curve", "ipc/curve");
  bool all_ok = true;
  auto cell = [](const std::vector<double>& v) {
    return v.empty() ? std::string("-") : fmt::format("{:.2f} [{:.2f}]", Median(v), Min(v));
  };
  for (uint64_t mib : sizes_mib) {
    const uint64_t bytes = mib << 20;
    std::vector<double> raw, raw_disk, raw_curve, gather, gather_curve, rss;
    std::vector<double> vs_raw, vs_disk, vs_curve, cpu_raw, cpu_disk;
    for (int rep = 0; rep < reps; ++rep) {
      Measured r, rd, rc;
      GatherResult g;
      GatherResult gc;
      // One repetition: every case once, in this order or (odd repetitions) the reverse.
      std::vector<std::function<void()>> cases = {
          [&] { r = RawZmqThroughput(agents, bytes, {}); },
          [&] { g = RunGather(dir, agents, bytes); },
          [&] {
            if (warm_pages) WarmPages(dir, bytes * agents);
            rd = RawZmqThroughput(agents, bytes, dir);
          },
      };
      if (curve) {
        cases.push_back([&] { gc = RunGather(dir, agents, bytes, /*force_curve=*/true); });
        cases.push_back([&] { rc = RawZmqThroughput(agents, bytes, {}, /*curve=*/true); });
      }
      if (rep % 2 == 1) std::reverse(cases.begin(), cases.end());
      for (auto& run : cases) run();
      const bool ok = g.ok && (!curve || gc.ok);
      all_ok &= ok;
      raw.push_back(r.mb_per_s);
      raw_disk.push_back(rd.mb_per_s);
      gather.push_back(g.mb_per_s);
      rss.push_back(g.peak_rss_mib);
      vs_raw.push_back(Ratio(g.mb_per_s, r.mb_per_s));
      vs_disk.push_back(Ratio(g.mb_per_s, rd.mb_per_s));
      // CPU: the baseline's seconds over the gather's (higher is better, like the others).
      cpu_raw.push_back(Ratio(r.cpu_s, g.cpu_s));
      cpu_disk.push_back(Ratio(rd.cpu_s, g.cpu_s));
      if (curve) {
        raw_curve.push_back(rc.mb_per_s);
        gather_curve.push_back(gc.mb_per_s);
        vs_curve.push_back(Ratio(g.mb_per_s, gc.mb_per_s));
      }
      std::printf(
          "rep %-3d %-9llu %8.0f %8.0f %8.0f %12.2f %12.2f %12.2f %12.2f %7.1f %9.0f %8.0f "
          "%12.2f%s\n",
          rep + 1, static_cast<unsigned long long>(mib), r.mb_per_s, rd.mb_per_s, g.mb_per_s,
          vs_raw.back(), vs_disk.back(), cpu_raw.back(), cpu_disk.back(), g.peak_rss_mib,
          rc.mb_per_s, gc.mb_per_s, Ratio(g.mb_per_s, gc.mb_per_s), ok ? "" : "  (GATHER FAILED)");
      std::printf(
          "#   CPU s: raw %.2f, raw+disk %.2f, gather %.2f%s; the gather's tail (its last "
          "write to its exit) %.3f s\n",
          r.cpu_s, rd.cpu_s, g.cpu_s,
          curve ? fmt::format(", raw+curve {:.2f}, gather curve {:.2f}", rc.cpu_s, gc.cpu_s).c_str()
                : "",
          g.tail_s);
      std::fflush(stdout);
    }
    std::printf("%-7d %-9llu %8.0f %8.0f %8.0f %12s %12s %12s %12s %7.1f %9.0f %8.0f %12s%s\n",
                agents, static_cast<unsigned long long>(mib), Median(raw), Median(raw_disk),
                Median(gather), cell(vs_raw).c_str(), cell(vs_disk).c_str(), cell(cpu_raw).c_str(),
                cell(cpu_disk).c_str(), *std::max_element(rss.begin(), rss.end()),
                Median(raw_curve), Median(gather_curve), cell(vs_curve).c_str(),
                all_ok ? "" : "  (GATHER FAILED)");
    std::fflush(stdout);
  }
  fs::remove_all(dir);
  return all_ok ? 0 : 1;
}
