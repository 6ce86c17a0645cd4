// CompleteBars: the scheduler threads' "complete" phase bars (docs/formats.md
// §4.4), which the swimlane converter looks up by time: a task's finish →
// the bar that holds it (flows, finish counts), a phase read again → its
// bar (ids). At level 4 there is one per task, so they are kept compact.
//
// Each scheduler thread is a lane; a lane's bars are ordered by start, and a
// bar is named by its index over all lanes (lane after lane), which is its
// event id's offset. Bars are kept as the cycles the records hold and given
// back in µs (SwimlaneRecords::Us), the doubles the converter computed
// before, bit for bit.
//
// Storage: the collector writes a thread's phases in time order, so a lane's
// bars normally arrive with strictly increasing starts and non-decreasing
// ends (in cycles; none zero). Such a lane is delta-encoded as it arrives, in
// blocks of kBlock bars
// (LEB128 varints of the start and duration deltas, about 3 bytes a bar
// against 16 for two doubles: 16 MB less at a million tasks); a lookup
// binary-searches the blocks and decodes one (the last block decoded is
// kept). Its order is the one std::sort by start would give, and a lookup
// gives what std::lower_bound gives. A lane whose bars do not arrive that
// way (a file not written by the collector) is kept as doubles and sorted
// by start with std::sort, as the converter always did.
//
// Fill with Reset / Add / Finish, then look up. Adding needs no records
// (bars are cycles until Finish), so the bars can be added while the
// records' first pass reads the phases (SwimlaneReadOptions::see_sched_phase),
// before base_cycles is known. One thread; the records given to Finish (for
// Us) must outlive this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectors/swimlane/swimlane_reader.h"

namespace dfx::view {

// A scheduler phase bar (µs).
struct Bar {
  double start, end;
};

class CompleteBars {
 public:
  static constexpr size_t kBlock = 16;  // bars per encoded block

  // Starts over with `lanes` empty lanes (more are added as bars arrive);
  // at most `max_bars` bars will be added (reserved, untouched pages are not
  // resident; 0: not known, the storage grows as bars arrive). Movable until
  // Finish.
  void Reset(size_t lanes, uint64_t max_bars);
  // Adds a bar to `lane`. Lanes are filled in order (all of lane 0's bars,
  // then lane 1's, ...), each in the file's order.
  void Add(size_t lane, uint64_t start_cycles, uint64_t end_cycles);
  // Gives the bars µs by `records` (which must outlive this), makes the
  // lanes at least `lanes`, sorts the lanes that are not encoded and fixes
  // the indices.
  void Finish(const collectors::SwimlaneRecords& records, size_t lanes = 0);

  size_t size() const { return begin_.empty() ? 0 : begin_.back(); }
  // Bars of `lane`: indices [LaneBegin, LaneEnd).
  size_t LaneBegin(size_t lane) const { return begin_[lane]; }
  size_t LaneEnd(size_t lane) const { return begin_[lane + 1]; }
  size_t LaneOf(size_t bar) const;
  Bar At(size_t bar) const;
  // The first bar of `lane` in start order whose end is not before `us`
  // (std::lower_bound by end); LaneEnd(lane) when there is none.
  size_t FirstEndingFrom(size_t lane, double us) const;
  // The first bar of `lane` whose start is not before `us`; LaneEnd when none.
  size_t FirstStartingFrom(size_t lane, double us) const;

 private:
  struct Block {
    uint64_t first_start;  // cycles of the block's first bar
    size_t offset;         // of its encoding in Lane::bytes
  };
  struct Lane {
    size_t size = 0;
    bool plain = false;  // kept as doubles (bars), not encoded
    // Plain: while adding, the bars' cycles; from Finish on, their µs.
    std::vector<std::pair<uint64_t, uint64_t>> cycles;
    std::vector<Bar> bars;
    std::vector<Block> blocks;
    std::vector<uint8_t> bytes;
    // While adding: the last bar.
    uint64_t last_start = 0, last_end = 0;
  };
  // The first bar of `lane` in start order whose end (kByEnd) or start is
  // not before `us`, as std::lower_bound finds it; LaneEnd(lane) when none.
  template <bool kByEnd>
  size_t Find(size_t lane, double us) const;
  struct Decoded {
    size_t lane = SIZE_MAX, block = SIZE_MAX, n = 0;
    uint64_t start[kBlock], end[kBlock];  // cycles
  };
  // Block `b` of `lane`, decoded (kept in a small cache: lookups alternate
  // between neighbouring blocks).
  const Decoded& Decode(size_t lane, size_t b) const;
  double FirstEndOf(const Lane& l, size_t b) const;
  // `lane`'s encoded bars as cycles, from then on plain.
  void MakePlain(Lane& l);

  const collectors::SwimlaneRecords* d_ = nullptr;  // from Finish on
  std::vector<Lane> lanes_;
  std::vector<size_t> begin_;  // lane l: [begin_[l], begin_[l + 1])
  uint64_t max_bars_ = 0;
  static constexpr size_t kCached = 8;  // blocks, by block index mod kCached
  mutable Decoded cache_[kCached];
  mutable const Decoded* last_ = nullptr;  // the block decoded last
};

}  // namespace dfx::view
