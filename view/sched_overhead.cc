#include "view/sched_overhead.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <ostream>
#include <set>
#include <unordered_map>

#include "collectors/artifact_layout.h"
#include "collectors/dep_gen/deps_reader.h"
#include "collectors/swimlane/swimlane_keys.h"
#include "collectors/swimlane/swimlane_reader.h"
#include "view/critical_path.h"
#include "view/overhead.h"
#include "view/task_label.h"

namespace dfx::view {

using collectors::PhaseKind;
using collectors::PhaseName;
using collectors::ReadSwimlaneRecords;
using collectors::ReadTaskGraph;
using collectors::SchedPhase;
using collectors::SwimlaneRecords;
using collectors::TaskGraph;
using collectors::TaskRow;
double ReferencePercentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // int(n*p/100) truncates; p is whole, so n*p is exact and so is the floor.
  const double at = std::floor(static_cast<double>(v.size()) * p / 100.0);
  const size_t index = at < 0 ? 0 : static_cast<size_t>(at);
  return v[std::min(index, v.size() - 1)];
}

namespace {

void Distribution(std::ostream& out, const std::vector<double>& v) {
  double sum = 0, mx = 0;
  for (double x : v) {
    sum += x;
    mx = std::max(mx, x);
  }
  out << fmt::format("  tasks: {}\n", v.size());
  for (double p : {10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0}) {
    out << fmt::format("  P{:<3} {:>12.3f} us\n", static_cast<int>(p), ReferencePercentile(v, p));
  }
  out << fmt::format("  max  {:>12.3f} us\n  mean {:>12.3f} us\n  total {:>11.3f} us\n", mx,
                     v.empty() ? 0.0 : sum / static_cast<double>(v.size()), sum);
}

struct Logical {
  double start = std::numeric_limits<double>::infinity(), end = 0,
         dispatch = std::numeric_limits<double>::infinity(), finish = 0;
  int final_core = -1;
};

}  // namespace

const char* OverheadVerdict(double pct) {
  if (pct >= 25.0)
    return "SCHEDULER-BOUND: engines sit idle with ready work for a large share of the run";
  if (pct >= 8.0) return "PARTIALLY SCHEDULER-LIMITED: noticeable idle-with-ready-work time";
  return "COMPUTE/DEPENDENCY-BOUND: the scheduler is rarely the limiter";
}

namespace {

const char* const kEngines[2] = {"AIC", "AIV"};

// The records (level >= 2) and the task graph the report reads, with the
// §5 errors when either is missing or unreadable.
Status LoadInputs(const SchedOverheadOptions& o, Result<SwimlaneRecords>* records,
                  Result<TaskGraph>* graph, std::filesystem::path* deps_path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(o.records, ec)) {
    return NotFound("Perf JSON not found: " + o.records.string());
  }
  *records = ReadSwimlaneRecords(o.records);
  if (!records->ok()) {
    return InvalidArgument("failed to read perf JSON " + o.records.string() + ": " +
                           records->status().message());
  }
  const SwimlaneRecords& d = **records;
  if (d.tasks.empty()) return InvalidArgument("No tasks found in perf data");
  if (d.level < 2) {
    return InvalidArgument(
        "Perf JSON is incompatible with scheduler overhead deep-dive analysis.\n"
        "  Missing per-task fields: dispatch_time_us, finish_time_us (" +
        std::string(collectors::swimlane_keys::kLevel) + " " + std::to_string(d.level) +
        " has AICore timing only).\n"
        "  Re-capture with --enable-chip-swimlane 3 (or bare --enable-chip-swimlane).");
  }
  *deps_path = o.deps.empty() ? o.records.parent_path() / collectors::kDepsFile : o.deps;
  if (!std::filesystem::is_regular_file(*deps_path, ec)) {
    return FailedPrecondition(
        "scheduler-overhead analysis needs the task DAG (deps.json). Capture it in a SEPARATE run "
        "with --enable-dep-gen (dep_gen perturbs timing; deps.json is topology-invariant) and pass "
        "--deps-json <path>. Looked for: " +
        deps_path->string());
  }
  *graph = ReadTaskGraph(*deps_path);
  if (!graph->ok()) {
    return InvalidArgument("failed to read deps.json " + deps_path->string() + ": " +
                           graph->status().message());
  }
  return Status::Ok();
}

// Part 1: the overhead verdict.
void OverheadPart(const OverheadResult& oh, std::ostream& out) {
  out << "== Part 1: overhead verdict ==\n";
  out << fmt::format("  makespan: {:.3f} us (window {:.3f} .. {:.3f})\n", oh.Makespan(),
                     oh.window_start, oh.window_end);
  for (int e = 0; e < 2; ++e) {
    if (!oh.engine_present[e]) continue;
    out << fmt::format("  {} overhead: {:6.1f}%  ({} cores, {:.3f} us idle-with-ready-work)\n",
                       kEngines[e], oh.Pct(oh.overhead_us[e]), oh.cores[e], oh.overhead_us[e]);
  }
  double has_pct = oh.Pct(oh.has_overhead_us);
  out << fmt::format("  all_overhead: {:6.1f}%\n  has_overhead: {:6.1f}%\n",
                     oh.Pct(oh.all_overhead_us), has_pct);
  out << "  Verdict: " << OverheadVerdict(has_pct) << "\n\n";
}

// Part 2: the AICore switch (pre-dispatched pickup gaps); returns every
// row's head overhead (part 3).
std::vector<double> SwitchPart(const SwimlaneRecords& d, const OverheadResult& oh,
                               std::ostream& out) {
  out << "== Part 2: AICore switch (pre-dispatched pickup gaps) ==\n";
  std::map<int, std::vector<const TaskRow*>> by_core;
  for (const auto& r : d.tasks) by_core[r.core_id].push_back(&r);
  struct Interval {
    double a, b;
  };
  std::vector<Interval> oh_iv[2];
  for (size_t i = 0; i + 1 < oh.timeline.size(); ++i) {
    for (int e = 0; e < 2; ++e) {
      if (oh.timeline[i].overhead[e])
        oh_iv[e].push_back({oh.timeline[i].ts, oh.timeline[i + 1].ts});
    }
  }
  auto overlap = [&](int e, double a, double b) {
    double s = 0;
    auto it = std::lower_bound(oh_iv[e].begin(), oh_iv[e].end(), a,
                               [](const Interval& iv, double v) { return iv.b < v; });
    for (; it != oh_iv[e].end() && it->a < b; ++it)
      s += std::max(0.0, std::min(b, it->b) - std::max(a, it->a));
    return s;
  };
  std::map<int, double> switch_per_core;
  std::map<int, int> switch_events;
  double during[2] = {0, 0}, indep[2] = {0, 0};
  std::vector<double> heads;
  for (auto& [core, rows] : by_core) {
    std::sort(rows.begin(), rows.end(),
              [&](const TaskRow* a, const TaskRow* b) { return d.Start(*a) < d.Start(*b); });
    int e = d.IsAic(*rows[0]) ? 0 : 1;
    switch_per_core[core] = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      double start = d.StartUs(*rows[i]), disp = d.DispatchUs(*rows[i]);
      double head = start - disp;
      if (i > 0) {
        double prev_end = d.EndUs(*rows[i - 1]);
        head = std::min(head, start - prev_end);
        if (disp < prev_end) {
          double gap = std::max(0.0, start - prev_end);
          switch_per_core[core] += gap;
          ++switch_events[core];
          double ov = overlap(e, prev_end, start);
          during[e] += ov;
          indep[e] += gap - ov;
        }
      }
      heads.push_back(std::max(0.0, head));
    }
  }
  out << fmt::format("  {:<6} {:>6} {:>12} {:>12} {:>12} {:>8} {:>10}\n", "engine", "cores",
                     "min/core", "mean/core", "max/core", "events", "us/event");
  double sum_minima = 0, min_any = std::numeric_limits<double>::infinity();
  for (int e = 0; e < 2; ++e) {
    std::vector<double> per;
    int events = 0;
    for (const auto& [core, total] : switch_per_core) {
      if (d.IsAic(*by_core[core][0]) != (e == 0)) continue;
      per.push_back(total);
      events += switch_events[core];
    }
    if (per.empty()) continue;
    double mn = *std::min_element(per.begin(), per.end()),
           mx = *std::max_element(per.begin(), per.end());
    double sum = 0;
    for (double v : per) sum += v;
    out << fmt::format("  {:<6} {:>6} {:>12.3f} {:>12.3f} {:>12.3f} {:>8} {:>10.3f}\n", kEngines[e],
                       per.size(), mn, sum / static_cast<double>(per.size()), mx, events,
                       events ? sum / events : 0.0);
    out << fmt::format("         switch time during overhead: {:.3f} us, independent: {:.3f} us\n",
                       during[e], indep[e]);
    sum_minima += mn;
    min_any = std::min(min_any, mn);
  }
  if (std::isfinite(min_any)) {
    out << fmt::format(
        "  makespan bound from switches: [{:.3f}, {:.3f}] us (per-core values; never summed across "
        "cores)\n",
        min_any, sum_minima);
  }
  return heads;
}

// Per scheduler thread: the logical tasks it retires and their fan-out /
// fan-in in the task graph.
struct ThreadLoad {
  std::vector<int> tasks;
  std::vector<long> fanout, fanin, max_out, max_in;
};

ThreadLoad LoadPerThread(const SwimlaneRecords& d, const TaskGraph& deps) {
  std::unordered_map<uint64_t, Logical> logical;
  for (const auto& r : d.tasks) {
    auto& l = logical[d.TaskId(r)];
    l.start = std::min(l.start, d.StartUs(r));
    l.end = std::max(l.end, d.EndUs(r));
    l.dispatch = std::min(l.dispatch, d.DispatchUs(r));
    if (d.FinishUs(r) >= l.finish) {
      l.finish = d.FinishUs(r);
      l.final_core = r.core_id;
    }
  }
  const size_t nt = d.sched_phases.size();
  ThreadLoad load{std::vector<int>(nt, 0), std::vector<long>(nt, 0), std::vector<long>(nt, 0),
                  std::vector<long>(nt, 0), std::vector<long>(nt, 0)};
  std::unordered_map<uint64_t, int> retiring;
  for (const auto& [id, l] : logical) {
    int th = d.SchedThreadOfCore(l.final_core);
    retiring[id] = th;
    if (th >= 0 && static_cast<size_t>(th) < nt) ++load.tasks[static_cast<size_t>(th)];
  }
  for (const auto& [p, s] : deps.Edges()) {
    auto rp = retiring.find(p), rs = retiring.find(s);
    if (rp != retiring.end() && rp->second >= 0 && static_cast<size_t>(rp->second) < nt)
      ++load.fanout[static_cast<size_t>(rp->second)];
    if (rs != retiring.end() && rs->second >= 0 && static_cast<size_t>(rs->second) < nt)
      ++load.fanin[static_cast<size_t>(rs->second)];
  }
  for (const auto& [id, th] : retiring) {
    if (th < 0 || static_cast<size_t>(th) >= nt) continue;
    size_t t = static_cast<size_t>(th);
    load.max_out[t] = std::max<long>(load.max_out[t], static_cast<long>(deps.Succs(id).size()));
    load.max_in[t] = std::max<long>(load.max_in[t], static_cast<long>(deps.Preds(id).size()));
  }
  return load;
}

// Part 5: the scheduler loop budget (needs scheduler phases: level >= 3).
Status LoopBudgetPart(const SwimlaneRecords& d, const TaskGraph& deps,
                      const std::vector<double>& tails, std::ostream& out) {
  out << "\n== Part 5: scheduler loop budget ==\n";
  if (!d.has_sched_phases) {
    out << "  not available: " << collectors::swimlane_keys::kLevel.view() << " " << d.level
        << " records have no " << collectors::swimlane_keys::kSchedPhases.view()
        << " (needs level >= 3)\n";
    out.flush();
    return FailedPrecondition(
        "perf JSON has no " + std::string(collectors::swimlane_keys::kSchedPhases) +
        " — rerun the case with --enable-chip-swimlane so phase data is captured.");
  }
  const ThreadLoad load = LoadPerThread(d, deps);
  double total_loop_us = 0;
  long total_loops = 0;
  std::map<std::string, double> phase_total;
  for (size_t t = 0; t < d.sched_phases.size(); ++t) {
    std::vector<const SchedPhase*> work;
    for (const auto& p : d.sched_phases[t]) {
      if (p.kind == PhaseKind::kComplete || p.kind == PhaseKind::kAsyncPoll ||
          p.kind == PhaseKind::kDispatch)
        work.push_back(&p);
    }
    std::sort(work.begin(), work.end(),
              [](const SchedPhase* a, const SchedPhase* b) { return a->start < b->start; });
    std::map<std::string, double> us;
    double idle = 0;
    uint32_t loops = 0;
    uint64_t fin = 0, hit = 0, miss = 0;
    for (size_t i = 0; i < work.size(); ++i) {
      const SchedPhase& p = *work[i];
      us[PhaseName(p.kind)] += d.Us(p.end) - d.Us(p.start);
      phase_total[PhaseName(p.kind)] += d.Us(p.end) - d.Us(p.start);
      if (i > 0) idle += std::max(0.0, d.Us(p.start) - d.Us(work[i - 1]->end));
      loops = std::max(loops, p.loop_iter);
      if (p.kind == PhaseKind::kComplete) fin += p.tasks_processed;
      if (p.kind == PhaseKind::kDispatch) {
        hit += p.pop_hit;
        miss += p.pop_miss;
      }
    }
    double busy = 0;
    for (const auto& [k, v] : us) busy += v;
    double span = busy + idle;
    total_loop_us += span;
    total_loops += loops;
    out << fmt::format(
        "  Sched_{}: complete {:.3f} us, dispatch {:.3f} us, async_poll {:.3f} us, idle {:.3f} "
        "us\n",
        t, us[PhaseName(PhaseKind::kComplete)], us[PhaseName(PhaseKind::kDispatch)],
        us[PhaseName(PhaseKind::kAsyncPoll)], idle);
    out << fmt::format(
        "           loops {}, logical tasks {}, FIN {}, {:.1f} ns/loop, pop hit {} miss {} "
        "hit-rate {:.1f}%\n",
        loops, load.tasks[t], fin, loops ? span * 1000.0 / loops : 0.0, hit, miss,
        hit + miss ? 100.0 * static_cast<double>(hit) / static_cast<double>(hit + miss) : 0.0);
    out << fmt::format("           fanout edges {} (max {}), fanin edges {} (max {})\n",
                       load.fanout[t], load.max_out[t], load.fanin[t], load.max_in[t]);
  }
  double tail_mean = 0;
  for (double x : tails) tail_mean += x;
  tail_mean /= static_cast<double>(tails.size());
  double avg_loop = total_loops ? total_loop_us / static_cast<double>(total_loops) : 0.0;
  if (avg_loop > 0) {
    out << fmt::format("  Avg Tail OH ≈ {:.2f} × avg loop iteration ({:.3f} us / {:.3f} us)\n",
                       tail_mean / avg_loop, tail_mean, avg_loop);
  }
  std::string dominant = "none";
  double dom = -1;
  for (const auto& [k, v] : phase_total) {
    if (v > dom) {
      dom = v;
      dominant = k;
    }
  }
  out << "  Dominant work phase: " << dominant
      << fmt::format(" ({:.3f} us across threads)\n", std::max(dom, 0.0));
  return Status::Ok();
}

// Part 6: the critical path, hop by hop.
void CriticalPathPart(const SwimlaneRecords& d, const TaskGraph& deps, std::ostream& out) {
  out << "\n== Part 6: critical path ==\n";
  const CriticalPath cp = ComputeCriticalPath(d, deps);
  const double span = cp.span, exec = cp.exec, sched = cp.sched;
  const size_t hops = cp.hops.size() - 1;
  out << fmt::format("  hops: {}  span: {:.3f} us (root {} dispatch → last finish)\n", hops, span,
                     FormatTaskDisplay(cp.hops.front().task_id));
  out << fmt::format(
      "  exec: {:.3f} us ({:.1f}%)  scheduler-injected: {:.3f} us ({:.1f}%)  other: {:.3f} us "
      "({:.1f}%)\n",
      exec, span > 0 ? 100 * exec / span : 0.0, sched, span > 0 ? 100 * sched / span : 0.0,
      span - exec - sched, span > 0 ? 100 * (span - exec - sched) / span : 0.0);
  // Hop by hop, root first: where the time went.
  out << fmt::format("  {:>10} {:>12} {:>12} {:>12} {:>14}\n", "task", "start us", "exec us",
                     "end us", "sched gap us");
  for (const CriticalHop& h : cp.hops) {
    out << fmt::format("  {:>10} {:>12.3f} {:>12.3f} {:>12.3f} {:>14.3f}\n",
                       FormatTaskDisplay(h.task_id), h.start, h.end - h.start, h.end, h.gap_before);
  }
}

}  // namespace

Status RunSchedOverhead(const SchedOverheadOptions& o, std::ostream& out) {
  Result<SwimlaneRecords> records = InvalidArgument("not read");
  Result<TaskGraph> graph = InvalidArgument("not read");
  std::filesystem::path deps_path;
  DFX_RETURN_IF_ERROR(LoadInputs(o, &records, &graph, &deps_path));
  const SwimlaneRecords& d = *records;
  const TaskGraph& deps = *graph;
  std::vector<double> tails;
  for (const auto& r : d.tasks) tails.push_back(std::max(0.0, d.FinishUs(r) - d.EndUs(r)));
  if (tails.empty()) return InvalidArgument("Empty tail-overhead set");

  out << "Scheduler overhead analysis\n  records: " << o.records.string()
      << "\n  deps:    " << deps_path.string() << "\n  task rows: " << d.tasks.size()
      << ", unique edges: " << deps.NumEdges() << "\n\n";
  const OverheadResult oh = ComputeOverhead(d, deps);
  OverheadPart(oh, out);
  const std::vector<double> heads = SwitchPart(d, oh, out);
  out << "\n== Part 3: Head OH (start - max(dispatch, prev end on core)) ==\n";
  Distribution(out, heads);
  out << "\n== Part 4: Tail OH (finish - end) ==\n";
  Distribution(out, tails);
  // Part 5 alone needs scheduler phase records (level >= 3); parts 1-4 only
  // need the joined task rows, so a level-2 capture gets them and then the
  // documented error, as the reference reaches its phase check only at part 5
  // (exit 1, part 6 not reached).
  DFX_RETURN_IF_ERROR(LoopBudgetPart(d, deps, tails, out));
  CriticalPathPart(d, deps, out);
  return Status::Ok();
}

}  // namespace dfx::view
