// `dfx-view deps`: reads deps.json and its name map, builds the graph, applies
// the edge mode and writes the text report or the HTML page.
#include "view/deps_viewer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <ostream>
#include <set>
#include <vector>

#include "collectors/artifact_layout.h"
#include "collectors/dep_gen/deps_reader.h"
#include "collectors/name_map.h"
#include "collectors/swimlane/swimlane_reader.h"
#include "common/file_util.h"
#include "view/critical_path.h"
#include "view/deps_graph.h"
#include "view/deps_html.h"
#include "view/deps_text_report.h"

namespace dfx::view {

using collectors::DepsFile;

namespace {

std::string DefaultOutput(const DepsViewerOptions& o) {
  std::string ext = o.format == "html" ? ".html" : ".txt";
  if (!o.collapse.empty()) ext = "_by_" + o.collapse + ext;
  if (o.edge_mode == EdgeMode::kFull) return "deps_viewer" + ext;
  return std::string("deps_viewer_") + kEdgeModeText.Name(o.edge_mode) + ext;
}

// Keeps the nodes within `depth` edges of `center` and the edges among them.
Status KeepAround(DepsGraph& g, uint64_t center, int depth, const std::string& text) {
  if (!g.nodes.count(center)) {
    return NotFound(
        fmt::format("--around {}: no such task in the graph (tasks are shown as "
                    "t<local> or r<ring>t<local>, e.g. t0)",
                    text));
  }
  std::map<uint64_t, std::vector<uint64_t>> adjacent;
  for (const auto& [a, b] : g.edges) {
    adjacent[a].push_back(b);
    adjacent[b].push_back(a);
  }
  std::set<uint64_t> keep = {center};
  std::vector<uint64_t> frontier = {center};
  for (int d = 0; d < depth && !frontier.empty(); ++d) {
    std::vector<uint64_t> next;
    for (uint64_t id : frontier) {
      for (uint64_t peer : adjacent[id]) {
        if (keep.insert(peer).second) next.push_back(peer);
      }
    }
    frontier = std::move(next);
  }
  for (auto it = g.nodes.begin(); it != g.nodes.end();) {
    it = keep.count(it->first) ? std::next(it) : g.nodes.erase(it);
  }
  std::vector<std::pair<uint64_t, uint64_t>> edges;
  for (const auto& e : g.edges) {
    if (keep.count(e.first) && keep.count(e.second)) {
      edges.push_back(e);
    } else {
      g.annotations.erase(e);
    }
  }
  g.edges = std::move(edges);
  return Status::Ok();
}

// The critical path of the dispatch whose deps.json is `deps_json`, from the
// records beside it.
Result<CriticalPath> CriticalPathBeside(const std::filesystem::path& deps_json) {
  const std::filesystem::path records = deps_json.parent_path() / collectors::kSwimlaneRecordsFile;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(records, ec)) {
    return NotFound(fmt::format(
        "--critical-path needs the timing beside deps.json: {} does not exist (run with "
        "--enable-chip-swimlane)",
        records.string()));
  }
  DFX_ASSIGN_OR_RETURN(collectors::SwimlaneRecords data, collectors::ReadSwimlaneRecords(records));
  DFX_ASSIGN_OR_RETURN(collectors::TaskGraph deps, collectors::ReadTaskGraph(deps_json));
  CriticalPath path = ComputeCriticalPath(data, deps);
  if (path.hops.empty()) return NotFound("--critical-path: " + records.string() + " has no tasks");
  return path;
}

std::string CriticalPathText(const DepsGraph& g, const CriticalPath& cp) {
  auto pct = [&](double v) { return cp.span > 0 ? 100.0 * v / cp.span : 0.0; };
  std::string s = fmt::format(
      "\nCRITICAL PATH\n  hops: {}  span: {:.3f} us (root dispatch -> last finish)  exec: {:.3f} "
      "us ({:.1f}%)  scheduler-injected: {:.3f} us ({:.1f}%)\n",
      cp.hops.size() - 1, cp.span, cp.exec, pct(cp.exec), cp.sched, pct(cp.sched));
  for (const CriticalHop& h : cp.hops) {
    auto n = g.nodes.find(h.task_id);
    s += fmt::format("  TASK {} {} start={:.3f} exec={:.3f} end={:.3f} sched_gap={:.3f}\n",
                     Display(g, h.task_id), n == g.nodes.end() ? "?" : NodeHint(n->second), h.start,
                     h.end - h.start, h.end, h.gap_before);
  }
  return s;
}

}  // namespace

Result<uint64_t> ParseTaskRef(const std::string& text) {
  auto bad = [&] {
    return InvalidArgument(fmt::format(
        "--around {}: expected a task as t<local>, r<ring>t<local>, <local>, (ring, local) or "
        "0x<full id>",
        text));
  };
  auto number = [](const std::string& s, int base, uint64_t* v) {
    if (s.empty()) return false;
    char* end = nullptr;
    *v = std::strtoull(s.c_str(), &end, base);
    return *end == '\0' && s[0] != '-';
  };
  uint64_t ring = 0, local = 0;
  if (text.rfind("0x", 0) == 0) {
    uint64_t id = 0;
    if (!number(text.substr(2), 16, &id)) return bad();
    return id;
  }
  if (text.size() > 2 && text.front() == '(' && text.back() == ')') {
    const std::string inner = text.substr(1, text.size() - 2);
    const size_t comma = inner.find(',');
    if (comma == std::string::npos) return bad();
    std::string a = inner.substr(0, comma), b = inner.substr(comma + 1);
    while (!b.empty() && b.front() == ' ') b.erase(b.begin());
    if (!number(a, 10, &ring) || !number(b, 10, &local)) return bad();
  } else if (text.rfind("r", 0) == 0 && text.find('t') != std::string::npos) {
    const size_t t = text.find('t');
    if (!number(text.substr(1, t - 1), 10, &ring) || !number(text.substr(t + 1), 10, &local))
      return bad();
  } else if (text.rfind("t", 0) == 0) {
    if (!number(text.substr(1), 10, &local)) return bad();
  } else if (!number(text, 10, &local)) {
    return bad();
  }
  if (ring > 255 || local > 0xFFFFFFFFull) return bad();
  return (ring << 32) | local;
}

Status RunDepsViewer(const DepsViewerOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.collapse.empty() && o.critical_path) {
    return InvalidArgument(
        "--collapse and --critical-path do not combine: the path is a chain of tasks, a "
        "collapsed graph has groups; drop one of them");
  }
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
  DepsGraph g = BuildDepsGraph(file, names);
  AttachPerfSidecar(g, dir, err);
  std::optional<CriticalPath> critical;
  if (o.critical_path) {
    DFX_ASSIGN_OR_RETURN(critical, CriticalPathBeside(o.input));
    for (const CriticalHop& h : critical->hops) g.critical_path.push_back(h.task_id);
  }
  if (o.around) {
    DFX_ASSIGN_OR_RETURN(uint64_t center, ParseTaskRef(*o.around));
    DFX_RETURN_IF_ERROR(KeepAround(g, center, o.depth, *o.around));
    out << "Around " << Display(g, center) << ": " << g.nodes.size() << " task(s) within "
        << o.depth << " edge(s)\n";
  }
  std::vector<bool> selected = SelectEdges(g, o.edge_mode, out, err);
  if (!o.collapse.empty()) {
    DepsGraph collapsed = CollapseDepsGraph(g, selected, o.collapse);
    out << "Collapsed by " << o.collapse << ": " << g.nodes.size() << " task(s) into "
        << collapsed.nodes.size() << " group(s), " << collapsed.edges.size()
        << " edge(s) between groups\n";
    g = std::move(collapsed);
    selected.assign(g.edges.size(), true);
  }
  std::filesystem::path output = o.output ? *o.output : dir / DefaultOutput(o);
  size_t unique = static_cast<size_t>(std::count(selected.begin(), selected.end(), true));
  size_t annotated = 0;
  for (size_t i = 0; i < g.edges.size(); ++i) {
    if (selected[i]) annotated += g.annotations.at(g.edges[i]).size();
  }
  if (o.format == "html") {
    DFX_RETURN_IF_ERROR(WriteDepsHtml(g, selected, o, output, err));
    if (o.edge_mode != EdgeMode::kFull) {
      out << "HTML layout preserves all " << g.edges.size() << " edge(s); "
          << g.edges.size() - unique << " unselected edge(s) are colored as background\n";
    }
  } else {
    std::string text = DepsTextReport(g, selected, o.input.string());
    if (critical) text += CriticalPathText(g, *critical);
    DFX_RETURN_IF_ERROR(WriteFileAtomic(output, text));
  }
  out << "Wrote " << output.string() << " (" << g.nodes.size() << " tasks, " << unique
      << " unique edges, " << annotated << " annotated edges, format=" << o.format << ")\n";
  return Status::Ok();
}

}  // namespace dfx::view
