#include "view/deps_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <set>

#include "collectors/artifact_layout.h"
#include "collectors/swimlane/swimlane_reader.h"
#include "view/task_label.h"

namespace dfx::view {

using collectors::DepsArg;
using collectors::DepsEdge;
using collectors::DepsFile;
using collectors::DepsTask;
using collectors::DepsTensor;

namespace {

// §7.2: an OUTPUT arg recorded without tensor info gets the tensor its
// outgoing tensormap edges carry, when that is unambiguous: the task has
// exactly one such arg and its outgoing edges name exactly one tensor that none
// of its other args already names.
void InferOutputTensors(DepsGraph& g) {
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

}  // namespace

std::string Display(const DepsGraph& g, uint64_t id) {
  if (g.all_ring0) return std::to_string(LocalOf(id));
  return fmt::format("({}, {})", RingOf(id), LocalOf(id));
}

std::string FuncIdText(const DepsNode& n) {
  if (n.kind == "alloc") return "none";
  if (!n.has_kernel_ids) return "unknown";
  return fmt::format("[{},{},{}]", n.kernel_ids[0], n.kernel_ids[1], n.kernel_ids[2]);
}

std::string NodeHint(const DepsNode& n) {
  return n.kind == "alloc"      ? "alloc"
         : n.kind == "dummy"    ? "dummy"
         : !n.func_name.empty() ? n.func_name
         : n.has_kernel_ids
             ? fmt::format("f{}", *std::max_element(n.kernel_ids.begin(), n.kernel_ids.end()))
             : "unknown";
}

std::optional<uint64_t> ArgTensorId(const DepsGraph& g, uint64_t task, const DepsArg& arg,
                                    bool* inferred) {
  *inferred = false;
  if (arg.tensor_id) return arg.tensor_id;
  auto it = g.inferred_tensor.find({task, arg.idx.value_or(-1)});
  if (it == g.inferred_tensor.end()) return std::nullopt;
  *inferred = true;
  return it->second;
}

DepsGraph BuildDepsGraph(const DepsFile& file, const collectors::NameMap& names) {
  DepsGraph g;
  for (const DepsTask& t : file.tasks) {
    DepsNode n;
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
  std::map<uint64_t, DepsNode> dummies;
  for (const DepsTask& t : file.tasks) {
    if (g.nodes.count(t.task_id)) continue;
    DepsNode n;
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
        DepsNode n;
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

void AttachPerfSidecar(DepsGraph& g, const std::filesystem::path& dir, std::ostream& err) {
  std::error_code ec;
  auto path = dir / collectors::kSwimlaneRecordsFile;
  if (!std::filesystem::exists(path, ec)) return;
  auto perf = collectors::ReadSwimlaneRecords(path);
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

DepsGraph CollapseDepsGraph(const DepsGraph& g, const std::vector<bool>& selected,
                            const std::string& by) {
  DepsGraph c;
  c.collapsed_by = by;
  c.collapsed_tasks = g.nodes.size();
  c.tensors = g.tensors;
  c.perf_sidecar = g.perf_sidecar;
  c.func_name_map = g.func_name_map;
  std::map<std::string, uint64_t> group_of_name;
  std::map<uint64_t, uint64_t> group_of_task;
  std::map<uint64_t, size_t> members, internal;
  for (const auto& [id, n] : g.nodes) {
    const std::string name = by == "ring" ? fmt::format("ring {}", id >> 32) : NodeHint(n);
    auto [it, fresh] = group_of_name.emplace(name, group_of_name.size());
    group_of_task[id] = it->second;
    ++members[it->second];
    if (!fresh) continue;
    DepsNode node = n;  // the first member gives the kind and core type
    node.id = it->second;
    node.task = nullptr;
    node.duration_us.reset();
    node.func_name = name;
    node.block_num = 1;
    node.early_dispatch = false;
    c.nodes.emplace(node.id, std::move(node));
  }
  for (auto& [id, node] : c.nodes) {
    node.func_name = fmt::format("{} \xC3\x97{}", node.func_name, members[id]);
  }
  for (size_t i = 0; i < g.edges.size(); ++i) {
    if (!selected[i]) continue;
    const uint64_t a = group_of_task.at(g.edges[i].first), b = group_of_task.at(g.edges[i].second);
    if (a == b) {
      ++internal[a];
      continue;
    }
    auto& anns = c.annotations[{a, b}];
    if (c.edge_weight[{a, b}]++ == 0) c.edges.emplace_back(a, b);
    const auto& from = g.annotations.at(g.edges[i]);
    anns.insert(anns.end(), from.begin(), from.end());
    c.annotated_edges += from.size();
  }
  for (auto& [id, node] : c.nodes) {
    if (internal[id] > 0) node.func_name += fmt::format(", {} edge(s) inside", internal[id]);
  }
  std::sort(c.edges.begin(), c.edges.end());
  return c;
}

}  // namespace dfx::view
