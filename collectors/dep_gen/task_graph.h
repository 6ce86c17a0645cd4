// TaskGraph: the compact task dependency graph of one deps.json, what
// ReadTaskGraph (deps_reader.h) returns and what the trace converter and the
// overhead analyses walk. A plain value type owned by its caller; building
// (AddTask, AddEdge, Finalize) is single-threaded, and a finalized graph may
// be read from any number of threads.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dfx::collectors {

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
  // The successor / predecessor ids of `id` in deps.json's edge order (each
  // unique edge where it first appears), as the reference lists them in a
  // trace slice's fanout-hint / fanin-hint. `out` is replaced (reused to
  // spare an allocation per task).
  void SuccsInFileOrder(uint64_t id, std::vector<uint64_t>* out) const;
  void PredsInFileOrder(uint64_t id, std::vector<uint64_t>* out) const;

 private:
  static constexpr uint32_t kNoInfo = 0xFFFFFFFFu;
  static constexpr uint32_t kStaged = 0x80000000u;  // index into staged_ids_ (before Finalize)
  uint32_t IndexOf(uint64_t id) const;              // kNoInfo when absent
  uint32_t StageIndex(uint64_t id);
  uint32_t Intern(const TaskInfo& info);
  void Seal();
  void SetDense();   // dense_, first_id_ and num_ids_ from ids_
  void SortEdges();  // sorted, unique, file_position_ kept
  void InFileOrder(size_t b, size_t e, const uint32_t* perm, bool succs,
                   std::vector<uint64_t>* out) const;

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
  // Per edge (sorted index): where it first appeared among AddEdge's calls;
  // empty when they came sorted (the sorted index is the file's order).
  std::vector<uint32_t> file_position_;
  size_t num_tasks_ = 0;
  // Building state.
  bool sealed_ = false;
  std::vector<std::pair<uint64_t, uint32_t>> late_tasks_;  // tasks after the first edge
  std::vector<uint64_t> staged_ids_;                       // edge ids not among the tasks
  std::unordered_map<uint64_t, uint32_t> staged_index_;    // id -> index into staged_ids_
};

// func_id of a row run on a core of `core_type` (§4.6): aic → slot 0, aiv → slot 1, else 2.
inline int FuncIdForCore(const TaskInfo& t, const std::string& core_type) {
  int slot = core_type == "aic" ? 0 : (core_type == "aiv" ? 1 : 2);
  return t.kernel_ids[static_cast<size_t>(slot)];
}

}  // namespace dfx::collectors
