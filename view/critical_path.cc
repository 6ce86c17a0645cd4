#include "view/critical_path.h"

#include <algorithm>
#include <limits>
#include <set>
#include <unordered_map>

namespace dfx::view {

CriticalPath ComputeCriticalPath(const collectors::SwimlaneRecords& d,
                                 const collectors::TaskGraph& deps) {
  // Each logical task over its rows (SPMD blocks, MIX parts).
  std::unordered_map<uint64_t, CriticalHop> logical;
  for (const auto& r : d.tasks) {
    auto [it, fresh] = logical.try_emplace(d.TaskId(r));
    CriticalHop& l = it->second;
    if (fresh) {
      l.task_id = d.TaskId(r);
      l.start = l.dispatch = std::numeric_limits<double>::infinity();
    }
    l.start = std::min(l.start, d.StartUs(r));
    l.end = std::max(l.end, d.EndUs(r));
    l.dispatch = std::min(l.dispatch, d.DispatchUs(r));
    l.finish = std::max(l.finish, d.FinishUs(r));
  }
  CriticalPath path;
  if (logical.empty()) return path;
  uint64_t cur = 0;
  double best = -1;
  for (const auto& [id, l] : logical) {
    if (l.finish > best || (l.finish == best && id < cur)) {
      best = l.finish;
      cur = id;
    }
  }
  std::set<uint64_t> seen;
  for (;;) {
    seen.insert(cur);
    CriticalHop hop = logical[cur];
    path.exec += hop.end - hop.start;
    uint64_t next = 0;
    double next_end = -1;
    for (const auto& [self, p] : deps.Preds(cur)) {
      auto lp = logical.find(p);
      if (lp == logical.end() || seen.count(p)) continue;
      if (lp->second.end > next_end) {
        next_end = lp->second.end;
        next = p;
      }
    }
    hop.gap_before = std::max(0.0, hop.start - (next_end < 0 ? hop.dispatch : next_end));
    path.sched += hop.gap_before;
    path.hops.push_back(hop);
    if (next_end < 0) break;
    cur = next;
  }
  std::reverse(path.hops.begin(), path.hops.end());
  path.span = best - path.hops.front().dispatch;
  return path;
}

}  // namespace dfx::view
