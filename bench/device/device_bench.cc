// device_bench: how fast the emulator pushes tasks through its rings,
// scheduler and cores, compared with the floor: the same lowered DAG walked by
// a bare topological loop (Kahn, one ready queue) calling a no-op kernel,
// measured in the same process. Reported as tasks/s and emulator/baseline
// throughput ratio (1.0 = as fast as the bare walk).
//
//   device_bench [--tasks 100000] [--width 32] [--repeat 3] [--dfx]
//                [--host-threads N] [--mode both|virtual|real]
// (--mode runs one clock mode alone, e.g. under `perf stat`.)
//
// It also times loading the same program from its JSON text the way an agent
// does (rank_agent::ParseDispatchProgram, as RunDispatch does: the text
// reader for the orchestration, the JSON reader for the rest), against
// nlohmann's parse of the same text into a document (and freeing it), the
// first step of the loader before it read the orchestration from the text,
// measured in the same run. Best of --repeat each, interleaved.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/json.h"
#include "device/emulator.h"
#include "device/generators.h"
#include "device/lowering.h"
#include "device/program_loader.h"
#include "rank_agent/run_dispatch.h"

namespace {

using namespace dfx;
using namespace dfx::device;

// The no-op kernel, called through a volatile pointer so it is not inlined away.
void NoopKernel(int task, uint64_t* sink) { *sink += static_cast<uint64_t>(task); }
void (*volatile g_kernel)(int, uint64_t*) = NoopKernel;

double Seconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

// Walks the DAG in dependency order; returns ns.
uint64_t BaselineWalk(const LoweredProgram& lp) {
  uint64_t t0 = MonotonicClock::Instance().NowNs();
  size_t n = lp.tasks.size();
  std::vector<int> remaining(n);
  std::vector<std::vector<int>> succ(n);
  for (size_t i = 0; i < n; ++i) {
    remaining[i] = static_cast<int>(lp.tasks[i].preds.size());
    for (int p : lp.tasks[i].preds) succ[p].push_back(static_cast<int>(i));
  }
  std::deque<int> ready;
  for (size_t i = 0; i < n; ++i)
    if (remaining[i] == 0) ready.push_back(static_cast<int>(i));
  uint64_t sink = 0, done = 0;
  while (!ready.empty()) {
    int t = ready.front();
    ready.pop_front();
    g_kernel(t, &sink);
    ++done;
    for (int s : succ[t])
      if (--remaining[s] == 0) ready.push_back(s);
  }
  uint64_t ns = MonotonicClock::Instance().NowNs() - t0;
  if (done != n || sink == 42) std::fprintf(stderr, "baseline walked %lu of %zu\n", done, n);
  return ns;
}

// Loads `text` as an agent loads a dispatched program; returns ns (0: it failed).
uint64_t TimeLoad(const std::string& text, int expected_submits) {
  uint64_t t0 = MonotonicClock::Instance().NowNs();
  Result<std::shared_ptr<const Program>> p =
      rank_agent::ParseDispatchProgram(text, "bench.json", "bench.json");
  uint64_t ns = MonotonicClock::Instance().NowNs() - t0;
  if (!p.ok() || (*p)->submit_count != expected_submits) {
    std::fprintf(stderr, "program load failed: %s\n",
                 p.ok() ? "wrong submit count" : p.status().ToString().c_str());
    return 0;
  }
  return ns;
}

// The text into a JSON document, and the document freed.
uint64_t TimeDomParse(const std::string& text) {
  uint64_t t0 = MonotonicClock::Instance().NowNs();
  { Json j = Json::parse(text); }
  return MonotonicClock::Instance().NowNs() - t0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Emulator throughput benchmark"};
  LayeredDagOptions o;
  o.tasks = 100000;
  o.width = 32;
  int repeat = 3;
  bool dfx_on = false;
  int host_threads = 0;
  std::string mode = "both";
  app.add_option("--tasks", o.tasks, "tasks in the generated DAG")
      ->check(CLI::Range(1ull, 10000000ull));
  app.add_option("--width", o.width, "DAG width")->check(CLI::Range(1, 100000));
  app.add_option("--repeat", repeat, "runs per mode (best is reported)")->check(CLI::Range(1, 100));
  app.add_flag("--dfx", dfx_on, "also run with swimlane level 4 + dep_gen + PMU + scope stats");
  app.add_option("--host-threads", host_threads,
                 "real threads: host threads running the cores' blocks (0: one per CPU)")
      ->check(CLI::Range(0, 64));
  app.add_option("--mode", mode, "clock modes to run")
      ->check(CLI::IsMember({"both", "virtual", "real"}));
  CLI11_PARSE(app, argc, argv);

  Program p = GenerateLayeredDag(o);
  const ChipModel& model = GetChipModel(config::BackendType::kA2A3);
  uint64_t t0 = MonotonicClock::Instance().NowNs();
  auto lp = Lower(p, model.ring_defaults);
  uint64_t lower_ns = MonotonicClock::Instance().NowNs() - t0;
  if (!lp.ok()) {
    std::fprintf(stderr, "%s\n", lp.status().ToString().c_str());
    return 1;
  }
  double n = static_cast<double>(lp->tasks.size());
  uint64_t base_ns = UINT64_MAX;
  for (int r = 0; r < repeat; ++r) base_ns = std::min(base_ns, BaselineWalk(*lp));
  double base_tps = n / Seconds(base_ns);

  std::printf("device_bench: layered DAG, %.0f tasks, width %d, %lu edges (a2a3, 2 AIC + 4 AIV)\n",
              n, o.width, static_cast<unsigned long>(lp->edge_count));
  std::printf("  lowering (ids, buffers, dependency inference): %.3f s = %.0f tasks/s\n",
              Seconds(lower_ns), n / Seconds(lower_ns));
  {
    const std::string text = ProgramToJson(p).dump();  // as dfx-gen-program --indent -1 writes it
    uint64_t load_ns = UINT64_MAX, dom_ns = UINT64_MAX;
    for (int r = 0; r < repeat; ++r) {
      dom_ns = std::min(dom_ns, TimeDomParse(text));
      const uint64_t ns = TimeLoad(text, p.submit_count);
      if (ns == 0) return 1;
      load_ns = std::min(load_ns, ns);
    }
    std::printf(
        "  program load (%.1f MB of JSON -> Program, as an agent): %.3f s; the same text "
        "into a JSON document alone %.3f s; ratio to the document %.2f\n",
        text.size() / 1e6, Seconds(load_ns), Seconds(dom_ns),
        static_cast<double>(load_ns) / static_cast<double>(dom_ns));
  }
  std::printf("  %-44s %10.3f s %14.0f tasks/s\n", "baseline: bare topological walk, no-op kernel",
              Seconds(base_ns), base_tps);

  struct Mode {
    const char* name;
    bool virtual_clock;
    bool dfx;
  };
  std::vector<Mode> modes = {{"emulator, virtual clock (1 thread)", true, false},
                             {"emulator, real threads", false, false}};
  if (dfx_on) {
    modes.push_back({"emulator, virtual clock, all DFX", true, true});
    modes.push_back({"emulator, real threads, all DFX", false, true});
  }
  std::filesystem::path out = std::filesystem::temp_directory_path() / "dfx_device_bench";
  for (const Mode& m : modes) {
    if ((mode == "virtual" && !m.virtual_clock) || (mode == "real" && m.virtual_clock)) continue;
    ChipOptions opt;
    opt.virtual_clock = m.virtual_clock;
    opt.host_threads = host_threads;
    EmulatedChip chip(opt);
    config::RunConfig c;
    if (m.dfx) {
      c.enable_chip_swimlane = 4;
      c.enable_dep_gen = true;
      c.enable_pmu = 2;
      c.enable_scope_stats = true;
    }
    uint64_t best = UINT64_MAX;
    for (int r = 0; r < repeat; ++r) {
      std::filesystem::remove_all(out);
      DispatchResult res = chip.RunProgram(p, c, out);
      if (!res.status.ok() || res.tasks_executed != lp->tasks.size()) {
        std::fprintf(stderr, "%s failed: %s\n", m.name, res.status.ToString().c_str());
        return 1;
      }
      best = std::min(best, res.wall_ns);
    }
    double tps = n / Seconds(best);
    std::printf("  %-44s %10.3f s %14.0f tasks/s   ratio to baseline %.4f\n", m.name, Seconds(best),
                tps, tps / base_tps);
  }
  std::filesystem::remove_all(out);
  return 0;
}
