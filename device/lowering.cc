#include "device/lowering.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

namespace dfx::device {

uint64_t TensorId(uint64_t buffer_addr, int32_t version) {
  uint8_t bytes[12];
  std::memcpy(bytes, &buffer_addr, 8);
  std::memcpy(bytes + 8, &version, 4);
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : bytes) {
    h ^= b;
    h *= 0x100000001b3ull;
  }
  return h;
}

namespace {

constexpr uint64_t kExternalBase = 0x700000000000ull;
constexpr uint64_t kHeapBase = 0x100000000ull;  // ring r heap at kHeapBase * (r + 1) * 16
constexpr uint64_t kAlign = 64;

uint64_t AlignUp(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// "<file>:<line>", at most 31 characters: the file name gives way first.
std::string Site(const std::string& file, int line) {
  const std::string suffix = ":" + std::to_string(line);
  return file.substr(0, suffix.size() < 31 ? 31 - suffix.size() : 0) + suffix;
}

struct MapEntry {
  uint64_t offset;
  uint64_t numel;
  int task;
  Shape shape;
};

class Lowerer {
 public:
  Lowerer(const Program& p, const RingCapacities& rings) : p_(p) {
    out_.program = &p;
    out_.rings = rings;
  }

  Result<LoweredProgram> Run() {
    uint64_t ext = kExternalBase;
    binding_.assign(p_.tensors.size(), -1);
    for (size_t d = 0; d < p_.tensors.size(); ++d) {
      const TensorDecl& t = p_.tensors[d];
      if (t.view_of >= 0) continue;
      Buffer b;
      b.numel = t.Numel();
      b.dtype = t.dtype;
      b.bytes = AlignUp(b.numel * DTypeSize(t.dtype));
      b.addr = ext;
      b.decl = static_cast<int>(d);
      ext += b.bytes;
      binding_[d] = NewBuffer(b);
      bind_count_[binding_[d]] = 1;
    }
    out_.tasks.reserve(static_cast<size_t>(p_.submit_count));
    out_.events.reserve(2 * static_cast<size_t>(p_.submit_count) + 2);
    out_.tensors.reserve(2 * static_cast<size_t>(p_.submit_count) + p_.tensors.size());
    released_.reserve(static_cast<size_t>(p_.submit_count));
    // Sites as the reference records a PTO2_SCOPE call site, "<file>:<line>"
    // (the root scope at the orchestration); without a source file the name.
    out_.scopes.push_back({p_.source_file.empty() ? (p_.name + ":root").substr(0, 31)
                                                  : Site(p_.source_file, p_.orchestration_line),
                           0, false, p_.name + ":root"});
    DFX_RETURN_IF_ERROR(Body(p_.orchestration, 0, 0, false));
    out_.core_executions = 0;
    for (const auto& t : out_.tasks) out_.core_executions += static_cast<uint64_t>(t.block_num);
    for (const auto& [value, site] : tag_sites_) {
      if (matched_tags_.count(value)) continue;
      out_.warnings.push_back(
          p_.origin + ": at " + site.first + ": dump_tag(\"" + site.second +
          "\") is never dumped: no later dispatch consumes that exact value (tags follow value "
          "identity; a rebinding OUTPUT, an in-place write or a view makes a new value); tag the "
          "value the kernel actually receives");
    }
    return std::move(out_);
  }

 private:
  int NewBuffer(const Buffer& b) {
    out_.buffers.push_back(b);
    version_.push_back(0);
    bind_count_.push_back(0);
    dead_.push_back(false);
    tensormap_.emplace_back();
    last_recorded_.push_back(-1);
    return static_cast<int>(out_.buffers.size() - 1);
  }

  Status Err(const std::string& path, const std::string& msg) const {
    return InvalidArgument(p_.origin + ": at " + path + ": " + msg);
  }

  Status Body(const std::vector<Statement>& body, int scope_index, int depth, bool manual) {
    out_.events.push_back({LoweredEvent::Kind::kScopeBegin, scope_index});
    std::vector<int> scope_tasks;  // heap-owning tasks submitted in this scope
    for (const Statement& st : body) {
      switch (st.kind) {
        case Statement::Kind::kSubmit:
          DFX_RETURN_IF_ERROR(SubmitOne(st, depth, manual, &scope_tasks));
          break;
        case Statement::Kind::kDumpTag: {
          auto v = ValueOf(st.tag_tensor);
          tagged_.insert(v);
          tag_sites_.emplace(v, std::make_pair(st.json_path, p_.tensors[st.tag_tensor].name));
          break;
        }
        case Statement::Kind::kScope: {
          int idx = static_cast<int>(out_.scopes.size());
          out_.scopes.push_back(
              {p_.source_file.empty() ? st.site.substr(0, 31) : Site(p_.source_file, st.line),
               depth + 1, st.manual, st.site});
          DFX_RETURN_IF_ERROR(Body(st.body, idx, depth + 1, st.manual));
          break;
        }
      }
    }
    // Scope end: everything allocated here is released; names still bound to
    // those buffers dangle from now on.
    for (int t : scope_tasks) {
      if (!released_[t]) Release(t);
    }
    for (int t : scope_tasks) {
      for (const LoweredArg& a : out_.tasks[t].args)
        if (a.type == ArgType::kOutput) {
          dead_[a.buffer] = true;
          dead_scope_[a.buffer] = out_.scopes[scope_index].name;
        }
    }
    out_.events.push_back({LoweredEvent::Kind::kScopeEnd, scope_index});
    return Status::Ok();
  }

  // (buffer, version, decl) of the current value of a tensor name.
  std::tuple<int, int32_t, int> ValueOf(int decl) const {
    const TensorDecl& t = p_.tensors[decl];
    int base = t.view_of >= 0 ? t.view_of : decl;
    int b = binding_[base];
    return {b, version_[b], decl};
  }

  void Release(int task) {
    released_[task] = true;
    out_.events.push_back({LoweredEvent::Kind::kRelease, task});
  }

  void AddTensorRecord(LoweredTask* task, const LoweredArg& a) {
    // A buffer's versions only grow and args always name its current (or
    // next) version, so "newer than the last recorded" means "not seen".
    if (a.version <= last_recorded_[a.buffer]) return;
    last_recorded_[a.buffer] = a.version;
    collectors::DepGenTensorRecord r;
    const Buffer& b = out_.buffers[a.buffer];
    r.tensor_id = a.tensor_id;
    r.buffer_addr = b.addr;
    r.version = a.version;
    std::strncpy(r.dtype, DTypeName(b.dtype), sizeof(r.dtype) - 1);
    r.buffer_numel = b.numel;
    task->new_tensors.push_back(static_cast<int>(out_.tensors.size()));
    out_.tensors.push_back(r);
  }

  Status SubmitOne(const Statement& st, int depth, bool manual, std::vector<int>* scope_tasks) {
    const Submit& sub = st.submit;
    int index = static_cast<int>(out_.tasks.size());
    LoweredTask task;
    task.ring = std::min(depth, 3);
    task.depth = depth;
    task.task_id = (static_cast<uint64_t>(task.ring) << 32) | local_ids_[task.ring]++;
    task.submit_ordinal = sub_ordinal_++;
    task_of_ordinal_.push_back(index);
    task.statement = &st;
    task.kernel = sub.kernel;
    task.block_num = sub.block_num;
    task.manual = manual;
    DFX_RETURN_IF_ERROR(ResolveArgs(st, &task));
    AddIncomingEdges(sub, manual, &task);
    std::vector<int> unbound;
    DFX_RETURN_IF_ERROR(AllocateOutputs(st, index, &task, &unbound));
    DFX_RETURN_IF_ERROR(RecordWrites(st, index, &task));
    DFX_RETURN_IF_ERROR(LinkPredecessors(st, &task));
    out_.edge_count += task.edges.size();
    out_.tensor_args += task.args.size() + sub.scalars.size();

    out_.tasks.push_back(std::move(task));
    released_.push_back(false);
    out_.events.push_back({LoweredEvent::Kind::kSubmit, index});
    if (out_.tasks[index].has_heap) scope_tasks->push_back(index);

    ReleaseUnbound(unbound);
    return Status::Ok();
  }

  // Whether the submit marks arg `i` for the args dump.
  static bool InDumps(const Submit& sub, size_t i) {
    return std::find(sub.dumps.begin(), sub.dumps.end(), static_cast<int>(i)) != sub.dumps.end();
  }

  // 1. Resolves the values the args name (OUTPUT args get fresh buffers in
  // AllocateOutputs).
  Status ResolveArgs(const Statement& st, LoweredTask* out) {
    const Submit& sub = st.submit;
    LoweredTask& task = *out;
    std::vector<int> output_decls;
    for (size_t i = 0; i < sub.args.size(); ++i) {
      const SubmitArg& sa = sub.args[i];
      const TensorDecl& decl = p_.tensors[sa.tensor];
      LoweredArg a;
      a.decl = sa.tensor;
      a.type = sa.type;
      a.shape = decl.shape;
      a.numel = decl.Numel();
      a.offset = decl.view_of >= 0 ? decl.offset : 0;
      if (sa.type == ArgType::kOutput) {
        if (std::find(output_decls.begin(), output_decls.end(), sa.tensor) != output_decls.end())
          return Err(st.json_path + ".args[" + std::to_string(i) + "].tensor",
                     "tensor \"" + decl.name +
                         "\" is an OUTPUT twice in one submit; expected "
                         "each OUTPUT to name a different tensor");
        output_decls.push_back(sa.tensor);
        task.args.push_back(std::move(a));
        continue;
      }
      auto [b, ver, d] = ValueOf(sa.tensor);
      if (dead_[b])
        return Err(st.json_path + ".args[" + std::to_string(i) + "].tensor",
                   "tensor \"" + decl.name + "\" refers to a buffer allocated inside scope \"" +
                       dead_scope_[b] +
                       "\", which has ended and reclaimed it; expected a value "
                       "that is still alive (write it into a tensor of an enclosing scope with "
                       "OUTPUT_EXISTING)");
      a.buffer = b;
      a.version = ver;
      const bool tagged = !tagged_.empty() && tagged_.count({b, ver, d}) > 0;
      if (tagged) matched_tags_.insert({b, ver, d});
      a.dump = tagged || InDumps(sub, i);
      task.any_dump = task.any_dump || a.dump;
      task.args.push_back(std::move(a));
    }

    return Status::Ok();
  }

  // 2. Incoming edges: the explicit deps, then (outside manual scopes) the
  // tensormap's producers of what the task reads and the creators of the
  // buffers it writes in place.
  void AddIncomingEdges(const Submit& sub, bool manual, LoweredTask* out) {
    LoweredTask& task = *out;
    for (int dep : sub.deps) {
      LoweredEdge e;
      e.pred = task_of_ordinal_[dep];
      e.arg = -1;
      e.source = collectors::EdgeSource::kExplicit;
      task.edges.push_back(e);
    }
    if (!manual) {
      for (size_t i = 0; i < task.args.size(); ++i) {
        const LoweredArg& a = task.args[i];
        if (a.type == ArgType::kInput || a.type == ArgType::kInout) {
          const auto& entries = tensormap_[a.buffer];
          for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
            uint64_t lo = std::max(it->offset, a.offset);
            uint64_t hi = std::min(it->offset + it->numel, a.offset + a.numel);
            if (lo >= hi) continue;
            bool covered = it->offset <= a.offset && a.offset + a.numel <= it->offset + it->numel;
            LoweredEdge e;
            e.pred = it->task;
            e.arg = static_cast<int>(i);
            e.source = collectors::EdgeSource::kTensormap;
            e.overlap = covered ? collectors::Overlap::kCovered : collectors::Overlap::kOther;
            e.producer_offset = it->offset;
            e.producer_shape = it->shape;
            task.edges.push_back(std::move(e));
            if (covered) break;
          }
        }
        if (a.type == ArgType::kInout || a.type == ArgType::kOutputExisting) {
          const Buffer& b = out_.buffers[a.buffer];
          if (!b.external && b.creator >= 0) {
            LoweredEdge e;
            e.pred = b.creator;
            e.arg = static_cast<int>(i);
            e.source = collectors::EdgeSource::kCreator;
            task.edges.push_back(e);
          }
        }
      }
    }
  }

  // 3. Allocates OUTPUT buffers from the task's ring heap and rebinds their
  // names; buffers no name refers to any more go to `unbound`.
  Status AllocateOutputs(const Statement& st, int index, LoweredTask* out,
                         std::vector<int>* unbound_out) {
    const Submit& sub = st.submit;
    LoweredTask& task = *out;
    std::vector<int>& unbound = *unbound_out;
    for (size_t i = 0; i < task.args.size(); ++i) {
      LoweredArg& a = task.args[i];
      if (a.type != ArgType::kOutput) continue;
      const TensorDecl& decl = p_.tensors[a.decl];
      Buffer b;
      b.numel = decl.Numel();
      b.dtype = decl.dtype;
      b.bytes = AlignUp(b.numel * DTypeSize(decl.dtype));
      b.external = false;
      b.decl = a.decl;
      b.ring = task.ring;
      b.creator = index;
      uint64_t cap = out_.rings.heap[task.ring];
      if (b.bytes > cap)
        return Err(st.json_path + ".args[" + std::to_string(i) + "]",
                   "the " + std::to_string(b.bytes) + "-byte OUTPUT \"" + decl.name +
                       "\" does not fit in ring " + std::to_string(task.ring) + "'s heap of " +
                       std::to_string(cap) +
                       " bytes; expected ring_heap >= " + std::to_string(b.bytes));
      uint64_t& head = heap_head_[task.ring];
      if (head + b.bytes > cap) {  // wrap: skip the tail end of the ring
        task.heap_bytes += cap - head;
        head = 0;
      }
      b.heap_offset = head;
      b.addr = kHeapBase * 16 * static_cast<uint64_t>(task.ring + 1) + head;
      head += b.bytes;
      task.heap_bytes += b.bytes;
      a.buffer = NewBuffer(b);
      a.version = 0;
      a.dump = InDumps(sub, i);
      task.any_dump = task.any_dump || a.dump;
      task.has_heap = true;
      // Rebind the name.
      int old = binding_[a.decl];
      if (old >= 0 && --bind_count_[old] == 0) unbound.push_back(old);
      binding_[a.decl] = a.buffer;
      bind_count_[a.buffer] = 1;
    }
    if (task.heap_bytes > out_.rings.heap[task.ring])
      return Err(st.json_path, "the outputs of this submit need " +
                                   std::to_string(task.heap_bytes) + " bytes of ring " +
                                   std::to_string(task.ring) + "'s heap (" +
                                   std::to_string(out_.rings.heap[task.ring]) +
                                   " bytes); expected a larger ring_heap");
    return Status::Ok();
  }

  // 4. Writes make new versions and new producers in the tensormap.
  Status RecordWrites(const Statement& st, int index, LoweredTask* out) {
    LoweredTask& task = *out;
    for (size_t i = 0; i < task.args.size(); ++i) {
      LoweredArg& a = task.args[i];
      if (a.type == ArgType::kInput) continue;
      if (a.type == ArgType::kOutputExisting) a.version = ++version_[a.buffer];
      if (a.type == ArgType::kInout) ++version_[a.buffer];
      auto& entries = tensormap_[a.buffer];
      std::erase_if(entries, [&](const MapEntry& e) {
        return a.offset <= e.offset && e.offset + e.numel <= a.offset + a.numel;
      });
      entries.push_back({a.offset, a.numel, index, a.shape});
      ++task.tensormap_inserts;
    }
    if (static_cast<uint64_t>(task.tensormap_inserts) > out_.rings.tensormap)
      return Err(st.json_path, "this submit inserts " + std::to_string(task.tensormap_inserts) +
                                   " tensormap entries but the tensormap holds " +
                                   std::to_string(out_.rings.tensormap));
    return Status::Ok();
  }

  // 5. Ids, tensor records, predecessor sets, lifetime references.
  Status LinkPredecessors(const Statement& st, LoweredTask* out) {
    LoweredTask& task = *out;
    for (LoweredArg& a : task.args) {
      a.tensor_id = TensorId(out_.buffers[a.buffer].addr, a.version);
      AddTensorRecord(&task, a);
    }
    for (const LoweredEdge& e : task.edges) {
      if (std::find(task.preds.begin(), task.preds.end(), e.pred) == task.preds.end())
        task.preds.push_back(e.pred);
    }
    if (task.preds.size() > out_.rings.dep_pool[task.ring])
      return Err(st.json_path, "this submit has " + std::to_string(task.preds.size()) +
                                   " predecessors but ring " + std::to_string(task.ring) +
                                   "'s dep pool holds " +
                                   std::to_string(out_.rings.dep_pool[task.ring]) +
                                   " entries; expected a larger ring_dep_pool");
    for (int pred : task.preds) {
      LoweredTask& pt = out_.tasks[pred];
      if (pt.has_heap && !released_[pred]) {
        ++pt.hold_refs;
        task.ref_targets.push_back(pred);
      }
    }
    if (task.has_heap) task.hold_refs += 1;  // held until released
    return Status::Ok();
  }

  // 6. Buffers no name refers to any more release their creator (once all
  // of that creator's buffers are unbound).
  void ReleaseUnbound(const std::vector<int>& unbound) {
    for (int b : unbound) {
      int creator = out_.buffers[b].creator;
      if (creator < 0 || released_[creator]) continue;
      bool all = true;
      for (const LoweredArg& a : out_.tasks[creator].args)
        if (a.type == ArgType::kOutput && bind_count_[a.buffer] > 0) all = false;
      if (all) Release(creator);
    }
  }

  const Program& p_;
  LoweredProgram out_;
  std::vector<int> binding_;  // base decl -> buffer
  std::vector<int32_t> version_;
  std::vector<int> bind_count_;
  std::vector<bool> dead_;
  std::map<int, std::string> dead_scope_;
  std::vector<std::vector<MapEntry>> tensormap_;
  std::vector<bool> released_;
  std::set<std::tuple<int, int32_t, int>> tagged_;
  // Where each tagged value was tagged (json path, tensor name), and which
  // tagged values a later dispatch consumed.
  std::map<std::tuple<int, int32_t, int>, std::pair<std::string, std::string>> tag_sites_;
  std::set<std::tuple<int, int32_t, int>> matched_tags_;
  std::vector<int32_t> last_recorded_;  // per buffer, -1 = none
  std::vector<int> task_of_ordinal_;
  uint64_t local_ids_[4] = {0, 0, 0, 0};
  uint64_t heap_head_[4] = {0, 0, 0, 0};
  int sub_ordinal_ = 0;
};

}  // namespace

Result<LoweredProgram> Lower(const Program& program, const RingCapacities& rings) {
  Lowerer l(program, rings);
  return l.Run();
}

uint64_t LoweredBytes(const LoweredProgram& lp) {
  auto bytes = [](const auto& v) -> uint64_t { return v.capacity() * sizeof(v[0]); };
  uint64_t n = bytes(lp.buffers) + bytes(lp.tasks) + bytes(lp.scopes) + bytes(lp.events) +
               bytes(lp.tensors) + bytes(lp.warnings);
  for (const LoweredTask& t : lp.tasks) {
    n += bytes(t.args) + bytes(t.edges) + bytes(t.preds) + bytes(t.ref_targets) +
         bytes(t.new_tensors);
  }
  for (const LoweredScope& s : lp.scopes) n += s.site.capacity() + s.name.capacity();
  for (const std::string& w : lp.warnings) n += w.capacity();
  return n;
}

}  // namespace dfx::device
