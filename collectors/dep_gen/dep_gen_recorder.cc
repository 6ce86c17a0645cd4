// dep_gen recorder and deps.json writer (docs/formats.md §6).
//
// Storage is split so a submit costs what it carries, not the 4.6 KB worst
// case: fixed task headers, one shared array of arg slots, one of edges, one
// of tensors, all sized from the CapacityHint in the constructor. An edge
// keeps its consumer and producer views (72 bytes each) only when they differ
// from what the submit already holds: a consumer view is almost always the
// consumer's own arg slot, and a producer view the consumer's, so an edge
// is 32 bytes instead of 176 (at 100k tasks, 18 MB fewer pages to map on the
// orchestrator's path). A submit is stored whole or dropped whole (like the
// reference's atomically reserved overflow chain); any drop makes Export
// refuse, because an incomplete graph is never emitted.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "collectors/dep_gen/deps_keys.h"
#include "collectors/internal/fixed_string.h"
#include "collectors/internal/lazy_array.h"
#include "collectors/internal/record_text.h"
#include "collectors/recorders.h"
#include "common/decimal.h"
#include "common/enum_text.h"
#include "common/json_stream.h"
#include "common/log.h"

namespace dfx::collectors {
namespace {

namespace keys = deps_keys;

struct TaskHeader {
  uint64_t task_id;
  int32_t kernel_ids[3];
  int32_t block_num;
  uint64_t first_arg;
  uint8_t arg_count;
  bool manual_scope;
  bool early_dispatch;
};

// Where an edge's consumer / producer view is (EdgeHeader::consumer, ::producer).
constexpr uint32_t kNoView = UINT32_MAX;            // the edge has none (explicit; not tensormap)
constexpr uint32_t kArgView = UINT32_MAX - 1;       // consumer: the arg slot `arg_slot`
constexpr uint32_t kConsumerView = UINT32_MAX - 2;  // producer: the same as the consumer
// Any other value indexes Impl::views.

struct EdgeHeader {
  uint64_t pred;
  uint64_t succ;
  uint64_t arg_slot;  // the consumer's arg, in Impl::args (kArgView only)
  int32_t arg;
  EdgeSource source;
  bool flag_wait;
  bool flag_retain;
  Overlap overlap;
  uint32_t consumer;
  uint32_t producer;
};

// The fields deps.json writes of a view (dims past ndims are never written).
bool SameView(const TensorView& a, const TensorView& b) {
  if (a.tensor_id != b.tensor_id || a.ndims != b.ndims || a.start_offset != b.start_offset ||
      std::memcmp(a.dtype, b.dtype, sizeof(a.dtype)) != 0) {
    return false;
  }
  const int n = std::min<int>(a.ndims, kMaxDims);
  return std::equal(a.shape, a.shape + n, b.shape) &&
         std::equal(a.strides, a.strides + n, b.strides);
}

// The text of the last dims array written at one place of a record: the
// same shapes and strides recur from task to task and edge to edge, and
// copying their text is cheaper than formatting each number again (deps.json
// writes up to four arrays per edge and two per arg).
struct DimsText {
  int n = -1;  // none yet
  uint32_t v[kMaxDims] = {};
  char text[2 + kMaxDims * (kMaxDecimalChars + 1)] = {};
  size_t len = 0;
};

void WriteDims(internal::RecordText& x, const uint32_t* v, uint8_t ndims, DimsText& last) {
  const int n = std::min<int>(ndims, kMaxDims);
  if (n != last.n || !std::equal(v, v + n, last.v)) {
    char* p = last.text;
    *p++ = '[';
    for (int i = 0; i < n; ++i) {
      if (i) *p++ = ',';
      p = WriteDecimal(p, v[i]);
    }
    *p++ = ']';
    last.len = static_cast<size_t>(p - last.text);
    last.n = n;
    std::copy(v, v + n, last.v);
  }
  x.Lit(std::string_view(last.text, last.len));
}

constexpr auto kSourceText = MakeEnumTable<EdgeSource>(
    {
        {EdgeSource::kExplicit, keys::kSourceExplicit.c_str()},
        {EdgeSource::kCreator, keys::kSourceCreator.c_str()},
        {EdgeSource::kTensormap, keys::kSourceTensormap.c_str()},
    },
    keys::kSourceTensormap.c_str());
const char* SourceName(EdgeSource s) { return kSourceText.Name(s); }

constexpr auto kOverlapText = MakeEnumTable<Overlap>(
    {
        {Overlap::kCovered, keys::kOverlapCovered.c_str()},
        {Overlap::kOther, keys::kOverlapOther.c_str()},
        {Overlap::kNoOverlap, keys::kOverlapNone.c_str()},
    },
    keys::kOverlapOther.c_str());
const char* OverlapName(Overlap o) { return kOverlapText.Name(o); }

constexpr auto kArgTypeText = MakeEnumTable<ArgType>(
    {
        {ArgType::kInput, keys::kArgInput.c_str()},
        {ArgType::kOutput, keys::kArgOutput.c_str()},
        {ArgType::kInout, keys::kArgInout.c_str()},
        {ArgType::kOutputExisting, keys::kArgOutputExisting.c_str()},
        {ArgType::kUnknown, keys::kArgUnknown.c_str()},
    },
    keys::kArgUnknown.c_str());

}  // namespace

const char* ArgTypeName(ArgType t) { return kArgTypeText.Name(t); }

struct DepGenRecorder::Impl {
  CapacityHint hint;
  // Sized from the hint's bounds; pages are mapped as records land in them.
  internal::LazyArray<TaskHeader> tasks;
  internal::LazyArray<DepGenArg> args;
  internal::LazyArray<EdgeHeader> edges;
  internal::LazyArray<TensorView> views;  // edges' views that are not an arg's
  internal::LazyArray<DepGenTensorRecord> tensors;
  uint64_t num_tasks = 0, num_args = 0, num_edges = 0, num_views = 0;
  std::atomic<uint64_t> num_tensors{0};  // PrefaultAhead reads it while the orchestrator records

  // The view an edge's consumer / producer index names.
  const TensorView& ConsumerOf(const EdgeHeader& e) const {
    return e.consumer == kArgView ? args[e.arg_slot].view : views[e.consumer];
  }
  const TensorView& ProducerOf(const EdgeHeader& e) const {
    return e.producer == kConsumerView ? ConsumerOf(e) : views[e.producer];
  }
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> total{0};
};

DepGenRecorder::DepGenRecorder(const CapacityHint& hint) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.hint = hint;
  uint64_t tasks = std::max<uint64_t>(hint.tasks, 64);
  uint64_t args = std::max<uint64_t>(hint.tensor_args, 256);
  // Without a bound from the program, each arg can bring a creator and a
  // tensormap edge, and each task a few explicit ones.
  uint64_t edges = hint.edges > 0 ? hint.edges : 2 * args + 4 * tasks;
  m.tasks.Reset(tasks);
  m.args.Reset(args);
  m.edges.Reset(std::max<uint64_t>(edges, 64));
  m.views.Reset(2 * m.edges.size());  // at most a consumer and a producer each
  m.tensors.Reset(args + 64);
}

DepGenRecorder::~DepGenRecorder() = default;

void DepGenRecorder::RecordSubmit(const DepGenTaskRecord& task,
                                  std::span<const DepGenEdgeRecord> edges) {
  Impl& m = *impl_;
  // One producer: a load and a store, not an atomic read-modify-write.
  m.total.store(m.total.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  uint8_t argc = std::min<uint8_t>(task.arg_count, kMaxTensorArgs);
  if (m.num_tasks >= m.tasks.size() || m.num_args + argc > m.args.size() ||
      m.num_edges + edges.size() > m.edges.size()) {
    m.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  m.tasks.MapAhead(m.num_tasks);
  if (argc > 0) m.args.MapAhead(m.num_args + argc - 1);
  if (!edges.empty()) m.edges.MapAhead(m.num_edges + edges.size() - 1);
  TaskHeader& h = m.tasks[m.num_tasks++];
  h.task_id = task.task_id;
  std::copy(task.kernel_ids, task.kernel_ids + 3, h.kernel_ids);
  h.block_num = task.block_num;
  h.first_arg = m.num_args;
  h.arg_count = argc;
  h.manual_scope = task.manual_scope;
  h.early_dispatch = task.early_dispatch;
  std::copy(task.args, task.args + argc, m.args.data() + m.num_args);
  const uint64_t first_arg = m.num_args;
  m.num_args += argc;
  // Views fit: there is room for two per edge (see the constructor).
  auto keep_view = [&m](const TensorView& v) {
    m.views.MapAhead(m.num_views);
    m.views[m.num_views] = v;
    return static_cast<uint32_t>(m.num_views++);
  };
  for (const DepGenEdgeRecord& r : edges) {
    EdgeHeader& e = m.edges[m.num_edges++];
    e.pred = r.pred;
    e.succ = r.succ;
    e.arg = r.arg;
    e.source = r.source;
    e.flag_wait = r.flag_wait;
    e.flag_retain = r.flag_retain;
    e.overlap = r.overlap;
    e.arg_slot = 0;
    e.consumer = kNoView;
    e.producer = kNoView;
    if (r.source != EdgeSource::kExplicit) {
      const bool of_arg = r.arg >= 0 && r.arg < argc && task.args[r.arg].has_tensor &&
                          SameView(r.consumer, task.args[r.arg].view);
      if (of_arg) {
        e.consumer = kArgView;
        e.arg_slot = first_arg + static_cast<uint64_t>(r.arg);
      } else {
        e.consumer = keep_view(r.consumer);
      }
    }
    if (r.source == EdgeSource::kTensormap) {
      e.producer = SameView(r.producer, r.consumer) ? kConsumerView : keep_view(r.producer);
    }
  }
}

void DepGenRecorder::RecordTensor(const DepGenTensorRecord& tensor) {
  Impl& m = *impl_;
  const uint64_t n = m.num_tensors.load(std::memory_order_relaxed);
  if (n >= m.tensors.size()) {
    m.dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  m.tensors.MapAhead(n);
  m.tensors[n] = tensor;
  m.num_tensors.store(n + 1, std::memory_order_relaxed);
}

void DepGenRecorder::Prefault(int slice, int slices) const {
  // Tensors (count unknown): PrefaultAhead.
  const Impl& m = *impl_;
  m.tasks.PopulateSlice(m.hint.tasks, slice, slices);
  m.args.PopulateSlice(m.hint.tensor_args, slice, slices);
  m.edges.PopulateSlice(m.hint.edges, slice, slices);
}

void DepGenRecorder::PrefaultAhead() const {
  // Tensors: a submit records those it is the first to name.
  const Impl& m = *impl_;
  m.tensors.PopulateAhead(m.num_tensors.load(std::memory_order_relaxed));
}

uint64_t DepGenRecorder::dropped_records() const {
  return impl_->dropped.load(std::memory_order_relaxed);
}

Status DepGenRecorder::Export(const fs::path& path) const {
  const Impl& m = *impl_;
  uint64_t dropped = m.dropped.load();
  if (dropped > 0) {
    std::string msg = "dep_gen reconcile: " + std::to_string(dropped) +
                      " records dropped on device side (collected=" + std::to_string(m.num_tasks) +
                      ", total=" + std::to_string(m.total.load()) +
                      ") — deps.json will NOT be emitted for this run (incomplete graph).";
    DFX_LOG_WARN("{}", msg);
    return FailedPrecondition(msg);
  }

  ChunkedWriter w;
  DFX_RETURN_IF_ERROR(w.Open(path));
  {
    internal::RecordText x(w);
    DimsText arg_shape, arg_strides, consumer_shape, consumer_strides, producer_shape,
        producer_strides;
    x.Lit(JoinedText<"{\"", keys::kTasks, "\":[">);
    for (uint64_t t = 0; t < m.num_tasks; ++t) {
      const TaskHeader& h = m.tasks[t];
      x.Lit(t ? JoinedText<",{\"", keys::kTaskId, "\":\"">
              : JoinedText<"{\"", keys::kTaskId, "\":\"">)
          .Int(h.task_id);
      x.Lit(h.manual_scope ? JoinedText<"\",\"", keys::kScope, "\":\"", keys::kScopeManual, "\",\"",
                                        keys::kEarlyDispatch, "\":">
                           : JoinedText<"\",\"", keys::kScope, "\":\"", keys::kScopeAuto, "\",\"",
                                        keys::kEarlyDispatch, "\":">);
      x.Lit(h.early_dispatch ? "true" : "false");
      x.Lit(JoinedText<",\"", keys::kKernelIds, "\":[">).Int(h.kernel_ids[0]);
      x.Char(',').Int(h.kernel_ids[1]).Char(',').Int(h.kernel_ids[2]);
      x.Lit(JoinedText<"],\"", keys::kBlockNum, "\":">).Int(h.block_num);
      x.Lit(JoinedText<",\"", keys::kArgs, "\":[">);
      for (uint8_t a = 0; a < h.arg_count; ++a) {
        const DepGenArg& arg = m.args[h.first_arg + a];
        x.Lit(a ? JoinedText<",{\"", keys::kIdx, "\":"> : JoinedText<"{\"", keys::kIdx, "\":">)
            .Int(arg.idx);
        x.Lit(JoinedText<",\"", keys::kType, "\":\"">).Lit(ArgTypeName(arg.type)).Char('"');
        if (arg.has_tensor) {
          const TensorView& v = arg.view;
          x.Lit(JoinedText<",\"", keys::kTensorId, "\":\"">).Int(v.tensor_id);
          x.Lit(JoinedText<"\",\"", keys::kDtype, "\":">).Str(internal::FixedString(v.dtype));
          x.Lit(JoinedText<",\"", keys::kShape, "\":">);
          WriteDims(x, v.shape, v.ndims, arg_shape);
          x.Lit(JoinedText<",\"", keys::kStartOffset, "\":\"">).Int(v.start_offset);
          x.Lit(JoinedText<"\",\"", keys::kStrides, "\":">);
          WriteDims(x, v.strides, v.ndims, arg_strides);
        }
        x.Char('}');
      }
      x.Lit("]}");
    }
    x.Lit(JoinedText<"],\"", keys::kTensors, "\":[">);
    for (uint64_t i = 0, n = m.num_tensors.load(); i < n; ++i) {
      const DepGenTensorRecord& t = m.tensors[i];
      x.Lit(i ? JoinedText<",{\"", keys::kTensorId, "\":\"">
              : JoinedText<"{\"", keys::kTensorId, "\":\"">)
          .Int(t.tensor_id);
      x.Lit(JoinedText<"\",\"", keys::kBufferAddr, "\":\"">).Int(t.buffer_addr);
      x.Lit(JoinedText<"\",\"", keys::kVersion, "\":">).Int(t.version);
      x.Lit(JoinedText<",\"", keys::kDtype, "\":">).Str(internal::FixedString(t.dtype));
      x.Lit(JoinedText<",\"", keys::kBufferNumel, "\":\"">).Int(t.buffer_numel).Lit("\"}");
    }
    x.Lit(JoinedText<"],\"", keys::kEdges, "\":[">);
    for (uint64_t i = 0; i < m.num_edges; ++i) {
      const EdgeHeader& e = m.edges[i];
      const bool is_explicit = e.source == EdgeSource::kExplicit;
      const bool tensormap = e.source == EdgeSource::kTensormap;
      x.Lit(i ? JoinedText<",{\"", keys::kPred, "\":\""> : JoinedText<"{\"", keys::kPred, "\":\"">)
          .Int(e.pred);
      x.Lit(JoinedText<"\",\"", keys::kSucc, "\":\"">).Int(e.succ);
      x.Lit(JoinedText<"\",\"", keys::kArg, "\":">).Int(is_explicit ? -1 : e.arg);
      x.Lit(JoinedText<",\"", keys::kSource, "\":\"">).Lit(SourceName(e.source));
      // Flags per source, as the reference replay writes them: the record cannot
      // tell an explicit add_dep_wait() from a retaining dependency.
      x.Lit(tensormap ? JoinedText<"\",\"", keys::kFlags, "\":[\"", keys::kFlagWait, "\"]">
                      : JoinedText<"\",\"", keys::kFlags, "\":[\"", keys::kFlagWait, "\",\"",
                                   keys::kFlagRetain, "\"]">);
      if (tensormap) {
        x.Lit(JoinedText<",\"", keys::kOverlap, "\":\"">).Lit(OverlapName(e.overlap)).Char('"');
      }
      if (!is_explicit) {
        const TensorView& c = m.ConsumerOf(e);
        x.Lit(JoinedText<",\"", keys::kTensorId, "\":\"">).Int(c.tensor_id);
        x.Lit(JoinedText<"\",\"", keys::kConsumer, keys::kDtype, "\":">);
        x.Str(internal::FixedString(c.dtype));
        x.Lit(JoinedText<",\"", keys::kConsumer, keys::kShape, "\":">);
        WriteDims(x, c.shape, c.ndims, consumer_shape);
        x.Lit(JoinedText<",\"", keys::kConsumer, keys::kStartOffset, "\":\"">).Int(c.start_offset);
        x.Lit(JoinedText<"\",\"", keys::kConsumer, keys::kStrides, "\":">);
        WriteDims(x, c.strides, c.ndims, consumer_strides);
      }
      if (tensormap) {
        const TensorView& p = m.ProducerOf(e);
        x.Lit(JoinedText<",\"", keys::kProducer, keys::kShape, "\":">);
        WriteDims(x, p.shape, p.ndims, producer_shape);
        x.Lit(JoinedText<",\"", keys::kProducer, keys::kStartOffset, "\":\"">).Int(p.start_offset);
        x.Lit(JoinedText<"\",\"", keys::kProducer, keys::kStrides, "\":">);
        WriteDims(x, p.strides, p.ndims, producer_strides);
      }
      x.Char('}');
    }
    x.Lit("]}\n");
  }  // hands the rest to `w`
  return w.Commit();
}

}  // namespace dfx::collectors
