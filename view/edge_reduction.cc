#include "view/edge_reduction.h"

#include <ostream>
#include <unordered_map>

#include "view/dataflow_verifier.h"

namespace dfx::view {

Result<EdgeMode> ParseEdgeMode(const std::string& text) {
  if (const std::optional<EdgeMode> mode = kEdgeModeText.Parse(text)) return *mode;
  return InvalidArgument("--edge-mode: '" + text + "' is not one of " +
                         kEdgeModeText.Choices(", "));
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

std::vector<bool> SelectEdges(const DepsGraph& g, EdgeMode mode, std::ostream& out,
                              std::ostream& err) {
  std::vector<bool> selected(g.edges.size(), true);
  if (mode == EdgeMode::kFull) return selected;
  bool dataflow = mode == EdgeMode::kReducedDataflow || mode == EdgeMode::kOmittedDataflow;
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
        << kEdgeModeText.Name(mode) << " ignored)\n";
  } else {
    bool omitted = mode == EdgeMode::kOmitted || mode == EdgeMode::kOmittedDataflow;
    size_t removed = 0;
    for (size_t i = 0; i < g.edges.size(); ++i) {
      selected[i] = omitted ? redundant[i] : !redundant[i];
      removed += redundant[i];
    }
    std::string prefix = dataflow ? "Dataflow-verified " : "";
    if (omitted) {
      out << prefix << (dataflow ? "redundant" : "Redundant") << " edges only: showing " << removed
          << " redundant edge(s) of " << g.edges.size() << "\n";
    } else {
      out << prefix << (dataflow ? "transitive" : "Transitive") << " reduction: removed " << removed
          << " redundant edge(s) of " << g.edges.size() << " (" << g.edges.size() - removed
          << " kept)\n";
    }
    for (size_t i = 0; i < g.edges.size(); ++i) {
      if (redundant[i]) {
        out << "  - " << Display(g, g.edges[i].first) << " -> " << Display(g, g.edges[i].second)
            << "\n";
      }
    }
  }
  return selected;
}

}  // namespace dfx::view
