#include "view/deps_viewer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <ostream>
#include <unordered_map>

#include "collectors/artifact_layout.h"
#include "collectors/dep_gen/deps_reader.h"
#include "collectors/name_map.h"
#include "collectors/swimlane/swimlane_reader.h"
#include "common/file_util.h"
#include "common/json.h"
#include "common/json_stream.h"
#include "view/process_util.h"
#include "view/task_label.h"

namespace dfx::view {

using collectors::DepsArg;
using collectors::DepsEdge;
using collectors::DepsFile;
using collectors::DepsSlice;
using collectors::DepsTask;
using collectors::DepsTensor;
using collectors::ReadSwimlaneRecords;

namespace {

struct Node {
  uint64_t id = 0;
  std::string kind;  // submit | dummy | alloc
  bool has_kernel_ids = false;
  std::array<int, 3> kernel_ids = {-1, -1, -1};
  int block_num = 1;
  bool early_dispatch = false;
  std::string core_type;           // aic | aiv | mix | ""
  std::string func_name;           // "" when no name map hit
  const DepsTask* task = nullptr;  // in the DepsFile the graph was built from
  std::optional<double> duration_us;
};

struct Graph {
  std::map<uint64_t, Node> nodes;
  std::vector<std::pair<uint64_t, uint64_t>> edges;  // unique, sorted
  std::map<std::pair<uint64_t, uint64_t>, std::vector<const DepsEdge*>> annotations;
  size_t annotated_edges = 0;
  size_t tensors = 0;
  std::map<uint64_t, std::string> tensor_short;  // tensor_id → T<k>
  std::map<uint64_t, const DepsTensor*> tensor_info;
  // OUTPUT args without tensor_id whose tensor was inferred from edges (§7.2):
  // (task id, arg idx) → tensor_id; shown with a "?" marker.
  std::map<std::pair<uint64_t, int>, uint64_t> inferred_tensor;
  bool all_ring0 = true;
  bool perf_sidecar = false;
  bool func_name_map = false;
};

std::string Display(const Graph& g, uint64_t id) {
  if (g.all_ring0) return std::to_string(LocalOf(id));
  return fmt::format("({}, {})", RingOf(id), LocalOf(id));
}

std::string FuncIdText(const Node& n) {
  if (n.kind == "alloc") return "none";
  if (!n.has_kernel_ids) return "unknown";
  return fmt::format("[{},{},{}]", n.kernel_ids[0], n.kernel_ids[1], n.kernel_ids[2]);
}

// §7.2: an OUTPUT arg recorded without tensor info gets the tensor its
// outgoing tensormap edges carry, when that is unambiguous: the task has
// exactly one such arg and its outgoing edges name exactly one tensor that none
// of its other args already names.
void InferOutputTensors(Graph& g) {
  std::map<uint64_t, std::set<uint64_t>> out_tensors;
  for (const auto& [key, anns] : g.annotations) {
    for (const DepsEdge* a : anns) {
      if (a->source == "tensormap" && a->tensor_id) out_tensors[key.first].insert(*a->tensor_id);
    }
  }
  for (const auto& [id, n] : g.nodes) {
    if (n.task == nullptr || !n.task->args) continue;
    auto it = out_tensors.find(id);
    if (it == out_tensors.end()) continue;
    std::set<uint64_t> candidates = it->second;
    std::vector<int> missing;
    for (const DepsArg& a : *n.task->args) {
      if (a.tensor_id) {
        candidates.erase(*a.tensor_id);
      } else if (a.type == "OUTPUT") {
        missing.push_back(a.idx.value_or(-1));
      }
    }
    if (missing.size() == 1 && candidates.size() == 1) {
      g.inferred_tensor[{id, missing[0]}] = *candidates.begin();
    }
  }
}

// Tensor id of an arg: recorded, else inferred from edges (`inferred` set).
std::optional<uint64_t> ArgTensorId(const Graph& g, uint64_t task, const DepsArg& arg,
                                    bool* inferred) {
  *inferred = false;
  if (arg.tensor_id) return arg.tensor_id;
  auto it = g.inferred_tensor.find({task, arg.idx.value_or(-1)});
  if (it == g.inferred_tensor.end()) return std::nullopt;
  *inferred = true;
  return it->second;
}

// The graph of `file` (which must outlive it: nodes and annotations point into it).
Graph BuildGraph(const DepsFile& file, const collectors::NameMap& names) {
  Graph g;
  for (const DepsTask& t : file.tasks) {
    Node n;
    n.id = t.task_id;
    n.task = &t;
    if (t.has_kernel_ids) {
      n.has_kernel_ids = true;
      for (size_t i = 0; i < 3; ++i) n.kernel_ids[i] = t.kernel_ids[i];
    }
    n.block_num = t.block_num;
    n.early_dispatch = t.early_dispatch;
    bool any = n.kernel_ids[0] >= 0 || n.kernel_ids[1] >= 0 || n.kernel_ids[2] >= 0;
    n.kind = any ? "submit" : "dummy";
    bool aic = n.kernel_ids[0] >= 0, aiv = n.kernel_ids[1] >= 0 || n.kernel_ids[2] >= 0;
    n.core_type = aic && aiv ? "mix" : aic ? "aic" : aiv ? "aiv" : "";
    std::vector<std::string> parts;
    for (int k : n.kernel_ids) {
      if (k < 0) continue;
      if (const std::string* nm = names.Find(k)) {
        if (std::find(parts.begin(), parts.end(), *nm) == parts.end()) parts.push_back(*nm);
      }
    }
    for (size_t i = 0; i < parts.size(); ++i) n.func_name += (i ? " + " : "") + parts[i];
    if (!n.func_name.empty()) g.func_name_map = true;
    // Tasks with valid kernel ids are nodes even without edges.
    if (any) g.nodes[n.id] = n;
  }
  std::map<uint64_t, Node> dummies;
  for (const DepsTask& t : file.tasks) {
    if (g.nodes.count(t.task_id)) continue;
    Node n;
    n.id = t.task_id;
    n.task = &t;
    n.kind = "dummy";
    n.has_kernel_ids = t.has_kernel_ids;
    n.block_num = t.block_num;
    n.early_dispatch = t.early_dispatch;
    dummies[t.task_id] = n;
  }
  g.tensors = file.tensors.size();
  size_t ordinal = 0;
  for (const DepsTensor& t : file.tensors) {
    g.tensor_short[t.tensor_id] = fmt::format("T{}", ordinal++);
    g.tensor_info[t.tensor_id] = &t;
  }
  for (const DepsEdge& e : file.edges) {
    g.annotations[{e.pred, e.succ}].push_back(&e);
    ++g.annotated_edges;
  }
  for (const auto& [k, v] : g.annotations) g.edges.push_back(k);
  for (const auto& [p, s] : g.edges) {
    for (uint64_t id : {p, s}) {
      if (g.nodes.count(id)) continue;
      auto d = dummies.find(id);
      if (d != dummies.end()) {
        g.nodes[id] = d->second;
      } else {
        Node n;
        n.id = id;
        n.kind = "alloc";
        g.nodes[id] = n;
      }
    }
  }
  for (const auto& [id, n] : g.nodes) {
    if (RingOf(id) != 0) g.all_ring0 = false;
  }
  InferOutputTensors(g);
  return g;
}

void AttachPerfSidecar(Graph& g, const std::filesystem::path& dir, std::ostream& err) {
  std::error_code ec;
  auto path = dir / collectors::kSwimlaneRecordsFile;
  if (!std::filesystem::exists(path, ec)) return;
  auto perf = ReadSwimlaneRecords(path);
  if (!perf.ok()) {
    err << "Warning: couldn't read " << path.string() << ": " << perf.status().message() << "\n";
    return;
  }
  g.perf_sidecar = true;
  std::map<uint64_t, std::set<std::string>> types;
  for (const auto& r : perf->tasks) {
    types[perf->TaskId(r)].insert(perf->IsAic(r) ? "aic" : "aiv");
    auto it = g.nodes.find(perf->TaskId(r));
    if (it == g.nodes.end()) continue;
    double dur = perf->EndUs(r) - perf->StartUs(r);
    it->second.duration_us = std::max(it->second.duration_us.value_or(0.0), dur);
  }
  for (auto& [id, n] : g.nodes) {
    auto t = types.find(id);
    if (n.core_type.empty() && t != types.end()) {
      n.core_type = t->second.size() > 1 ? "mix" : *t->second.begin();
    }
  }
}

bool IsCreator(const std::vector<const DepsEdge*>& anns) {
  for (const DepsEdge* a : anns) {
    if (a->source == "creator") return true;
  }
  return false;
}

// ---- Dataflow verification of creator edges (§7.5 *_dataflow modes) ----

// Bits per element of a deps.json dtype name; 0 when unknown.
int DtypeBits(const std::string& d) {
  static const std::map<std::string, int> kBits = {
      {"FLOAT32", 32}, {"FLOAT16", 16},  {"INT32", 32},    {"INT16", 16},  {"INT8", 8},
      {"UINT8", 8},    {"BFLOAT16", 16}, {"INT64", 64},    {"UINT64", 64}, {"UINT16", 16},
      {"UINT32", 32},  {"BOOL", 8},      {"FP8E4M3FN", 8}, {"FP8E8M0", 8}, {"FP4E2M1", 4}};
  auto it = kBits.find(d);
  return it == kBits.end() ? 0 : it->second;
}

// Region of one slice as bit intervals [begin, end), appended to `out`.
// Contiguous inner dimensions are merged into runs; returns false when the
// geometry is missing or malformed, or when the slice needs more intervals
// than `*budget` (which it decrements) — "too complex".
bool SliceIntervals(uint64_t buffer_addr, int bits, const DepsSlice& slice, size_t* budget,
                    std::vector<std::pair<uint64_t, uint64_t>>* out) {
  if (bits <= 0 || !slice.shape || !slice.strides || slice.shape->size() != slice.strides->size() ||
      !slice.start_offset) {
    return false;
  }
  const uint64_t off = *slice.start_offset;
  std::vector<uint64_t> dims, st;
  for (size_t i = 0; i < slice.shape->size(); ++i) {
    uint64_t d = (*slice.shape)[i], t = (*slice.strides)[i];
    if (d == 0) return true;  // empty slice
    dims.push_back(d);
    st.push_back(t);
  }
  // Innermost contiguous run (elements), absorbing outer dims that continue it.
  uint64_t run = 1;
  while (!dims.empty() && st.back() == run) {
    run *= dims.back();
    dims.pop_back();
    st.pop_back();
  }
  uint64_t count = 1;
  for (uint64_t d : dims) {
    if (d > *budget || count > *budget / d) return false;
    count *= d;
  }
  if (count > *budget) return false;
  *budget -= static_cast<size_t>(count);
  const uint64_t base_bits = buffer_addr * 8;
  std::vector<uint64_t> idx(dims.size(), 0);
  for (uint64_t k = 0; k < count; ++k) {
    uint64_t e = off;
    for (size_t i = 0; i < dims.size(); ++i) e += idx[i] * st[i];
    uint64_t b = base_bits + e * static_cast<uint64_t>(bits);
    out->emplace_back(b, b + run * static_cast<uint64_t>(bits));
    for (size_t i = dims.size(); i-- > 0;) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
  return true;
}

void NormalizeIntervals(std::vector<std::pair<uint64_t, uint64_t>>* v) {
  std::sort(v->begin(), v->end());
  size_t w = 0;
  for (const auto& iv : *v) {
    if (w > 0 && iv.first <= (*v)[w - 1].second) {
      (*v)[w - 1].second = std::max((*v)[w - 1].second, iv.second);
    } else {
      (*v)[w++] = iv;
    }
  }
  v->resize(w);
}

// True when every interval of `need` lies inside the union `cover` (both normalized).
bool Covers(const std::vector<std::pair<uint64_t, uint64_t>>& cover,
            const std::vector<std::pair<uint64_t, uint64_t>>& need) {
  size_t j = 0;
  for (const auto& [b, e] : need) {
    while (j < cover.size() && cover[j].second <= b) ++j;
    if (j == cover.size() || cover[j].first > b || cover[j].second < e) return false;
  }
  return true;
}

// Proves a creator edge (creator → consumer) redundant from the annotations:
// every creator annotation names an INOUT arg of the consumer, and every byte
// of that INOUT region has direct tensormap dataflow into it (same arg slot,
// same buffer) from producers that write it (OUTPUT/INOUT args) and are
// themselves reached from the same creator. OUTPUT_EXISTING, any other arg
// type, missing geometry or more than kMaxIntervals intervals → not proven.
class DataflowVerifier {
 public:
  static constexpr size_t kMaxIntervals = 10000;

  explicit DataflowVerifier(const Graph& g) : g_(g) {
    for (const auto& [p, c] : g.edges) {
      succ_[p].push_back(c);
      preds_[c].push_back(p);
    }
  }

  bool Proves(uint64_t creator, uint64_t consumer) {
    const auto& anns = g_.annotations.at({creator, consumer});
    const Node& cn = g_.nodes.at(consumer);
    if (cn.task == nullptr || !cn.task->args) return false;
    bool any = false;
    for (const DepsEdge* a : anns) {
      if (a->source != "creator") continue;
      any = true;
      if (!ProvesOne(creator, consumer, cn, *a)) return false;
    }
    return any;
  }

 private:
  const DepsArg* ArgOf(const Node& n, int idx) const {
    for (const DepsArg& a : *n.task->args) {
      if (a.idx.value_or(-2) == idx) return &a;
    }
    return nullptr;
  }
  bool BufferOf(const std::optional<uint64_t>& tensor_id, uint64_t* addr,
                std::string* dtype) const {
    if (!tensor_id) return false;
    auto it = g_.tensor_info.find(*tensor_id);
    if (it == g_.tensor_info.end()) return false;
    const DepsTensor& t = *it->second;
    if (dtype != nullptr) *dtype = t.dtype.value_or("");
    if (!t.buffer_addr) return false;
    *addr = *t.buffer_addr;
    return true;
  }
  // The producer has a writing arg (OUTPUT / INOUT) on buffer `addr`.
  bool WritesBuffer(uint64_t producer, uint64_t addr) const {
    const Node& pn = g_.nodes.at(producer);
    if (pn.task == nullptr || !pn.task->args) return false;
    for (const DepsArg& a : *pn.task->args) {
      if (a.type != "OUTPUT" && a.type != "INOUT") continue;
      bool inferred = false;
      uint64_t b = 0;
      if (BufferOf(ArgTensorId(g_, producer, a, &inferred), &b, nullptr) && b == addr) return true;
    }
    return false;
  }
  const std::set<uint64_t>& Reach(uint64_t from) {
    auto it = reach_.find(from);
    if (it != reach_.end()) return it->second;
    std::set<uint64_t>& seen = reach_[from];
    std::vector<uint64_t> stack = {from};
    while (!stack.empty()) {
      uint64_t u = stack.back();
      stack.pop_back();
      auto s = succ_.find(u);
      if (s == succ_.end()) continue;
      for (uint64_t v : s->second) {
        if (seen.insert(v).second) stack.push_back(v);
      }
    }
    return seen;
  }

  bool ProvesOne(uint64_t creator, uint64_t consumer, const Node& cn, const DepsEdge& ann) {
    int slot = ann.arg;
    const DepsArg* arg = ArgOf(cn, slot);
    if (arg == nullptr || arg->type != "INOUT") return false;
    uint64_t addr = 0;
    std::string tensor_dtype;
    if (!BufferOf(ann.tensor_id, &addr, &tensor_dtype)) return false;
    std::string cdtype = ann.consumer_dtype.value_or(tensor_dtype);
    size_t budget = kMaxIntervals;
    std::vector<std::pair<uint64_t, uint64_t>> need, cover;
    if (!SliceIntervals(addr, DtypeBits(cdtype), ann.consumer, &budget, &need)) return false;
    NormalizeIntervals(&need);
    if (need.empty()) return false;
    const std::set<uint64_t>& from_creator = Reach(creator);
    for (uint64_t p : preds_[consumer]) {
      if (p == creator || !from_creator.count(p)) continue;
      for (const DepsEdge* pa : g_.annotations.at({p, consumer})) {
        if (pa->source != "tensormap" || pa->arg != slot) continue;
        uint64_t paddr = 0;
        if (!BufferOf(pa->tensor_id, &paddr, nullptr) || paddr != addr) continue;
        if (!WritesBuffer(p, addr)) continue;
        if (!SliceIntervals(addr, DtypeBits(cdtype), pa->producer, &budget, &cover)) {
          return false;  // too complex (or malformed): keep the edge
        }
      }
    }
    NormalizeIntervals(&cover);
    return Covers(cover, need);
  }

  const Graph& g_;
  std::map<uint64_t, std::vector<uint64_t>> succ_, preds_;
  std::map<uint64_t, std::set<uint64_t>> reach_;
};

std::string DefaultOutput(const DepsViewerOptions& o) {
  std::string ext = o.format == "html" ? ".html" : ".txt";
  if (o.edge_mode == EdgeMode::kFull) return "deps_viewer" + ext;
  return std::string("deps_viewer_") + EdgeModeName(o.edge_mode) + ext;
}

std::string TextReport(const Graph& g, const std::vector<bool>& selected,
                       const std::string& source) {
  std::map<uint64_t, std::vector<uint64_t>> fanin, fanout;
  size_t unique = 0, annotated = 0;
  for (size_t i = 0; i < g.edges.size(); ++i) {
    if (!selected[i]) continue;
    ++unique;
    annotated += g.annotations.at(g.edges[i]).size();
    fanout[g.edges[i].first].push_back(g.edges[i].second);
    fanin[g.edges[i].second].push_back(g.edges[i].first);
  }
  std::string s;
  s += "SUMMARY\n";
  s += "  source_deps_json: " + source + "\n";
  s += fmt::format("  tasks: {}\n", g.nodes.size());
  s += fmt::format("  unique_task_edges: {}\n", unique);
  s += fmt::format("  annotated_edges: {}\n", annotated);
  s += fmt::format("  tensors: {}\n", g.tensors);
  s += fmt::format("  perf_sidecar: {}\n", g.perf_sidecar ? "yes" : "no");
  s += fmt::format("  func_name_map: {}\n", g.func_name_map ? "yes" : "no");
  s += "\nTASK INDEX\n";
  auto head = [&](const Node& n) {
    std::string h =
        fmt::format("TASK {} kind={} func_id={}", Display(g, n.id), n.kind, FuncIdText(n));
    if (n.block_num > 1) h += fmt::format(" SPMD block num = {}", n.block_num);
    return h;
  };
  for (const auto& [id, n] : g.nodes) {
    s += fmt::format("{} fanin={} fanout={}\n", head(n), fanin[id].size(), fanout[id].size());
  }
  for (const auto& [id, n] : g.nodes) {
    s += "\n=== " + head(n) + " ===\n";
    s += fmt::format("FANIN {}\n", fanin[id].size());
    for (uint64_t p : fanin[id]) s += "  <- " + Display(g, p) + "\n";
    s += fmt::format("FANOUT {}\n", fanout[id].size());
    for (uint64_t c : fanout[id]) s += "  -> " + Display(g, c) + "\n";
  }
  return s;
}

std::string NodeId(uint64_t id) { return fmt::format("T{}_{}", RingOf(id), LocalOf(id)); }

std::string DotEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o.push_back('\\');
    o.push_back(c);
  }
  return o;
}
std::string HtmlEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o.push_back(c);
    }
  }
  return o;
}

// "[64,128]", as the dims are written.
std::string DimsText(const std::vector<uint64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ","));
}

std::string TensorLabel(const Graph& g, uint64_t task, const DepsArg& arg) {
  bool inferred = false;
  const std::optional<uint64_t> tid = ArgTensorId(g, task, arg, &inferred);
  const DepsTensor* tensor = nullptr;
  if (tid) {
    auto ti = g.tensor_info.find(*tid);
    if (ti != g.tensor_info.end()) tensor = ti->second;
  }
  std::string shortname = "?";
  if (tid) {
    auto it = g.tensor_short.find(*tid);
    if (it != g.tensor_short.end()) shortname = it->second + (inferred ? "?" : "");
  }
  std::string dtype = arg.dtype.value_or("?");
  if (inferred && tensor != nullptr) dtype = tensor->dtype.value_or(dtype);
  std::string row = fmt::format("arg{} {} {}:{}", arg.idx.value_or(-1),
                                arg.type.value_or("UNKNOWN"), shortname, dtype);
  if (tensor != nullptr) {
    row += " elems=" +
           (tensor->buffer_numel ? std::to_string(*tensor->buffer_numel) : std::string("?"));
  }
  if (arg.slice.shape) row += " shape=" + DimsText(*arg.slice.shape);
  if (arg.slice.strides) row += " strides=" + DimsText(*arg.slice.strides);
  if (arg.slice.start_offset) row += " off=" + std::to_string(*arg.slice.start_offset);
  return row;
}

// The arg types a task writes its tensor through (an output port in the HTML).
bool IsWritingArg(const DepsArg& a) {
  return a.type == "INOUT" || a.type == "OUTPUT" || a.type == "OUTPUT_EXISTING";
}

std::string BuildDot(const Graph& g, const std::vector<bool>& selected, const DepsViewerOptions& o,
                     const std::map<uint64_t, int>& fanin, const std::map<uint64_t, int>& fanout) {
  std::string s = "digraph deps {\n";
  s += fmt::format(
      "  graph [rankdir={}, bgcolor=\"white\", fontname=\"Helvetica\", outputorder=edgesfirst];\n",
      o.direction);
  s += "  node [fontname=\"Helvetica\", fontsize=10, style=filled];\n  edge [color=\"#555555\", "
       "arrowsize=0.6];\n";
  // Fire markers: early_dispatch or alloc; star: all preds fire and >= 1 non-alloc pred.
  std::map<uint64_t, std::vector<uint64_t>> preds;
  for (const auto& [p, c] : g.edges) preds[c].push_back(p);
  auto fire = [&](const Node& n) { return n.early_dispatch || n.kind == "alloc"; };
  for (const auto& [id, n] : g.nodes) {
    std::string prefix;
    if (fire(n)) {
      prefix = "\xF0\x9F\x94\xA5 ";
    } else {
      auto it = preds.find(id);
      if (it != preds.end() && !it->second.empty()) {
        bool all = true, non_alloc = false;
        for (uint64_t p : it->second) {
          const Node& pn = g.nodes.at(p);
          all = all && fire(pn);
          non_alloc = non_alloc || pn.kind != "alloc";
        }
        if (all && non_alloc) prefix = "\xE2\xAD\x90 ";
      }
    }
    std::string what =
        n.kind == "alloc"      ? "alloc"
        : n.kind == "dummy"    ? "dummy"
        : !n.func_name.empty() ? n.func_name
        : n.has_kernel_ids
            ? fmt::format("f{}", *std::max_element(n.kernel_ids.begin(), n.kernel_ids.end()))
            : "unknown";
    int fi = fanin.count(id) ? fanin.at(id) : 0, fo = fanout.count(id) ? fanout.at(id) : 0;
    std::string label = fmt::format("{}{} \xC2\xB7 {} \xE2\x86\x93{} \xE2\x86\x91{}", prefix,
                                    Display(g, id), what, fi, fo);
    if (n.block_num > 1) label += fmt::format("  x{}", n.block_num);
    std::string shape = "box", fill = "#E0E0E0", style = "filled";
    if (n.kind == "alloc") {
      shape = "note";
      fill = "#EAEAEA";
      style = "filled,dashed";
    } else if (n.core_type == "aic") {
      shape = "box";
      fill = "#66A3FF";
      style = "filled,rounded";
    } else if (n.core_type == "aiv") {
      shape = "ellipse";
      fill = "#FFB366";
    } else if (n.core_type == "mix") {
      shape = "diamond";
      fill = "#66CC99";
    }
    std::string border = n.block_num > 1 ? ", color=\"#C62828\", penwidth=1.5" : "";
    if (o.show_tensor_info && n.task != nullptr && n.task->args) {
      std::string html =
          "<<TABLE BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"0\" CELLPADDING=\"3\">";
      for (const DepsArg& a : *n.task->args) {
        if (a.type == "INPUT" || a.type == "INOUT") {
          html += fmt::format("<TR><TD PORT=\"in_{}\" ALIGN=\"LEFT\">{}</TD></TR>",
                              a.idx.value_or(-1), HtmlEscape(TensorLabel(g, id, a)));
        }
      }
      html += "<TR><TD BGCOLOR=\"" + fill + "\"><B>" + HtmlEscape(label) + "</B></TD></TR>";
      for (const DepsArg& a : *n.task->args) {
        if (IsWritingArg(a)) {
          html += fmt::format("<TR><TD PORT=\"out_{}\" ALIGN=\"LEFT\">{}</TD></TR>",
                              a.idx.value_or(-1), HtmlEscape(TensorLabel(g, id, a)));
        }
      }
      html += "</TABLE>>";
      s += fmt::format("  {} [id=\"{}\", shape=plain, style=\"\", label={}{}];\n", NodeId(id),
                       NodeId(id), html, border);
    } else {
      s += fmt::format(
          "  {} [id=\"{}\", shape={}, fillcolor=\"{}\", style=\"{}\", label=\"{}\"{}];\n",
          NodeId(id), NodeId(id), shape, fill, style, DotEscape(label), border);
    }
  }
  for (size_t i = 0; i < g.edges.size(); ++i) {
    const auto& [p, c] = g.edges[i];
    const auto& anns = g.annotations.at(g.edges[i]);
    bool explicit_only = true;
    std::string overlap_label;
    int arg = -1;
    std::string out_port;
    for (const DepsEdge* a : anns) {
      if (a->source != "explicit") explicit_only = false;
      std::string ov = a->overlap.value_or("covered");
      if (a->source == "tensormap" && ov != "covered") overlap_label = ov;
      if (arg < 0) arg = a->arg;
    }
    std::string attrs = fmt::format("id=\"E{}\"", i);
    if (explicit_only) attrs += ", style=dashed, color=\"#B0B0B0\"";
    if (!overlap_label.empty())
      attrs += ", label=\"" + overlap_label + "\", fontcolor=\"#C62828\", fontsize=8";
    if (!selected[i]) attrs += ", class=\"hidden-edge\", color=\"#eef2f7\"";
    std::string from = NodeId(p), to = NodeId(c);
    if (o.show_tensor_info) {
      const Node& cn = g.nodes.at(c);
      const Node& pn = g.nodes.at(p);
      if (arg >= 0 && cn.task != nullptr) to += fmt::format(":in_{}", arg);
      // Producer port: the producer's output arg writing the same tensor.
      if (pn.task != nullptr && pn.task->args && !anns.empty() && anns[0]->tensor_id) {
        for (const DepsArg& a : *pn.task->args) {
          bool inferred = false;
          if (IsWritingArg(a) && ArgTensorId(g, p, a, &inferred) == anns[0]->tensor_id) {
            from += fmt::format(":out_{}", a.idx.value_or(-1));
            break;
          }
        }
      }
    }
    s += fmt::format("  {} -> {} [{}];\n", from, to, attrs);
  }
  s += "}\n";
  return s;
}

constexpr const char* kHtmlHead = R"HTML(<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>%TITLE%</title>
<style>
body{margin:0;font-family:Helvetica,Arial,sans-serif;background:#f7f9fc;overflow:hidden}
#bar{position:fixed;top:0;left:0;right:0;height:34px;background:#263238;color:#fff;display:flex;align-items:center;gap:16px;padding:0 12px;font-size:13px;z-index:2}
#bar .k{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle;border:1px solid #333}
#view{position:fixed;top:34px;left:0;right:0;bottom:0;cursor:grab}
#view.drag{cursor:grabbing}
#stage{transform-origin:0 0}
#panel{position:fixed;right:10px;top:44px;width:300px;max-height:80%;overflow:auto;background:#fff;border:1px solid #ccd;border-radius:6px;padding:10px;font-size:12px;display:none;z-index:3;box-shadow:0 2px 8px rgba(0,0,0,.2)}
.hidden-edge path,.hidden-edge polygon{stroke:#eef2f7;fill:#eef2f7}
g.node.sel polygon,g.node.sel ellipse,g.node.sel path{stroke:#d50000;stroke-width:3}
</style></head><body>
<div id="bar"><b>%TITLE%</b>
<span><span class="k" style="background:#66A3FF"></span>aic</span>
<span><span class="k" style="background:#FFB366"></span>aiv</span>
<span><span class="k" style="background:#66CC99"></span>mix</span>
<span><span class="k" style="background:#EAEAEA"></span>alloc</span>
<span><span class="k" style="background:#E0E0E0"></span>other</span>
<span><span class="k" style="background:#fff;border-color:#C62828"></span>SPMD xN</span>
<span>&#x1F525; early dispatch / alloc &nbsp; &#x2B50; all preds &#x1F525;</span>
<span style="margin-left:auto">drag = pan, Ctrl+wheel = zoom, f = fit, r = 1:1</span></div>
<div id="view"><div id="stage">
)HTML";

constexpr const char* kHtmlTail = R"HTML(
</div></div>
<div id="panel"></div>
<script id="nodedata" type="application/json">%NODES%</script>
<script>
(function(){
  var view=document.getElementById('view'),stage=document.getElementById('stage');
  var svg=stage.querySelector('svg');
  var nodes=JSON.parse(document.getElementById('nodedata').textContent);
  var s=1,tx=0,ty=0;
  function apply(){stage.style.transform='translate('+tx+'px,'+ty+'px) scale('+s+')';}
  function size(){var w=svg.width.baseVal.value||svg.getBBox().width,h=svg.height.baseVal.value||svg.getBBox().height;return [w,h];}
  function fit(){var z=size(),vw=view.clientWidth,vh=view.clientHeight;s=Math.min(vw/z[0],vh/z[1])*0.95;if(!isFinite(s)||s<=0)s=1;tx=(vw-z[0]*s)/2;ty=(vh-z[1]*s)/2;apply();}
  function one(){s=1;tx=10;ty=10;apply();}
  var drag=null;
  view.addEventListener('mousedown',function(e){drag=[e.clientX-tx,e.clientY-ty];view.classList.add('drag');});
  window.addEventListener('mouseup',function(){drag=null;view.classList.remove('drag');});
  window.addEventListener('mousemove',function(e){if(drag){tx=e.clientX-drag[0];ty=e.clientY-drag[1];apply();}});
  view.addEventListener('wheel',function(e){e.preventDefault();
    if(e.ctrlKey){var k=Math.exp(-e.deltaY*0.002),r=view.getBoundingClientRect(),mx=e.clientX-r.left,my=e.clientY-r.top;
      tx=mx-(mx-tx)*k;ty=my-(my-ty)*k;s*=k;} else {tx-=e.deltaX;ty-=e.deltaY;}
    apply();},{passive:false});
  window.addEventListener('keydown',function(e){if(e.key==='f')fit();else if(e.key==='r')one();});
  var panel=document.getElementById('panel'),selected=null;
  function bucket(list){var m={};list.forEach(function(id){var n=nodes[id];var h=n?n.hint:'unknown';m[h]=(m[h]||0)+1;});
    return Object.keys(m).sort().map(function(k){return '<li>'+k+': '+m[k]+'</li>';}).join('');}
  stage.querySelectorAll('g.node').forEach(function(g){
    g.style.cursor='pointer';
    g.addEventListener('click',function(ev){ev.stopPropagation();var n=nodes[g.id];if(!n)return;
      if(selected)selected.classList.remove('sel');selected=g;g.classList.add('sel');
      panel.style.display='block';
      panel.innerHTML='<b>'+n.label.replace(/</g,'&lt;')+'</b><br>kind: '+n.kind+'<br>func_id: '+n.func_id+
        (n.duration_us!==undefined?'<br>duration: '+n.duration_us.toFixed(3)+' us':'')+
        '<br><br><b>fanin '+n.fanin.length+'</b><ul>'+bucket(n.fanin)+'</ul><b>fanout '+n.fanout.length+'</b><ul>'+bucket(n.fanout)+'</ul>';});
  });
  view.addEventListener('click',function(){panel.style.display='none';if(selected)selected.classList.remove('sel');});
  fit();
  document.body.setAttribute('data-viewer-ready','1');
})();
</script></body></html>
)HTML";

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
  return s;
}

Status WriteHtml(const Graph& g, const std::vector<bool>& selected, const DepsViewerOptions& o,
                 const std::filesystem::path& output, std::ostream& err) {
  auto engine_path = FindOnPath(o.engine);
  if (!engine_path) {
    return NotFound(fmt::format(
        "Graphviz '{}' not found on PATH. Install graphviz: brew install graphviz / apt install "
        "graphviz",
        o.engine));
  }
  if (o.engine == "dot" && g.nodes.size() > 500) {
    err << "Note: " << g.nodes.size()
        << " nodes with --engine dot can take a long time; for large graphs use --engine sfdp.\n";
  }
  std::map<uint64_t, int> fanin, fanout;
  std::map<uint64_t, std::vector<uint64_t>> fin_list, fout_list;
  for (size_t i = 0; i < g.edges.size(); ++i) {
    if (!selected[i]) continue;
    ++fanout[g.edges[i].first];
    ++fanin[g.edges[i].second];
    fout_list[g.edges[i].first].push_back(g.edges[i].second);
    fin_list[g.edges[i].second].push_back(g.edges[i].first);
  }
  std::string dot = BuildDot(g, selected, o, fanin, fanout);
  char tmpl[] = "/tmp/dfx_view_dotXXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) return Internal("cannot create a temporary file in /tmp");
  close(fd);
  std::filesystem::path dot_path = tmpl;
  std::filesystem::path svg_path = dot_path;
  svg_path += ".svg";
  DFX_RETURN_IF_ERROR(WriteFileAtomic(dot_path, dot));
  auto run = RunChild({o.engine, "-Tsvg", dot_path.string()}, svg_path, o.layout_timeout);
  std::error_code ec;
  std::filesystem::remove(dot_path, ec);
  if (!run.ok()) {
    std::filesystem::remove(svg_path, ec);
    if (run.status().code() == Code::kDeadlineExceeded) {
      return DeadlineExceeded(
          fmt::format("{} -Tsvg timed out: {}{}", o.engine, run.status().message(),
                      o.engine == "dot" ? "; for large graphs use --engine sfdp" : ""));
    }
    return run.status();
  }
  if (run->exit_code != 0) {
    std::filesystem::remove(svg_path, ec);
    return Internal(
        fmt::format("{} -Tsvg failed (exit {}): {}", o.engine, run->exit_code, run->stderr_text));
  }
  auto svg = ReadFile(svg_path);
  std::filesystem::remove(svg_path, ec);
  if (!svg.ok()) return svg.status();
  std::string svg_text = *svg;
  auto pos = svg_text.find("<svg");
  if (pos != std::string::npos) svg_text = svg_text.substr(pos);
  // Node data for the detail panel.
  Json nodes = Json::object();
  for (const auto& [id, n] : g.nodes) {
    Json j;
    std::string hint =
        n.kind == "alloc"      ? "alloc"
        : n.kind == "dummy"    ? "dummy"
        : !n.func_name.empty() ? n.func_name
        : n.has_kernel_ids
            ? fmt::format("f{}", *std::max_element(n.kernel_ids.begin(), n.kernel_ids.end()))
            : "unknown";
    j["label"] = Display(g, id) + " \xC2\xB7 " + hint;
    j["kind"] = n.kind;
    j["hint"] = hint;
    j["func_id"] = FuncIdText(n);
    if (n.duration_us) j["duration_us"] = *n.duration_us;
    Json fi = Json::array(), fo = Json::array();
    for (uint64_t p : fin_list[id]) fi.push_back(NodeId(p));
    for (uint64_t c : fout_list[id]) fo.push_back(NodeId(c));
    j["fanin"] = fi;
    j["fanout"] = fo;
    nodes[NodeId(id)] = j;
  }
  std::string node_json = ReplaceAll(nodes.dump(), "</", "<\\/");
  std::string title = fmt::format("deps.json \xE2\x80\x94 {} nodes, {} edges", g.nodes.size(),
                                  std::count(selected.begin(), selected.end(), true));
  std::string html = ReplaceAll(kHtmlHead, "%TITLE%", HtmlEscape(title));
  html += svg_text;
  html += ReplaceAll(kHtmlTail, "%NODES%", node_json);
  return WriteFileAtomic(output, html);
}

}  // namespace

Result<EdgeMode> ParseEdgeMode(const std::string& t) {
  if (t == "full") return EdgeMode::kFull;
  if (t == "reduced") return EdgeMode::kReduced;
  if (t == "omitted") return EdgeMode::kOmitted;
  if (t == "reduced_dataflow") return EdgeMode::kReducedDataflow;
  if (t == "omitted_dataflow") return EdgeMode::kOmittedDataflow;
  return InvalidArgument(
      "--edge-mode: '" + t +
      "' is not one of full, reduced, omitted, reduced_dataflow, omitted_dataflow");
}

const char* EdgeModeName(EdgeMode m) {
  switch (m) {
    case EdgeMode::kFull:
      return "full";
    case EdgeMode::kReduced:
      return "reduced";
    case EdgeMode::kOmitted:
      return "omitted";
    case EdgeMode::kReducedDataflow:
      return "reduced_dataflow";
    case EdgeMode::kOmittedDataflow:
      return "omitted_dataflow";
  }
  return "full";
}

bool TransitiveReduction(const std::vector<std::pair<uint64_t, uint64_t>>& edges,
                         const std::set<std::pair<uint64_t, uint64_t>>& keep,
                         std::vector<bool>* redundant) {
  redundant->assign(edges.size(), false);
  std::unordered_map<uint64_t, size_t> index;
  std::vector<uint64_t> ids;
  for (const auto& [p, s] : edges) {
    for (uint64_t id : {p, s}) {
      if (index.emplace(id, ids.size()).second) ids.push_back(id);
    }
  }
  size_t n = ids.size();
  std::vector<std::vector<size_t>> succ(n);
  std::vector<size_t> indeg(n, 0);
  for (const auto& [p, s] : edges) {
    succ[index[p]].push_back(index[s]);
    ++indeg[index[s]];
  }
  // Kahn topological order.
  std::vector<size_t> order, queue;
  for (size_t i = 0; i < n; ++i) {
    if (indeg[i] == 0) queue.push_back(i);
  }
  while (!queue.empty()) {
    size_t u = queue.back();
    queue.pop_back();
    order.push_back(u);
    for (size_t v : succ[u]) {
      if (--indeg[v] == 0) queue.push_back(v);
    }
  }
  if (order.size() != n) return false;
  // reach[u] = nodes reachable from u (excluding u), bitsets filled in reverse topo order.
  size_t words = (n + 63) / 64;
  std::vector<uint64_t> reach(n * words, 0);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    uint64_t* ru = &reach[*it * words];
    for (size_t v : succ[*it]) {
      const uint64_t* rv = &reach[v * words];
      for (size_t w = 0; w < words; ++w) ru[w] |= rv[w];
      ru[v / 64] |= uint64_t{1} << (v % 64);
    }
  }
  for (size_t e = 0; e < edges.size(); ++e) {
    if (keep.count(edges[e])) continue;
    size_t u = index[edges[e].first], v = index[edges[e].second];
    for (size_t w : succ[u]) {
      if (w == v) continue;
      if (reach[w * words + v / 64] & (uint64_t{1} << (v % 64))) {
        (*redundant)[e] = true;
        break;
      }
    }
  }
  return true;
}

Status RunDepsViewer(const DepsViewerOptions& o, std::ostream& out, std::ostream& err) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(o.input, ec)) {
    return NotFound(o.input.string() + " not found.");
  }
  auto dir = o.input.parent_path();
  collectors::NameMap names;
  std::optional<std::filesystem::path> map_path = o.func_names;
  if (!map_path) map_path = collectors::NewestNameMap(dir);
  if (map_path) {
    auto loaded = collectors::ReadNameMap(*map_path);
    if (loaded.ok()) {
      names = std::move(loaded).value();
    } else {
      err << "Warning: couldn't read " << map_path->string() << ": " << loaded.status().message()
          << "\n";
    }
  }
  DFX_ASSIGN_OR_RETURN(DepsFile file, collectors::ReadDepsFile(o.input));
  Graph g = BuildGraph(file, names);
  AttachPerfSidecar(g, dir, err);
  std::vector<bool> selected(g.edges.size(), true);
  if (o.edge_mode != EdgeMode::kFull) {
    bool dataflow =
        o.edge_mode == EdgeMode::kReducedDataflow || o.edge_mode == EdgeMode::kOmittedDataflow;
    std::set<std::pair<uint64_t, uint64_t>> keep;
    for (const auto& [k, anns] : g.annotations) {
      // Creator (tensor-lifetime) edges are kept by `reduced`; in the dataflow
      // variants the structural pass only proposes them and the annotations
      // must prove them redundant (below).
      if (!dataflow && IsCreator(anns)) keep.insert(k);
    }
    std::vector<bool> redundant;
    bool acyclic = TransitiveReduction(g.edges, keep, &redundant);
    if (acyclic && dataflow) {
      DataflowVerifier verifier(g);
      for (size_t i = 0; i < g.edges.size(); ++i) {
        if (redundant[i] && IsCreator(g.annotations.at(g.edges[i])) &&
            !verifier.Proves(g.edges[i].first, g.edges[i].second)) {
          redundant[i] = false;
        }
      }
    }
    if (!acyclic) {
      err << "warning: dependency graph has a cycle; transitive reduction skipped, emitting full "
             "graph (--edge-mode "
          << EdgeModeName(o.edge_mode) << " ignored)\n";
    } else {
      bool omitted = o.edge_mode == EdgeMode::kOmitted || o.edge_mode == EdgeMode::kOmittedDataflow;
      size_t removed = 0;
      for (size_t i = 0; i < g.edges.size(); ++i) {
        selected[i] = omitted ? redundant[i] : !redundant[i];
        removed += redundant[i];
      }
      std::string prefix = dataflow ? "Dataflow-verified " : "";
      if (omitted) {
        out << prefix << (dataflow ? "redundant" : "Redundant") << " edges only: showing "
            << removed << " redundant edge(s) of " << g.edges.size() << "\n";
      } else {
        out << prefix << (dataflow ? "transitive" : "Transitive") << " reduction: removed "
            << removed << " redundant edge(s) of " << g.edges.size() << " ("
            << g.edges.size() - removed << " kept)\n";
      }
      for (size_t i = 0; i < g.edges.size(); ++i) {
        if (redundant[i]) {
          out << "  - " << Display(g, g.edges[i].first) << " -> " << Display(g, g.edges[i].second)
              << "\n";
        }
      }
    }
  }
  std::filesystem::path output = o.output ? *o.output : dir / DefaultOutput(o);
  size_t unique = static_cast<size_t>(std::count(selected.begin(), selected.end(), true));
  size_t annotated = 0;
  for (size_t i = 0; i < g.edges.size(); ++i) {
    if (selected[i]) annotated += g.annotations.at(g.edges[i]).size();
  }
  if (o.format == "html") {
    DFX_RETURN_IF_ERROR(WriteHtml(g, selected, o, output, err));
    if (o.edge_mode != EdgeMode::kFull) {
      out << "HTML layout preserves all " << g.edges.size() << " edge(s); "
          << g.edges.size() - unique << " unselected edge(s) are colored as background\n";
    }
  } else {
    DFX_RETURN_IF_ERROR(WriteFileAtomic(output, TextReport(g, selected, o.input.string())));
  }
  out << "Wrote " << output.string() << " (" << g.nodes.size() << " tasks, " << unique
      << " unique edges, " << annotated << " annotated edges, format=" << o.format << ")\n";
  return Status::Ok();
}

}  // namespace dfx::view
