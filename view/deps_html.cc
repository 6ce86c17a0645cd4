#include "view/deps_html.h"

#include <fmt/format.h>
#include <unistd.h>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <fstream>
#include <map>
#include <ostream>
#include <set>

#include "common/file_util.h"
#include "common/json.h"
#include "common/subprocess.h"
#include "view/html_page.h"
#include "view/task_label.h"

namespace dfx::view {

using collectors::DepsArg;
using collectors::DepsEdge;
using collectors::DepsTensor;

namespace {

constexpr size_t kLegibleNodes = 5000;  // above, a whole-graph layout helps nobody

std::string NodeId(uint64_t id) { return fmt::format("T{}_{}", RingOf(id), LocalOf(id)); }

std::string DotEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o.push_back('\\');
    o.push_back(c);
  }
  return o;
}

// "[64,128]", as the dims are written.
std::string DimsText(const std::vector<uint64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ","));
}

std::string TensorLabel(const DepsGraph& g, uint64_t task, const DepsArg& arg) {
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

// The node prefix: a fire for an early_dispatch or alloc task; a star when
// every predecessor fires and at least one is not an alloc.
std::string NodeMarker(const DepsGraph& g, uint64_t id,
                       const std::map<uint64_t, std::vector<uint64_t>>& preds) {
  auto fire = [&](const DepsNode& n) { return n.early_dispatch || n.kind == "alloc"; };
  if (fire(g.nodes.at(id))) return "\xF0\x9F\x94\xA5 ";
  auto it = preds.find(id);
  if (it == preds.end() || it->second.empty()) return "";
  bool all = true, non_alloc = false;
  for (uint64_t p : it->second) {
    const DepsNode& pn = g.nodes.at(p);
    all = all && fire(pn);
    non_alloc = non_alloc || pn.kind != "alloc";
  }
  return all && non_alloc ? "\xE2\xAD\x90 " : "";
}

// The DOT statement of node `id`: its label (marker, task, kernel, fan-in
// and fan-out), a shape and colour per core type, and with --show-tensor-info
// an HTML table of its input and output tensors.
std::string DotNode(const DepsGraph& g, uint64_t id, const std::string& marker, bool critical,
                    bool show_tensor_info, int fi, int fo) {
  const DepsNode& n = g.nodes.at(id);
  std::string label = fmt::format("{}{} \xC2\xB7 {} \xE2\x86\x93{} \xE2\x86\x91{}", marker,
                                  Display(g, id), NodeHint(n), fi, fo);
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
  if (critical) border = ", color=\"#d50000\", penwidth=4, class=\"critical\"";
  if (!show_tensor_info || n.task == nullptr || !n.task->args) {
    return fmt::format(
        "  {} [id=\"{}\", shape={}, fillcolor=\"{}\", style=\"{}\", label=\"{}\"{}];\n", NodeId(id),
        NodeId(id), shape, fill, style, DotEscape(label), border);
  }
  std::string html = "<<TABLE BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"0\" CELLPADDING=\"3\">";
  for (const DepsArg& a : *n.task->args) {
    if (a.type == "INPUT" || a.type == "INOUT") {
      html += fmt::format("<TR><TD PORT=\"in_{}\" ALIGN=\"LEFT\">{}</TD></TR>", a.idx.value_or(-1),
                          HtmlEscape(TensorLabel(g, id, a)));
    }
  }
  html += "<TR><TD BGCOLOR=\"" + fill + "\"><B>" + HtmlEscape(label) + "</B></TD></TR>";
  for (const DepsArg& a : *n.task->args) {
    if (IsWritingArg(a)) {
      html += fmt::format("<TR><TD PORT=\"out_{}\" ALIGN=\"LEFT\">{}</TD></TR>", a.idx.value_or(-1),
                          HtmlEscape(TensorLabel(g, id, a)));
    }
  }
  html += "</TABLE>>";
  return fmt::format("  {} [id=\"{}\", shape=plain, style=\"\", label={}{}];\n", NodeId(id),
                     NodeId(id), html, border);
}

// The DOT statement of edge `i`: dashed when only explicit, the overlap of a
// partial tensormap edge, the count of a collapsed edge, red on the critical
// path, hidden when the edge mode leaves it out; with --show-tensor-info it
// runs between the tensors' ports.
std::string DotEdge(const DepsGraph& g, size_t i, bool selected, bool critical,
                    bool show_tensor_info) {
  const auto& [p, c] = g.edges[i];
  const auto& anns = g.annotations.at(g.edges[i]);
  bool explicit_only = true;
  std::string overlap_label;
  int arg = -1;
  for (const DepsEdge* a : anns) {
    if (a->source != "explicit") explicit_only = false;
    std::string ov = a->overlap.value_or("covered");
    if (a->source == "tensormap" && ov != "covered") overlap_label = ov;
    if (arg < 0) arg = a->arg;
  }
  std::string attrs = fmt::format("id=\"E{}\"", i);
  if (critical) attrs += ", color=\"#d50000\", penwidth=3, class=\"critical\"";
  if (explicit_only) attrs += ", style=dashed, color=\"#B0B0B0\"";
  if (!overlap_label.empty())
    attrs += ", label=\"" + overlap_label + "\", fontcolor=\"#C62828\", fontsize=8";
  if (auto w = g.edge_weight.find(g.edges[i]); w != g.edge_weight.end()) {
    // A collapsed graph: how many task edges this one stands for.
    attrs += fmt::format(", label=\"{}\", penwidth={:.1f}", w->second,
                         std::min(6.0, 1.0 + std::log10(static_cast<double>(w->second))));
  }
  if (!selected) attrs += ", class=\"hidden-edge\", color=\"#eef2f7\"";
  std::string from = NodeId(p), to = NodeId(c);
  if (show_tensor_info) {
    const DepsNode& cn = g.nodes.at(c);
    const DepsNode& pn = g.nodes.at(p);
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
  return fmt::format("  {} -> {} [{}];\n", from, to, attrs);
}

std::string BuildDot(const DepsGraph& g, const std::vector<bool>& selected,
                     const DepsViewerOptions& o, const std::map<uint64_t, int>& fanin,
                     const std::map<uint64_t, int>& fanout) {
  std::string s = "digraph deps {\n";
  s += fmt::format(
      "  graph [rankdir={}, bgcolor=\"white\", fontname=\"Helvetica\", outputorder=edgesfirst];\n",
      o.direction);
  // The force-directed engines pile nodes onto each other unless told not to.
  if (o.engine == "sfdp" || o.engine == "fdp" || o.engine == "neato") {
    s += "  graph [overlap=false, sep=\"+4\"];\n";
  }
  s += "  node [fontname=\"Helvetica\", fontsize=10, style=filled];\n  edge [color=\"#555555\", "
       "arrowsize=0.6];\n";
  // The critical path (deps --critical-path): its tasks and consecutive hops.
  const std::set<uint64_t> critical(g.critical_path.begin(), g.critical_path.end());
  std::set<std::pair<uint64_t, uint64_t>> critical_edges;
  for (size_t i = 1; i < g.critical_path.size(); ++i) {
    critical_edges.insert({g.critical_path[i - 1], g.critical_path[i]});
  }
  std::map<uint64_t, std::vector<uint64_t>> preds;
  for (const auto& [p, c] : g.edges) preds[c].push_back(p);
  for (const auto& node : g.nodes) {
    const uint64_t id = node.first;
    const int fi = fanin.count(id) ? fanin.at(id) : 0, fo = fanout.count(id) ? fanout.at(id) : 0;
    s += DotNode(g, id, NodeMarker(g, id, preds), critical.count(id) > 0, o.show_tensor_info, fi,
                 fo);
  }
  for (size_t i = 0; i < g.edges.size(); ++i) {
    s += DotEdge(g, i, selected[i], critical_edges.count(g.edges[i]) > 0, o.show_tensor_info);
  }
  s += "}\n";
  return s;
}

// What the layout engine did: its exit code (128 + signal when killed) and
// the first 64 KiB of its stderr.
struct LayoutRun {
  int exit_code = 0;
  std::string stderr_text;
};

// Runs `argv` (the engine, found on PATH) with stdout to `svg_path` and stdin
// from /dev/null, waiting at most `timeout`: DeadlineExceeded after killing it
// when it takes longer, NotFound when it cannot be started.
Result<LayoutRun> RunLayout(const std::vector<std::string>& argv,
                            const std::filesystem::path& svg_path,
                            std::chrono::milliseconds timeout) {
  std::filesystem::path err_path = svg_path;
  err_path += ".stderr";
  SpawnOptions options;
  options.stdout_path = svg_path;
  options.stderr_path = err_path;
  options.stdin_from_dev_null = true;
  auto child = ChildProcess::Spawn(argv, options);
  if (!child.ok()) return NotFound("cannot start '" + argv[0] + "'");
  std::error_code ec;
  const int64_t wait_ms = std::clamp<int64_t>(timeout.count(), 0, INT_MAX);
  if (!child->Wait(static_cast<int>(wait_ms))) {
    child->Terminate(0);
    std::filesystem::remove(err_path, ec);
    return DeadlineExceeded("'" + argv[0] + "' did not finish within " +
                            std::to_string(timeout.count() / 1000) + " s and was stopped");
  }
  const int status = child->exit_status().value_or(0);
  LayoutRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream err_file(err_path);
  std::string line;
  while (std::getline(err_file, line) && run.stderr_text.size() < 65536) {
    run.stderr_text += line + "\n";
  }
  std::filesystem::remove(err_path, ec);
  return run;
}

}  // namespace

Status WriteDepsHtml(const DepsGraph& g, const std::vector<bool>& selected,
                     const DepsViewerOptions& o, const std::filesystem::path& output,
                     std::ostream& err) {
  auto engine_path = FindExecutable(o.engine);
  if (!engine_path) {
    return NotFound(fmt::format(
        "Graphviz '{}' not found on PATH. Install graphviz: brew install graphviz / apt install "
        "graphviz",
        o.engine));
  }
  if (g.nodes.size() > kLegibleNodes && !o.around) {
    err << "Note: " << g.nodes.size() << " nodes: a layout of that many takes minutes and shows "
        << "nothing legible; look at part of the graph with --around TASK --depth N (e.g. "
           "--around t0 --depth 3), at its shape with --collapse kernel, or at fewer edges "
           "with --edge-mode reduced.\n";
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
  auto run = RunLayout({o.engine, "-Tsvg", dot_path.string()}, svg_path, o.layout_timeout);
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
  // DepsNode data for the detail panel.
  Json nodes = Json::object();
  for (const auto& [id, n] : g.nodes) {
    Json j;
    std::string hint = NodeHint(n);
    j["label"] = Display(g, id) + " \xC2\xB7 " + hint;
    j["kind"] = n.kind;
    j["hint"] = hint;
    j["func_id"] = FuncIdText(n);
    if (n.duration_us) j["duration_us"] = *n.duration_us;
    if (std::find(g.critical_path.begin(), g.critical_path.end(), id) != g.critical_path.end()) {
      j["critical"] = true;
    }
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
  if (!g.collapsed_by.empty()) {
    title += fmt::format(" (collapsed by {} from {} tasks)", g.collapsed_by, g.collapsed_tasks);
  }
  // The page template: head with the %TITLE%, the SVG at %SVG%, tail with the %NODES%.
  const std::string_view page = DepsViewerPageTemplate();
  const size_t svg_at = page.find("%SVG%");
  DFX_CHECK(svg_at != std::string_view::npos);
  std::string html = ReplaceAll(std::string(page.substr(0, svg_at)), "%TITLE%", HtmlEscape(title));
  html += svg_text;
  html += ReplaceAll(std::string(page.substr(svg_at + 5)), "%NODES%", node_json);
  return WriteFileAtomic(output, html);
}

}  // namespace dfx::view
