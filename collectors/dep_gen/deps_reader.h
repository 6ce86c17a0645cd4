// The deps.json reader (docs/formats.md §6.2): the one reader of the task
// dependency graph, beside its writer (DepGenRecorder::Export), used by every
// viewer that reads deps.json. One streaming parser (common/json_stream.h, no
// DOM of the file) with two results:
//
//  * ReadTaskGraph: what the trace converter and the overhead analyses need,
//    kept compact (per task: kernel ids, SPMD block count, early dispatch; the
//    unique (pred, succ) pairs, indexed both ways) so a million-task graph
//    costs tens of MB. Args, tensors and edge annotations are skipped.
//  * ReadDepsFile: every task, tensor and edge with its annotations, typed, in
//    file order (the deps viewer).
//
// The u64 quantities the file stores as strings (JS 2^53 safety) are numbers
// here; negatives are masked to u64 as the spec says. One set of rules for
// both results: an entry without its id (task_id, tensor_id, pred and succ)
// or a value of the wrong type is an error naming the file and byte offset.
//
// Plain value types owned by the caller; the functions are thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "collectors/dep_gen/task_graph.h"
#include "common/status.h"

namespace dfx::collectors {

// --- ReadDepsFile: the whole file, typed ----------------------------------------

// The geometry of a tensor slice in elements, each part as present in the file.
struct DepsSlice {
  std::optional<std::vector<uint64_t>> shape;
  std::optional<uint64_t> start_offset;
  std::optional<std::vector<uint64_t>> strides;
};

// tasks[].args[]: tensor fields only when the tensor was known.
struct DepsArg {
  std::optional<int32_t> idx;
  std::optional<std::string> type;  // INPUT | OUTPUT | INOUT | OUTPUT_EXISTING | UNKNOWN
  std::optional<uint64_t> tensor_id;
  std::optional<std::string> dtype;
  DepsSlice slice;
};

struct DepsTask {
  uint64_t task_id = 0;
  bool has_kernel_ids = false;                       // key present
  std::array<int32_t, 3> kernel_ids = {-1, -1, -1};  // [aic, aiv0, aiv1]; -1 = inactive
  int32_t block_num = 1;                             // SPMD logical blocks
  bool early_dispatch = false;
  std::optional<std::vector<DepsArg>> args;  // nullopt when the key is absent
};

struct DepsTensor {
  uint64_t tensor_id = 0;
  std::optional<uint64_t> buffer_addr;
  int32_t version = 0;
  std::optional<std::string> dtype;
  std::optional<uint64_t> buffer_numel;
};

// One annotated edge; a (pred, succ) pair may repeat with other annotations.
struct DepsEdge {
  uint64_t pred = 0, succ = 0;
  int32_t arg = -1;                    // consumer arg slot; -1 for explicit
  std::string source;                  // explicit | creator | tensormap ("" when absent)
  std::optional<std::string> overlap;  // tensormap only: covered | other | no_overlap
  std::optional<uint64_t> tensor_id;   // not for explicit
  std::optional<std::string> consumer_dtype;
  DepsSlice consumer;  // not for explicit
  DepsSlice producer;  // tensormap only
};

struct DepsFile {
  std::vector<DepsTask> tasks;
  std::vector<DepsTensor> tensors;
  std::vector<DepsEdge> edges;
};

Result<DepsFile> ReadDepsFile(const std::filesystem::path& path);

// --- ReadTaskGraph: the compact graph ---------------------------------------------

// dep_gen's compact form is read by a fast scan; any other valid form (or an
// invalid file) by the generic reader, with the same result (or its error).
// `fast_scan`, when given, tells which one read the file (tests).
Result<TaskGraph> ReadTaskGraph(const std::filesystem::path& path, bool* fast_scan = nullptr);

}  // namespace dfx::collectors
