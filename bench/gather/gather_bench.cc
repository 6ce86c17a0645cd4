// Gather benchmark (whole process, real binaries):
//
//  * gather throughput: N spools of S MiB each are streamed to
//    `dfx-coordinator gather` by N recovery agents (the same chunked,
//    credit-controlled, XXH64-checked path a live run uses, written to disk
//    through AtomicFileWriter);
//  * the baseline, measured in the same run: N DEALERs blasting the same
//    bytes in 1 MiB frames to one ROUTER over the same loopback TCP
//    transport, receiver discarding;
//  * the coordinator's peak RSS (wait4 ru_maxrss) for each size, to show it
//    does not grow with artifact size.
//
// usage: gather_bench [--agents N] [--sizes MiB,MiB,...] [--dir DIR]
#include <fmt/format.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
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

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// MB/s of N senders pushing `bytes_each` in 1 MiB frames to one ROUTER.
double RawZmqThroughput(int agents, uint64_t bytes_each) {
  dfx::protocol::Context context;
  auto router = dfx::protocol::RouterChannel::Bind(context, "tcp://127.0.0.1:0");
  if (!router.ok()) return 0;
  const std::string endpoint = router->endpoint();
  std::atomic<int> ready{0};
  std::vector<std::thread> senders;
  const std::string frame(1 << 20, 'z');
  for (int a = 0; a < agents; ++a) {
    senders.emplace_back([&, a] {
      auto dealer =
          dfx::protocol::DealerChannel::Connect(context, endpoint, fmt::format("raw-{}", a));
      if (!dealer.ok()) return;
      ++ready;
      for (uint64_t sent = 0; sent < bytes_each; sent += frame.size()) {
        for (;;) {
          auto r = dealer->SendRaw(frame);
          if (!r.ok() || *r == dfx::protocol::SendResult::kSent) break;
          std::this_thread::yield();
        }
      }
      // Keep the socket until the receiver is done (linger flushes on close anyway).
    });
  }
  uint64_t received = 0;
  const uint64_t total = bytes_each * agents;
  Clock::time_point start;
  bool started = false;
  while (received < total) {
    auto r = router->Receive(1000);
    if (!r.ok()) break;
    if (!r->frame) continue;
    if (!started) {
      start = Clock::now();
      started = true;
    }
    received += r->frame->bytes.size();
  }
  const double secs = Seconds(start, Clock::now());
  for (auto& t : senders) t.join();
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

GatherResult RunGather(const fs::path& dir, int agents, uint64_t bytes_each) {
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
  const std::string coordinator = std::string(DFX_BINARY_DIR) + "/bin/dfx-coordinator";
  std::vector<std::string> argv = {coordinator,   "gather",      "--work-dir",
                                   work.string(), "--log-level", "warn"};
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = -1;
  const auto start = Clock::now();
  if (posix_spawn(&pid, coordinator.c_str(), nullptr, nullptr, cargv.data(), environ) != 0) {
    return result;
  }
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
    } else {
      std::fprintf(stderr, "usage: gather_bench [--agents N] [--sizes MiB,...] [--dir DIR]\n");
      return 2;
    }
  }
  fs::create_directories(dir);
  std::printf("%-8s %-10s %12s %14s %8s %18s\n", "agents", "MiB/agent", "raw zmq MB/s",
              "gather MB/s", "ratio", "coord peak RSS MiB");
  bool all_ok = true;
  for (uint64_t mib : sizes_mib) {
    const uint64_t bytes = mib << 20;
    const double raw = RawZmqThroughput(agents, bytes);
    const GatherResult g = RunGather(dir, agents, bytes);
    all_ok &= g.ok;
    std::printf("%-8d %-10llu %12.0f %14.0f %7.0f%% %18.1f%s\n", agents,
                static_cast<unsigned long long>(mib), raw, g.mb_per_s,
                raw > 0 ? 100.0 * g.mb_per_s / raw : 0.0, g.peak_rss_mib,
                g.ok ? "" : "  (GATHER FAILED)");
    std::fflush(stdout);
  }
  fs::remove_all(dir);
  return all_ok ? 0 : 1;
}
