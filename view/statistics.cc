#include "view/statistics.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <ostream>

#include "view/task_label.h"

namespace dfx::view {

using collectors::SwimlaneRecords;
using collectors::TaskGraph;

namespace {

const char* LevelDescription(int level) {
  switch (level) {
    case 1:
      return "AICore timing only";
    case 2:
      return "AICore + AICPU timing";
    case 3:
      return "AICore + AICPU timing + scheduler phases";
    default:
      return "full collection with orchestrator phases";
  }
}

}  // namespace

void PrintStatistics(const SwimlaneRecords& d, const TaskGraph* deps,
                     const collectors::NameMap& names, std::ostream& out) {
  struct Acc {
    uint64_t count = 0;
    double exec = 0, latency = 0, head = 0, tail = 0, prop = 0, local = 0;
  };
  std::map<int, Acc> per;
  Acc total;
  double first_dispatch = std::numeric_limits<double>::infinity(), last_finish = 0;
  double first_start = std::numeric_limits<double>::infinity(), last_end = 0;
  bool l1 = d.level == 1;
  for (const auto& r : d.tasks) {
    double s = d.StartUs(r), e = d.EndUs(r), recv = d.ReceiveUs(r);
    double disp = d.DispatchUs(r), fin = d.FinishUs(r);
    for (Acc* a : {&per[RowFuncId(d, deps, r)], &total}) {
      ++a->count;
      a->exec += e - s;
      a->local += s - recv;
      if (!l1) {
        a->latency += fin - disp;
        a->head += s - disp;
        a->tail += fin - e;
        a->prop += recv - disp;
      }
    }
    first_start = std::min(first_start, recv);
    last_end = std::max(last_end, e);
    if (!l1) {
      first_dispatch = std::min(first_dispatch, disp);
      last_finish = std::max(last_finish, fin);
    }
  }
  out << "\nTask Statistics by Function (source: chip_swimlane_level " << d.level << " — "
      << LevelDescription(d.level) << ")\n";
  std::string header =
      fmt::format("{:>8}  {:<24} {:>8} {:>13} {:>16} {:>7} {:>16} {:>16} {:>12} {:>13}", "Func_ID",
                  "Func_Name", "Count", "Avg Exec(us)", "Avg Latency(us)", "Exec%",
                  "Avg Head OH(us)", "Avg Tail OH(us)", "Avg Prop(us)", "Avg Local(us)");
  out << header << "\n" << std::string(header.size(), '-') << "\n";
  auto row = [&](const std::string& id, const std::string& name, const Acc& a) {
    double n = static_cast<double>(a.count);
    auto opt = [&](double v) { return l1 ? std::string("-") : fmt::format("{:.3f}", v / n); };
    std::string pct =
        l1 || a.latency <= 0 ? "-" : fmt::format("{:.1f}%", 100.0 * a.exec / a.latency);
    out << fmt::format(
        "{:>8}  {:<24} {:>8} {:>13.3f} {:>16} {:>7} {:>16} {:>16} {:>12} {:>13.3f}\n", id, name,
        a.count, a.exec / n, opt(a.latency), pct, opt(a.head), opt(a.tail), opt(a.prop),
        a.local / n);
  };
  for (const auto& [f, a] : per) {
    row(std::to_string(f), f < 0 ? "unknown" : KernelName(names, f), a);
  }
  if (total.count == 0) {
    out << "(no tasks)\n";
    return;
  }
  out << std::string(header.size(), '-') << "\n";
  row("TOTAL", "", total);
  if (l1) {
    out << fmt::format("AICore Observed Span: {:.3f} us\n", last_end - first_start);
  } else {
    out << fmt::format("Total Test Time: {:.3f} us\n", last_finish - first_dispatch);
  }
  double n = static_cast<double>(total.count);
  out << "\nTask execution vs Scheduler overhead\n";
  out << fmt::format("  Avg Exec per task:    {:.3f} us\n", total.exec / n);
  if (!l1) {
    out << fmt::format("  Avg Latency per task: {:.3f} us\n", total.latency / n);
    out << fmt::format("  Exec / Latency:       {:.1f}%\n",
                       total.latency > 0 ? 100.0 * total.exec / total.latency : 0.0);
  }
}

}  // namespace dfx::view
