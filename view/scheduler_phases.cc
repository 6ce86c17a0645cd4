// AICPU Scheduler (pid 2, §4.4–§4.5, §4.8): the scheduler threads' phase bars
// (complete, dispatch, resolve, ...), the shared ready-queue counter, which
// scheduler thread dispatches a core, and the --overhead counter tracks. The
// phases are streamed from the records file (ForEachSchedPhase): what the
// other views need of them (SchedPhaseDigest) is gathered while the
// records' first pass reads them, or by a pass of its own
// (ScanSchedPhases); then they are read once more to draw them, with the
// fast reader of collectors/swimlane/sched_phase_scan.h when the first pass
// could read every phase with it, on a thread of its own
// (FastForEachSchedPhaseAhead) while this one draws.
#include "view/dispatch_converter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "collectors/swimlane/sched_phase_scan.h"
#include "common/enum_text.h"
#include "view/event_text.h"
#include "view/overhead.h"

namespace dfx::view {

using collectors::FastForEachSchedPhaseAhead;
using collectors::PhaseKind;
using collectors::PhaseName;
using collectors::SchedPhase;

namespace {

// The phases drawn as bars, each with its colour (a Chrome trace colour
// name); the others (scan, poll, idle, ...) are not drawn.
constexpr auto kPhaseColor = MakeEnumTable<PhaseKind>(
    {
        {PhaseKind::kComplete, "good"},
        {PhaseKind::kDispatch, "terrible"},
        {PhaseKind::kAsyncPoll, "yellow"},
        {PhaseKind::kRelease, "olive"},
        {PhaseKind::kDummy, "grey"},
        {PhaseKind::kEarlyDispatch, "rail_animation"},
        {PhaseKind::kDrain, "cq_build_running"},
        {PhaseKind::kDrainPrepare, "cq_build_attempt_runnable"},
        {PhaseKind::kDrainPublish, "cq_build_attempt_passed"},
        {PhaseKind::kGraphPrepare, "rail_animation"},
        {PhaseKind::kResolve, "vsync_highlight_color"},
    },
    /*fallback=*/nullptr);

}  // namespace

Status DispatchConverter::ForEachSchedPhase(
    const std::function<void(size_t, const SchedPhase&)>& fn) {
  if (!fast_phases_) return d_.ForEachSchedPhase(fn);
  DFX_ASSIGN_OR_RETURN(bool whole, FastForEachSchedPhaseAhead(d_, fn));
  if (whole) return Status::Ok();
  return FailedPrecondition(
      d_.path.string() +
      ": the scheduler phases changed while being read (the first pass read them "
      "whole); convert again");
}

void SchedPhaseDigest::Attach(collectors::SwimlaneReadOptions* options) {
  Restart();
  used_ = true;
  options->see_sched_phase = [this](size_t t, const SchedPhase& p) { See(t, p); };
  options->restart_sched_phases = [this] { Restart(); };
}

void SchedPhaseDigest::Restart() {
  has_resolve_.clear();
  bars_.Reset(0, 0);
  markers_.clear();
  prepares_.clear();
}

void SchedPhaseDigest::See(size_t t, const SchedPhase& p) {
  if (p.kind == PhaseKind::kResolve) {
    if (t >= has_resolve_.size()) has_resolve_.resize(t + 1, false);
    has_resolve_[t] = true;
  }
  if (p.kind == PhaseKind::kComplete) {
    bars_.Add(t, p.start, p.end);  // threads arrive in order
  } else if ((p.kind == PhaseKind::kDummyTask || p.kind == PhaseKind::kPredicatedSkip) &&
             p.task_id >= 0) {
    markers_.emplace_back(t, p);
  } else if (p.kind == PhaseKind::kGraphPrepare && p.task_id >= 0) {
    prepares_.push_back({static_cast<uint64_t>(p.task_id), p.start, p.end});
  }
}

// What the other emitters need of the scheduler phases (SchedPhaseDigest):
// gathered by the records' first pass when the converter was given its
// digest, else by a streamed pass of its own. The phases themselves are
// emitted by the next pass (EmitSchedPhases), with the fast reader when the
// first pass could read every phase with it. In a pass of its own the fast
// reader is tried first; if it stops at a byte outside its subset, what it
// gathered is dropped and the generic reader reads the phases again, and
// the passes after this one too.
Status DispatchConverter::ScanSchedPhases() {
  const size_t nt = d_.num_sched_threads;
  SchedPhaseDigest own;
  SchedPhaseDigest* g = digest_;
  if (g != nullptr && g->used_) {
    fast_phases_ = d_.sched_phases_fast;
  } else {
    g = &own;
  }
  if (g == &own && d_.has_sched_phases) {
    own.bars_.Reset(nt, d_.num_sched_phases);  // at most one bar per phase
    const auto collect = [&](size_t t, const SchedPhase& p) {
      if (t < nt) own.See(t, p);  // more lanes than the first read counted: the file changed
    };
    if (d_.sched_phases_streamed) {
      DFX_ASSIGN_OR_RETURN(fast_phases_, FastForEachSchedPhaseAhead(d_, collect));
      if (!fast_phases_) {
        own.Restart();
        own.bars_.Reset(nt, d_.num_sched_phases);
      }
    }
    if (!fast_phases_) DFX_RETURN_IF_ERROR(d_.ForEachSchedPhase(collect));
  }
  has_resolve_ = std::move(g->has_resolve_);
  has_resolve_.resize(nt, false);
  complete_bars_ = std::move(g->bars_);
  complete_bars_.Finish(d_, nt);  // per-thread lanes sorted by start
  marker_phases_ = std::move(g->markers_);
  for (const auto& p : g->prepares_) {
    Outer& o = outers_[p.task_id];
    o.first_prepare = std::min(o.first_prepare, d_.Us(p.start));
    o.prepare_us += d_.Us(p.end) - d_.Us(p.start);
    ++o.slices;
  }
  g->Restart();
  g->used_ = false;  // taken over
  return Status::Ok();
}

// Thread dispatching a core: core_to_thread, else vote by containment in dispatch bars.
int DispatchConverter::ThreadOfCore(int core) {
  int t = d_.SchedThreadOfCore(core);
  if (t >= 0) return t;
  if (!voted_) {
    voted_ = true;
    // Dispatch bars are only needed here: read them on first use.
    dispatch_bars_.assign(d_.num_sched_threads, {});
    Status st = ForEachSchedPhase([&](size_t th, const SchedPhase& p) {
      if (p.kind == PhaseKind::kDispatch) {
        dispatch_bars_[th].push_back({d_.Us(p.start), d_.Us(p.end)});
      }
    });
    if (!st.ok() && sched_status_.ok()) sched_status_ = st;
    for (auto& bars : dispatch_bars_) {
      std::sort(bars.begin(), bars.end(),
                [](const Bar& a, const Bar& b) { return a.start < b.start; });
    }
    std::map<int, std::map<int, int>> votes;
    for (const auto& r : d_.tasks) {
      double ts = d_.DispatchUs(r);
      for (size_t th = 0; th < dispatch_bars_.size(); ++th) {
        const auto& bars = dispatch_bars_[th];
        auto it = std::lower_bound(bars.begin(), bars.end(), ts,
                                   [](const Bar& b, double v) { return b.end < v; });
        if (it != bars.end() && it->start <= ts) ++votes[r.core_id][static_cast<int>(th)];
      }
    }
    for (const auto& [c, v] : votes) {
      int best = -1, n = -1;
      for (const auto& [th, cnt] : v) {
        if (cnt > n) {
          best = th;
          n = cnt;
        }
      }
      voted_core_thread_[c] = best;
    }
  }
  auto it = voted_core_thread_.find(core);
  return it == voted_core_thread_.end() ? -1 : it->second;
}

Status DispatchConverter::EmitSchedPhases() {
  if (!d_.has_sched_phases) return Status::Ok();
  size_t nt = d_.num_sched_threads;
  // Complete bar ids, thread by thread in start order (flows bind to them).
  first_complete_ev_ = trace_.TakeEventIds(complete_bars_.size());
  complete_attributed_.assign(complete_bars_.size(), 0);
  attributed_overflow_.clear();
  // Attribution of finishes to complete bars.
  for (const auto& r : d_.tasks) {
    if (d_.Finish(r) == 0) continue;
    int th = d_.SchedThreadOfCore(r.core_id);
    if (th < 0 || static_cast<size_t>(th) >= nt) continue;
    const size_t bar = FindCompleteBar(th, d_.FinishUs(r));
    if (bar == kNoBar || complete_bars_.At(bar).start > d_.FinishUs(r)) continue;
    uint8_t& count = complete_attributed_[bar];
    if (count < 255) {
      ++count;
    } else {
      ++attributed_overflow_[bar];
    }
  }
  // Emit, streaming the phases again in file order.
  size_t cur_thread = std::numeric_limits<size_t>::max();
  size_t ci = 0;
  return ForEachSchedPhase([&](size_t t, const SchedPhase& p) {
    if (t != cur_thread) {
      cur_thread = t;
      ci = 0;
    }
    const char* color = kPhaseColor.Name(p.kind);
    if (color == nullptr) return;  // not drawn
    double ts = d_.Us(p.start), end = d_.Us(p.end);
    int tid = SchedTid(static_cast<int>(t)) + (p.kind == PhaseKind::kResolve ? 1 : 0);
    uint64_t id;
    uint32_t attributed = 0;
    // (No bar in the lane: the file changed since the first pass.)
    const size_t first = t < nt ? complete_bars_.LaneBegin(t) : 0;
    const size_t last = t < nt ? complete_bars_.LaneEnd(t) : 0;
    if (p.kind == PhaseKind::kComplete && first != last) {
      // Find this record's bar (same start) among the sorted bars.
      size_t it = complete_bars_.FirstStartingFrom(t, ts);
      for (; it != last; ++it) {
        const Bar bar = complete_bars_.At(it);
        if (bar.start != ts || bar.end == end) break;
      }
      if (it == last) it = first + std::min(ci, last - first - 1);
      id = CompleteEv(it);
      attributed = complete_attributed_[it];
      if (attributed == 255) {
        const auto more = attributed_overflow_.find(it);
        if (more != attributed_overflow_.end()) attributed += more->second;
      }
      ++ci;
    } else {
      id = trace_.TakeEventId();
    }
    // The phase names and colours are short constants.
    const std::string_view name = PhaseName(p.kind);
    trace_.Event('X', "scheduler", [&](auto& e) {
      e.Id(id).Cname(color);
      e.Name(EventText().Lit(name).Lit("(").Int(p.tasks_processed).Lit(")").view());
      e.At(Pid(2), tid, T(ts)).Dur(end - ts);
      e.Str("phase", name).Int("loop_iter", p.loop_iter).Int("tasks_processed", p.tasks_processed);
      e.Ints("shared_at_start (aic,aiv,mix)", p.shared_at_start, 3);
      e.Ints("shared_at_end (aic,aiv,mix)", p.shared_at_end, 3);
      if (p.kind == PhaseKind::kComplete) {
        e.Int("finishes_processed", p.tasks_processed).Int("finish_rows_attributed", attributed);
      }
    });
    trace_.CountSlice();
    SeeEnd(end);
    if ((p.kind == PhaseKind::kComplete || p.kind == PhaseKind::kDispatch) && p.has_depths) {
      trace_.Event('C', "queue", [&](auto& e) {
        e.Name("shared_ready_queue")
            .At(Pid(2), 3999, T(end))
            .Int("AIC", p.shared_at_end[0])
            .Int("AIV", p.shared_at_end[1])
            .Int("MIX", p.shared_at_end[2]);
      });
    }
  });
}

size_t DispatchConverter::FindCompleteBar(int thread, double finish) const {
  if (thread < 0 || static_cast<size_t>(thread) >= d_.num_sched_threads) return kNoBar;
  const size_t t = static_cast<size_t>(thread);
  const size_t it = complete_bars_.FirstEndingFrom(t, finish);
  return it == complete_bars_.LaneEnd(t) ? kNoBar : it;
}

// --overhead (§4.8): the overhead sweep's per-engine idle / ready / overhead
// states as counter tracks of the AICPU Scheduler process, each written only
// when its value changes.
void DispatchConverter::EmitOverhead() {
  OverheadResult oh = ComputeOverhead(d_, *deps_);
  struct Track {
    const char* name;
    int tid;
  };
  const Track tracks[] = {{"oh_aic_idle", 9101},     {"oh_aic_ready", 9102},
                          {"oh_aic_overhead", 9103}, {"oh_aiv_idle", 9111},
                          {"oh_aiv_ready", 9112},    {"oh_aiv_overhead", 9113},
                          {"oh_all_overhead", 9121}, {"oh_has_overhead", 9122}};
  // Only the engines the chip ran tasks on get tracks (a chip without AIC
  // tasks has no oh_aic_*); the two run-level tracks always exist.
  bool emit[8];
  for (int k = 0; k < 8; ++k) emit[k] = k >= 6 || oh.engine_present[k / 3];
  // As the reference: pid 2 is named by the scheduler lanes (level >= 3)
  // only, the counter tracks get no thread_name (a counter track is named
  // by its event), and the state at the last instant, the window's end, is
  // not written (it samples order[0 .. len(order) - 2]).
  long last[8];
  std::fill(std::begin(last), std::end(last), std::numeric_limits<long>::min());
  const size_t samples = oh.timeline.empty() ? 0 : oh.timeline.size() - 1;
  for (size_t i = 0; i < samples; ++i) {
    const OverheadState& s = oh.timeline[i];
    long v[8] = {s.idle[0],  s.ready[0],    s.overhead[0],  s.idle[1],
                 s.ready[1], s.overhead[1], s.all_overhead, s.has_overhead};
    for (int k = 0; k < 8; ++k) {
      if (!emit[k] || v[k] == last[k]) continue;
      last[k] = v[k];
      trace_.Event('C', "overhead", [&](auto& e) {
        e.Name(tracks[k].name)
            .At(Pid(2), tracks[k].tid, std::round(T(s.ts) * 1000.0) / 1000.0)
            .Int(tracks[k].name, v[k]);
      });
    }
  }
}

}  // namespace dfx::view
