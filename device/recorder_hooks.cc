#include "device/recorder_hooks.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>

#include "device/dtype.h"

namespace dfx::device {

namespace {

// A contiguous view's shape, strides and offset (dims past the shape's
// are left as they are: nothing reads them).
void FillViewShape(const Shape& shape, uint64_t offset, collectors::TensorView* v) {
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
const DTypeText& DTypeField(DType t) {
  static const std::array<DTypeText, kDTypeCount> fields = [] {
    std::array<DTypeText, kDTypeCount> f{};
    for (size_t i = 0; i < f.size(); ++i)
      std::strncpy(f[i].data(), DTypeName(static_cast<DType>(i)), f[i].size() - 1);
    return f;
  }();
  return fields[static_cast<size_t>(t)];
}

void FillTensorView(const LoweredArg& a, const LoweredProgram& lp, collectors::TensorView* v) {
  v->tensor_id = a.tensor_id;
  std::memcpy(v->dtype, DTypeField(lp.buffers[a.buffer].dtype).data(), sizeof(v->dtype));
  FillViewShape(a.shape, a.offset, v);
}

}  // namespace

RecorderHooks::RecorderHooks(collectors::DfxCollectors* dfx, const LoweredProgram& lp,
                             bool defer_dep_gen)
    : lp_(lp), prog_(*lp.program), defer_dep_gen_(defer_dep_gen) {
  swimlane_ = dfx ? dfx->swimlane() : nullptr;
  dep_gen_ = dfx ? dfx->dep_gen() : nullptr;
  dump_ = dfx ? dfx->args_dump() : nullptr;
  pmu_ = dfx ? dfx->pmu() : nullptr;
  scope_ = dfx ? dfx->scope_stats() : nullptr;
  swimlane_level_ = swimlane_ ? swimlane_->level() : 0;
  dump_level_ = dump_ ? dump_->level() : 0;
}

void RecorderHooks::MapCoresToThreads(const std::vector<CoreState>& cores) {
  if (swimlane_level_ >= 3)
    for (size_t c = 0; c < cores.size(); ++c)
      swimlane_->SetCoreToThread(static_cast<uint32_t>(c), cores[c].thread);
}

void RecorderHooks::RecordScope(const LoweredScope& s, bool begin, const RingState& r,
                                uint64_t tensormap_live) {
  if (!scope_) return;
  collectors::ScopeSample sample;
  std::strncpy(sample.site, s.site.c_str(), sizeof(sample.site) - 1);
  sample.begin = begin;
  sample.depth = static_cast<int16_t>(s.depth);
  sample.ring = static_cast<int16_t>(std::min(s.depth, 3));
  sample.task_window_start = static_cast<int64_t>(r.tail);
  sample.task_window_end = static_cast<int64_t>(r.head);
  sample.heap_start = r.heap_reclaimed;
  sample.heap_end = r.heap_alloc;
  sample.dep_pool_start = static_cast<int64_t>(r.dep_tail);
  sample.dep_pool_end = static_cast<int64_t>(r.dep_top);
  sample.tensormap = static_cast<int64_t>(tensormap_live);
  scope_->Record(sample);
}

void RecorderHooks::RecordDepGen(const LoweredTask& t) {
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
    FillTensorView(t.args[i], lp_, &a.view);
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

Status RecorderHooks::CaptureStage(int index, collectors::DumpStage stage, DeviceMemory& memory) {
  if (!dump_) return Status::Ok();
  const LoweredTask& t = lp_.tasks[index];
  if (dump_level_ == 1 && !t.any_dump) return Status::Ok();  // partial: only marked args
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
    if (payload) bytes = {memory.BufferData(a.buffer) + a.offset * es, a.numel * es};
    Status s = dump_->Capture(m, bytes);
    if (!s.ok())
      return s.WithContext("args dump of task " + TaskLabel(t.task_id) + " (kernel \"" + k.name +
                           "\")");
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
      if (!s.ok()) return s.WithContext("args dump of task " + TaskLabel(t.task_id));
    }
  }
  return Status::Ok();
}

void RecorderHooks::RecordPmu(int core, const CoreState& c, const LoweredTask& t) {
  if (!pmu_) return;
  const Kernel& k = prog_.kernels[t.kernel];
  pmu_->Record(static_cast<uint32_t>(c.thread), static_cast<uint32_t>(core), t.task_id, k.func_id,
               c.type == CoreType::kAic ? collectors::CoreKind::kAic : collectors::CoreKind::kAiv,
               c.pmu_work);
}

}  // namespace dfx::device
