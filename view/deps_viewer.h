// `dfx-view deps`: the deps.json viewer (docs/formats.md §7): a text report in the
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
  // Only the tasks within `depth` edges (either direction) of `around` and
  // the edges among them ("t5", "r1t4", "5", "(1, 4)" or "0x100000004").
  std::optional<std::string> around;
  int depth = 2;
  // The critical path from the sibling chip_swimlane_records.json: listed
  // hop by hop in the text report, drawn red in the HTML page.
  bool critical_path = false;
  // "kernel": one node per kernel (alloc and dummy tasks grouped by kind),
  // "ring": one node per ring (a task's ring is its scope depth); edges
  // between groups carry how many task edges they stand for. "" = off.
  std::string collapse;
};

// Parses a task as the viewers display it: "t5", "r1t4", a bare local id
// (ring 0), "(ring, local)" or a 0x-prefixed full id.
Result<uint64_t> ParseTaskRef(const std::string& text);

// Writes the report to o.output (default <input dir>/deps_viewer[_<mode>].txt
// or .html). Progress and the removed edges go to `out`, warnings to `err`.
Status RunDepsViewer(const DepsViewerOptions& options, std::ostream& out, std::ostream& err);

}  // namespace dfx::view
