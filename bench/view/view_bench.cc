// view_bench: input generators and a measuring runner for the dfx-view
// benchmarks (run_view_bench.sh).
//
//   view_bench gen-records OUT N [--deps DEPS]   level-3 a2a3 records with N tasks
//                                                (72 cores, scheduler phases), and
//                                                optionally a matching deps.json
//   view_bench gen-deps OUT N                    deps.json DAG of N tasks
//   view_bench tokenize FILE                     baseline: tokenise FILE with the
//                                                streaming reader, convert nothing
//   view_bench measure -- CMD ARGS...            run CMD, print wall s and peak RSS
//                                                (getrusage of the child)
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/json_stream.h"

namespace {

constexpr int kCores = 72;
constexpr int kSchedThreads = 3;

int GenRecords(const char* out_path, long n, const char* deps_path) {
  std::FILE* f = std::fopen(out_path, "w");
  if (f == nullptr) return 1;
  std::string b;
  b +=
      R"({"chip_swimlane_level": 3, "metadata": {"clock_freq_hz": 50000000, "num_cores": 72, "core_types": [)";
  for (int c = 0; c < kCores; ++c)
    b += fmt::format("{}\"{}\"", c ? ", " : "", c < 24 ? "aic" : "aiv");
  b += R"(], "core_to_thread": [)";
  for (int c = 0; c < kCores; ++c) b += fmt::format("{}{}", c ? ", " : "", c % kSchedThreads);
  b += "]},\n\"aicore_tasks\": [\n";
  // Task i runs on core i % 72; per-core sequence = reg id; each task 40..80 cycles.
  std::mt19937 rng(42);
  std::vector<uint64_t> core_time(kCores, 1000000);
  std::vector<uint32_t> reg(kCores, 0);
  struct T {
    uint64_t dispatch, start, end, finish;
    int core;
    uint32_t reg;
  };
  std::vector<T> tasks(static_cast<size_t>(n));
  for (long i = 0; i < n; ++i) {
    int core = static_cast<int>(i % kCores);
    uint64_t dispatch = core_time[core] + 5;
    uint64_t start = dispatch + 8 + rng() % 8;
    uint64_t end = start + 40 + rng() % 40;
    tasks[static_cast<size_t>(i)] = {dispatch, start, end, end + 6, core, ++reg[core]};
    core_time[core] = end + 2;
  }
  bool first = true;
  for (int c = 0; c < kCores; ++c) {
    for (long i = c; i < n; i += kCores) {
      const T& t = tasks[static_cast<size_t>(i)];
      b += fmt::format("{}[{}, {}, {}, {}, {}, {}]", first ? "" : ",\n", c, i, t.reg, t.start,
                       t.end, 4);
      first = false;
      if (b.size() > (1 << 20)) {
        std::fwrite(b.data(), 1, b.size(), f);
        b.clear();
      }
    }
  }
  b += "],\n\"aicpu_tasks\": [\n";
  first = true;
  for (int c = 0; c < kCores; ++c) {
    for (long i = c; i < n; i += kCores) {
      const T& t = tasks[static_cast<size_t>(i)];
      b += fmt::format("{}[{}, {}, {}, {}]", first ? "" : ",\n", c, t.reg, t.dispatch, t.finish);
      first = false;
      if (b.size() > (1 << 20)) {
        std::fwrite(b.data(), 1, b.size(), f);
        b.clear();
      }
    }
  }
  // One dispatch + one complete record per 8 tasks per scheduler thread.
  b += "],\n\"aicpu_scheduler_phases\": [\n";
  for (int t = 0; t < kSchedThreads; ++t) {
    b += t ? ",\n[" : "[";
    uint64_t ts = 999000;
    long records = n / 8 / kSchedThreads;
    for (long k = 0; k < records; ++k) {
      ts += 200;
      b += fmt::format(
          "{}{{\"kind\": \"dispatch\", \"start_cycles\": {}, \"end_cycles\": {}, \"loop_iter\": "
          "{}, "
          "\"tasks_processed\": 8, \"pop_hit\": 8, \"pop_miss\": 1, \"shared_at_start\": [1, 2, "
          "0], "
          "\"shared_at_end\": [0, 1, 0]}},\n{{\"kind\": \"complete\", \"start_cycles\": {}, "
          "\"end_cycles\": {}, \"loop_iter\": {}, \"tasks_processed\": 8, \"shared_at_start\": [0, "
          "0, 0], "
          "\"shared_at_end\": [0, 0, 0]}}",
          k ? ",\n" : "", ts, ts + 20, k * 2, ts + 40, ts + 60, k * 2 + 1);
      if (b.size() > (1 << 20)) {
        std::fwrite(b.data(), 1, b.size(), f);
        b.clear();
      }
    }
    b += "]";
  }
  b += "]}\n";
  std::fwrite(b.data(), 1, b.size(), f);
  std::fclose(f);
  if (deps_path != nullptr) {
    // Each task depends on the task 72 before it (same core) and on task i-1.
    std::FILE* d = std::fopen(deps_path, "w");
    std::string s = "{\"tasks\":[";
    for (long i = 0; i < n; ++i) {
      s += fmt::format(
          "{}{{\"task_id\":\"{}\",\"scope\":\"auto\",\"early_dispatch\":false,\"kernel_ids\":[{},{}"
          ",{}],\"block_num\":1,\"args\":[]}}",
          i ? "," : "", i, (i % kCores) < 24 ? i % 7 : -1, (i % kCores) < 24 ? -1 : i % 7, -1);
      if (s.size() > (1 << 20)) {
        std::fwrite(s.data(), 1, s.size(), d);
        s.clear();
      }
    }
    s += "],\"tensors\":[],\"edges\":[";
    bool firste = true;
    for (long i = 1; i < n; ++i) {
      for (long p : {i - 1, i - kCores}) {
        if (p < 0) continue;
        s += fmt::format("{}{{\"pred\":\"{}\",\"succ\":\"{}\",\"arg\":0,\"source\":\"tensormap\"}}",
                         firste ? "" : ",", p, i);
        firste = false;
      }
      if (s.size() > (1 << 20)) {
        std::fwrite(s.data(), 1, s.size(), d);
        s.clear();
      }
    }
    s += "]}\n";
    std::fwrite(s.data(), 1, s.size(), d);
    std::fclose(d);
  }
  return 0;
}

int GenDeps(const char* out_path, long n) {
  // Layered DAG: 100 tasks per layer, each with 2 producers in the previous layer.
  std::mt19937 rng(7);
  std::string s = "{\"tasks\":[";
  for (long i = 0; i < n; ++i) {
    s +=
        fmt::format("{}{{\"task_id\":\"{}\",\"kernel_ids\":[{},{},-1],\"block_num\":{}}}",
                    i ? "," : "", i, i % 3 == 0 ? 1 : -1, i % 3 == 0 ? -1 : 2, i % 50 == 0 ? 4 : 1);
  }
  s += "],\"tensors\":[],\"edges\":[";
  bool first = true;
  for (long i = 100; i < n; ++i) {
    long layer = i / 100;
    for (int k = 0; k < 2; ++k) {
      long p = (layer - 1) * 100 + static_cast<long>(rng() % 100);
      s += fmt::format("{}{{\"pred\":\"{}\",\"succ\":\"{}\",\"arg\":{},\"source\":\"tensormap\"}}",
                       first ? "" : ",", p, i, k);
      first = false;
    }
  }
  s += "]}\n";
  std::FILE* f = std::fopen(out_path, "w");
  if (f == nullptr) return 1;
  std::fwrite(s.data(), 1, s.size(), f);
  std::fclose(f);
  return 0;
}

int Tokenize(const char* path) {
  dfx::JsonPullReader r;
  if (!r.Open(path).ok() || !r.Skip()) {
    std::fprintf(stderr, "tokenize failed: %s\n", r.status().message().c_str());
    return 1;
  }
  std::printf("tokenised %llu bytes\n", static_cast<unsigned long long>(r.bytes_read()));
  return 0;
}

int Measure(char** argv) {
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    execvp(argv[0], argv);
    _exit(127);
  }
  int status = 0;
  struct rusage ru;
  wait4(pid, &status, 0, &ru);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
               static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  std::printf("wall_s=%.3f cpu_s=%.3f peak_rss_mb=%.1f exit=%d\n", secs, cpu, ru.ru_maxrss / 1024.0,
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 4 && std::strcmp(argv[1], "gen-records") == 0) {
    const char* deps = argc >= 6 && std::strcmp(argv[4], "--deps") == 0 ? argv[5] : nullptr;
    return GenRecords(argv[2], std::atol(argv[3]), deps);
  }
  if (argc >= 4 && std::strcmp(argv[1], "gen-deps") == 0)
    return GenDeps(argv[2], std::atol(argv[3]));
  if (argc >= 3 && std::strcmp(argv[1], "tokenize") == 0) return Tokenize(argv[2]);
  if (argc >= 4 && std::strcmp(argv[1], "measure") == 0 && std::strcmp(argv[2], "--") == 0)
    return Measure(argv + 3);
  std::fprintf(stderr,
               "usage: view_bench gen-records OUT N [--deps D] | gen-deps OUT N | tokenize FILE | "
               "measure -- CMD...\n");
  return 2;
}
