// `dfx-view deps`: the deps.json viewer (artifacts.md §7): a text report in the
// documented shape (deps_text_report) or a self-contained pan/zoom HTML page
// laid out by a Graphviz engine (deps_html), over the edges an edge mode
// selects (edge_reduction). Called from one thread.
#pragma once

#include <chrono>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>

#include "common/status.h"
#include "view/edge_reduction.h"

namespace dfx::view {

struct DepsViewerOptions {
  std::filesystem::path input;
  std::optional<std::filesystem::path> output;
  std::string format = "text";  // text | html
  EdgeMode edge_mode = EdgeMode::kFull;
  std::string engine = "dot";
  std::string direction = "LR";
  bool show_tensor_info = false;
  std::optional<std::filesystem::path> func_names;
  std::chrono::milliseconds layout_timeout{std::chrono::seconds(300)};
};

// Writes the report to o.output (default <input dir>/deps_viewer[_<mode>].txt
// or .html). Progress and the removed edges go to `out`, warnings to `err`.
Status RunDepsViewer(const DepsViewerOptions& options, std::ostream& out, std::ostream& err);

}  // namespace dfx::view
