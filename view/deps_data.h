// deps.json (artifacts.md §6.2) as the trace converter and the overhead
// analysis need it: per-task kernel ids and SPMD block count, plus the unique
// (pred, succ) pairs. Read with the streaming reader; annotations beyond
// `source` are skipped. Plain value type.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dfx::view {

struct DepTask {
  std::array<int, 3> kernel_ids = {-1, -1, -1};  // [aic, aiv0, aiv1]
  int block_num = 1;
  bool early_dispatch = false;
  bool IsDummy() const { return kernel_ids[0] < 0 && kernel_ids[1] < 0 && kernel_ids[2] < 0; }
};

// Compact, sorted representation (binary-searched) so that a million-task
// graph costs tens of MB rather than hundreds.
struct DepsData {
  std::vector<std::pair<uint64_t, DepTask>> tasks;   // sorted by task id
  std::vector<std::pair<uint64_t, uint64_t>> edges;  // unique, sorted (pred, succ)
  std::vector<uint32_t> by_succ;                     // indices into edges, sorted by (succ, pred)

  // Predecessors of one task: iterates (succ, pred) pairs like Succs() does (pred, succ).
  class PredRange {
   public:
    PredRange(const DepsData* d, const uint32_t* b, const uint32_t* e) : d_(d), b_(b), e_(e) {}
    struct Iter {
      const DepsData* d;
      const uint32_t* p;
      std::pair<uint64_t, uint64_t> operator*() const {
        const auto& e = d->edges[*p];
        return {e.second, e.first};
      }
      Iter& operator++() {
        ++p;
        return *this;
      }
      bool operator!=(const Iter& o) const { return p != o.p; }
    };
    Iter begin() const { return {d_, b_}; }
    Iter end() const { return {d_, e_}; }
    size_t size() const { return static_cast<size_t>(e_ - b_); }
    std::pair<uint64_t, uint64_t> operator[](size_t i) const { return *Iter{d_, b_ + i}; }

   private:
    const DepsData* d_;
    const uint32_t *b_, *e_;
  };

  // Sorts/deduplicates `tasks` and `edges` and builds `by_succ`. Call after filling.
  void Finalize();
  const DepTask* FindTask(uint64_t id) const;
  // Successor / predecessor ids of `id` (views into edges / by_succ).
  std::span<const std::pair<uint64_t, uint64_t>> Succs(uint64_t id) const;
  PredRange Preds(uint64_t id) const;
};

// Parses a u64 that deps.json stores as a string (or a number); negatives are
// masked to u64. Returns false when the text is not an integer.
bool ParseU64Text(const std::string& text, uint64_t* out);

Result<DepsData> LoadDeps(const std::filesystem::path& path);

// func_id of a row run on a core of `core_type` (§4.6): aic → slot 0, aiv → slot 1, else 2.
inline int FuncIdForCore(const DepTask& t, const std::string& core_type) {
  int slot = core_type == "aic" ? 0 : (core_type == "aiv" ? 1 : 2);
  return t.kernel_ids[static_cast<size_t>(slot)];
}

}  // namespace dfx::view
