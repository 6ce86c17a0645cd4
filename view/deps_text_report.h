// The deps viewer's text report (docs/formats.md §7.3): SUMMARY, TASK INDEX and
// one section per task with its fan-in and fan-out over the selected edges.
// Pure function; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "view/deps_graph.h"

namespace dfx::view {

// `selected[i]` says whether g.edges[i] is shown; `source` is the deps.json
// path the report names.
std::string DepsTextReport(const DepsGraph& g, const std::vector<bool>& selected,
                           const std::string& source);

}  // namespace dfx::view
