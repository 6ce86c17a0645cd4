// The fast path of ReadTaskGraph (deps_reader.h): dep_gen's compact form of
// deps.json (docs/formats.md §6.2), read in 1 MiB chunks with pointer scans and
// the writer's exact form matched byte for byte. It reads a subset of JSON
// and gives up at the first byte outside it; ReadTaskGraph then reads the
// file with the generic parser, whose result or error is the reference.
// For every input the scan accepts, the two give the same graph
// (tests/fuzz/fuzz_deps.cc checks that). Thread-safe: no shared state.
#pragma once

#include <filesystem>

#include "collectors/dep_gen/task_graph.h"

namespace dfx::collectors {

// Adds every task and edge of the deps.json at `path` to `graph` (not
// finalized) and returns true when the whole file is in the scan's subset;
// false when it is not, or cannot be read (the graph then holds a part of
// the file and is to be discarded).
bool FastScanTaskGraph(const std::filesystem::path& path, TaskGraph* graph);

}  // namespace dfx::collectors
