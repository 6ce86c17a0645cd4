// The deps.json reader (artifacts.md §6.2): the one reader of the task
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
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

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

struct TaskInfo {
  std::array<int, 3> kernel_ids = {-1, -1, -1};  // [aic, aiv0, aiv1]
  int block_num = 1;
  bool early_dispatch = false;
  bool IsDummy() const { return kernel_ids[0] < 0 && kernel_ids[1] < 0 && kernel_ids[2] < 0; }
};

// Compact, sorted representation (binary-searched).
struct TaskGraph {
  std::vector<std::pair<uint64_t, TaskInfo>> tasks;  // sorted by task id
  std::vector<std::pair<uint64_t, uint64_t>> edges;  // unique, sorted (pred, succ)
  std::vector<uint32_t> by_succ;                     // indices into edges, sorted by (succ, pred)

  // Predecessors of one task: iterates (succ, pred) pairs like Succs() does (pred, succ).
  class PredRange {
   public:
    PredRange(const TaskGraph* g, const uint32_t* b, const uint32_t* e) : g_(g), b_(b), e_(e) {}
    struct Iter {
      const TaskGraph* g;
      const uint32_t* p;
      std::pair<uint64_t, uint64_t> operator*() const {
        const auto& e = g->edges[*p];
        return {e.second, e.first};
      }
      Iter& operator++() {
        ++p;
        return *this;
      }
      bool operator!=(const Iter& o) const { return p != o.p; }
    };
    Iter begin() const { return {g_, b_}; }
    Iter end() const { return {g_, e_}; }
    size_t size() const { return static_cast<size_t>(e_ - b_); }
    std::pair<uint64_t, uint64_t> operator[](size_t i) const { return *Iter{g_, b_ + i}; }

   private:
    const TaskGraph* g_;
    const uint32_t *b_, *e_;
  };

  // Sorts/deduplicates `tasks` and `edges` and builds `by_succ`. Call after
  // filling by hand (ReadTaskGraph calls it).
  void Finalize();
  const TaskInfo* FindTask(uint64_t id) const;
  // Successor / predecessor ids of `id` (views into edges / by_succ).
  std::span<const std::pair<uint64_t, uint64_t>> Succs(uint64_t id) const;
  PredRange Preds(uint64_t id) const;
};

Result<TaskGraph> ReadTaskGraph(const std::filesystem::path& path);

// func_id of a row run on a core of `core_type` (§4.6): aic → slot 0, aiv → slot 1, else 2.
inline int FuncIdForCore(const TaskInfo& t, const std::string& core_type) {
  int slot = core_type == "aic" ? 0 : (core_type == "aiv" ? 1 : 2);
  return t.kernel_ids[static_cast<size_t>(slot)];
}

}  // namespace dfx::collectors
