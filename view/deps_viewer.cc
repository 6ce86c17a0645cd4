// `dfx-view deps`: reads deps.json and its name map, builds the graph, applies
// the edge mode and writes the text report or the HTML page.
#include "view/deps_viewer.h"

#include <algorithm>
#include <ostream>

#include "collectors/dep_gen/deps_reader.h"
#include "collectors/name_map.h"
#include "common/file_util.h"
#include "view/deps_graph.h"
#include "view/deps_html.h"
#include "view/deps_text_report.h"

namespace dfx::view {

using collectors::DepsFile;

namespace {

std::string DefaultOutput(const DepsViewerOptions& o) {
  std::string ext = o.format == "html" ? ".html" : ".txt";
  if (o.edge_mode == EdgeMode::kFull) return "deps_viewer" + ext;
  return std::string("deps_viewer_") + EdgeModeName(o.edge_mode) + ext;
}

}  // namespace

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
  DepsGraph g = BuildDepsGraph(file, names);
  AttachPerfSidecar(g, dir, err);
  std::vector<bool> selected = SelectEdges(g, o.edge_mode, out, err);
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
    DFX_RETURN_IF_ERROR(WriteFileAtomic(output, DepsTextReport(g, selected, o.input.string())));
  }
  out << "Wrote " << output.string() << " (" << g.nodes.size() << " tasks, " << unique
      << " unique edges, " << annotated << " annotated edges, format=" << o.format << ")\n";
  return Status::Ok();
}

}  // namespace dfx::view
