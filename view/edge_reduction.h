// The edge modes of the deps viewer (docs/formats.md §7.5): `full`, the
// transitive reduction (`reduced`, keeping creator edges) and its complement
// (`omitted`), and their `*_dataflow` variants, where a creator edge goes only
// when DataflowVerifier proves it redundant. Pure functions over the graph
// (SelectEdges also prints what it removed); one thread.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/enum_text.h"
#include "common/status.h"
#include "view/deps_graph.h"

namespace dfx::view {

enum class EdgeMode { kFull, kReduced, kOmitted, kReducedDataflow, kOmittedDataflow };
// The modes as `--edge-mode` and the output names spell them.
inline constexpr auto kEdgeModeText = MakeEnumTable<EdgeMode>(
    {
        {EdgeMode::kFull, "full"},
        {EdgeMode::kReduced, "reduced"},
        {EdgeMode::kOmitted, "omitted"},
        {EdgeMode::kReducedDataflow, "reduced_dataflow"},
        {EdgeMode::kOmittedDataflow, "omitted_dataflow"},
    },
    "full");
// `text` as an edge mode; the error names --edge-mode and the choices.
Result<EdgeMode> ParseEdgeMode(const std::string& text);

// Transitive reduction over unique edges (sorted pairs). `keep` pairs (creator
// edges) are never removed. Returns false when the graph has a cycle.
bool TransitiveReduction(const std::vector<std::pair<uint64_t, uint64_t>>& edges,
                         const std::set<std::pair<uint64_t, uint64_t>>& keep,
                         std::vector<bool>* redundant);

// Which of g.edges `mode` shows (selected[i]). Prints the removed edges to
// `out` ("Transitive reduction: removed R redundant edge(s) of E ..."), or to
// `err` that a cyclic graph is shown in full.
std::vector<bool> SelectEdges(const DepsGraph& g, EdgeMode mode, std::ostream& out,
                              std::ostream& err);

}  // namespace dfx::view
