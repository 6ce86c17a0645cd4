#include "view/deps_text_report.h"

#include <fmt/format.h>

#include <map>

namespace dfx::view {

std::string DepsTextReport(const DepsGraph& g, const std::vector<bool>& selected,
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
  if (!g.collapsed_by.empty()) {
    s += fmt::format(
        "  collapsed_by: {} ({} tasks in {} groups; a group's TASK line names it "
        "and its task count, FANIN/FANOUT list groups)\n",
        g.collapsed_by, g.collapsed_tasks, g.nodes.size());
  }
  s += fmt::format("  tasks: {}\n", g.nodes.size());
  s += fmt::format("  unique_task_edges: {}\n", unique);
  s += fmt::format("  annotated_edges: {}\n", annotated);
  s += fmt::format("  tensors: {}\n", g.tensors);
  s += fmt::format("  perf_sidecar: {}\n", g.perf_sidecar ? "yes" : "no");
  s += fmt::format("  func_name_map: {}\n", g.func_name_map ? "yes" : "no");
  s += "\nTASK INDEX\n";
  auto head = [&](const DepsNode& n) {
    std::string h =
        fmt::format("TASK {} kind={} func_id={}", Display(g, n.id), n.kind, FuncIdText(n));
    // The name map's kernel name(s) beside the ids (the reference prints ids only).
    if (!n.func_name.empty()) h += " func_name=" + n.func_name;
    if (n.block_num > 1) h += fmt::format(" SPMD block num = {}", n.block_num);
    return h;
  };
  for (const auto& [id, n] : g.nodes) {
    s += fmt::format("{} fanin={} fanout={}\n", head(n), fanin[id].size(), fanout[id].size());
  }
  for (const auto& [id, n] : g.nodes) {
    s += "\n=== " + head(n) + " ===\n";
    s += fmt::format("FANIN {}\n", fanin[id].size());
    auto weight = [&](uint64_t a, uint64_t b) {
      auto w = g.edge_weight.find({a, b});
      return w == g.edge_weight.end() ? std::string()
                                      : fmt::format(" ({} task edge(s))", w->second);
    };
    for (uint64_t p : fanin[id]) s += "  <- " + Display(g, p) + weight(p, id) + "\n";
    s += fmt::format("FANOUT {}\n", fanout[id].size());
    for (uint64_t c : fanout[id]) s += "  -> " + Display(g, c) + weight(id, c) + "\n";
  }
  return s;
}

}  // namespace dfx::view
