#include "view/run_summary.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <limits>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <thread>

#include "collectors/artifact_layout.h"
#include "collectors/pmu/pmu_columns.h"
#include "collectors/run_manifest.h"
#include "common/json.h"
#include "common/subprocess.h"
#include "view/pmu_summary.h"
#include "view/run_inputs.h"
#include "view/scope_stats.h"
#include "view/task_label.h"

namespace dfx::view {

namespace fs = std::filesystem;

namespace {

constexpr size_t kCompactAbove = 8;  // ranks: above, aggregates plus the outliers

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

std::vector<KernelTime> SortedKernels(const std::map<std::string, KernelTime>& by_name) {
  std::vector<KernelTime> out;
  for (const auto& [name, k] : by_name) out.push_back(k);
  std::stable_sort(out.begin(), out.end(),
                   [](const KernelTime& a, const KernelTime& b) { return a.exec_us > b.exec_us; });
  return out;
}

// The timing of one dispatch from its records (see the header's definitions).
Status SummarizeTiming(const RunDispatch& d, DispatchSummary& s, collectors::NameMap& names,
                       std::ostream& err) {
  auto loaded = LoadDispatch(d, err);
  if (!loaded.ok()) {
    if (loaded.status().code() == Code::kNotFound) return Status::Ok();  // has_records = false
    return loaded.status();
  }
  const collectors::SwimlaneRecords& r = loaded->records;
  const collectors::TaskGraph* deps = loaded->deps ? &*loaded->deps : nullptr;
  s.has_records = true;
  s.level = r.level;
  s.rows = r.tasks.size();
  double first = std::numeric_limits<double>::infinity(), last = 0;
  std::set<int> cores;
  std::map<std::string, KernelTime> kernels;
  const bool aicpu = r.level >= 2;
  for (const collectors::TaskRow& row : r.tasks) {
    const double start = r.StartUs(row), end = r.EndUs(row);
    const double dispatch = aicpu && r.Dispatch(row) > 0 ? r.DispatchUs(row) : start;
    const double finish = aicpu && r.Finish(row) > 0 ? r.FinishUs(row) : end;
    first = std::min(first, dispatch);
    last = std::max(last, finish);
    s.busy_us += end - start;
    if (aicpu) s.sched_us += std::max(0.0, start - dispatch) + std::max(0.0, finish - end);
    cores.insert(row.core_id);
    const int func = RowFuncId(r, deps, row);
    const std::string name = func < 0 ? "task" : KernelName(loaded->names, func);
    KernelTime& k = kernels[name];
    k.name = name;
    ++k.rows;
    k.exec_us += end - start;
  }
  s.cores = static_cast<int>(cores.size());
  s.span_us = s.rows == 0 ? 0 : last - first;
  s.idle_us = std::max(0.0, s.cores * s.span_us - s.busy_us);
  s.kernels = SortedKernels(kernels);
  names = std::move(loaded->names);
  return Status::Ok();
}

void SummarizeSideFiles(const RunDispatch& d, DispatchSummary& s, const collectors::NameMap& names,
                        std::ostream& err) {
  std::error_code ec;
  const fs::path scope = d.dir / collectors::kScopeStatsFile;
  if (fs::is_regular_file(scope, ec)) {
    std::ostringstream quiet;  // pairing warnings belong to `dfx-view scope-stats`
    auto report = BuildScopeReport(scope, quiet);
    if (!report.ok()) {
      err << "Warning: couldn't read " << scope.string() << ": " << report.status().message()
          << "\n";
    } else {
      for (const ScopePeak& p : report->peaks) {
        if (p.capacity <= 0) continue;
        if (!s.ring_peak_pct || p.use_pct > *s.ring_peak_pct) {
          s.ring_peak_pct = p.use_pct;
          s.ring_peak_what =
              p.ring == "global" ? p.resource : fmt::format("{} ring {}", p.resource, p.ring);
        }
      }
    }
  }
  const fs::path pmu = d.dir / collectors::kPmuFile;
  if (fs::is_regular_file(pmu, ec)) {
    auto summary = SummarizePmuCsv(pmu);
    if (!summary.ok()) {
      err << "Warning: couldn't read " << pmu.string() << ": " << summary.status().message()
          << "\n";
    } else {
      for (const auto& [key, group] : summary->groups) {
        for (size_t c = 0; c < summary->counters.size() && c < group.sums.size(); ++c) {
          s.pmu_totals[summary->counters[c]] += group.sums[c];
          if (summary->counters[c] == collectors::pmu_columns::kTotalCycles.c_str()) {
            const int func = static_cast<int>(key.first);
            s.pmu_cycles_by_kernel[func < 0 ? "task" : KernelName(names, func)] += group.sums[c];
          }
        }
      }
    }
  }
}

// One dispatch's summary, its warnings and whether its records read.
struct DispatchWork {
  DispatchSummary summary;
  std::ostringstream err;
  Status status;
};

// Every dispatch's summary into `out`, in the order of `dispatches`, up to
// `jobs` (0: one per core) read at a time: each dispatch reads only its own
// files (records, deps.json, pmu.csv, scope stats), so they run side by side
// (the coordinator's post-run summary of an L3 run read 1.25 GB in 480 files
// one after another). Warnings reach `err` in dispatch order, as if read one
// by one; the first dispatch whose records do not read is the error, and the
// warnings of the dispatches after it are not printed.
Status SummarizeDispatches(const std::vector<RunDispatch>& dispatches, unsigned jobs,
                           std::vector<DispatchSummary>& out, std::ostream& err) {
  std::vector<DispatchWork> work(dispatches.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto run = [&] {
    // Once one failed, no new one starts: every dispatch before it has
    // already started (indices are taken in order), so its error stays the first.
    for (size_t i; !failed.load() && (i = next.fetch_add(1)) < dispatches.size();) {
      const RunDispatch& d = dispatches[i];
      DispatchWork& w = work[i];
      w.summary.rank = d.rank;
      w.summary.k = d.k;
      w.summary.program = d.program;
      collectors::NameMap names;
      try {  // as main() would for one thread: an error, not std::terminate
        w.status = SummarizeTiming(d, w.summary, names, w.err);
        if (w.status.ok()) SummarizeSideFiles(d, w.summary, names, w.err);
      } catch (const std::exception& e) {
        w.status = Internal(fmt::format("{}: {}", d.dir.string(), e.what()));
      }
      if (!w.status.ok()) failed.store(true);
    }
  };
  const unsigned wanted = jobs > 0 ? jobs : std::max(1u, std::thread::hardware_concurrency());
  const size_t workers = std::min<size_t>(wanted, std::max<size_t>(dispatches.size(), 1));
  std::vector<std::thread> threads;
  for (size_t t = 1; t < workers; ++t) threads.emplace_back(run);
  run();
  for (auto& t : threads) t.join();
  out.reserve(dispatches.size());
  for (DispatchWork& w : work) {
    err << w.err.str();
    DFX_RETURN_IF_ERROR(w.status);
    out.push_back(std::move(w.summary));
  }
  return Status::Ok();
}

// "run status: failed (run manifest)" and one marked line per rank or
// dispatch that is not ok; "" when the manifest says ok (or there is none).
// "not captured (by request: --capture-ranks 1,3): 8 dispatch(es): rank0/d0 ...",
// one line per reason; "" when every dispatch captured.
std::string NotCapturedText(const RunHealth& health) {
  std::map<std::string, std::vector<std::string>> by_reason;
  for (const NotOk& n : health.not_captured) by_reason[n.error].push_back(n.what);
  std::string text;
  for (const auto& [by, what] : by_reason) {
    constexpr size_t kShown = 12;
    std::vector<std::string> shown(what.begin(), what.begin() + std::min(what.size(), kShown));
    text += fmt::format(
        "  -- not captured (by request: {}): {} dispatch(es) ran without "
        "collectors, as asked (not missing): {}{}\n",
        by, what.size(), fmt::join(shown, " "),
        what.size() > kShown ? fmt::format(" (+{} more)", what.size() - kShown) : std::string());
  }
  return text;
}

std::string HealthText(const std::optional<RunHealth>& health) {
  if (!health) return "";
  if (health->status == "ok" && health->not_ok.empty()) return NotCapturedText(*health);
  std::string text = fmt::format("run status: {} (run manifest)\n", health->status);
  text += NotCapturedText(*health);
  for (const NotOk& n : health->not_ok) {
    std::string status = n.status;
    std::transform(status.begin(), status.end(), status.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    text += fmt::format("  !! {:<12} {:<10} {}\n", status, n.what,
                        n.error.empty() ? std::string("(no error text)") : n.error);
  }
  if (health->status == "interrupted") {
    text +=
        "  the coordinator stopped before the run ended (a signal or a crash); what is missing "
        "is listed in run_manifest.json\n";
  }
  const auto in_spool = std::count_if(health->not_ok.begin(), health->not_ok.end(),
                                      [](const NotOk& n) { return n.status == "in_spool"; });
  if (in_spool > 0) {
    text += fmt::format(
        "  in_spool: the files of {} dispatch(es) are in an agent's spool, not here: {}\n",
        in_spool, ShellCommand({"dfx-coordinator", "gather", "--work-dir", health->work_dir}));
  }
  return text;
}

std::string Pct(const std::optional<double>& v) {
  return v ? fmt::format("{:.0f}%", *v) : std::string("-");
}

std::string RankPeak(const RankSummary& r) {
  return r.ring_peak_pct ? fmt::format("{} {}", Pct(r.ring_peak_pct), r.ring_peak_what) : "-";
}

void PrintRankRow(const RankSummary& r, std::ostream& out) {
  out << fmt::format("r{:<4} {:>4} {:>7} {:>11.1f} {:>11.1f} {:>11.1f} {:>10.1f}  {:<22} {}\n",
                     r.rank, r.dispatches, r.rows, r.span_us, r.busy_us, r.idle_us, r.sched_us,
                     RankPeak(r),
                     r.pmu_total_cycles ? fmt::format("{:.0f}", *r.pmu_total_cycles) : "-");
}

void PrintTable(const RunSummary& s, const SummaryPrintOptions& o, std::ostream& out) {
  uint64_t rows = 0;
  for (const auto& r : s.ranks) rows += r.rows;
  out << fmt::format(
      "Summary of {}: {} rank(s), {} dispatch(es), {} task row(s); µs on the chip "
      "clock\n",
      s.input.string(), s.ranks.size(), s.dispatches.size(), rows);
  out << HealthText(s.health);
  const std::string header =
      fmt::format("{:<5} {:>4} {:>7} {:>11} {:>11} {:>11} {:>10}  {:<22} {}", "rank", "disp",
                  "rows", "span", "busy", "idle", "sched", "ring peak", "pmu cycles");
  out << header << "\n";
  if (s.ranks.size() <= kCompactAbove) {
    for (const auto& r : s.ranks) PrintRankRow(r, out);
  } else {
    // Aggregates, then the outliers: stragglers, the slowest and the fastest.
    std::vector<double> spans, busy;
    for (const auto& r : s.ranks) {
      spans.push_back(r.span_us);
      busy.push_back(r.busy_us);
    }
    auto [lo, hi] = std::minmax_element(spans.begin(), spans.end());
    out << fmt::format(
        "all   {} ranks: span min {:.1f} / median {:.1f} / max {:.1f}; busy median "
        "{:.1f}\n",
        s.ranks.size(), *lo, Median(spans), *hi, Median(busy));
    std::set<int32_t> shown(s.stragglers.begin(), s.stragglers.end());
    shown.insert(s.ranks[static_cast<size_t>(hi - spans.begin())].rank);
    shown.insert(s.ranks[static_cast<size_t>(lo - spans.begin())].rank);
    for (const auto& r : s.ranks) {
      if (shown.count(r.rank)) PrintRankRow(r, out);
    }
    out << fmt::format("({} more rank(s): --format csv lists every one)\n",
                       s.ranks.size() - shown.size());
  }
  if (!o.brief) {
    out << "\nper dispatch:\n";
    out << fmt::format("{:<10} {:<18} {:>7} {:>6} {:>11} {:>11} {:>11} {:>10}\n", "dispatch",
                       "program", "rows", "cores", "span", "busy", "idle", "sched");
    for (const auto& d : s.dispatches) {
      const std::string where = collectors::DispatchDirPath(d.rank, d.k);
      if (!d.has_records) {
        out << fmt::format("{:<10} {:<18} (no {})\n", where, d.program,
                           collectors::kSwimlaneRecordsFile);
        continue;
      }
      out << fmt::format("{:<10} {:<18} {:>7} {:>6} {:>11.1f} {:>11.1f} {:>11.1f} {:>10.1f}\n",
                         where, d.program, d.rows, d.cores, d.span_us, d.busy_us, d.idle_us,
                         d.sched_us);
    }
  }
  if (s.ranks.size() > 1 && !s.steps.empty()) {
    out << fmt::format("slowest rank per dispatch step (straggler: span > median + {:g}%):\n",
                       s.straggler_threshold_pct);
    size_t hidden = 0;
    for (const auto& st : s.steps) {
      if (st.ranks < 2) continue;
      if (s.steps.size() > kCompactAbove && !st.straggler) {
        ++hidden;
        continue;
      }
      out << fmt::format(
          "  d{:<3} r{} {:<14} span {:.1f}  median {:.1f}  lag {:+.1f}  skew {:.1f}%{}\n", st.k,
          st.slowest_rank, st.slowest_program, st.slowest_span_us, st.median_span_us, st.lag_us,
          st.skew_pct, st.straggler ? "  STRAGGLER" : "");
    }
    if (hidden > 0) out << fmt::format("  ({} step(s) within the threshold not shown)\n", hidden);
  }
  if (!s.top_kernels.empty()) {
    double busy = 0;
    for (const auto& k : s.top_kernels) busy += k.exec_us;
    std::string line;
    const size_t n = std::min(s.top_kernels.size(), static_cast<size_t>(std::max(o.top, 1)));
    for (size_t i = 0; i < n; ++i) {
      const KernelTime& k = s.top_kernels[i];
      line += fmt::format("{}{} {:.1f} ({:.0f}%, {} rows)", i ? ", " : "", k.name, k.exec_us,
                          busy > 0 ? 100.0 * k.exec_us / busy : 0.0, k.rows);
    }
    out << "top kernels by time: " << line << "\n";
  }
  out << s.verdict << "\n";
  // Pasteable whatever the path holds (spaces, quotes); o.view is already a
  // shell word (the coordinator passes its ViewCommand()).
  const std::string run = ShellQuote(s.input.string());
  if (!s.stragglers.empty()) {
    out << fmt::format("dig further: {} swimlane --run {} --ranks {}   |   {} summary {}\n", o.view,
                       run, s.stragglers.front(), o.view, run);
  } else if (o.brief) {
    out << fmt::format("dig further: {} summary {}   |   {} swimlane --run {}\n", o.view, run,
                       o.view, run);
  }
}

void PrintCsv(const RunSummary& s, std::ostream& out) {
  out << "rank,dispatch,program,level,rows,cores,span_us,busy_us,idle_us,sched_us,"
         "slowest_in_step,straggler,ring_peak_pct,ring_peak,pmu_total_cycles\n";
  for (const auto& d : s.dispatches) {
    const StepSummary* step = nullptr;
    for (const auto& st : s.steps) {
      if (st.k == d.k) step = &st;
    }
    const bool slowest = step && step->ranks > 1 && step->slowest_rank == d.rank;
    auto pmu = d.pmu_totals.find(collectors::pmu_columns::kTotalCycles.c_str());
    std::string program = d.program;
    std::replace(program.begin(), program.end(), ',', ';');
    out << fmt::format("{},{},{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{},{},{},{},{}\n", d.rank,
                       d.k, program, d.level, d.rows, d.cores, d.span_us, d.busy_us, d.idle_us,
                       d.sched_us, slowest ? 1 : 0, slowest && step->straggler ? 1 : 0,
                       d.ring_peak_pct ? fmt::format("{:.2f}", *d.ring_peak_pct) : "",
                       d.ring_peak_what,
                       pmu != d.pmu_totals.end() ? fmt::format("{:.0f}", pmu->second) : "");
  }
}

Json KernelsJson(const std::vector<KernelTime>& kernels, size_t top) {
  Json a = Json::array();
  for (size_t i = 0; i < kernels.size() && i < top; ++i) {
    a.push_back(
        {{"name", kernels[i].name}, {"rows", kernels[i].rows}, {"exec_us", kernels[i].exec_us}});
  }
  return a;
}

void PrintJson(const RunSummary& s, const SummaryPrintOptions& o, std::ostream& out) {
  Json j;
  j["input"] = s.input.string();
  j["straggler_threshold_pct"] = s.straggler_threshold_pct;
  j["straggler_rule"] =
      "in each dispatch step d<K>, the slowest rank is a straggler when its span exceeds the "
      "median span of the ranks that ran d<K> by more than the threshold";
  Json ranks = Json::array();
  for (const auto& r : s.ranks) {
    Json e = {{"rank", r.rank},         {"dispatches", r.dispatches},
              {"rows", r.rows},         {"span_us", r.span_us},
              {"busy_us", r.busy_us},   {"idle_us", r.idle_us},
              {"sched_us", r.sched_us}, {"straggler_steps", r.straggler_steps}};
    e["ring_peak_pct"] = r.ring_peak_pct ? Json(*r.ring_peak_pct) : Json(nullptr);
    e["ring_peak"] = r.ring_peak_what;
    e["pmu_total_cycles"] = r.pmu_total_cycles ? Json(*r.pmu_total_cycles) : Json(nullptr);
    ranks.push_back(std::move(e));
  }
  j["ranks"] = std::move(ranks);
  Json dispatches = Json::array();
  for (const auto& d : s.dispatches) {
    Json e = {{"rank", d.rank},
              {"dispatch", d.k},
              {"dir", collectors::DispatchDirPath(d.rank, d.k)},
              {"program", d.program},
              {"has_records", d.has_records},
              {"level", d.level},
              {"rows", d.rows},
              {"cores", d.cores},
              {"span_us", d.span_us},
              {"busy_us", d.busy_us},
              {"idle_us", d.idle_us},
              {"sched_us", d.sched_us}};
    e["top_kernels"] = KernelsJson(d.kernels, static_cast<size_t>(o.top));
    e["ring_peak_pct"] = d.ring_peak_pct ? Json(*d.ring_peak_pct) : Json(nullptr);
    e["ring_peak"] = d.ring_peak_what;
    Json pmu = Json::object();
    for (const auto& [col, v] : d.pmu_totals) pmu[col] = v;
    e["pmu_totals"] = std::move(pmu);
    dispatches.push_back(std::move(e));
  }
  j["dispatches"] = std::move(dispatches);
  Json steps = Json::array();
  for (const auto& st : s.steps) {
    steps.push_back({{"dispatch", st.k},
                     {"ranks", st.ranks},
                     {"slowest_rank", st.slowest_rank},
                     {"slowest_program", st.slowest_program},
                     {"slowest_span_us", st.slowest_span_us},
                     {"median_span_us", st.median_span_us},
                     {"lag_us", st.lag_us},
                     {"skew_pct", st.skew_pct},
                     {"straggler", st.straggler}});
  }
  j["steps"] = std::move(steps);
  j["top_kernels"] = KernelsJson(s.top_kernels, static_cast<size_t>(o.top));
  j["stragglers"] = s.stragglers;
  j["verdict"] = s.verdict;
  if (s.health) {
    j["run_status"] = s.health->status;
    Json not_ok = Json::array();
    for (const NotOk& n : s.health->not_ok) {
      not_ok.push_back({{"what", n.what}, {"status", n.status}, {"error", n.error}});
    }
    j["not_ok"] = std::move(not_ok);
    Json not_captured = Json::array();
    for (const NotOk& n : s.health->not_captured) {
      not_captured.push_back({{"what", n.what}, {"status", n.status}, {"by", n.error}});
    }
    j["not_captured"] = std::move(not_captured);
  }
  out << j.dump(2) << "\n";
}

}  // namespace

Result<double> ParseThresholdPercent(const std::string& text) {
  std::string t = text;
  if (!t.empty() && t.back() == '%') t.pop_back();
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || *end != '\0' || !(v > 0) || v > 1000) {
    return InvalidArgument(fmt::format(
        "--straggler-threshold {}: expected a percentage in (0, 1000], e.g. 5 or 5%", text));
  }
  return v;
}

Result<RunSummary> SummarizeRun(const fs::path& input, double threshold_pct, std::ostream& err,
                                unsigned jobs) {
  DFX_ASSIGN_OR_RETURN(std::vector<RunDispatch> dispatches, ListRunDispatches(input));
  RunSummary s;
  s.input = input;
  s.straggler_threshold_pct = threshold_pct;
  s.health = ReadRunHealth(input, err);
  std::map<int32_t, RankSummary> ranks;
  std::map<uint32_t, std::vector<const DispatchSummary*>> by_step;
  std::map<std::string, KernelTime> kernels;
  DFX_RETURN_IF_ERROR(SummarizeDispatches(dispatches, jobs, s.dispatches, err));
  bool any_records = false;
  for (const DispatchSummary& d : s.dispatches) {
    RankSummary& r = ranks[d.rank];
    r.rank = d.rank;
    ++r.dispatches;
    r.rows += d.rows;
    r.span_us += d.span_us;
    r.busy_us += d.busy_us;
    r.idle_us += d.idle_us;
    r.sched_us += d.sched_us;
    if (d.ring_peak_pct && (!r.ring_peak_pct || *d.ring_peak_pct > *r.ring_peak_pct)) {
      r.ring_peak_pct = d.ring_peak_pct;
      r.ring_peak_what = d.ring_peak_what;
    }
    if (auto it = d.pmu_totals.find(collectors::pmu_columns::kTotalCycles.c_str());
        it != d.pmu_totals.end()) {
      r.pmu_total_cycles = r.pmu_total_cycles.value_or(0) + it->second;
    }
    for (const KernelTime& k : d.kernels) {
      KernelTime& all = kernels[k.name];
      all.name = k.name;
      all.rows += k.rows;
      all.exec_us += k.exec_us;
    }
    if (d.has_records) {
      any_records = true;
      by_step[d.k].push_back(&d);
    }
  }
  if (!any_records) {
    // The manifest's word first: records that did not arrive (in a spool,
    // never run) are not records that were never asked for.
    if (s.health && !s.health->not_ok.empty()) {
      return NotFound(fmt::format("{}: no {} here; the run manifest says what did not arrive:\n{}",
                                  input.string(), collectors::kSwimlaneRecordsFile,
                                  HealthText(s.health)));
    }
    return NotFound(fmt::format("{}: no {} in any dispatch; run with --enable-chip-swimlane",
                                input.string(), collectors::kSwimlaneRecordsFile));
  }
  for (const auto& [k, members] : by_step) {
    StepSummary st;
    st.k = k;
    st.ranks = static_cast<int>(members.size());
    std::vector<double> spans;
    const DispatchSummary* slowest = members.front();
    for (const DispatchSummary* d : members) {
      spans.push_back(d->span_us);
      if (d->span_us > slowest->span_us) slowest = d;
    }
    st.slowest_rank = slowest->rank;
    st.slowest_program = slowest->program;
    st.slowest_span_us = slowest->span_us;
    st.median_span_us = Median(spans);
    st.lag_us = st.slowest_span_us - st.median_span_us;
    st.skew_pct = st.median_span_us > 0 ? 100.0 * st.lag_us / st.median_span_us : 0.0;
    st.straggler = st.ranks > 1 && st.skew_pct > threshold_pct;
    if (st.straggler) ++ranks[st.slowest_rank].straggler_steps;
    s.steps.push_back(std::move(st));
  }
  for (auto& [rank, r] : ranks) s.ranks.push_back(r);
  for (const auto& r : s.ranks) {
    if (r.straggler_steps > 0) s.stragglers.push_back(r.rank);
  }
  std::stable_sort(s.stragglers.begin(), s.stragglers.end(), [&](int32_t a, int32_t b) {
    return ranks[a].straggler_steps > ranks[b].straggler_steps;
  });
  s.top_kernels = SortedKernels(kernels);
  int compared = 0;
  for (const auto& st : s.steps) compared += st.ranks > 1 ? 1 : 0;
  if (compared == 0) {
    s.verdict = "stragglers: none to compare (one rank per dispatch step)";
  } else if (s.stragglers.empty()) {
    s.verdict = fmt::format(
        "stragglers: none (every rank within {:g}% of the median span in "
        "all {} step(s))",
        threshold_pct, compared);
  } else {
    const RankSummary& worst = ranks[s.stragglers.front()];
    double max_skew = 0;
    uint32_t max_k = 0;
    for (const auto& st : s.steps) {
      if (st.straggler && st.slowest_rank == worst.rank && st.skew_pct > max_skew) {
        max_skew = st.skew_pct;
        max_k = st.k;
      }
    }
    s.verdict = fmt::format(
        "stragglers: rank {} (slowest by more than {:g}% in {} of {} step(s); worst d{} "
        "{:+.1f}% over the median)",
        worst.rank, threshold_pct, worst.straggler_steps, compared, max_k, max_skew);
    for (size_t i = 1; i < s.stragglers.size(); ++i) {
      s.verdict += fmt::format("; also rank {} ({} step(s))", s.stragglers[i],
                               ranks[s.stragglers[i]].straggler_steps);
    }
  }
  return s;
}

void PrintSummary(const RunSummary& s, const SummaryPrintOptions& options, std::ostream& out) {
  if (options.format == "csv") {
    PrintCsv(s, out);
  } else if (options.format == "json") {
    PrintJson(s, options, out);
  } else {
    PrintTable(s, options, out);
  }
}

}  // namespace dfx::view
