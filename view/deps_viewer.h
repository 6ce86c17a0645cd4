// `dfx-view deps`: the deps.json viewer (artifacts.md §7): a text report in the
// documented shape and a self-contained pan/zoom HTML page laid out by a
// Graphviz engine run as a child process; transitive reduction edge modes.
// Called from one thread.
#pragma once

#include <chrono>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dfx::view {

enum class EdgeMode { kFull, kReduced, kOmitted, kReducedDataflow, kOmittedDataflow };
Result<EdgeMode> ParseEdgeMode(const std::string& text);
const char* EdgeModeName(EdgeMode mode);

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

Status RunDepsViewer(const DepsViewerOptions& options, std::ostream& out, std::ostream& err);

// Transitive reduction over unique edges (sorted pairs). `keep` pairs (creator
// edges) are never removed. Returns false when the graph has a cycle.
bool TransitiveReduction(const std::vector<std::pair<uint64_t, uint64_t>>& edges,
                         const std::set<std::pair<uint64_t, uint64_t>>& keep,
                         std::vector<bool>* redundant);

}  // namespace dfx::view
