#include "view/overhead.h"

#include <algorithm>
#include <limits>
#include <set>
#include <unordered_map>

namespace dfx::view {

using collectors::SwimlaneRecords;
using collectors::TaskGraph;

OverheadResult ComputeOverhead(const SwimlaneRecords& data, const TaskGraph& deps) {
  OverheadResult res;
  const auto& rows = data.tasks;
  if (rows.empty()) return res;
  // Per logical task: max end, earliest dispatch per engine, engine mask.
  struct Info {
    double max_end = 0.0;
    double dispatch[2] = {std::numeric_limits<double>::infinity(),
                          std::numeric_limits<double>::infinity()};
    unsigned engines = 0;
  };
  std::unordered_map<uint64_t, Info> info;
  info.reserve(rows.size());
  std::set<int> cores[2];
  res.window_start = std::numeric_limits<double>::infinity();
  res.window_end = -std::numeric_limits<double>::infinity();
  // Events: (time, kind, engine, delta). Kinds ordered so that at equal time
  // ends/dispatches apply before starts/readies (state is the one after all).
  struct Ev {
    double t;
    int kind;  // 0 running, 1 ready
    int engine;
    int delta;
  };
  std::vector<Ev> evs;
  evs.reserve(rows.size() * 4);
  for (const auto& r : rows) {
    int e = data.IsAic(r) ? 0 : 1;
    cores[e].insert(r.core_id);
    double s = data.StartUs(r), en = data.EndUs(r);
    res.window_start = std::min(res.window_start, s);
    res.window_end = std::max(res.window_end, en);
    evs.push_back({s, 0, e, +1});
    evs.push_back({en, 0, e, -1});
    auto& inf = info[data.TaskId(r)];
    inf.max_end = std::max(inf.max_end, en);
    inf.dispatch[e] = std::min(inf.dispatch[e], data.DispatchUs(r));
    inf.engines |= 1u << e;
  }
  for (int e = 0; e < 2; ++e) {
    res.cores[e] = static_cast<int>(cores[e].size());
    res.engine_present[e] = !cores[e].empty();
  }
  for (const auto& [id, inf] : info) {
    double producers_end = -1.0;
    {
      for (const auto& [self, p] : deps.Preds(id)) {
        auto pi = info.find(p);
        if (pi != info.end()) producers_end = std::max(producers_end, pi->second.max_end);
      }
    }
    for (int e = 0; e < 2; ++e) {
      if (!(inf.engines & (1u << e))) continue;
      double disp = inf.dispatch[e];
      double ready = producers_end >= 0 ? producers_end : disp;
      if (ready < disp) {
        evs.push_back({ready, 1, e, +1});
        evs.push_back({disp, 1, e, -1});
      }
    }
  }
  std::sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) { return a.t < b.t; });
  int running[2] = {0, 0}, ready[2] = {0, 0};
  OverheadState prev;
  bool have_prev = false;
  for (size_t i = 0; i < evs.size();) {
    double t = evs[i].t;
    for (; i < evs.size() && evs[i].t == t; ++i) {
      (evs[i].kind == 0 ? running : ready)[evs[i].engine] += evs[i].delta;
    }
    OverheadState s;
    s.ts = t;
    bool any_ready = false, all = true, has = true, any_engine = false;
    for (int e = 0; e < 2; ++e) {
      s.idle[e] = res.cores[e] - running[e];
      s.ready[e] = ready[e];
      s.overhead[e] = s.idle[e] > 0 && s.ready[e] > 0;
      if (res.engine_present[e]) {
        any_engine = true;
        all = all && s.overhead[e];
        if (s.ready[e] > 0) {
          any_ready = true;
          has = has && s.idle[e] > 0;
        }
      }
    }
    s.all_overhead = any_engine && all;
    s.has_overhead = any_ready && has;
    // Accumulate the previous state's interval inside the window.
    if (have_prev) {
      double a = std::max(prev.ts, res.window_start), b = std::min(t, res.window_end);
      if (b > a) {
        for (int e = 0; e < 2; ++e) {
          if (prev.overhead[e]) res.overhead_us[e] += b - a;
        }
        if (prev.all_overhead) res.all_overhead_us += b - a;
        if (prev.has_overhead) res.has_overhead_us += b - a;
      }
    }
    res.timeline.push_back(s);
    prev = s;
    have_prev = true;
  }
  return res;
}

}  // namespace dfx::view
