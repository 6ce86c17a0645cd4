#include "view/run_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/subprocess.h"
#include "view/html_page.h"
#include "view/run_report_manifest.h"

namespace dfx::view {

namespace fs = std::filesystem;

namespace {

constexpr size_t kTopKernels = 8;
constexpr size_t kCommandRows = 400;  // dispatches listed with their command

Json Round(double v) { return std::round(v * 10.0) / 10.0; }  // 0.1 µs is plenty on screen

// The q-quantile (0..1) of `v` by nearest rank; v is sorted.
double Quantile(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
}

// What the per-rank charts show per row: one rank, or one aggregate of all.
struct Row {
  std::string label;
  std::string kind;  // rank | aggregate | outlier
  std::optional<int32_t> rank;
  std::vector<std::optional<double>> span;  // per step (s.steps order)
  double busy = 0, idle = 0, sched = 0, total_span = 0;
  std::vector<double> kernels;  // per kernel_names entry
  int straggler_steps = 0;
};

// Per rank: its spans per step, its times and its kernels' exec time.
std::map<int32_t, Row> RankRows(const RunSummary& s, const std::vector<std::string>& kernel_names) {
  std::map<uint32_t, size_t> step_index;
  for (size_t i = 0; i < s.steps.size(); ++i) step_index[s.steps[i].k] = i;
  std::map<int32_t, Row> rows;
  for (const RankSummary& r : s.ranks) {
    Row& row = rows[r.rank];
    row.label = fmt::format("rank {}", r.rank);
    row.kind = "rank";
    row.rank = r.rank;
    row.span.assign(s.steps.size(), std::nullopt);
    row.busy = r.busy_us;
    row.idle = r.idle_us;
    row.sched = r.sched_us;
    row.total_span = r.span_us;
    row.kernels.assign(kernel_names.size(), 0.0);
    row.straggler_steps = r.straggler_steps;
  }
  for (const DispatchSummary& d : s.dispatches) {
    Row& row = rows[d.rank];
    if (d.has_records) {
      if (auto it = step_index.find(d.k); it != step_index.end()) row.span[it->second] = d.span_us;
    }
    for (const KernelTime& k : d.kernels) {
      auto at = std::find(kernel_names.begin(), kernel_names.end(), k.name);
      if (at == kernel_names.end()) at = kernel_names.end() - 1;  // "other"
      row.kernels[static_cast<size_t>(at - kernel_names.begin())] += k.exec_us;
    }
  }
  return rows;
}

// The aggregate rows of a large run: per column the min, median, p90 and max over the ranks.
std::vector<Row> AggregateRows(const std::map<int32_t, Row>& ranks, size_t steps, size_t kernels) {
  const std::vector<std::pair<std::string, double>> quantiles = {
      {"min", 0.0}, {"median", 0.5}, {"p90", 0.9}, {"max", 1.0}};
  auto column = [&](auto get) {
    std::vector<double> v;
    for (const auto& [rank, row] : ranks) {
      if (auto x = get(row)) v.push_back(*x);
    }
    std::sort(v.begin(), v.end());
    return v;
  };
  std::vector<Row> out;
  for (const auto& [name, q] : quantiles) {
    Row row;
    row.label = fmt::format("{} of {} ranks", name, ranks.size());
    row.kind = "aggregate";
    for (size_t i = 0; i < steps; ++i) {
      auto v = column([i](const Row& r) { return r.span[i]; });
      row.span.push_back(v.empty() ? std::nullopt : std::optional<double>(Quantile(v, q)));
    }
    row.busy = Quantile(column([](const Row& r) { return std::optional(r.busy); }), q);
    row.idle = Quantile(column([](const Row& r) { return std::optional(r.idle); }), q);
    row.sched = Quantile(column([](const Row& r) { return std::optional(r.sched); }), q);
    row.total_span = Quantile(column([](const Row& r) { return std::optional(r.total_span); }), q);
    for (size_t k = 0; k < kernels; ++k) {
      row.kernels.push_back(
          Quantile(column([k](const Row& r) { return std::optional(r.kernels[k]); }), q));
    }
    out.push_back(std::move(row));
  }
  return out;
}

// The rows drawn: every rank, or above `max_rows` ranks the aggregates plus
// the outliers (the stragglers, then the longest and the shortest total spans).
std::vector<Row> SelectRows(const RunSummary& s, std::map<int32_t, Row> ranks, size_t max_rows,
                            size_t kernels, std::string* note) {
  std::vector<Row> out;
  if (ranks.size() <= max_rows) {
    for (auto& [rank, row] : ranks) out.push_back(std::move(row));
    *note = fmt::format("every rank ({})", out.size());
    return out;
  }
  out = AggregateRows(ranks, s.steps.size(), kernels);
  const size_t budget = std::max<size_t>(8, max_rows / 4);
  std::vector<int32_t> picked;
  auto pick = [&](int32_t rank) {
    if (picked.size() < budget && std::find(picked.begin(), picked.end(), rank) == picked.end())
      picked.push_back(rank);
  };
  for (int32_t r : s.stragglers) {
    if (picked.size() < budget / 2) pick(r);
  }
  std::vector<const Row*> by_span;
  for (const auto& [rank, row] : ranks) by_span.push_back(&row);
  std::stable_sort(by_span.begin(), by_span.end(),
                   [](const Row* a, const Row* b) { return a->total_span > b->total_span; });
  for (size_t i = 0; i < by_span.size() && picked.size() + 4 < budget; ++i) pick(*by_span[i]->rank);
  for (size_t i = 0; i < 4 && i < by_span.size(); ++i) pick(*by_span[by_span.size() - 1 - i]->rank);
  std::sort(picked.begin(), picked.end());
  for (int32_t r : picked) {
    Row row = ranks[r];
    row.kind = "outlier";
    out.push_back(std::move(row));
  }
  *note = fmt::format(
      "{} ranks: the min, median, p90 and max rank per column, plus {} outlier ranks (the "
      "stragglers, the longest and the shortest total spans); `dfx-view summary` lists every rank",
      ranks.size(), picked.size());
  return out;
}

Json RowJson(const Row& row, const RunSummary& s) {
  Json j = Json::object();
  j["label"] = row.label;
  j["kind"] = row.kind;
  j["rank"] = row.rank ? Json(*row.rank) : Json(nullptr);
  Json span = Json::array(), skew = Json::array(), marks = Json::array();
  for (size_t i = 0; i < row.span.size(); ++i) {
    const StepSummary& st = s.steps[i];
    if (!row.span[i]) {
      span.push_back(nullptr);
      skew.push_back(nullptr);
      continue;
    }
    span.push_back(Round(*row.span[i]));
    skew.push_back(st.median_span_us > 0
                       ? Round(100.0 * (*row.span[i] - st.median_span_us) / st.median_span_us)
                       : Json(0.0));
    const bool marked = st.straggler && ((row.rank && *row.rank == st.slowest_rank) ||
                                         (!row.rank && row.label.rfind("max", 0) == 0));
    if (marked) marks.push_back(i);
  }
  j["span"] = std::move(span);
  j["skew"] = std::move(skew);
  j["marks"] = std::move(marks);
  j["busy"] = Round(row.busy);
  j["idle"] = Round(row.idle);
  j["sched"] = Round(row.sched);
  j["total_span"] = Round(row.total_span);
  Json kernels = Json::array();
  for (double v : row.kernels) kernels.push_back(Round(v));
  j["kernels"] = std::move(kernels);
  j["straggler_steps"] = row.straggler_steps;
  return j;
}

Json StepsJson(const RunSummary& s) {
  Json steps = Json::array();
  for (const StepSummary& st : s.steps) {
    Json j = Json::object();
    j["k"] = st.k;
    j["ranks"] = st.ranks;
    j["median"] = Round(st.median_span_us);
    j["slowest_rank"] = st.slowest_rank;
    j["slowest_span"] = Round(st.slowest_span_us);
    j["skew"] = Round(st.skew_pct);
    j["straggler"] = st.straggler;
    steps.push_back(std::move(j));
  }
  return steps;
}

// Ring occupancy over the run: per step the highest and the median ring peak.
Json RingJson(const RunSummary& s) {
  std::map<uint32_t, std::vector<const DispatchSummary*>> by_step;
  for (const DispatchSummary& d : s.dispatches) {
    if (d.ring_peak_pct) by_step[d.k].push_back(&d);
  }
  Json out = Json::array();
  for (const auto& [k, ds] : by_step) {
    std::vector<double> v;
    const DispatchSummary* top = ds.front();
    for (const DispatchSummary* d : ds) {
      v.push_back(*d->ring_peak_pct);
      if (*d->ring_peak_pct > *top->ring_peak_pct) top = d;
    }
    std::sort(v.begin(), v.end());
    Json j = Json::object();
    j["k"] = k;
    j["max"] = Round(v.back());
    j["median"] = Round(Quantile(v, 0.5));
    j["rank"] = top->rank;
    j["what"] = top->ring_peak_what;
    out.push_back(std::move(j));
  }
  return out;
}

Json PmuJson(const RunSummary& s) {
  std::map<std::string, double> cycles;
  for (const DispatchSummary& d : s.dispatches) {
    for (const auto& [name, v] : d.pmu_cycles_by_kernel) cycles[name] += v;
  }
  std::vector<std::pair<std::string, double>> sorted(cycles.begin(), cycles.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  Json out = Json::array();
  for (size_t i = 0; i < sorted.size() && i < 40; ++i) {
    out.push_back(Json{{"kernel", sorted[i].first}, {"cycles", std::round(sorted[i].second)}});
  }
  return out;
}

// Per dispatch, the command that writes its merged trace: the notable ones
// (stragglers first), then in (rank, k) order up to kCommandRows.
Json CommandsJson(const RunSummary& s, const std::string& view) {
  Json j = Json::object();
  const std::string base = ShellQuote(s.input.string());
  j["run"] = fmt::format("{} swimlane --run {}", view, base);
  j["view"] = view;
  j["base"] = base;
  j["records"] = collectors::kSwimlaneRecordsFile;
  std::set<std::pair<int32_t, uint32_t>> stragglers;
  for (const StepSummary& st : s.steps) {
    if (st.straggler) stragglers.insert({st.slowest_rank, st.k});
  }
  std::vector<const DispatchSummary*> order;
  for (const DispatchSummary& d : s.dispatches) {
    if (stragglers.count({d.rank, d.k})) order.push_back(&d);
  }
  for (const DispatchSummary& d : s.dispatches) {
    if (!stragglers.count({d.rank, d.k})) order.push_back(&d);
  }
  Json list = Json::array();
  for (size_t i = 0; i < order.size() && i < kCommandRows; ++i) {
    const DispatchSummary& d = *order[i];
    const auto dir = ListedDispatchDir(s.input, d.rank, d.k);
    Json e = Json::object();
    e["rank"] = d.rank;
    e["k"] = d.k;
    e["program"] = d.program;
    e["span"] = d.has_records ? Round(d.span_us) : Json(nullptr);
    e["straggler"] = stragglers.count({d.rank, d.k}) > 0;
    e["command"] = d.has_records
                       ? fmt::format("{} swimlane {}", view,
                                     ShellQuote((dir / j["records"].get<std::string>()).string()))
                       : "";
    list.push_back(std::move(e));
  }
  j["list"] = std::move(list);
  j["listed_of"] = s.dispatches.size();
  return j;
}

}  // namespace

std::string ScriptSafeJson(const Json& data) {
  const std::string text = data.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 64);
  for (char c : text) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Json RunReportData(const RunSummary& s, const RunReportOptions& options, std::ostream& err) {
  Json j = Json::object();
  j["input"] = s.input.string();
  j["verdict"] = s.verdict;
  j["threshold_pct"] = s.straggler_threshold_pct;
  j["rule"] = fmt::format(
      "in each dispatch step d<K>, the rank with the longest span is a straggler when its span "
      "exceeds the median span of the ranks that ran d<K> by more than {:g}% of that median "
      "(dfx-view summary --straggler-threshold)",
      s.straggler_threshold_pct);
  std::vector<std::string> kernel_names;
  for (size_t i = 0; i < s.top_kernels.size() && i < kTopKernels; ++i) {
    kernel_names.push_back(s.top_kernels[i].name);
  }
  kernel_names.push_back("other");
  std::string note;
  std::vector<Row> rows =
      SelectRows(s, RankRows(s, kernel_names), options.max_rows, kernel_names.size(), &note);
  j["ranks_total"] = s.ranks.size();
  j["dispatches_total"] = s.dispatches.size();
  j["aggregated"] = s.ranks.size() > options.max_rows;
  j["rows_note"] = note;
  Json rows_json = Json::array();
  for (const Row& r : rows) rows_json.push_back(RowJson(r, s));
  j["rows"] = std::move(rows_json);
  j["steps"] = StepsJson(s);
  j["kernel_names"] = kernel_names;
  Json stragglers = Json::array();
  for (int32_t r : s.stragglers) stragglers.push_back(r);
  j["stragglers"] = std::move(stragglers);
  j["ring"] = RingJson(s);
  j["pmu"] = PmuJson(s);
  j["commands"] = CommandsJson(s, options.view);
  ManifestReportData(s, options.max_rows, err, j);
  return j;
}

Status WriteRunReport(const RunSummary& s, const RunReportOptions& options, std::ostream& err) {
  const Json data = RunReportData(s, options, err);
  std::random_device rd;
  const std::string nonce = fmt::format("{:08x}{:08x}{:08x}", rd(), rd(), rd());
  const std::string title =
      fmt::format("dfx run report: {} rank(s), {} step(s) - {}", s.ranks.size(), s.steps.size(),
                  s.input.filename().empty() ? s.input.string() : s.input.filename().string());
  // Markers are replaced in the template only, never in what was inserted.
  const std::string_view page = RunReportPageTemplate();
  const size_t lib_at = page.find("%CHARTJS%"), data_at = page.find("%DATA%");
  if (lib_at == std::string_view::npos || data_at == std::string_view::npos || data_at < lib_at) {
    return Internal("the report page template lacks %CHARTJS% or %DATA% (a build problem)");
  }
  std::string html = ReplaceAll(ReplaceAll(std::string(page.substr(0, lib_at)), "%NONCE%", nonce),
                                "%TITLE%", HtmlEscape(title));
  html += ChartJsLibrary();
  html += ReplaceAll(std::string(page.substr(lib_at + 9, data_at - lib_at - 9)), "%NONCE%", nonce);
  html += ScriptSafeJson(data);
  html += ReplaceAll(std::string(page.substr(data_at + 6)), "%NONCE%", nonce);
  return WriteFileAtomic(options.output, html);
}

}  // namespace dfx::view
