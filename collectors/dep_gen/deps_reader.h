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
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
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

// Compact, sorted representation (binary-searched), about 12 bytes per task
// and 12 per unique edge: every task id once (sorted), an index per task into
// a table of the distinct TaskInfo values (kernel ids, block count and early
// dispatch repeat across tasks), and edges as pairs of 32-bit task indices.
// Fill with AddTask / AddEdge in any order, then Finalize; ids are returned as
// task ids (an edge may name a task that deps.json does not list: it has an
// index but no TaskInfo).
class TaskGraph {
 public:
  using IdPair = std::pair<uint64_t, uint64_t>;

  // Edge (pred, succ) ids, or for Preds (succ, pred): edges [b, e), through
  // `perm` (by_succ_) when it is set.
  class EdgeRange {
   public:
    EdgeRange(const TaskGraph* g, const uint32_t* perm, size_t b, size_t e)
        : g_(g), perm_(perm), b_(b), e_(e) {}
    struct Iter {
      const TaskGraph* g;
      const uint32_t* perm;
      size_t i;
      IdPair operator*() const {
        if (perm == nullptr) {
          const auto& e = g->edges_[i];
          return {g->IdAt(e.first), g->IdAt(e.second)};
        }
        const auto& e = g->edges_[perm[i]];
        return {g->IdAt(e.second), g->IdAt(e.first)};
      }
      Iter& operator++() {
        ++i;
        return *this;
      }
      bool operator!=(const Iter& o) const { return i != o.i; }
    };
    Iter begin() const { return {g_, perm_, b_}; }
    Iter end() const { return {g_, perm_, e_}; }
    size_t size() const { return e_ - b_; }
    IdPair operator[](size_t i) const { return *Iter{g_, perm_, b_ + i}; }

   private:
    const TaskGraph* g_;
    const uint32_t* perm_;
    size_t b_, e_;
  };

  // Building: tasks and edges in any order (a repeated task id: the last wins;
  // repeated edges count once). Finalize sorts, dedupes and indexes.
  void AddTask(uint64_t id, const TaskInfo& info);
  void AddEdge(uint64_t pred, uint64_t succ);
  void Finalize();
  // Reserves for about this many tasks and edges (untouched pages stay non-resident).
  void Reserve(size_t tasks, size_t edges);

  size_t NumTasks() const { return num_tasks_; }  // tasks listed in deps.json
  size_t NumEdges() const { return edges_.size(); }
  const TaskInfo* FindTask(uint64_t id) const;
  // Every unique edge as (pred, succ) ids, sorted by (pred, succ).
  EdgeRange Edges() const;
  // Successor (id, succ) / predecessor (id, pred) pairs of `id`.
  EdgeRange Succs(uint64_t id) const;
  EdgeRange Preds(uint64_t id) const;

 private:
  static constexpr uint32_t kNoInfo = 0xFFFFFFFFu;
  static constexpr uint32_t kStaged = 0x80000000u;  // index into staged_ids_ (before Finalize)
  uint32_t IndexOf(uint64_t id) const;              // kNoInfo when absent
  uint32_t StageIndex(uint64_t id);
  uint32_t Intern(const TaskInfo& info);
  void Seal();
  void SetDense();  // dense_, first_id_ and num_ids_ from ids_

  std::map<std::array<int, 5>, uint32_t> intern_;  // TaskInfo -> index into infos_ (building)

  // Id of index i (after Finalize).
  uint64_t IdAt(uint32_t i) const { return dense_ ? first_id_ + i : ids_[i]; }

  // Sorted, unique; after Finalize empty when dense_ (the ids are first_id_,
  // first_id_ + 1, ..., num_ids_ of them: an index is a subtraction).
  std::vector<uint64_t> ids_;
  bool dense_ = false;
  uint64_t first_id_ = 0;
  size_t num_ids_ = 0;
  std::vector<uint32_t> info_of_;                     // per id: index into infos_ or kNoInfo
  std::vector<TaskInfo> infos_;                       // distinct values
  std::vector<std::pair<uint32_t, uint32_t>> edges_;  // (pred, succ) indices, sorted, unique
  std::vector<uint32_t> by_succ_;                     // edge indices sorted by (succ, pred)
  size_t num_tasks_ = 0;
  // Building state.
  bool sealed_ = false;
  std::vector<std::pair<uint64_t, uint32_t>> late_tasks_;  // tasks after the first edge
  std::vector<uint64_t> staged_ids_;                       // edge ids not among the tasks
  std::unordered_map<uint64_t, uint32_t> staged_index_;    // id -> index into staged_ids_
};

// dep_gen's compact form is read by a fast scan; any other valid form (or an
// invalid file) by the generic reader, with the same result (or its error).
// `fast_scan`, when given, tells which one read the file (tests).
Result<TaskGraph> ReadTaskGraph(const std::filesystem::path& path, bool* fast_scan = nullptr);

// func_id of a row run on a core of `core_type` (§4.6): aic → slot 0, aiv → slot 1, else 2.
inline int FuncIdForCore(const TaskInfo& t, const std::string& core_type) {
  int slot = core_type == "aic" ? 0 : (core_type == "aiv" ? 1 : 2);
  return t.kernel_ids[static_cast<size_t>(slot)];
}

}  // namespace dfx::collectors
