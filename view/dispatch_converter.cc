// The converter's core: the order the views are emitted in (event ids are
// assigned in that order, and flows bind to them), logical tasks (groups of
// rows), labels and the process/thread metadata.
#include "view/dispatch_converter.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "view/task_label.h"

namespace dfx::view {

using collectors::TaskInfo;
using collectors::TaskRow;

namespace {

std::string LowerCopy(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Status DispatchConverter::Run() {
  DFX_RETURN_IF_ERROR(ScanSchedPhases());
  EmitProcessMetadata();
  EmitWorkerView();
  EmitSchedulerView();
  DFX_RETURN_IF_ERROR(EmitSchedPhases());
  DFX_RETURN_IF_ERROR(EmitMarkersAndOrch());
  EmitGraphExecution();
  if (deps_ != nullptr) EmitDependencyFlows();
  DFX_RETURN_IF_ERROR(EmitCompleteAndDispatchFlows());
  if (overhead_ && deps_ != nullptr) EmitOverhead();
  return sched_status_;
}

int DispatchConverter::FuncOf(const TaskRow& r) const { return RowFuncId(d_, deps_, r); }

std::string DispatchConverter::CoreName(int core) const {
  bool aic = core >= 0 && static_cast<size_t>(core) < d_.core_types.size() &&
             d_.core_types[static_cast<size_t>(core)] == "aic";
  return fmt::format(FMT_COMPILE("{}_{}"), aic ? "AIC" : "AIV", core);
}

// Groups (logical tasks) are contiguous row ranges of the task_id-sorted
// rows; nothing per group is stored, a group is derived from its first row.
Group DispatchConverter::GroupFrom(uint32_t i) const {
  uint64_t id = IdOf(i);
  uint32_t j = i + 1;
  while (j < NumRows() && IdOf(j) == id) ++j;
  Group g{id, i, j, false, 1};
  if (const TaskInfo* dt = DepTaskOf(g.task_id)) {
    g.block_num = std::max(1, dt->block_num);
    g.spmd = dt->block_num > 1;
  } else if (j - i > 1) {
    bool first_aic = d_.IsAic(d_.tasks[i]);
    bool same_type = true;
    for (uint32_t r = i + 1; r < j; ++r)
      same_type = same_type && d_.IsAic(d_.tasks[r]) == first_aic;
    g.spmd = same_type;
    g.block_num = same_type ? static_cast<int>(j - i) : 1;
  }
  return g;
}

const TaskInfo* DispatchConverter::DepTaskOf(uint64_t id) const {
  if (deps_ == nullptr) return nullptr;
  return deps_->FindTask(id);
}

// Rows are sorted by task id and dep_gen's ids are dense, so the search
// starts where the id would be if rows and ids were spread evenly and
// gallops from there to a bracket of a few rows: one or two cache misses per
// lookup (one per edge end) instead of a binary search's seventeen. Any
// spread of ids finds the same first row.
std::optional<Group> DispatchConverter::FindGroup(uint64_t id) const {
  const uint32_t n = NumRows();
  if (n == 0) return std::nullopt;
  const uint64_t first = IdOf(0), last = IdOf(n - 1);
  if (id < first || id > last) return std::nullopt;
  // [lo, hi): the first row whose id is >= id lies in it.
  uint32_t lo = 0, hi = n;
  const uint32_t guess = last == first
                             ? 0
                             : static_cast<uint32_t>(static_cast<double>(id - first) /
                                                     static_cast<double>(last - first) * (n - 1));
  if (IdOf(guess) < id) {
    lo = guess + 1;
    for (uint32_t step = 1; lo < n; step *= 2) {
      const uint32_t probe = lo + std::min(step, n - lo) - 1;
      if (IdOf(probe) >= id) {
        hi = probe + 1;
        break;
      }
      lo = probe + 1;
    }
  } else {
    hi = guess + 1;
    for (uint32_t step = 1; hi > 1; step *= 2) {
      const uint32_t probe = hi - 1 - std::min(step, hi - 1);
      if (IdOf(probe) < id) {
        lo = probe + 1;
        break;
      }
      hi = probe + 1;
    }
  }
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (IdOf(mid) < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == NumRows() || IdOf(lo) != id) return std::nullopt;
  return GroupFrom(lo);
}

std::string DispatchConverter::BaseName(int func_id) const {
  if (func_id < 0) return "task";
  return KernelName(names_, func_id);
}

std::string DispatchConverter::Label(uint64_t task_id, int func_id, bool spmd) const {
  std::string base = BaseName(func_id);
  if (spmd && LowerCopy(base).find("spmd") == std::string::npos) base += "_spmd";
  return base + "(" + FormatTaskDisplay(task_id) + ")";
}

// Label's text before the display, escaped: escaping works byte by byte and
// the display and parentheses need none, so head + display + ")\"" is the
// escaped label.
const DispatchConverter::LabelText& DispatchConverter::LabelHead(int func_id, bool spmd) const {
  auto [it, inserted] = label_heads_.try_emplace({func_id, spmd});
  if (inserted) {
    LabelText& head = it->second;
    head.raw = Label(0, func_id, spmd);                                  // "<base>(t0)"
    head.raw.resize(head.raw.size() - FormatTaskDisplay(0).size() - 1);  // "<base>("
    AppendJsonString(&head.json, head.raw);
    head.json = head.json.substr(1, head.json.size() - 2);  // without its quotes
  }
  return it->second;
}

// The peers in deps.json's edge order, as the reference lists them.
void DispatchConverter::PeerHint(uint64_t id, bool fanout, std::string* s) const {
  s->clear();
  auto list = [&](const std::vector<uint64_t>& peers) {
    char buf[kTaskDisplayChars + 2];  // ", " and a display; first the count (at most 20 digits)
    char count[24];
    s->append(count,
              static_cast<size_t>(std::to_chars(count, count + 24, peers.size()).ptr - count));
    s->append(": [");
    for (size_t i = 0; i < peers.size(); ++i) {
      char* p = buf;
      if (i) {
        *p++ = ',';
        *p++ = ' ';
      }
      s->append(buf, static_cast<size_t>(TaskDisplayTo(p, peers[i]) - buf));
    }
    s->push_back(']');
  };
  if (deps_ == nullptr) {
    s->append("0: []");
    return;
  }
  thread_local std::vector<uint64_t> peers;
  if (fanout) {
    deps_->SuccsInFileOrder(id, &peers);
  } else {
    deps_->PredsInFileOrder(id, &peers);
  }
  list(peers);
}

void DispatchConverter::EmitProcessMetadata() {
  const bool has_orch = d_.HasOrchPhases();
  if (!d_.host_uploads.empty()) {
    trace_.ProcessName(1, "Host Prepare", 1);
    trace_.ThreadName(1, 4100, "H2D");
  }
  if (has_orch) {
    std::string name = d_.host_mode               ? "Host Orchestrator"
                       : names_.orchestrator_name ? "AICPU " + *names_.orchestrator_name
                                                  : "AICPU Orchestrator";
    trace_.ProcessName(1, name, 1);
    for (size_t i = 0; i < d_.NumOrchPools(); ++i) {
      trace_.ThreadName(1, 4000 + static_cast<int>(i),
                        fmt::format("{}_{}", d_.host_mode ? "Host" : "Orch", i));
    }
  }
  if (d_.has_sched_phases && d_.num_sched_threads > 0) {
    trace_.ProcessName(2, "AICPU Scheduler", 2);
    for (size_t t = 0; t < d_.num_sched_threads; ++t) {
      int tt = static_cast<int>(t);
      trace_.ThreadName(2, SchedTid(tt), fmt::format("Sched_{}", t));
      if (has_resolve_[t]) trace_.ThreadName(2, SchedTid(tt) + 1, fmt::format("Sched_{}", t));
    }
    trace_.ThreadName(2, 3999, "shared_ready_queue (global)", 100);
  }
  for (const auto& r : d_.tasks) {
    if (d_.Finish(r) > 0) {
      has_sched_view_ = d_.level >= 2;
      break;
    }
  }
  if (has_sched_view_) trace_.ProcessName(3, "Scheduler View", 3);
  trace_.ProcessName(4, "Worker View", 4);
  std::set<int> cores;
  for (const auto& r : d_.tasks) cores.insert(r.core_id);
  for (int c : cores) trace_.ThreadName(4, CoreTid(c), CoreName(c));
  int aicpu_lanes = static_cast<int>(d_.num_sched_threads + d_.NumOrchPools());
  for (int k = 0; k < aicpu_lanes; ++k) trace_.ThreadName(4, 19000 + k, fmt::format("AICPU_{}", k));
}

}  // namespace dfx::view
