// The deps viewer's graph (docs/formats.md §7.2), built from the typed deps.json
// records (collectors/dep_gen/deps_reader.h): tasks as nodes (submit, dummy or
// alloc), the unique (pred, succ) edges with their annotations, the tensors'
// short names T<k>, OUTPUT tensors inferred from edges, kernel names from the
// name map and, from a swimlane sidecar, core types and durations. The text
// report, the reductions, the dataflow verifier and the HTML page read it.
//
// Built once, then read-only. Nodes and annotations point into the DepsFile
// it was built from, which must outlive it. One thread.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collectors/dep_gen/deps_reader.h"
#include "collectors/name_map.h"

namespace dfx::view {

struct DepsNode {
  uint64_t id = 0;
  std::string kind;  // submit | dummy | alloc
  bool has_kernel_ids = false;
  std::array<int, 3> kernel_ids = {-1, -1, -1};
  int block_num = 1;
  bool early_dispatch = false;
  std::string core_type;                       // aic | aiv | mix | ""
  std::string func_name;                       // "" when no name map hit
  const collectors::DepsTask* task = nullptr;  // in the DepsFile the graph was built from
  std::optional<double> duration_us;
};

struct DepsGraph {
  std::map<uint64_t, DepsNode> nodes;
  std::vector<std::pair<uint64_t, uint64_t>> edges;  // unique, sorted
  std::map<std::pair<uint64_t, uint64_t>, std::vector<const collectors::DepsEdge*>> annotations;
  size_t annotated_edges = 0;
  size_t tensors = 0;
  std::map<uint64_t, std::string> tensor_short;  // tensor_id → T<k>
  std::map<uint64_t, const collectors::DepsTensor*> tensor_info;
  // OUTPUT args without tensor_id whose tensor was inferred from edges (§7.2):
  // (task id, arg idx) → tensor_id; shown with a "?" marker.
  std::map<std::pair<uint64_t, int>, uint64_t> inferred_tensor;
  bool all_ring0 = true;
  bool perf_sidecar = false;
  bool func_name_map = false;
  // deps --critical-path: the path's tasks, root first (empty = not asked).
  std::vector<uint64_t> critical_path;
  // A collapsed graph (deps --collapse): what it is collapsed by, the task
  // count it stands for, and each group edge's number of task edges.
  std::string collapsed_by;
  size_t collapsed_tasks = 0;
  std::map<std::pair<uint64_t, uint64_t>, size_t> edge_weight;
};

// Builds the graph of `file`; kernel names from `names`.
DepsGraph BuildDepsGraph(const collectors::DepsFile& file, const collectors::NameMap& names);

// Adds what a sibling chip_swimlane_records.json in `dir` says (core type,
// longest execution); an unreadable one is a warning on `err`.
void AttachPerfSidecar(DepsGraph& g, const std::filesystem::path& dir, std::ostream& err);

// Tensor id of an arg: recorded, else inferred from edges (`inferred` set).
std::optional<uint64_t> ArgTensorId(const DepsGraph& g, uint64_t task,
                                    const collectors::DepsArg& arg, bool* inferred);

// A task as the report shows it: its local id when every node is ring 0,
// else "(ring, local)".
std::string Display(const DepsGraph& g, uint64_t id);
// "none" (alloc), "unknown" (no kernel_ids) or "[aic,aiv0,aiv1]".
std::string FuncIdText(const DepsNode& n);
// What a node is, in a word: alloc, dummy, its kernel name, f<kernel id> or unknown.
std::string NodeHint(const DepsNode& n);
// The graph of groups of `g`'s tasks (by "kernel" or "ring"), over the edges
// `selected` keeps: one node per group (numbered 0.. in order of first
// appearance, its name and task count as the kernel name), one edge per
// pair of groups with the task edges it stands for; edges inside a group
// are counted on the node. Points into the same DepsFile as `g`.
DepsGraph CollapseDepsGraph(const DepsGraph& g, const std::vector<bool>& selected,
                            const std::string& by);
// True when one of a pair's annotations is a creator (tensor-lifetime) edge.
bool IsCreator(const std::vector<const collectors::DepsEdge*>& anns);

}  // namespace dfx::view
