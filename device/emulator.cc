#include "device/emulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <thread>

#include "collectors/recorders.h"
#include "common/clock.h"
#include "common/file_util.h"
#include "common/json.h"
#include "common/log.h"
#include "device/chip_threads.h"
#include "device/kernels.h"
#include "device/lowering.h"

namespace dfx::device {

namespace fs = std::filesystem;
using collectors::CoreKind;

namespace {

std::string TaskLabel(uint64_t task_id) {
  uint64_t ring = task_id >> 32, local = task_id & 0xffffffffu;
  return ring == 0 ? "t" + std::to_string(local)
                   : "r" + std::to_string(ring) + "t" + std::to_string(local);
}

// Virtual-clock costs of the runtime's own work, in device cycles.
constexpr uint64_t kVirtualStart = 1000000;
constexpr uint64_t kSubmitCycles = 40;
constexpr uint64_t kDispatchCycles = 12;
constexpr uint64_t kReceiveCycles = 8;
constexpr uint64_t kFinishCycles = 6;
constexpr uint64_t kCompleteCycles = 10;

void FillInit(const TensorDecl& t, uint8_t* data) {
  uint64_t n = t.Numel();
  uint64_t state = t.init.seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  for (uint64_t i = 0; i < n; ++i) {
    double v = 0;
    switch (t.init.kind) {
      case InitKind::kZeros:
        v = 0;
        break;
      case InitKind::kOnes:
        v = 1;
        break;
      case InitKind::kRange:
        v = t.init.range_start + t.init.range_step * static_cast<double>(i);
        break;
      case InitKind::kRandom: {  // splitmix64 -> uniform [-1, 1)
        state += 0x9e3779b97f4a7c15ull;
        uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        v = static_cast<double>(z >> 11) / static_cast<double>(1ull << 53) * 2.0 - 1.0;
        break;
      }
      case InitKind::kValues:
        v = t.init.values[i];
        break;
    }
    StoreElement(data, t.dtype, i, static_cast<float>(v));
  }
}

}  // namespace

// All the state of one run. Threaded mode guards it with mu_; virtual mode
// runs it on one thread.
class Engine final {
 public:
  Engine(const ChipOptions& opt, const ChipModel& model, int aic, int aiv, const LoweredProgram& lp,
         const config::RunConfig& config, collectors::DfxCollectors* dfx, RunReport* report,
         ChipThreads* host_threads, DeviceHeap* heaps)
      : opt_(opt),
        model_(model),
        lp_(lp),
        prog_(*lp.program),
        report_(report),
        threads_(host_threads),
        heaps_(heaps) {
    for (int i = 0; i < aic; ++i) cores_.push_back(CoreState{CoreType::kAic});
    for (int i = 0; i < aiv; ++i) cores_.push_back(CoreState{CoreType::kAiv});
    int threads = 1;
    if (!opt.virtual_clock && config.aicpu_thread_num > 1)
      threads = std::min(config.aicpu_thread_num - 1, model.max_aicpu_threads - 1);
    sched_threads_ = std::max(1, std::min<int>(threads, static_cast<int>(cores_.size())));
    for (size_t c = 0; c < cores_.size(); ++c)
      cores_[c].thread = static_cast<int>(c) % sched_threads_;
    tasks_.resize(lp.tasks.size());
    for (size_t i = 0; i < lp.tasks.size(); ++i) tasks_[i].refs = lp.tasks[i].hold_refs;
    swimlane_ = dfx ? dfx->swimlane() : nullptr;
    dep_gen_ = dfx ? dfx->dep_gen() : nullptr;
    dump_ = dfx ? dfx->args_dump() : nullptr;
    pmu_ = dfx ? dfx->pmu() : nullptr;
    scope_ = dfx ? dfx->scope_stats() : nullptr;
    swimlane_level_ = swimlane_ ? swimlane_->level() : 0;
    dump_level_ = dump_ ? dump_->level() : 0;
    if (swimlane_level_ >= 3)
      for (size_t c = 0; c < cores_.size(); ++c)
        swimlane_->SetCoreToThread(static_cast<uint32_t>(c), cores_[c].thread);
  }

  Status AllocateMemory() {
    for (size_t b = 0; b < lp_.buffers.size(); ++b) {
      const Buffer& buf = lp_.buffers[b];
      if (!buf.external) continue;
      auto mem = std::make_unique<uint8_t[]>(buf.bytes);
      const TensorDecl& decl = prog_.tensors[buf.decl];
      auto held =
          decl.resident && resident_ ? resident_->find(decl.name) : ResidentState::iterator();
      if (decl.resident && resident_ && held != resident_->end()) {
        const ResidentTensor& r = held->second;
        const uint64_t bytes = decl.Numel() * DTypeSize(decl.dtype);
        if (r.dtype != decl.dtype || r.bytes.size() != bytes) {
          return FailedPrecondition(fmt::format(
              "{}: resident tensor \"{}\" is {} {} bytes in this program, but the chip's device "
              "memory holds a {} value of {} bytes from an earlier dispatch; give it another "
              "name or keep its dtype and shape",
              prog_.origin, decl.name, DTypeName(decl.dtype), bytes, DTypeName(r.dtype),
              r.bytes.size()));
        }
        std::memcpy(mem.get(), r.bytes.data(), bytes);
      } else {
        FillInit(decl, mem.get());
      }
      external_[b] = std::move(mem);
    }
    for (const LoweredTask& t : lp_.tasks) {
      if (!t.has_heap || heap_mem_[t.ring]) continue;
      // Uninitialised: pages are only touched where outputs are written.
      // The chip keeps it for the next dispatch with the same ring size (a
      // heap is tens of MiB: mapping and unmapping it cost every dispatch).
      DeviceHeap& heap = heaps_[t.ring];
      const uint64_t bytes = lp_.rings.heap[t.ring];
      if (heap.bytes != bytes) {
        heap.mem.reset();
        heap.bytes = 0;
        heap.mem.reset(new (std::nothrow) uint8_t[bytes]);
        if (!heap.mem)
          return Unavailable("cannot allocate the " + std::to_string(bytes) +
                             "-byte heap of ring " + std::to_string(t.ring) + "; lower ring_heap");
        heap.bytes = bytes;
      }
      heap_mem_[t.ring] = heap.mem.get();
    }
    return Status::Ok();
  }

  // Device memory that outlives this run (may be null: nothing is resident).
  void set_resident(ResidentState* resident) { resident_ = resident; }

  // Writes every resident tensor's buffer back to the chip's device memory
  // (in-place updates persist; a rebinding OUTPUT is a new value and does not).
  void SaveResident() {
    if (!resident_) return;
    for (size_t b = 0; b < lp_.buffers.size(); ++b) {
      const Buffer& buf = lp_.buffers[b];
      auto mem = external_.find(static_cast<int>(b));
      if (!buf.external || !prog_.tensors[buf.decl].resident || mem == external_.end()) continue;
      const TensorDecl& decl = prog_.tensors[buf.decl];
      ResidentTensor& r = (*resident_)[decl.name];
      r.dtype = decl.dtype;
      r.shape = decl.shape;
      r.bytes.assign(mem->second.get(), mem->second.get() + decl.Numel() * DTypeSize(decl.dtype));
    }
  }

  uint8_t* BufferData(int b) {
    const Buffer& buf = lp_.buffers[b];
    if (buf.external) return external_[b].get();
    return heap_mem_[buf.ring] + buf.heap_offset;
  }

  Status Run() {
    if (opt_.progress) {
      opt_.progress->tasks_done.store(0, std::memory_order_relaxed);
      opt_.progress->tasks_total.store(lp_.tasks.size(), std::memory_order_relaxed);
    }
    DFX_RETURN_IF_ERROR(AllocateMemory());
    if (opt_.virtual_clock) {
      RunVirtual();
    } else {
      RunThreaded();
    }
    return status_;
  }

  void CollectTensors() {
    if (!report_) return;
    // Current binding of every base name: replay the bindings from the stream.
    std::vector<int> binding(prog_.tensors.size(), -1);
    for (size_t b = 0; b < lp_.buffers.size(); ++b)
      if (lp_.buffers[b].external) binding[lp_.buffers[b].decl] = static_cast<int>(b);
    for (size_t i = 0; i < lp_.tasks.size() && i < submitted_; ++i)
      for (const LoweredArg& a : lp_.tasks[i].args)
        if (a.type == ArgType::kOutput) binding[a.decl] = a.buffer;
    for (size_t d = 0; d < prog_.tensors.size(); ++d) {
      if (binding[d] < 0) continue;
      const Buffer& buf = lp_.buffers[binding[d]];
      std::vector<float> v(buf.numel);
      const uint8_t* data = BufferData(binding[d]);
      for (uint64_t i = 0; i < buf.numel; ++i) v[i] = LoadElement(data, buf.dtype, i);
      report_->tensors[prog_.tensors[d].name] = std::move(v);
    }
  }

  uint64_t submitted() const { return submitted_; }
  uint64_t completed() const { return completed_; }
  // First block dispatched to last block retired (chip cycles; 0: none ran).
  uint64_t makespan_cycles() const {
    return last_retire_cycles_ > first_dispatch_cycles_
               ? last_retire_cycles_ - first_dispatch_cycles_
               : 0;
  }
  uint64_t stalls() const { return stalls_; }
  int sched_threads() const { return sched_threads_; }
  int core_count() const { return static_cast<int>(cores_.size()); }

 private:
  struct TaskState {
    int refs = 0;
    int remaining_preds = 0;
    int blocks_dispatched = 0;
    int blocks_done = 0;
    bool submitted = false;
    bool done = false;
    bool consumed = false;
    std::vector<int> successors;
  };
  struct CoreState {
    CoreType type;
    int thread = 0;
    bool busy = false;
    int task = -1;
    int block = 0;
    uint32_t reg_task_id = 0;
    uint64_t dispatch_cycles = 0, start_cycles = 0, end_cycles = 0;
    Status kernel_status;
    // The block's estimated work, kept when PMU is on: computed where the
    // block ran (outside the lock), recorded when it retires.
    collectors::PmuWork pmu_work;
    bool finished = false;  // threaded: its block ran and waits to be retired
    CoreState(CoreType t) : type(t) {}
    CoreState(CoreState&& o) noexcept : type(o.type), thread(o.thread) {}
  };
  struct RingState {
    uint64_t head = 0, tail = 0;                  // task window (local ids)
    uint64_t heap_alloc = 0, heap_reclaimed = 0;  // monotonic bytes
    uint64_t dep_top = 0, dep_tail = 0;           // monotonic entries
    std::vector<int> tasks;                       // task index by local id
  };

  uint64_t NowCycles() const {
    return NsToCycles(MonotonicClock::Instance().NowNs(), model_.clock_freq_hz);
  }

  int QueueOf(int task) const {
    return prog_.kernels[lp_.tasks[task].kernel].core_type == CoreType::kAic ? 0 : 1;
  }
  void Depths(int16_t out[3]) const {
    for (int i = 0; i < 3; ++i)
      out[i] = static_cast<int16_t>(std::min<size_t>(ready_[i].size(), 32767));
  }

  // Records the run's first error; nothing new is submitted or dispatched
  // afterwards, blocks already on cores finish. Called with mu_ held in
  // threaded mode.
  void Fail(Status s) {
    if (status_.ok()) status_ = std::move(s);
    failed_ = true;
    orch_wake_.Notify();
    WakeSchedulers();
  }

  // ---- orchestrator ------------------------------------------------------

  // Why the next submit cannot proceed, or "" when it can.
  std::string RingFull(const LoweredTask& t) const {
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

  // Work that will still make progress: ready tasks (unless the run failed,
  // when nothing new is dispatched) and blocks on cores.
  bool InFlight() const {
    if (!failed_)
      for (const auto& q : ready_)
        if (!q.empty()) return true;
    for (const CoreState& c : cores_)
      if (c.busy) return true;
    return false;
  }

  // Processes orchestrator events until one submit went through (or the
  // stream ended). Returns false when blocked on a ring; `*why` says which.
  bool OrchestratorStep(uint64_t now, std::string* why) {
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

  void ScopeSampleAt(const LoweredEvent& ev) {
    if (!scope_) return;
    const LoweredScope& s = lp_.scopes[ev.index];
    collectors::ScopeSample sample;
    std::strncpy(sample.site, s.site.c_str(), sizeof(sample.site) - 1);
    sample.begin = ev.kind == LoweredEvent::Kind::kScopeBegin;
    sample.depth = static_cast<int16_t>(s.depth);
    sample.ring = static_cast<int16_t>(std::min(s.depth, 3));
    const RingState& r = rings_[sample.ring];
    sample.task_window_start = static_cast<int64_t>(r.tail);
    sample.task_window_end = static_cast<int64_t>(r.head);
    sample.heap_start = r.heap_reclaimed;
    sample.heap_end = r.heap_alloc;
    sample.dep_pool_start = static_cast<int64_t>(r.dep_tail);
    sample.dep_pool_end = static_cast<int64_t>(r.dep_top);
    sample.tensormap = static_cast<int64_t>(tensormap_live_);
    scope_->Record(sample);
  }

  void SubmitTask(int index, uint64_t start) {
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
    if (dep_gen_) {
      // Threaded, the record waits for the lock's release (FlushDepGen).
      if (opt_.virtual_clock) {
        RecordDepGen(t);
      } else {
        dep_pending_.push_back(index);
      }
    }
    if (ts.remaining_preds == 0) ready_[QueueOf(index)].push_back(index);
    if (swimlane_level_ >= 4) {
      uint64_t end = opt_.virtual_clock ? start + kSubmitCycles : NowCycles();
      swimlane_->RecordOrchPhase(0, static_cast<uint32_t>(submit_idx_), t.task_id, start, end);
      orch_end_ = end;
    }
    ++submit_idx_;
  }

  void FillTensorView(const LoweredArg& a, collectors::TensorView* v) const {
    v->tensor_id = a.tensor_id;
    std::memcpy(v->dtype, DTypeField(lp_.buffers[a.buffer].dtype).data(), sizeof(v->dtype));
    FillViewShape(a.shape, a.offset, v);
  }
  // A contiguous view's shape, strides and offset (dims past the shape's
  // are left as they are: nothing reads them).
  static void FillViewShape(const Shape& shape, uint64_t offset, collectors::TensorView* v) {
    v->ndims = static_cast<uint8_t>(shape.size());
    uint32_t stride = 1;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      v->shape[d] = shape[d];
      v->strides[d] = stride;
      stride *= shape[d];
    }
    v->start_offset = offset;
  }
  // TensorView::dtype of `t` as strncpy leaves it (the name, NUL-padded),
  // made once per process, so a view copies 12 bytes instead of a string.
  using DTypeText = std::array<char, sizeof(collectors::TensorView::dtype)>;
  static const DTypeText& DTypeField(DType t) {
    static const std::array<DTypeText, kDTypeCount> fields = [] {
      std::array<DTypeText, kDTypeCount> f{};
      for (size_t i = 0; i < f.size(); ++i)
        std::strncpy(f[i].data(), DTypeName(static_cast<DType>(i)), f[i].size() - 1);
      return f;
    }();
    return fields[static_cast<size_t>(t)];
  }

  void RecordDepGen(const LoweredTask& t) {
    for (int ti : t.new_tensors) dep_gen_->RecordTensor(lp_.tensors[ti]);
    // One record reused for every submit: building a fresh one zeroed its 32
    // arg slots (2.8 KB) per task on the orchestrator's path. Every field is
    // set below, and only the first arg_count args are ever read.
    collectors::DepGenTaskRecord& rec = dep_rec_;
    rec.task_id = t.task_id;
    rec.manual_scope = t.manual;
    rec.early_dispatch = false;
    std::fill(std::begin(rec.kernel_ids), std::end(rec.kernel_ids), -1);
    const Kernel& k = prog_.kernels[t.kernel];
    // Kernel slots [aic, aiv0, aiv1]: an AIC task fills slot 0, an AIV task slot 1.
    if (k.core_type == CoreType::kAic) {
      rec.kernel_ids[0] = k.func_id;
    } else {
      rec.kernel_ids[1] = k.func_id;
    }
    rec.block_num = t.block_num;
    rec.arg_count = static_cast<uint8_t>(t.args.size());
    for (size_t i = 0; i < t.args.size(); ++i) {
      collectors::DepGenArg& a = rec.args[i];
      a.idx = static_cast<int32_t>(i);
      a.type = static_cast<collectors::ArgType>(static_cast<int>(t.args[i].type));
      a.has_tensor = true;
      FillTensorView(t.args[i], &a.view);
    }
    edge_buf_.clear();
    for (const LoweredEdge& e : t.edges) {
      collectors::DepGenEdgeRecord er;
      er.pred = lp_.tasks[e.pred].task_id;
      er.succ = t.task_id;
      er.arg = e.arg;
      er.source = e.source;
      er.flag_wait = true;
      er.flag_retain = e.source != collectors::EdgeSource::kTensormap;
      er.overlap = e.overlap;
      // The consumer's view is its arg's, filled above; the producer's is
      // the same tensor over the range the producer wrote.
      if (e.source != collectors::EdgeSource::kExplicit) er.consumer = rec.args[e.arg].view;
      if (e.source == collectors::EdgeSource::kTensormap) {
        er.producer = er.consumer;
        FillViewShape(e.producer_shape, e.producer_offset, &er.producer);
      }
      edge_buf_.push_back(er);
    }
    dep_gen_->RecordSubmit(rec, edge_buf_);
  }

  // ---- retirement ----------------------------------------------------------

  void Unref(int index) {
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

  void TaskDone(int index) {
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

  // ---- args dump ------------------------------------------------------------

  void CaptureStage(int index, collectors::DumpStage stage) {
    if (!dump_ || failed_) return;
    const LoweredTask& t = lp_.tasks[index];
    if (dump_level_ == 1 && !t.any_dump) return;  // partial: only marked args
    const Kernel& k = prog_.kernels[t.kernel];
    bool before = stage == collectors::DumpStage::kBeforeDispatch;
    for (size_t i = 0; i < t.args.size(); ++i) {
      const LoweredArg& a = t.args[i];
      bool reads = a.type == ArgType::kInput || a.type == ArgType::kInout;
      bool writes = a.type != ArgType::kInput;
      if (before ? !reads : !writes) continue;
      bool payload = dump_level_ == 2 || a.dump;
      if (dump_level_ == 1 && !a.dump) continue;
      collectors::DumpArgMeta m;
      m.task_id = t.task_id;
      m.func_ids[0] = k.func_id;
      m.func_count = 1;
      m.arg_index = static_cast<int32_t>(i);
      m.role = a.type == ArgType::kInput   ? collectors::DumpRole::kInput
               : a.type == ArgType::kInout ? collectors::DumpRole::kInout
                                           : collectors::DumpRole::kOutput;
      m.stage = stage;
      m.kind = collectors::DumpKind::kTensor;
      std::strncpy(m.dtype, DTypeName(lp_.buffers[a.buffer].dtype), sizeof(m.dtype) - 1);
      m.ndims = static_cast<uint8_t>(a.shape.size());
      int64_t stride = 1;
      for (int d = static_cast<int>(a.shape.size()) - 1; d >= 0; --d) {
        m.shape[d] = a.shape[d];
        m.strides[d] = stride;
        stride *= a.shape[d];
      }
      m.start_offset = static_cast<int64_t>(a.offset);
      size_t es = DTypeSize(lp_.buffers[a.buffer].dtype);
      std::span<const uint8_t> bytes;
      if (payload) bytes = {BufferData(a.buffer) + a.offset * es, a.numel * es};
      Status s = dump_->Capture(m, bytes);
      if (!s.ok()) {
        Fail(s.WithContext("args dump of task " + TaskLabel(t.task_id) + " (kernel \"" + k.name +
                           "\")"));
        return;
      }
    }
    if (before && dump_level_ == 2) {
      const auto& scalars = t.statement->submit.scalars;
      for (size_t i = 0; i < scalars.size(); ++i) {
        collectors::DumpArgMeta m;
        m.task_id = t.task_id;
        m.func_ids[0] = k.func_id;
        m.arg_index = static_cast<int32_t>(t.args.size() + i);
        m.role = collectors::DumpRole::kInput;
        m.stage = stage;
        m.kind = collectors::DumpKind::kScalar;
        std::strncpy(m.dtype, DTypeName(scalars[i].dtype), sizeof(m.dtype) - 1);
        m.scalar_bits = ScalarBits(scalars[i].dtype, scalars[i].value);
        Status s = dump_->Capture(m, {});
        if (!s.ok()) {
          Fail(s.WithContext("args dump of task " + TaskLabel(t.task_id)));
          return;
        }
      }
    }
  }

  // ---- kernel calls -----------------------------------------------------------

  KernelCall MakeCall(int index, int block) {
    const LoweredTask& t = lp_.tasks[index];
    KernelCall call;
    call.kernel = &prog_.kernels[t.kernel];
    call.scalars = &t.statement->submit.scalars;
    call.block_idx = block;
    call.block_num = t.block_num;
    for (const LoweredArg& a : t.args) {
      KernelTensor kt;
      kt.dtype = lp_.buffers[a.buffer].dtype;
      kt.data = BufferData(a.buffer) + a.offset * DTypeSize(kt.dtype);
      kt.numel = a.numel;
      kt.shape = a.shape;
      if (a.type == ArgType::kInput || a.type == ArgType::kInout) call.ins.push_back(kt);
      if (a.type != ArgType::kInput) call.outs.push_back(std::move(kt));
    }
    return call;
  }

  Status KernelError(int index, int block, const Status& s) {
    const LoweredTask& t = lp_.tasks[index];
    const Kernel& k = prog_.kernels[t.kernel];
    return Internal("kernel \"" + k.name + "\" (func_id " + std::to_string(k.func_id) +
                    ") failed on task " + TaskLabel(t.task_id) + " (task_id " +
                    std::to_string(t.task_id) + ", block " + std::to_string(block) + " of " +
                    std::to_string(t.block_num) + ", " + t.statement->json_path +
                    "): " + s.message());
  }

  // Scheduler side of a block completion on `core` at `finish`.
  void RetireBlock(int core, uint64_t finish) {
    CoreState& c = cores_[core];
    // The makespan, kept whatever the collectors (under mu_ when threaded).
    first_dispatch_cycles_ = std::min(first_dispatch_cycles_, c.dispatch_cycles);
    last_retire_cycles_ = std::max(last_retire_cycles_, finish);
    int index = c.task;
    const LoweredTask& t = lp_.tasks[index];
    if (swimlane_level_ >= 2)
      swimlane_->RecordAicpuTask(core, c.reg_task_id, c.dispatch_cycles, finish);
    if (report_)
      report_->blocks.push_back({t.task_id, index, c.block, core, c.dispatch_cycles, c.start_cycles,
                                 c.end_cycles, finish});
    if (!c.kernel_status.ok()) Fail(KernelError(index, c.block, c.kernel_status));
    if (pmu_ && c.kernel_status.ok()) {
      const Kernel& k = prog_.kernels[t.kernel];
      pmu_->Record(static_cast<uint32_t>(c.thread), static_cast<uint32_t>(core), t.task_id,
                   k.func_id, c.type == CoreType::kAic ? CoreKind::kAic : CoreKind::kAiv,
                   c.pmu_work);
    }
    c.busy = false;
    c.task = -1;
    TaskState& ts = tasks_[index];
    if (++ts.blocks_done == t.block_num) {
      CaptureStage(index, collectors::DumpStage::kAfterCompletion);
      TaskDone(index);
    }
  }

  // Pops the next block of queue `q`, or -1.
  int PopBlock(int q, int* block) {
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

  void RecordPhase(int thread, collectors::SchedPhaseKind kind, uint64_t start, uint64_t end,
                   uint32_t processed, const int16_t at_start[3], uint32_t hit = 0,
                   uint32_t miss = 0) {
    if (swimlane_level_ < 3) return;
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
    swimlane_->RecordSchedPhase(static_cast<uint32_t>(thread), r);
  }

  // ---- the scheduler's phases, shared by both runners ----------------------------

  // The dispatch phase of scheduler `thread`: in core order, each of its idle
  // cores gets the next ready block of its core type, until the run fails.
  // The runner says what time it is: `dispatch_time()` stamps one dispatch
  // (the virtual clock advances per dispatch), `phase_end()` ends the phase;
  // `start_block(core)` hands the block to the core (a worker thread, or the
  // virtual run of the kernel). Records the phase when it dispatched
  // anything; returns how many blocks it dispatched.
  template <typename DispatchTime, typename PhaseEnd, typename StartBlock>
  uint32_t DispatchPhase(int thread, uint64_t start, DispatchTime dispatch_time, PhaseEnd phase_end,
                         StartBlock start_block) {
    int16_t at_start[3];
    Depths(at_start);
    uint32_t hit = 0, miss = 0;
    for (size_t ci = 0; ci < cores_.size() && !failed_; ++ci) {
      CoreState& c = cores_[ci];
      if (c.thread != thread || c.busy) continue;
      int block = 0;
      int index = PopBlock(c.type == CoreType::kAic ? 0 : 1, &block);
      if (index < 0) {
        ++miss;
        continue;
      }
      ++hit;
      c.busy = true;
      c.task = index;
      c.block = block;
      c.reg_task_id++;
      c.dispatch_cycles = dispatch_time();
      start_block(static_cast<int>(ci));
    }
    if (hit > 0)
      RecordPhase(thread, collectors::SchedPhaseKind::kDispatch, start, phase_end(), hit, at_start,
                  hit, miss);
    return hit;
  }

  // After retirements that reclaimed ring slots since `reclaimed_before`: a
  // release phase from `start` to `end`. Returns whether there was one.
  bool ReleasePhase(int thread, uint64_t reclaimed_before, uint64_t start, uint64_t end) {
    if (reclaimed_ <= reclaimed_before) return false;
    int16_t at_start[3];
    Depths(at_start);
    RecordPhase(thread, collectors::SchedPhaseKind::kRelease, start, end,
                static_cast<uint32_t>(reclaimed_ - reclaimed_before), at_start);
    return true;
  }

  // ---- virtual clock -----------------------------------------------------------

  void RunVirtual() {
    uint64_t orch_time = kVirtualStart;
    bool orch_blocked = false;
    std::string why;
    using Event = std::pair<uint64_t, int>;  // (finish cycles, core)
    std::priority_queue<Event, std::vector<Event>, std::greater<Event>> completions;
    uint64_t sched_time = kVirtualStart;

    auto dispatch = [&](uint64_t now) {
      uint64_t t = std::max(now, sched_time);
      const uint32_t n = DispatchPhase(
          0, t, [&] { return t += kDispatchCycles; }, [&] { return t; },
          [&](int core) {
            CoreState& c = cores_[core];
            KernelCall call = MakeCall(c.task, c.block);
            collectors::PmuWork w = EstimateWork(call, model_);
            if (pmu_) c.pmu_work = w;
            c.kernel_status = RunKernelBlock(call, /*spin_busy=*/false);
            c.start_cycles = c.dispatch_cycles + kReceiveCycles;
            c.end_cycles = c.start_cycles + w.total_cycles;
            if (swimlane_) {
              swimlane_->RecordAicoreTask(static_cast<uint32_t>(core), lp_.tasks[c.task].task_id,
                                          c.reg_task_id, c.start_cycles, c.end_cycles,
                                          kReceiveCycles / 2);
            }
            completions.push({c.end_cycles + kFinishCycles, core});
          });
      if (n > 0) ++loop_iter_[0];
      sched_time = t;
    };

    while (true) {
      uint64_t next_completion = completions.empty() ? UINT64_MAX : completions.top().first;
      bool orch_done = next_event_ >= lp_.events.size();
      if (!failed_ && !orch_done && !orch_blocked && orch_time <= next_completion) {
        if (OrchestratorStep(orch_time, &why)) {
          orch_time += kSubmitCycles;
          dispatch(orch_time);
        } else {
          orch_blocked = true;
          ++stalls_;
        }
        continue;
      }
      if (!completions.empty()) {
        auto [finish, core] = completions.top();
        completions.pop();
        int16_t at_start[3];
        Depths(at_start);
        uint64_t t = std::max(finish, sched_time);
        uint64_t reclaimed_before = reclaimed_;
        RetireBlock(core, t);
        RecordPhase(0, collectors::SchedPhaseKind::kComplete, t, t + kCompleteCycles, 1, at_start);
        sched_time = t + kCompleteCycles;
        if (ReleasePhase(0, reclaimed_before, sched_time, sched_time + kCompleteCycles))
          sched_time += kCompleteCycles;
        ++loop_iter_[0];
        if (orch_blocked) {
          orch_blocked = false;
          orch_time = std::max(orch_time, sched_time);
        }
        dispatch(sched_time);
        continue;
      }
      if (orch_blocked && !failed_) {
        Fail(DeadlockError(why));
      }
      break;
    }
  }

  Status DeadlockError(const std::string& why) const {
    const LoweredTask& t = lp_.tasks[lp_.events[next_event_].index];
    return FailedPrecondition(
        "ring deadlock: submit of task " + TaskLabel(t.task_id) + " (" + t.statement->json_path +
        " in " + prog_.origin + ") waits for space in the " + why +
        ", but every task holding it is finished and still referenced (its outputs are bound to "
        "tensor names or its scope is open), so nothing can be reclaimed; raise that ring's size "
        "(ring_task_window / ring_heap / ring_dep_pool) or close scopes earlier");
  }

  // ---- real threads ---------------------------------------------------------------
  //
  // The chip's persistent pool (ChipThreads) runs it: the orchestrator on
  // the calling thread, and pool threads, fewer than the emulated cores when
  // the host has fewer CPUs, that each do the scheduler's work and the
  // cores' work in turn. A pool thread takes the lock, does a pass of the
  // AICPU scheduler (retires finished blocks, reclaims ring slots, dispatches
  // ready blocks to idle emulated cores, recorded as that scheduler
  // thread's phases), takes the oldest dispatched block, and runs its kernel
  // without the lock, as the emulated core it was dispatched to. So while
  // there is work a block costs no hand-off between host threads; a pool
  // thread sleeps (spin, then futex) only when nothing is ready. All ring,
  // task and core state is under mu_.

  void RunThreaded() {
    if (lp_.tasks.size() <= 1 && lp_.core_executions <= 1) {
      // One block at most: nothing could run beside anything else, and
      // waking the pool (futex wake-ups and context switches there and
      // back) would cost more than the block. The calling thread submits
      // it, then does the scheduler's and the core's work itself. With one
      // task the orchestrator never waits for the pool: its only submit
      // either goes through or fails as a ring deadlock (nothing in flight).
      OrchestratorLoop();
      WorkerLoop();
      return;
    }
    const int pool = PoolSize();
    std::vector<std::function<void()>> jobs;
    for (int w = 0; w < pool; ++w) jobs.emplace_back([this] { WorkerLoop(); });
    threads_->Run(jobs, [this] { OrchestratorLoop(); });
    // Every block was retired before the pool's jobs returned.
  }

  // Host threads that run blocks: ChipOptions::host_threads, else one per
  // host CPU; never more than the emulated cores.
  int PoolSize() const {
    int n = opt_.host_threads;
    if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
    return std::clamp(n, 1, static_cast<int>(cores_.size()));
  }

  // Lets the orchestrator go on without the lock every this many submits
  // and wakes sleeping pool threads for what it submitted.
  static constexpr int kSubmitBatch = 32;

  // The dep_gen records of the submits made under the lock, written once it
  // is released: they read only the lowered program, and the pool threads
  // need the lock more than the orchestrator needs them written under it.
  void FlushDepGen() {
    for (int index : dep_pending_) RecordDepGen(lp_.tasks[index]);
    dep_pending_.clear();
  }

  void OrchestratorLoop() {
    std::unique_lock<RunMutex> lock(mu_);
    if (dep_gen_) dep_pending_.reserve(kSubmitBatch);
    std::string why;
    int batch = 0;
    // Whether the last step submitted and the lock was kept since: the next
    // submit then starts when that one ended (one clock read, not two).
    bool chained = false;
    while (!failed_ && next_event_ < lp_.events.size()) {
      // A submit's start is recorded at swimlane level 4 only.
      uint64_t start = 0;
      if (swimlane_level_ >= 4) start = chained ? orch_end_ : NowCycles();
      if (OrchestratorStep(start, &why)) {
        chained = true;
        if (++batch >= kSubmitBatch) {
          batch = 0;
          chained = false;
          lock.unlock();
          work_wake_.Notify();
          FlushDepGen();
          lock.lock();
        }
        continue;
      }
      batch = 0;
      chained = false;
      ++stalls_;
      // Blocked on a ring: wait for the pool to retire something.
      while (!failed_) {
        const uint32_t seen = orch_wake_.Seq();
        const LoweredTask& t = lp_.tasks[lp_.events[next_event_].index];
        if (RingFull(t).empty()) break;
        if (!InFlight()) {
          Fail(DeadlockError(why));
          break;
        }
        lock.unlock();
        work_wake_.Notify();
        FlushDepGen();
        orch_wake_.Wait(seen);
        lock.lock();
      }
    }
    orch_done_ = true;
    lock.unlock();
    work_wake_.Notify();
    FlushDepGen();
  }

  // Whether scheduler thread `thread` has anything to do: a finished block
  // to retire, or an idle core and a ready block of its type.
  bool SchedHasWork(int thread) const {
    for (const CoreState& c : cores_) {
      if (c.thread != thread) continue;
      if (c.busy && c.finished) return true;
      if (!c.busy && !failed_ && !ready_[c.type == CoreType::kAic ? 0 : 1].empty()) return true;
    }
    return false;
  }

  bool AllDone() const { return orch_done_ && !InFlight(); }

  // One pass of AICPU scheduler thread `thread` over its cores, with mu_
  // held: the complete, release and dispatch phases. Dispatched blocks wait
  // in started_ for a pool thread.
  void SchedulePass(int thread) {
    if (!SchedHasWork(thread)) return;
    int16_t at_start[3];
    Depths(at_start);
    // The phases' own times are recorded at swimlane level 3 and up only; a
    // clock read is a good part of a small block's cost. Dispatch and
    // retire times are always read (the makespan).
    const bool phases = swimlane_level_ >= 3;
    auto phase_time = [this, phases] { return phases ? NowCycles() : 0; };
    uint64_t start = phase_time();
    uint32_t retired = 0;
    uint64_t reclaimed_before = reclaimed_;
    for (size_t ci = 0; ci < cores_.size(); ++ci) {
      CoreState& c = cores_[ci];
      if (c.thread != thread || !c.busy || !c.finished) continue;
      RetireBlock(static_cast<int>(ci), NowCycles());
      c.finished = false;
      ++retired;
    }
    // Phases that follow one another share the clock read between them: the
    // complete phase's end is the release's instant and the dispatch phase's
    // start, and the dispatch phase ends at its last dispatch (as on the
    // virtual clock). Each read costs the run's one lock that much longer.
    uint64_t now = start;
    if (retired) {
      now = phase_time();
      RecordPhase(thread, collectors::SchedPhaseKind::kComplete, start, now, retired, at_start);
    }
    if (reclaimed_ > reclaimed_before) {
      ReleasePhase(thread, reclaimed_before, now, now);
      reclaimed_notify_ = true;
    }
    uint64_t last_dispatch = now;
    DispatchPhase(
        thread, now, [this, &last_dispatch] { return last_dispatch = NowCycles(); },
        [&last_dispatch] { return last_dispatch; }, [this](int core) { started_.push_back(core); });
    ++loop_iter_[thread];
  }

  void WorkerLoop() {
    std::unique_lock<RunMutex> lock(mu_);
    for (;;) {
      for (int t = 0; t < sched_threads_; ++t) SchedulePass(t);
      // The orchestrator waits for ring space, or for nothing to be in
      // flight (then it reports a ring deadlock).
      const bool wake_orch = reclaimed_notify_ || !InFlight();
      reclaimed_notify_ = false;
      if (!started_.empty()) {
        const int core = started_.front();
        started_.pop_front();
        const bool more = !started_.empty();
        lock.unlock();
        if (wake_orch) orch_wake_.Notify();
        if (more) work_wake_.Notify();  // another pool thread may take it
        RunBlock(core);
        lock.lock();
        cores_[core].finished = true;
        continue;
      }
      const bool all_done = AllDone();
      const uint32_t seen = work_wake_.Seq();
      lock.unlock();
      if (wake_orch) orch_wake_.Notify();
      if (all_done) break;
      work_wake_.Wait(seen);
      lock.lock();
    }
    // Others may be waiting for the last retirement this thread made.
    work_wake_.Notify();
    orch_wake_.Notify();
  }

  // Runs the block dispatched to `core` on this host thread, as that core,
  // without the lock (the core is busy: nobody else touches its state).
  void RunBlock(int core) {
    CoreState& c = cores_[core];
    // The block's times are recorded by the swimlane and the report only.
    const bool stamps = swimlane_ || report_;
    uint64_t receive = stamps ? NowCycles() : 0;
    KernelCall call = MakeCall(c.task, c.block);
    const uint64_t task_id = lp_.tasks[c.task].task_id;
    uint64_t start = stamps ? NowCycles() : 0;
    Status s = RunKernelBlock(call, /*spin_busy=*/true);
    uint64_t end = stamps ? NowCycles() : 0;
    if (swimlane_)
      swimlane_->RecordAicoreTask(static_cast<uint32_t>(core), task_id, c.reg_task_id, start, end,
                                  static_cast<uint32_t>(start - std::min(start, receive)));
    if (pmu_) c.pmu_work = EstimateWork(call, model_);
    c.kernel_status = std::move(s);
    c.start_cycles = start;
    c.end_cycles = end;
  }

 private:
  void WakeSchedulers() {
    if (threads_) work_wake_.Notify();  // virtual clock: one thread
  }

  const ChipOptions& opt_;
  const ChipModel& model_;
  const LoweredProgram& lp_;
  const Program& prog_;
  RunReport* report_;
  ChipThreads* threads_;  // threaded mode: the chip's host threads
  ResidentState* resident_ = nullptr;
  collectors::SwimlaneRecorder* swimlane_ = nullptr;
  collectors::DepGenRecorder* dep_gen_ = nullptr;
  collectors::ArgsDumpRecorder* dump_ = nullptr;
  collectors::PmuRecorder* pmu_ = nullptr;
  collectors::ScopeStatsRecorder* scope_ = nullptr;
  int swimlane_level_ = 0;
  int dump_level_ = 0;

  std::vector<CoreState> cores_;
  int sched_threads_ = 1;
  std::vector<TaskState> tasks_;
  RingState rings_[4];
  uint64_t tensormap_live_ = 0;
  std::deque<int> ready_[3];
  std::map<int, std::unique_ptr<uint8_t[]>> external_;
  DeviceHeap* heaps_;                     // the chip's, one per ring
  uint8_t* heap_mem_[4] = {};             // this run's (heaps_[ring].mem once used)
  collectors::DepGenTaskRecord dep_rec_;  // RecordDepGen's, reused
  std::vector<collectors::DepGenEdgeRecord> edge_buf_;
  // Threaded mode: submits whose dep_gen records wait for the lock's release
  // (OrchestratorLoop, FlushDepGen); orchestrator thread only.
  std::vector<int> dep_pending_;
  size_t next_event_ = 0;
  uint64_t submit_idx_ = 0;
  uint64_t orch_end_ = 0;  // the last submit's end (swimlane level 4, real threads)
  uint64_t submitted_ = 0, completed_ = 0, stalls_ = 0;
  uint64_t first_dispatch_cycles_ = UINT64_MAX, last_retire_cycles_ = 0;
  uint64_t reclaimed_ = 0;  // task slots reclaimed (all rings)
  uint32_t loop_iter_[8] = {};
  Status status_;
  bool failed_ = false;
  bool orch_done_ = false;
  std::deque<int> started_;        // threaded: cores dispatched, not yet picked by a pool thread
  bool reclaimed_notify_ = false;  // threaded: ring slots were reclaimed since the last wake-up
  RunMutex mu_;                    // the run's one lock (threaded mode)
  Parker orch_wake_;               // the orchestrator waits here for ring space
  Parker work_wake_;               // pool threads wait here for work
};

EmulatedChip::EmulatedChip(const ChipOptions& options) : options_(options) {
  aic_ = options.aic_cores > 0 ? options.aic_cores : 2;
  aiv_ = options.aiv_cores > 0 ? options.aiv_cores : 4;
}

EmulatedChip::~EmulatedChip() = default;

std::string EmulatedChip::Describe() const {
  const ChipModel& a2a3 = GetChipModel(config::BackendType::kA2A3);
  const ChipModel& a5 = GetChipModel(config::BackendType::kA5);
  return "emulator: " + std::to_string(aic_) + " AIC + " + std::to_string(aiv_) + " AIV; " +
         a2a3.name + " (" + std::to_string(a2a3.clock_freq_hz / 1000000) + " MHz) or " + a5.name +
         " (" + std::to_string(a5.clock_freq_hz / 1000000) +
         " MHz) as each dispatch's backend_type says" +
         (options_.virtual_clock ? ", virtual clock" : "");
}

DispatchResult EmulatedChip::RunProgram(const Program& program, const config::RunConfig& config,
                                        const fs::path& output_dir) {
  return Run(program, config, output_dir, nullptr);
}

DispatchResult EmulatedChip::Run(const Program& program, const config::RunConfig& config,
                                 const fs::path& output_dir, RunReport* report,
                                 bool collect_tensors) {
  return RunLowered(program, nullptr, config, output_dir, report, collect_tensors);
}

DispatchResult EmulatedChip::RunShared(const std::shared_ptr<const Program>& program,
                                       const config::RunConfig& config,
                                       const fs::path& output_dir) {
  return RunLowered(*program, program, config, output_dir, nullptr, false);
}

DispatchResult EmulatedChip::RunLowered(const Program& program,
                                        const std::shared_ptr<const Program>& shared,
                                        const config::RunConfig& config_in,
                                        const fs::path& output_dir, RunReport* report,
                                        bool collect_tensors) {
  DispatchResult result;
  uint64_t t0 = MonotonicClock::Instance().NowNs();
  config::RunConfig config = config_in;
  config.Normalize();
  if (Status s = config.Validate(); !s.ok()) {
    result.status = s;
    return result;
  }
  // The dispatch's RunConfig selects the chip model; the emulated core
  // counts are the host's, capped by the model.
  const ChipModel& model = GetChipModel(config.backend_type);
  const int aic = std::min(aic_, model.max_cores);
  const int aiv = std::min(aiv_, model.max_cores);
  if (config.aicpu_thread_num > model.max_aicpu_threads) {
    result.status = InvalidArgument(
        "aicpu_thread_num " + std::to_string(config.aicpu_thread_num) + " exceeds the " +
        model.name + " limit of " + std::to_string(model.max_aicpu_threads) +
        " AICPU threads; expected 0 (default) to " + std::to_string(model.max_aicpu_threads));
    return result;
  }
  RingCapacities rings = ResolveRings(model, config.rings);
  // Lowering is a pure function of (program, ring sizes): a shared program
  // run again with the same rings reuses the lowering kept from its last run.
  std::shared_ptr<const LoweredProgram> lowered;
  if (shared && kept_.program == shared && kept_.rings == rings) {
    lowered = kept_.lowered;
  } else {
    if (shared) kept_ = {};  // the old one goes before the new one is made
    ++lowerings_;
    Result<LoweredProgram> made = Lower(program, rings);
    if (!made.ok()) {
      result.status = made.status();
      return result;
    }
    lowered = std::make_shared<const LoweredProgram>(std::move(*made));
    if (shared && LoweredBytes(*lowered) <= kMaxKeptLoweringBytes) kept_ = {shared, rings, lowered};
  }
  const LoweredProgram& lp = *lowered;

  std::unique_ptr<collectors::DfxCollectors> dfx;
  int sched_threads = 1;
  if (!options_.virtual_clock && config.aicpu_thread_num > 1)
    sched_threads = std::max(1, std::min(config.aicpu_thread_num - 1, model.max_aicpu_threads - 1));
  sched_threads = std::min(sched_threads, aic + aiv);
  if (config.AnyDfx()) {
    if (Status s = MakeDirs(output_dir); !s.ok()) {
      result.status = s;
      return result;
    }
    collectors::ChipLayout layout;
    layout.backend = model.name;
    layout.clock_freq_hz = model.clock_freq_hz;
    for (int i = 0; i < aic; ++i) layout.core_types.push_back(CoreKind::kAic);
    for (int i = 0; i < aiv; ++i) layout.core_types.push_back(CoreKind::kAiv);
    layout.sched_threads = sched_threads;
    layout.orch_threads = 1;
    for (int r = 0; r < 4; ++r) {
      layout.task_window_max[r] = static_cast<int64_t>(rings.task_window[r]);
      layout.heap_max[r] = rings.heap[r];
      layout.dep_pool_max[r] = static_cast<int64_t>(rings.dep_pool[r]);
    }
    layout.tensormap_max = static_cast<int64_t>(rings.tensormap);
    collectors::CapacityHint hint;
    hint.tasks = lp.tasks.size();
    hint.core_executions = lp.core_executions;
    hint.scope_samples = 2 * lp.scopes.size();
    hint.tensor_args = lp.tensor_args;
    hint.edges = lp.edge_count;
    collectors::ArgsDumpOptions dump;
    dump.level = config.enable_dump_args > 0 ? config.enable_dump_args : 1;
    dump.drain_bytes_per_sec = options_.dump_drain_bytes_per_sec;
    dump.drain_timeout_ms = options_.dump_timeout_ms;
    if (options_.dump_arena_bytes > 0) dump.arena_bytes = options_.dump_arena_bytes;
    dfx = std::make_unique<collectors::DfxCollectors>(config, layout, hint, output_dir, dump);
  }

  if (!options_.virtual_clock && !threads_) threads_ = std::make_unique<ChipThreads>();
  auto engine = std::make_unique<Engine>(options_, model, aic, aiv, lp, config, dfx.get(), report,
                                         threads_.get(), heaps_.data());
  engine->set_resident(&resident_);
  Status run = engine->Run();
  if (run.ok()) engine->SaveResident();
  if (collect_tensors) engine->CollectTensors();
  if (config.enable_dump_args == 1) result.warnings = lp.warnings;
  result.tasks_executed = engine->completed();
  result.makespan_cycles = engine->makespan_cycles();
  result.makespan_ns = static_cast<uint64_t>(static_cast<long double>(result.makespan_cycles) *
                                             1e9L / static_cast<long double>(model.clock_freq_hz));
  if (report) {
    report->orchestrator_stalls = engine->stalls();
    report->tasks_submitted = engine->submitted();
    report->tasks_completed = engine->completed();
  }
  if (dfx) {
    // The collectors export on a thread of their own while this one frees
    // the run's state: neither touches the other's memory (recorders keep
    // copies), and a one-file export leaves the host's other core idle.
    // Freeing a 100k-task run's state is a few tens of ms of free() into
    // the malloc arena of the thread that built it. The export must not
    // share that arena: when it ran here with the frees on a second
    // thread, each of its large allocations consolidated the other
    // thread's freed chunks under the arena's lock (malloc_consolidate and
    // unlink_chunk were a fifth of a level-1 export's samples, which took
    // 40-60 ms for a 5.6 MB file). A new thread gets an arena of its own.
    Status exported;
    std::jthread exporter([&] { exported = dfx->ExportAll(run.ok(), &result.artifacts); });
    engine.reset();
    lowered.reset();  // frees it unless kept
    exporter.join();
    if (run.ok() && !exported.ok()) run = exported;
  }
  result.status = run;
  result.wall_ns = MonotonicClock::Instance().NowNs() - t0;
  return result;
}

Result<ResidentState> LoadResidentState(const fs::path& path) {
  ResidentState state;
  std::error_code ec;
  if (!fs::exists(path, ec)) return state;
  DFX_ASSIGN_OR_RETURN(Json j, ReadJsonFile(path));
  if (!j.is_object() || !j.contains("tensors") || !j["tensors"].is_object())
    return JsonError(path.string(), "$.tensors", "an object of resident tensors by name", j);
  for (auto& [name, t] : j["tensors"].items()) {
    const std::string at = "$.tensors." + name;
    if (!t.is_object() || !t.contains("dtype") || !t["dtype"].is_string() || !t.contains("shape") ||
        !t["shape"].is_array() || !t.contains("hex") || !t["hex"].is_string())
      return JsonError(path.string(), at, "{dtype, shape, hex}", t);
    auto dtype = ParseDType(t["dtype"].get<std::string>());
    if (!dtype) return JsonError(path.string(), at + ".dtype", "a dtype name", t["dtype"]);
    ResidentTensor r;
    r.dtype = *dtype;
    for (const auto& d : t["shape"]) {
      if (!d.is_number_unsigned()) return JsonError(path.string(), at + ".shape", "sizes", d);
      r.shape.push_back(d.get<uint32_t>());
    }
    const std::string hex = t["hex"].get<std::string>();
    if (hex.size() % 2 != 0) return JsonError(path.string(), at + ".hex", "hex bytes", t["hex"]);
    r.bytes.resize(hex.size() / 2);
    for (size_t i = 0; i < r.bytes.size(); ++i) {
      char* end = nullptr;
      const std::string byte = hex.substr(2 * i, 2);
      r.bytes[i] = static_cast<uint8_t>(std::strtoul(byte.c_str(), &end, 16));
      if (end != byte.c_str() + 2)
        return JsonError(path.string(), at + ".hex", "hex bytes", t["hex"]);
    }
    state[name] = std::move(r);
  }
  return state;
}

Status SaveResidentState(const fs::path& path, const ResidentState& state) {
  Json tensors = Json::object();
  for (const auto& [name, r] : state) {
    std::string hex;
    hex.reserve(2 * r.bytes.size());
    for (uint8_t b : r.bytes) hex += fmt::format("{:02x}", b);
    Json t;
    t["dtype"] = DTypeName(r.dtype);
    t["shape"] = r.shape;
    // Readable form for people and tests; the bytes are the truth.
    Json values = Json::array();
    const uint64_t numel = r.bytes.size() / DTypeSize(r.dtype);
    for (uint64_t i = 0; i < numel && i < 64; ++i)
      values.push_back(LoadElement(r.bytes.data(), r.dtype, i));
    t["values"] = values;
    t["hex"] = hex;
    tensors[name] = t;
  }
  Json j;
  j["tensors"] = tensors;
  DFX_RETURN_IF_ERROR(MakeDirs(path.parent_path()));
  return WriteJsonFileAtomic(path, j, 2);
}

std::unique_ptr<Chip> MakeEmulatedChip(const ChipOptions& options) {
  return std::make_unique<EmulatedChip>(options);
}

}  // namespace dfx::device
