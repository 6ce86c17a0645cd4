// What a task graph holds, to compare two readings of one deps.json (the
// fast scan's and the generic reader's): collectors/dep_gen/deps_reader_test
// and tests/fuzz/fuzz_deps. No GoogleTest here: the fuzz target links none.
#pragma once

#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "collectors/dep_gen/deps_reader.h"

namespace dfx::collectors::testing {

struct GraphDump {
  uint64_t num_tasks = 0;
  uint64_t num_edges = 0;
  std::vector<std::pair<uint64_t, uint64_t>> edges;
  // id, kernel_ids[0..2], block_num, early_dispatch
  std::vector<std::tuple<uint64_t, int, int, int, int, bool>> tasks;
  bool operator==(const GraphDump&) const = default;
};

// The graph's counts and edges, and those of `ids` that are its tasks, in
// the order of `ids`.
inline GraphDump DumpGraph(const TaskGraph& g, const std::vector<uint64_t>& ids) {
  GraphDump d;
  d.num_tasks = g.NumTasks();
  d.num_edges = g.NumEdges();
  for (const auto& e : g.Edges()) d.edges.push_back(e);
  for (uint64_t id : ids) {
    if (const TaskInfo* t = g.FindTask(id)) {
      d.tasks.emplace_back(id, t->kernel_ids[0], t->kernel_ids[1], t->kernel_ids[2], t->block_num,
                           t->early_dispatch);
    }
  }
  return d;
}

}  // namespace dfx::collectors::testing
