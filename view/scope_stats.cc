#include "view/scope_stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>

#include "collectors/scope_stats/scope_stats_keys.h"
#include "collectors/scope_stats/scope_stats_reader.h"
#include "common/file_util.h"

namespace dfx::view {
namespace {

using collectors::ScopeStatsSample;
namespace keys = collectors::scope_stats_keys;

struct Pair {
  ScopeStatsSample begin, end;
};

struct Series {
  std::string name, color;
  std::vector<double> values;
  std::vector<std::string> sites;
};

struct Resource {
  const char* key;
  const char* title;
  const char* unit;
  double scale;
};
constexpr Resource kResources[] = {{keys::kTaskWindow.c_str(), "Task window", "slots", 1.0},
                                   {keys::kHeap.c_str(), "Heap", "MiB", 1048576.0},
                                   {keys::kDepPool.c_str(), "Dependency pool", "entries", 1.0},
                                   {keys::kTensormap.c_str(), "Tensormap", "entries", 1.0}};

std::string Esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else if (c == '"')
      o += "&quot;";
    else
      o.push_back(c);
  }
  return o;
}

std::string Fmt(double v) {
  if (v == static_cast<double>(static_cast<long long>(v)))
    return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{:.3f}", v);
}

// A y-axis tick with enough decimals for the axis's range: a heap of a few
// KiB in MiB reads "0.00391", not "0".
std::string TickLabel(double v, double ymax) {
  const int decimals =
      ymax > 0 ? std::clamp(2 - static_cast<int>(std::floor(std::log10(ymax))), 0, 8) : 0;
  return fmt::format("{:.{}f}", v, decimals);
}

// One SVG chart (900×300) with integer x ticks = scope index.
std::string Chart(const std::vector<Series>& series, const std::string& unit, int chart_id) {
  const double W = 900, H = 300, L = 60, R = 15, T = 15, B = 35;
  size_t n = 0;
  double peak = 0;
  for (const auto& s : series) {
    n = std::max(n, s.values.size());
    for (double v : s.values) peak = std::max(peak, v);
  }
  double ymax = peak > 0 ? peak * 1.1 : 1.0;
  auto X = [&](size_t i) {
    return L + (n > 1 ? (W - L - R) * static_cast<double>(i) / static_cast<double>(n - 1)
                      : (W - L - R) / 2);
  };
  auto Y = [&](double v) { return T + (H - T - B) * (1.0 - v / ymax); };
  std::string s = fmt::format(
      R"(<svg class="chart" id="chart{}" viewBox="0 0 900 300" width="900" height="300" xmlns="http://www.w3.org/2000/svg">)",
      chart_id);
  s += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="#fff" stroke="#ccd"/>)", L,
                   T, W - L - R, H - T - B);
  for (int k = 0; k <= 4; ++k) {
    double v = ymax * k / 4.0;
    s += fmt::format(
        R"(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#eee"/><text x="{}" y="{:.1f}" font-size="10" text-anchor="end">{}</text>)",
        L, W - R, Y(v), Y(v), L - 4, Y(v) + 3, Esc(TickLabel(v, ymax)));
  }
  size_t step = std::max<size_t>(1, (n + 9) / 10);
  for (size_t i = 0; i < n; i += step) {
    s += fmt::format(R"(<text x="{:.1f}" y="{}" font-size="10" text-anchor="middle">{}</text>)",
                     X(i), H - B + 14, i);
  }
  s += fmt::format(
      R"X(<text x="{}" y="{}" font-size="10" text-anchor="middle">scope index</text><text x="12" y="{}" font-size="10" transform="rotate(-90 12 {})" text-anchor="middle">{}</text>)X",
      (W + L) / 2, H - 4, H / 2, H / 2, Esc(unit));
  for (const auto& se : series) {
    std::string pts;
    for (size_t i = 0; i < se.values.size(); ++i)
      pts += fmt::format("{:.1f},{:.1f} ", X(i), Y(se.values[i]));
    s += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="1.5" points="{}"/>)",
                     se.color, pts);
    if (se.values.size() <= 2000) {
      for (size_t i = 0; i < se.values.size(); ++i) {
        s += fmt::format(
            R"(<circle class="pt" cx="{:.1f}" cy="{:.1f}" r="2.5" fill="{}" data-m="{}" data-i="{}" data-v="{}" data-s="{}"/>)",
            X(i), Y(se.values[i]), se.color, Esc(se.name), i, Esc(Fmt(se.values[i])),
            Esc(i < se.sites.size() ? se.sites[i] : ""));
      }
    }
  }
  s += "</svg>";
  return s;
}

const char* UseClass(double pct) { return pct >= 80 ? "danger" : pct >= 50 ? "warn" : "ok"; }

// Begin/end samples paired per (ring, site), last begin first.
struct Pairing {
  std::map<int, std::vector<Pair>> by_ring;  // ring -> pairs in end order
  std::vector<Pair> all;
  std::map<std::string, size_t> site_count;
};

Pairing PairSamples(const std::vector<ScopeStatsSample>& recs, std::ostream& err) {
  Pairing out;
  std::map<std::pair<int, std::string>, std::vector<ScopeStatsSample>> stacks;
  for (const auto& r : recs) {
    auto key = std::make_pair(r.ring, r.site);
    if (r.begin) {
      stacks[key].push_back(r);
      continue;
    }
    auto& st = stacks[key];
    if (st.empty()) {
      err << "Warning: ring " << r.ring << " site " << r.site << ": end without matching begin\n";
      continue;
    }
    Pair p{st.back(), r};
    st.pop_back();
    out.by_ring[r.ring].push_back(p);
    out.all.push_back(p);
    ++out.site_count[r.site];
  }
  return out;
}

// The series one panel draws of resource `res` over `ps`: `main` (its
// first is the one whose peak counts) and `alloc`, and the metric's name.
void PanelSeries(const Resource& res, const std::vector<Pair>& ps, std::vector<Series>* main,
                 std::vector<Series>* alloc, std::string* metric) {
  const std::string_view key = res.key;
  if (key == keys::kTensormap) {
    Series live{"Live entries", "#6a1b9a", {}, {}};
    for (const auto& p : ps) {
      live.values.push_back(p.end.tensormap);
      live.sites.push_back(p.end.site);
    }
    main->push_back(live);
    *metric = "real_occupancy";
    return;
  }
  Series hw{"High water", "#d32f2f", {}, {}}, live{"Live at exit", "#1976d2", {}, {}},
      al{"Alloc per scope", "#388e3c", {}, {}};
  for (const auto& p : ps) {
    double bs, be, es, ee;
    if (key == keys::kTaskWindow) {
      bs = p.begin.task_window_start;
      be = p.begin.task_window_end;
      es = p.end.task_window_start;
      ee = p.end.task_window_end;
    } else if (key == keys::kHeap) {
      bs = p.begin.heap_start;
      be = p.begin.heap_end;
      es = p.end.heap_start;
      ee = p.end.heap_end;
    } else {
      bs = p.begin.dep_pool_start;
      be = p.begin.dep_pool_end;
      es = p.end.dep_pool_start;
      ee = p.end.dep_pool_end;
    }
    hw.values.push_back((ee - bs) / res.scale);
    live.values.push_back((ee - es) / res.scale);
    al.values.push_back((ee - be) / res.scale);
    for (Series* s : {&hw, &live, &al}) s->sites.push_back(p.end.site);
  }
  *main = {hw, live};
  *alloc = {al};
  *metric = "scope_high_water";
}

// The resource sections of the page, one panel per ring (tensormap: one for
// all rings); each panel's peak goes to `peaks`.
class SectionWriter {
 public:
  explicit SectionWriter(std::vector<ScopePeak>* peaks) : peaks_(*peaks) {}

  void Panel(const Resource& res, const std::string& ring_label, const std::vector<Pair>& ps,
             double capacity);
  std::string& html() { return html_; }

 private:
  // The panel's side table: each line's peak and the panel's max use.
  std::string Side(const Resource& res, const std::vector<const std::vector<Series>*>& groups,
                   const ScopePeak& pk, const std::vector<Pair>& ps, size_t at) const;

  std::vector<ScopePeak>& peaks_;
  std::string html_;
  int chart_id_ = 0;
};

void SectionWriter::Panel(const Resource& res, const std::string& ring_label,
                          const std::vector<Pair>& ps, double capacity) {
  std::vector<Series> main, alloc;
  std::string metric;
  PanelSeries(res, ps, &main, &alloc, &metric);
  const Series& risk = main[0];
  size_t at = 0;
  for (size_t i = 0; i < risk.values.size(); ++i) {
    if (risk.values[i] > risk.values[at]) at = i;
  }
  ScopePeak pk;
  pk.resource = res.key;
  pk.ring = ring_label;
  pk.metric = metric;
  pk.peak = risk.values.empty() ? 0 : risk.values[at];
  pk.capacity = capacity / res.scale;
  pk.use_pct = pk.capacity > 0 ? 100.0 * pk.peak / pk.capacity : 0;
  pk.site = risk.sites.empty() ? "-" : risk.sites[at];
  pk.scope_index = static_cast<long>(at);
  peaks_.push_back(pk);
  const std::string side = Side(res, {&main, &alloc}, pk, ps, at);
  std::string charts = R"(<div class="stack">)" + Chart(main, res.unit, chart_id_++);
  if (!alloc.empty()) charts += Chart(alloc, res.unit, chart_id_++);
  charts += "</div>";
  html_ += fmt::format(
      R"(<details{}><summary>ring_depth {} — {} scope(s)</summary><div class="row">{}{}</div></details>)",
      ps.size() > 1 ? " open" : "", ring_label, ps.size(), charts, side);
}

std::string SectionWriter::Side(const Resource& res,
                                const std::vector<const std::vector<Series>*>& groups,
                                const ScopePeak& pk, const std::vector<Pair>& ps, size_t at) const {
  std::string side = R"(<div class="side"><h4>Line colors</h4><table>)";
  for (const auto* group : groups) {
    for (const auto& s : *group) {
      double p = s.values.empty() ? 0 : *std::max_element(s.values.begin(), s.values.end());
      side += fmt::format(
          R"(<tr><td><span class="sw" style="background:{}"></span></td><td>{}</td><td>peak {}</td><td>{}</td></tr>)",
          s.color, s.name, Esc(Fmt(p)),
          pk.capacity > 0 ? fmt::format("{:.2f}%", 100.0 * p / pk.capacity) : "-");
    }
  }
  side += "</table><h4>Max use</h4>";
  side += fmt::format(
      "<div>metric: {}<br>peak: {} {}<br>capacity: {}<br>use: {}<br>peak scope: {}<br>site: "
      "{}{}</div></div>",
      pk.metric, Esc(Fmt(pk.peak)), res.unit, pk.capacity > 0 ? Esc(Fmt(pk.capacity)) : "-",
      pk.capacity > 0 ? fmt::format("{:.2f}%", pk.use_pct) : "-", pk.scope_index, Esc(pk.site),
      std::string_view(res.key) == keys::kTensormap && !ps.empty()
          ? fmt::format("<br>Peak context ring_depth: {}", ps[at].end.ring)
          : "");
  return side;
}

// The table of peaks, highest use first.
std::string PeaksTable(const std::vector<ScopePeak>& peaks) {
  std::string table =
      "<table "
      "class=\"peaks\"><tr><th>Resource</th><th>ring_depth</th><th>Metric</th><th>Peak</"
      "th><th>Capacity</th><th>Use</th><th>Site</th><th>Scope Index</th></tr>";
  for (const auto& p : peaks) {
    double w = std::min(100.0, p.use_pct);
    table += fmt::format(
        R"(<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><div class="bar {}"><span style="width:{:.1f}%"></span></div> {:.2f}%</td><td>{}</td><td>{}</td></tr>)",
        p.resource, p.ring, p.metric, Esc(Fmt(p.peak)), p.capacity > 0 ? Esc(Fmt(p.capacity)) : "-",
        UseClass(p.use_pct), w, p.use_pct, Esc(p.site), p.scope_index);
  }
  table += "</table>";
  return table;
}

// The whole page around the peaks table and the sections.
std::string RenderPage(const std::filesystem::path& jsonl, const ScopeReport& rep,
                       const std::string& dominant, size_t dominant_n, const std::string& table,
                       const std::string& sections) {
  std::string chip = rep.fatal ? R"(<span class="chip danger">Fatal</span>)"
                     : rep.dropped > 0
                         ? R"(<span class="chip warn">Dropped records</span>)"
                         : R"(<span class="chip ok">Healthy: no fatal, no dropped</span>)";
  std::string html = R"(<!DOCTYPE html><html><head><meta charset="utf-8"><title>scope stats — )" +
                     Esc(jsonl.filename().string()) + R"(</title><style>
body{font-family:Helvetica,Arial,sans-serif;margin:20px;background:#f7f9fc;color:#222}
.chip{padding:3px 10px;border-radius:12px;font-size:13px;color:#fff}.chip.ok{background:#2e7d32}.chip.warn{background:#ef6c00}.chip.danger{background:#c62828}
.cards{display:flex;gap:12px;flex-wrap:wrap}.card{background:#fff;border:1px solid #dde;border-radius:6px;padding:10px;width:260px;font-size:13px}
table{border-collapse:collapse;background:#fff}td,th{border:1px solid #dde;padding:4px 8px;font-size:13px}
.bar{display:inline-block;width:80px;height:10px;background:#eee;vertical-align:middle}.bar span{display:block;height:100%}
.bar.ok span{background:#2e7d32}.bar.warn span{background:#ef6c00}.bar.danger span{background:#c62828}
details{background:#fff;border:1px solid #dde;border-radius:6px;margin:8px 0;padding:6px}.row{display:flex;gap:12px;align-items:flex-start}
.side{font-size:12px;min-width:240px}.sw{display:inline-block;width:12px;height:12px}svg.chart{cursor:zoom-in;display:block;margin-bottom:6px}
#tip{position:fixed;pointer-events:none;background:#263238;color:#fff;padding:4px 8px;border-radius:4px;font-size:12px;display:none}
#modal{position:fixed;inset:0;background:rgba(0,0,0,.5);display:none;align-items:center;justify-content:center}#modal>div{background:#fff;padding:10px;width:90%}
#modal svg{width:100%;height:auto}
</style></head><body>)";
  html += "<h1>Scope stats: " + Esc(jsonl.filename().string()) + "</h1>";
  html += fmt::format(
      "<p>Dominant scope site: <b>{}</b> ({} pair(s)) &nbsp; {} &nbsp; records: {} &nbsp; paired "
      "scopes: {} &nbsp; ring_depths: {}</p>",
      Esc(dominant), dominant_n, chip, rep.records, rep.pairs, rep.rings);
  html += R"(<h2>Formula Guide</h2><div class="cards">
<div class="card"><b>High water</b><br>end.&lt;res&gt;_end − begin.&lt;res&gt;_start: backlog plus everything allocated in the scope; can exceed capacity.</div>
<div class="card"><b>Live at exit</b><br>end.&lt;res&gt;_end − end.&lt;res&gt;_start: live when the scope exits, within [0, capacity].</div>
<div class="card"><b>Alloc per scope</b><br>end.&lt;res&gt;_end − begin.&lt;res&gt;_end: allocation throughput of the scope.</div>
<div class="card"><b>Live entries</b><br>end.tensormap: live tensormap entries at scope exit (all rings).</div></div>)";
  html += "<h2>Top Peaks</h2>" + table + sections;
  html += R"(<div id="tip"></div><div id="modal"><div id="modalbody"></div></div><script>
(function(){var tip=document.getElementById('tip'),modal=document.getElementById('modal'),body=document.getElementById('modalbody');
document.querySelectorAll('circle.pt').forEach(function(c){c.addEventListener('mousemove',function(e){tip.style.display='block';tip.style.left=(e.clientX+12)+'px';tip.style.top=(e.clientY+12)+'px';
tip.textContent=c.dataset.m+' | scope '+c.dataset.i+' | '+c.dataset.v+' | '+c.dataset.s;});c.addEventListener('mouseleave',function(){tip.style.display='none';});});
document.querySelectorAll('svg.chart').forEach(function(s){s.addEventListener('click',function(){body.innerHTML='';body.appendChild(s.cloneNode(true));modal.style.display='flex';});});
modal.addEventListener('click',function(){modal.style.display='none';});
document.body.setAttribute('data-viewer-ready','1');})();
</script></body></html>
)";
  return html;
}

}  // namespace

Result<ScopeReport> BuildScopeReport(const std::filesystem::path& jsonl, std::ostream& err) {
  DFX_ASSIGN_OR_RETURN(collectors::ScopeStatsFile file, collectors::ReadScopeStats(jsonl));
  const collectors::ScopeStatsMetadata& meta = file.metadata;
  ScopeReport rep;
  rep.records = file.samples.size();
  rep.fatal = meta.fatal;
  rep.dropped = meta.dropped;
  const Pairing pairing = PairSamples(file.samples, err);
  rep.pairs = pairing.all.size();
  rep.rings = pairing.by_ring.size();
  std::string dominant = "-";
  size_t dominant_n = 0;
  for (const auto& [s, c] : pairing.site_count) {
    if (c > dominant_n) {
      dominant = s;
      dominant_n = c;
    }
  }
  SectionWriter sections(&rep.peaks);
  for (const auto& res : kResources) {
    sections.html() +=
        fmt::format(R"(<section><h2>{} <small>({})</small></h2>)", res.title, res.unit);
    if (std::string_view(res.key) == keys::kTensormap) {
      sections.Panel(res, "global", pairing.all, meta.Capacity(res.key, 0));
    } else {
      for (const auto& [ring, ps] : pairing.by_ring)
        sections.Panel(res, std::to_string(ring), ps, meta.Capacity(res.key, ring));
      if (pairing.by_ring.empty()) sections.html() += "<p>No paired scopes.</p>";
    }
    sections.html() += "</section>";
  }
  std::sort(rep.peaks.begin(), rep.peaks.end(),
            [](const ScopePeak& a, const ScopePeak& b) { return a.use_pct > b.use_pct; });
  rep.html = RenderPage(jsonl, rep, dominant, dominant_n, PeaksTable(rep.peaks), sections.html());
  return rep;
}

Status RunScopeStats(const std::filesystem::path& jsonl,
                     const std::optional<std::filesystem::path>& out_dir, std::ostream& out,
                     std::ostream& err) {
  DFX_ASSIGN_OR_RETURN(ScopeReport rep, BuildScopeReport(jsonl, err));
  std::filesystem::path dir = out_dir ? *out_dir : jsonl.parent_path();
  if (!dir.empty()) DFX_RETURN_IF_ERROR(MakeDirs(dir));
  auto path = dir / "scope_stats.html";
  DFX_RETURN_IF_ERROR(WriteFileAtomic(path, rep.html));
  out << "Wrote " << path.string() << " (" << rep.records << " records, " << rep.pairs
      << " paired scopes)\n";
  for (const auto& p : rep.peaks) {
    if (p.capacity > 0 && p.use_pct >= 80) {
      out << fmt::format("  danger: {} ring_depth {} {} peak {} of {} ({:.2f}%) at {}\n",
                         p.resource, p.ring, p.metric, Fmt(p.peak), Fmt(p.capacity), p.use_pct,
                         p.site);
    }
  }
  return Status::Ok();
}

}  // namespace dfx::view
