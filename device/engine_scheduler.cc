#include "device/engine_scheduler.h"

#include <algorithm>
#include <string>
#include <utility>

namespace dfx::device {

std::string TaskLabel(uint64_t task_id) {
  uint64_t ring = task_id >> 32, local = task_id & 0xffffffffu;
  return ring == 0 ? "t" + std::to_string(local)
                   : "r" + std::to_string(ring) + "t" + std::to_string(local);
}

EngineScheduler::EngineScheduler(const ChipOptions& opt, const ChipModel& model,
                                 const LoweredProgram& lp, int aic, int aiv, int sched_threads,
                                 RecorderHooks* hooks, DeviceMemory* memory, RunReport* report)
    : opt_(opt),
      model_(model),
      lp_(lp),
      prog_(*lp.program),
      hooks_(hooks),
      memory_(memory),
      report_(report),
      sched_threads_(sched_threads) {
  for (int i = 0; i < aic; ++i) cores_.push_back(CoreState{CoreType::kAic});
  for (int i = 0; i < aiv; ++i) cores_.push_back(CoreState{CoreType::kAiv});
  for (size_t c = 0; c < cores_.size(); ++c)
    cores_[c].thread = static_cast<int>(c) % sched_threads_;
  tasks_.resize(lp.tasks.size());
  for (size_t i = 0; i < lp.tasks.size(); ++i) tasks_[i].refs = lp.tasks[i].hold_refs;
}

std::string EngineScheduler::RingFull(const LoweredTask& t) const {
  const RingState& r = rings_[t.ring];
  int ring = t.ring;
  if (r.head - r.tail >= lp_.rings.task_window[ring])
    return "ring " + std::to_string(ring) + " task window (" +
           std::to_string(lp_.rings.task_window[ring]) + " slots)";
  if (r.heap_alloc + t.heap_bytes - r.heap_reclaimed > lp_.rings.heap[ring])
    return "ring " + std::to_string(ring) + " heap (" + std::to_string(lp_.rings.heap[ring]) +
           " bytes)";
  if (r.dep_top + t.preds.size() - r.dep_tail > lp_.rings.dep_pool[ring])
    return "ring " + std::to_string(ring) + " dep pool (" +
           std::to_string(lp_.rings.dep_pool[ring]) + " entries)";
  if (tensormap_live_ + static_cast<uint64_t>(t.tensormap_inserts) > lp_.rings.tensormap)
    return "tensormap (" + std::to_string(lp_.rings.tensormap) + " entries)";
  return "";
}

bool EngineScheduler::InFlight() const {
  if (!failed_)
    for (const auto& q : ready_)
      if (!q.empty()) return true;
  for (const CoreState& c : cores_)
    if (c.busy) return true;
  return false;
}

bool EngineScheduler::OrchestratorStep(uint64_t now, std::string* why) {
  while (next_event_ < lp_.events.size()) {
    const LoweredEvent& ev = lp_.events[next_event_];
    switch (ev.kind) {
      case LoweredEvent::Kind::kScopeBegin:
      case LoweredEvent::Kind::kScopeEnd:
        ScopeSampleAt(ev);
        ++next_event_;
        break;
      case LoweredEvent::Kind::kRelease:
        Unref(ev.index);
        ++next_event_;
        break;
      case LoweredEvent::Kind::kSubmit: {
        const LoweredTask& t = lp_.tasks[ev.index];
        std::string full = RingFull(t);
        if (!full.empty()) {
          *why = full;
          return false;
        }
        SubmitTask(ev.index, now);
        ++next_event_;
        return true;
      }
    }
  }
  return true;
}

void EngineScheduler::ScopeSampleAt(const LoweredEvent& ev) {
  const LoweredScope& s = lp_.scopes[ev.index];
  hooks_->RecordScope(s, ev.kind == LoweredEvent::Kind::kScopeBegin, rings_[std::min(s.depth, 3)],
                      tensormap_live_);
}

void EngineScheduler::SubmitTask(int index, uint64_t start) {
  const LoweredTask& t = lp_.tasks[index];
  RingState& r = rings_[t.ring];
  r.head++;
  r.tasks.push_back(index);
  r.heap_alloc += t.heap_bytes;
  r.dep_top += t.preds.size();
  tensormap_live_ += static_cast<uint64_t>(t.tensormap_inserts);
  TaskState& ts = tasks_[index];
  ts.submitted = true;
  ++submitted_;
  for (int p : t.preds) {
    if (!tasks_[p].done) {
      ts.remaining_preds++;
      tasks_[p].successors.push_back(index);
    }
  }
  // Threaded, the dep_gen record waits for the lock's release (FlushDepGen).
  hooks_->Submitted(index);
  if (ts.remaining_preds == 0) ready_[QueueOf(index)].push_back(index);
  if (hooks_->swimlane_level() >= 4) {
    uint64_t end = opt_.virtual_clock ? start + kSubmitCycles : NowCycles();
    hooks_->RecordSubmitPhase(submit_idx_, t.task_id, start, end);
    orch_end_ = end;
  }
  ++submit_idx_;
}

void EngineScheduler::Unref(int index) {
  TaskState& ts = tasks_[index];
  if (--ts.refs > 0) return;
  ts.consumed = true;
  const LoweredTask& t = lp_.tasks[index];
  RingState& r = rings_[t.ring];
  while (r.tail < r.head && tasks_[r.tasks[r.tail]].consumed) {
    const LoweredTask& old = lp_.tasks[r.tasks[r.tail]];
    r.heap_reclaimed += old.heap_bytes;
    r.dep_tail += old.preds.size();
    tensormap_live_ -= static_cast<uint64_t>(old.tensormap_inserts);
    ++r.tail;
    ++reclaimed_;
  }
}

void EngineScheduler::TaskDone(int index) {
  TaskState& ts = tasks_[index];
  ts.done = true;
  ++completed_;
  if (opt_.progress) opt_.progress->tasks_done.store(completed_, std::memory_order_relaxed);
  for (int s : ts.successors) {
    if (--tasks_[s].remaining_preds == 0 && !failed_) ready_[QueueOf(s)].push_back(s);
  }
  for (int p : lp_.tasks[index].ref_targets) Unref(p);
  Unref(index);
}

KernelCall EngineScheduler::MakeCall(int index, int block) {
  const LoweredTask& t = lp_.tasks[index];
  KernelCall call;
  call.kernel = &prog_.kernels[t.kernel];
  call.scalars = &t.statement->submit.scalars;
  call.block_idx = block;
  call.block_num = t.block_num;
  for (const LoweredArg& a : t.args) {
    KernelTensor kt;
    kt.dtype = lp_.buffers[a.buffer].dtype;
    kt.data = memory_->BufferData(a.buffer) + a.offset * DTypeSize(kt.dtype);
    kt.numel = a.numel;
    kt.shape = a.shape;
    if (a.type == ArgType::kInput || a.type == ArgType::kInout) call.ins.push_back(kt);
    if (a.type != ArgType::kInput) call.outs.push_back(std::move(kt));
  }
  return call;
}

Status EngineScheduler::KernelError(int index, int block, const Status& s) {
  const LoweredTask& t = lp_.tasks[index];
  const Kernel& k = prog_.kernels[t.kernel];
  return Internal("kernel \"" + k.name + "\" (func_id " + std::to_string(k.func_id) +
                  ") failed on task " + TaskLabel(t.task_id) + " (task_id " +
                  std::to_string(t.task_id) + ", block " + std::to_string(block) + " of " +
                  std::to_string(t.block_num) + ", " + t.statement->json_path +
                  "): " + s.message());
}

void EngineScheduler::RetireBlock(int core, uint64_t finish) {
  CoreState& c = cores_[core];
  // The makespan, kept whatever the collectors (under mu_ when threaded).
  first_dispatch_cycles_ = std::min(first_dispatch_cycles_, c.dispatch_cycles);
  last_retire_cycles_ = std::max(last_retire_cycles_, finish);
  int index = c.task;
  const LoweredTask& t = lp_.tasks[index];
  hooks_->RecordAicpuTask(core, c, finish);
  if (report_)
    report_->blocks.push_back(
        {t.task_id, index, c.block, core, c.dispatch_cycles, c.start_cycles, c.end_cycles, finish});
  if (!c.kernel_status.ok()) Fail(KernelError(index, c.block, c.kernel_status));
  if (c.kernel_status.ok()) hooks_->RecordPmu(core, c, t);
  c.busy = false;
  c.task = -1;
  TaskState& ts = tasks_[index];
  if (++ts.blocks_done == t.block_num) {
    CaptureStage(index, collectors::DumpStage::kAfterCompletion);
    TaskDone(index);
  }
}

int EngineScheduler::PopBlock(int q, int* block) {
  while (!ready_[q].empty()) {
    int index = ready_[q].front();
    TaskState& ts = tasks_[index];
    if (ts.blocks_dispatched == 0) {
      CaptureStage(index, collectors::DumpStage::kBeforeDispatch);
      if (failed_) return -1;
    }
    *block = ts.blocks_dispatched++;
    if (ts.blocks_dispatched == lp_.tasks[index].block_num) ready_[q].pop_front();
    return index;
  }
  return -1;
}

void EngineScheduler::RecordPhase(int thread, collectors::SchedPhaseKind kind, uint64_t start,
                                  uint64_t end, uint32_t processed, const int16_t at_start[3],
                                  uint32_t hit, uint32_t miss) {
  if (hooks_->swimlane_level() < 3) return;
  collectors::SchedPhaseRecord r;
  r.kind = kind;
  r.start_cycles = start;
  r.end_cycles = std::max(end, start);
  r.loop_iter = loop_iter_[thread];
  r.tasks_processed = processed;
  r.pop_hit = hit;
  r.pop_miss = miss;
  for (int i = 0; i < 3; ++i) r.shared_at_start[i] = at_start[i];
  Depths(r.shared_at_end);
  hooks_->RecordPhase(thread, r);
}

bool EngineScheduler::ReleasePhase(int thread, uint64_t reclaimed_before, uint64_t start,
                                   uint64_t end) {
  if (reclaimed_ <= reclaimed_before) return false;
  int16_t at_start[3];
  Depths(at_start);
  RecordPhase(thread, collectors::SchedPhaseKind::kRelease, start, end,
              static_cast<uint32_t>(reclaimed_ - reclaimed_before), at_start);
  return true;
}

Status EngineScheduler::DeadlockError(const std::string& why) const {
  const LoweredTask& t = lp_.tasks[lp_.events[next_event_].index];
  return FailedPrecondition(
      "ring deadlock: submit of task " + TaskLabel(t.task_id) + " (" + t.statement->json_path +
      " in " + prog_.origin + ") waits for space in the " + why +
      ", but every task holding it is finished and still referenced (its outputs are bound to "
      "tensor names or its scope is open), so nothing can be reclaimed; raise that ring's size "
      "(ring_task_window / ring_heap / ring_dep_pool) or close scopes earlier");
}

bool EngineScheduler::SchedHasWork(int thread) const {
  for (const CoreState& c : cores_) {
    if (c.thread != thread) continue;
    if (c.busy && c.finished) return true;
    if (!c.busy && !failed_ && !ready_[c.type == CoreType::kAic ? 0 : 1].empty()) return true;
  }
  return false;
}

void EngineScheduler::Fail(Status s) {
  if (status_.ok()) status_ = std::move(s);
  failed_ = true;
  if (on_fail_) on_fail_();
}

void EngineScheduler::CaptureStage(int index, collectors::DumpStage stage) {
  if (failed_) return;
  Status s = hooks_->CaptureStage(index, stage, *memory_);
  if (!s.ok()) Fail(std::move(s));
}

}  // namespace dfx::device
