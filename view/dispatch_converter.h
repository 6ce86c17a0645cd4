// DispatchConverter: turns one dispatch's records (one chip_swimlane_records
// file, with its deps.json and name map when there are some) into the events
// of a TraceWriter (docs/formats.md §4). Internal to view/: `dfx-view swimlane`
// converts one dispatch, the run timeline many into one trace.
//
// One class, its views in their own files:
//   dispatch_converter.cc  groups of rows (logical tasks), labels, process and
//                          thread metadata, the order the views run in
//   worker_view.cc         Worker View (pid 4): one bar per AICore execution
//   scheduler_view.cc      Scheduler View (pid 3): dispatch→finish bars per core
//   scheduler_phases.cc    AICPU Scheduler (pid 2): phase bars, ready-queue and
//                          --overhead counters, the thread that dispatches a core
//   orchestrator_view.cc   orchestrator submits and host uploads (pid 1), marker
//                          lanes (dummy / skipped / alloc), graph execution (pid 5)
//   flows.cc               dependency, complete, ready and dispatch arrows
//
// The views share state through members: rows are the records' joined task
// rows, sorted by task id; a logical task (a "group") is a contiguous run of
// rows. The converter reuses TaskRow's scratch bits and slot (see
// scheduler_view.cc) and so takes the records by non-const reference.
//
// One thread; a converter converts once (Run).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collectors/dep_gen/deps_reader.h"
#include "collectors/name_map.h"
#include "collectors/swimlane/swimlane_reader.h"
#include "common/status.h"
#include "view/complete_bars.h"
#include "view/event_text.h"
#include "view/task_label.h"
#include "view/trace_writer.h"

namespace dfx::view {

// A logical task: rows [begin, end) of the task_id-sorted rows.
struct Group {
  uint64_t task_id;
  uint32_t begin, end;
  bool spmd;
  int block_num;
};

// What the converter needs of the scheduler phases before it draws any
// (resolve sub-lanes, complete bars, dependency-only markers, graph_prepare
// envelopes), gathered while the records' first pass reads the phases
// (SwimlaneReadOptions::see_sched_phase), so that the converter reads them
// only once more, to draw them. Without one, the converter reads them for
// this first (ScanSchedPhases).
//
// Give it the read options before ReadSwimlaneRecords, then the converter
// of those records; one thread.
class SchedPhaseDigest {
 public:
  SchedPhaseDigest() { Restart(); }
  // Makes `options` fill this (it must outlive the read).
  void Attach(collectors::SwimlaneReadOptions* options);

 private:
  friend class DispatchConverter;
  void Restart();
  void See(size_t t, const collectors::SchedPhase& p);
  struct Prepare {
    uint64_t task_id, start, end;  // cycles
  };
  std::vector<bool> has_resolve_;  // per sched thread seen
  CompleteBars bars_;
  std::vector<std::pair<size_t, collectors::SchedPhase>> markers_;
  std::vector<Prepare> prepares_;  // in file order
  bool used_ = false;
};

class DispatchConverter {
 public:
  // `digest`: what the records' first pass gathered of the scheduler phases
  // (taken over by Run), or null.
  DispatchConverter(collectors::SwimlaneRecords& data, const collectors::TaskGraph* deps,
                    const collectors::NameMap& names, bool overhead, bool verbose,
                    TraceWriter& trace, std::ostream& err, SchedPhaseDigest* digest = nullptr)
      : d_(data),
        deps_(deps),
        names_(names),
        overhead_(overhead),
        verbose_(verbose),
        trace_(trace),
        err_(err),
        digest_(digest) {}

  // Emits every view of the dispatch. Returns an error only when the
  // scheduler phases cannot be re-read from the records file.
  Status Run();

 private:
  // Scratch bits of TaskRow::flags used by the converter.
  static constexpr uint8_t kSpmdFlag = 0x02;
  static constexpr uint8_t kPlacedFlag = 0x04;
  static constexpr int kLaneShift = 4;  // Scheduler View lane in bits 4..7

  // Thread ids of the lanes (§4.3).
  static int CoreTid(int core) { return 10000 + 10 * core; }
  static int SchedTid(int thread) { return 30000 + 10 * thread; }
  // The lane of complete bar `bar` (an index into complete_bars_).
  int BarTid(size_t bar) const { return SchedTid(static_cast<int>(complete_bars_.LaneOf(bar))); }

  int Pid(int p) const { return trace_.Pid(p); }
  double T(double ts) const { return trace_.T(ts); }
  void SeeEnd(double ts) { trace_.SeeEnd(ts); }

  // --- rows, groups and labels (dispatch_converter.cc) ----------------------------
  std::string CoreName(int core) const;
  int FuncOf(const collectors::TaskRow& r) const;
  uint64_t IdOf(uint32_t row) const { return d_.TaskId(d_.tasks[row]); }
  uint32_t NumRows() const { return static_cast<uint32_t>(d_.tasks.size()); }
  Group GroupFrom(uint32_t i) const;
  std::optional<Group> FindGroup(uint64_t id) const;
  const collectors::TaskInfo* DepTaskOf(uint64_t id) const;
  std::string BaseName(int func_id) const;
  std::string Label(uint64_t task_id, int func_id, bool spmd) const;
  // A label up to its task display ("<base>("), as text and as a JSON string
  // body (escaped, no quotes): kept per (func_id, spmd), not built per row.
  struct LabelText {
    std::string json, raw;
  };
  const LabelText& LabelHead(int func_id, bool spmd) const;
  // The "N: [t1, t2]" hint of a task's successors (fanout) or predecessors into `s`.
  void PeerHint(uint64_t id, bool fanout, std::string* s) const;
  void EmitProcessMetadata();

  // --- Worker View (worker_view.cc) ------------------------------------------------
  // The fields both task-slice views begin with, up to the first arg
  // ("event-hint": "Task:<display>, FuncId:N, CoreId:N"). `label_head` is
  // LabelHead's; the label ends with the task's display.
  template <typename Event>
  static Event& TaskSlice(Event& e, uint64_t event_id, const LabelText& label_head,
                          uint64_t task_id, int pid, int tid, double ts, double dur, int func_id,
                          int core_id);
  void EmitWorkerView();
  uint64_t WorkerEv(uint32_t row) const { return first_worker_ev_ + row; }

  // --- Scheduler View (scheduler_view.cc) -----------------------------------------
  void EmitSchedulerView();
  // Scheduler View bar of a row (TaskRow::slot = 1-based offset, 0 = none).
  uint64_t SchedEv(uint32_t row) const {
    uint32_t s = d_.tasks[row].slot;
    return s == 0 ? 0 : first_sched_ev_ + s - 1;
  }
  int SchedTidOf(uint32_t row) const {
    const collectors::TaskRow& r = d_.tasks[row];
    return CoreTid(r.core_id) + (r.flags >> kLaneShift);
  }

  // --- AICPU Scheduler (scheduler_phases.cc) --------------------------------------
  Status ScanSchedPhases();
  // Calls fn for each scheduler phase in file order: with the fast reader
  // (sched_phase_scan.h) when ScanSchedPhases could read them all with it,
  // else with the records' generic reader.
  Status ForEachSchedPhase(const std::function<void(size_t, const collectors::SchedPhase&)>& fn);
  Status EmitSchedPhases();
  int ThreadOfCore(int core);
  // The complete bar (index) of `thread` that a finish at `finish` µs falls
  // in or before; kNoBar when none.
  static constexpr size_t kNoBar = SIZE_MAX;
  size_t FindCompleteBar(int thread, double finish) const;
  uint64_t CompleteEv(size_t bar) const { return first_complete_ev_ + bar; }
  void EmitOverhead();

  // --- orchestrator, markers, graph execution (orchestrator_view.cc) --------------
  // A marker bar on the Worker View's AICPU lanes; `args(e)` gives its args.
  template <typename Args>
  void Marker(uint64_t task_id, int tid, double ts, double dur, const std::string& name,
              const char* cname, const Args& args);
  std::string MarkerLabel(uint64_t task_id) const;
  Status EmitMarkersAndOrch();
  void EmitGraphExecution();

  // --- flows (flows.cc) -------------------------------------------------------------
  std::vector<uint32_t> AnchorRows(const Group& g, bool worker_view) const;
  void AnchorRows(const Group& g, bool worker_view, std::vector<uint32_t>* out) const;
  // Anchors of task `id`, whose group (if it has rows) is `g`.
  void WorkerAnchors(uint64_t id, const std::optional<Group>& g, std::vector<Anchor>* out) const;
  int FanCount(uint64_t id, const std::optional<Group>& g) const;
  void EmitDependencyFlows();
  // The complete bar holding the last finish of task `g` (kNoBar: none);
  // `*last_row` is that row.
  size_t CompleteBarOf(const Group& g, uint32_t* last_row) const;
  // The complete, complete→ready, submit→dispatch and dispatch arrows, in
  // that order.
  Status EmitCompleteAndDispatchFlows();
  void EmitCompleteFlows();
  Status EmitReadyAndSubmitFlows();  // the submits' re-read may fail
  void EmitDispatchFlows();

  collectors::SwimlaneRecords& d_;
  const collectors::TaskGraph* deps_;
  const collectors::NameMap& names_;
  bool overhead_, verbose_;
  TraceWriter& trace_;
  std::ostream& err_;
  SchedPhaseDigest* digest_;

  struct Outer {
    double first_prepare = std::numeric_limits<double>::infinity();
    double prepare_us = 0;
    int slices = 0;
  };
  struct OrchEnd {
    uint64_t task_id;
    int tid;
    double end;
  };

  bool has_sched_view_ = false;
  uint64_t first_worker_ev_ = 0;  // Worker View bar of row i has id first_worker_ev_ + i
  uint64_t first_sched_ev_ = 0;   // first Scheduler View bar id
  uint64_t first_complete_ev_ = 0;
  std::vector<bool> has_resolve_;  // per sched thread
  CompleteBars complete_bars_;     // per sched thread, each sorted by start
  // Per complete bar: the finish rows in it, one byte each (one per task at
  // level 4); from 255 on, the rest in attributed_overflow_.
  std::vector<uint8_t> complete_attributed_;
  std::map<size_t, uint32_t> attributed_overflow_;
  std::vector<std::vector<Bar>> dispatch_bars_;  // read on demand for core voting
  std::vector<std::pair<size_t, collectors::SchedPhase>> marker_phases_;  // dummy / skip
  std::map<uint64_t, Outer> outers_;  // graph_prepare by outer task
  Status sched_status_;
  std::multimap<uint64_t, Anchor> markers_;
  std::vector<OrchEnd> orch_end_;  // a task's first submit end, unless orch_cursor_
  bool orch_cursor_ = false;       // the flows re-read the (task-ordered) submits instead
  mutable std::vector<std::pair<int, uint32_t>> anchor_scratch_;  // AnchorRows, per call
  mutable std::vector<uint32_t> row_scratch_;                     // WorkerAnchors, per call
  bool fast_phases_ = false;  // ScanSchedPhases read every phase with the fast reader
  bool voted_ = false;
  mutable std::map<std::pair<int, bool>, LabelText> label_heads_;  // LabelHead
  std::map<int, int> voted_core_thread_;
};

template <typename Event>
Event& DispatchConverter::TaskSlice(Event& e, uint64_t event_id, const LabelText& label_head,
                                    uint64_t task_id, int pid, int tid, double ts, double dur,
                                    int func_id, int core_id) {
  char tail[kTaskDisplayChars + 1];  // "<display>)"
  char* p = TaskDisplayTo(tail, task_id);
  const std::string_view display(tail, static_cast<size_t>(p - tail));
  *p++ = ')';
  e.Id(event_id).Name(label_head.json, label_head.raw, {tail, static_cast<size_t>(p - tail)});
  e.At(pid, tid, ts).Dur(dur);
  // "Task:<display>, FuncId:<int>, CoreId:<int>"
  return e.PerTaskStr("event-hint", EventText()
                                        .Lit("Task:")
                                        .Lit(display)
                                        .Lit(", FuncId:")
                                        .Int(func_id)
                                        .Lit(", CoreId:")
                                        .Int(core_id)
                                        .view());
}

}  // namespace dfx::view
