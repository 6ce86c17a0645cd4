// Rows written per core from one fixed pool without a shared counter per row.
// The AICore and AICPU task rows of the swimlane used to claim their slot
// with a relaxed fetch_add on one counter that every core's writer hit: a
// contended `lock xadd` on each row (about 90 ns a call in the perturbation
// bench). Here a core claims a block of kBlockRows rows with one atomic
// operation and fills it through a cursor only its writer touches (its own
// cache line), so the shared counter is hit once per kBlockRows rows.
//
// The rule for what does not fit: a core keeps at most `per_core_limit`
// rows, and a row is dropped when its core has reached that limit or when
// the pool has no block left; drops are counted per core. The pool holds
// the capacity asked for plus one block per core, so that every core's
// partly filled last block still leaves `capacity` rows for the rows a
// program was expected to produce.
//
// Threading: Claim(core) from one writer per core at a time (a core handed
// to another thread is handed with a happens-before, as every recorder
// assumes); everything else after the writers have stopped, except
// rows() (for Prefault) and claimed_rows() (a relaxed read, any time).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectors/internal/lazy_array.h"

namespace dfx::collectors::internal {

template <typename T>
class CoreBlockRows {
 public:
  static constexpr uint64_t kBlockRows = 64;
  static constexpr uint64_t kNoLimit = ~uint64_t{0};

  // Room for `capacity` rows over `num_cores` cores (plus one block per
  // core, see above); a core keeps at most `per_core_limit` rows.
  void Reset(uint64_t capacity, size_t num_cores, uint64_t per_core_limit = kNoLimit) {
    num_blocks_ = (capacity + kBlockRows - 1) / kBlockRows + num_cores;
    rows_.Reset(num_blocks_ * kBlockRows);
    owner_.assign(num_blocks_, 0);
    cursors_ = std::vector<Cursor>(num_cores);
    next_block_.store(0, std::memory_order_relaxed);
    per_core_limit_ = per_core_limit;
  }

  // The slot for the next row of `core` (< num_cores), or nullptr when the
  // row is dropped (counted). One writer per core at a time.
  T* Claim(uint32_t core) {
    Cursor& c = cursors_[core];
    const uint64_t kept = c.kept.load(std::memory_order_relaxed);
    uint64_t i = c.next.load(std::memory_order_relaxed);
    if (i == c.end.load(std::memory_order_relaxed) || kept >= per_core_limit_) [[unlikely]] {
      i = kept >= per_core_limit_ ? kNoSlot : NewBlock(core);
      if (i == kNoSlot) {
        c.dropped.store(c.dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return nullptr;
      }
      c.end.store(i + kBlockRows, std::memory_order_relaxed);
    }
    c.next.store(i + 1, std::memory_order_relaxed);
    c.kept.store(kept + 1, std::memory_order_relaxed);
    return &rows_[i];
  }

  size_t num_cores() const { return cursors_.size(); }
  uint64_t kept(size_t core) const { return cursors_[core].kept.load(std::memory_order_relaxed); }
  uint64_t dropped(size_t core) const {
    return cursors_[core].dropped.load(std::memory_order_relaxed);
  }
  uint64_t total_kept() const {
    uint64_t n = 0;
    for (size_t c = 0; c < cursors_.size(); ++c) n += kept(c);
    return n;
  }
  uint64_t total_dropped() const {
    uint64_t n = 0;
    for (size_t c = 0; c < cursors_.size(); ++c) n += dropped(c);
    return n;
  }
  // Rows in claimed blocks (an upper bound of the rows written so far).
  uint64_t claimed_rows() const {
    return std::min(next_block_.load(std::memory_order_relaxed), num_blocks_) * kBlockRows;
  }
  const LazyArray<T>& rows() const { return rows_; }
  const T& operator[](uint64_t i) const { return rows_[i]; }

  // Indices of the kept rows, grouped by core in core order, in claim order
  // within a core (its writer's order). After the writers have stopped.
  std::vector<uint32_t> CoreOrder() const {
    const uint64_t blocks = std::min(next_block_.load(std::memory_order_relaxed), num_blocks_);
    const size_t cores = cursors_.size();
    // A core's blocks in claim order: a counting sort of the claimed blocks by owner.
    std::vector<uint64_t> first(cores + 1, 0);
    for (uint64_t b = 0; b < blocks; ++b) ++first[owner_[b] + 1];
    for (size_t c = 0; c < cores; ++c) first[c + 1] += first[c];
    std::vector<uint64_t> by_core(blocks);
    std::vector<uint64_t> at(first.begin(), first.end() - 1);
    for (uint64_t b = 0; b < blocks; ++b) by_core[at[owner_[b]]++] = b;
    std::vector<uint32_t> order;
    order.reserve(total_kept());
    for (size_t c = 0; c < cores; ++c) {
      uint64_t left = kept(c);
      for (uint64_t k = first[c]; k < first[c + 1] && left > 0; ++k) {
        const uint64_t n = std::min(left, kBlockRows);
        const uint64_t base = by_core[k] * kBlockRows;
        for (uint64_t r = 0; r < n; ++r) order.push_back(static_cast<uint32_t>(base + r));
        left -= n;
      }
    }
    return order;
  }

 private:
  static constexpr uint64_t kNoSlot = ~uint64_t{0};

  // One core's writer state, alone on its cache line (no false sharing
  // between cores).
  struct alignas(64) Cursor {
    std::atomic<uint64_t> next{0};  // next slot in the current block
    std::atomic<uint64_t> end{0};   // end of the current block (next == end: none left)
    std::atomic<uint64_t> kept{0};
    std::atomic<uint64_t> dropped{0};
  };

  // The first slot of a new block for `core`, or kNoSlot when the pool is empty.
  uint64_t NewBlock(uint32_t core) {
    const uint64_t b = next_block_.fetch_add(1, std::memory_order_relaxed);
    if (b >= num_blocks_) return kNoSlot;
    owner_[b] = core;
    rows_.MapAhead((b + 1) * kBlockRows - 1);
    return b * kBlockRows;
  }

  LazyArray<T> rows_;
  std::vector<uint32_t> owner_;  // per block: the core that claimed it
  std::vector<Cursor> cursors_;
  uint64_t num_blocks_ = 0;
  uint64_t per_core_limit_ = kNoLimit;
  alignas(64) std::atomic<uint64_t> next_block_{0};
};

}  // namespace dfx::collectors::internal
