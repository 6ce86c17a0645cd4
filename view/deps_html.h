// The deps viewer's HTML page (docs/formats.md §7.4): the graph as Graphviz DOT
// (node styles by core type, SPMD borders, fire/star markers, tensor tables
// with ports under --show-tensor-info, unselected edges drawn as background),
// laid out to SVG by a Graphviz engine run as a child process with a bounded
// wait, and inlined into a self-contained pan/zoom page. The page's HTML,
// CSS and script are the resource view/deps_viewer_page.html, embedded into
// the binary at build time. One thread.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "view/deps_graph.h"
#include "view/deps_viewer.h"

namespace dfx::view {

// Writes the page for `g` to `output`; `selected[i]` says whether g.edges[i]
// is one of the mode's edges. Errors: the engine is not on PATH (NotFound), it
// ran past o.layout_timeout (DeadlineExceeded) or failed (its exit code and
// stderr). Notes for the user (a large graph with dot) go to `err`.
Status WriteDepsHtml(const DepsGraph& g, const std::vector<bool>& selected,
                     const DepsViewerOptions& o, const std::filesystem::path& output,
                     std::ostream& err);

// view/deps_viewer_page.html, with the markers %TITLE%, %SVG% and %NODES%
// (defined by code generated at build time, see view/CMakeLists.txt).
std::string_view DepsViewerPageTemplate();

}  // namespace dfx::view
