#include "view/complete_bars.h"

#include <algorithm>

namespace dfx::view {

namespace {

// Longest encoding of one bar: two 10-byte varints.
constexpr size_t kMaxBarBytes = 20;

// Signed deltas as zigzag varints, in unsigned arithmetic (cycles may wrap).
void PutDelta(std::vector<uint8_t>& out, uint64_t delta) {
  uint64_t v = (delta << 1) ^ (0 - (delta >> 63));
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

uint64_t GetDelta(const uint8_t*& p) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const uint8_t b = *p++;
    v |= uint64_t{b & 0x7fu} << shift;
    if (b < 0x80) break;
  }
  return (v >> 1) ^ (0 - (v & 1));
}

}  // namespace

void CompleteBars::Reset(size_t lanes, uint64_t max_bars) {
  lanes_.clear();
  lanes_.resize(lanes);
  begin_.assign(lanes + 1, 0);
  max_bars_ = max_bars;
  d_ = nullptr;
  for (Decoded& c : cache_) c.lane = SIZE_MAX;
  last_ = nullptr;
}

// Encoded while starts strictly increase and ends do not decrease, in
// cycles: Us() keeps that order (not strictly when two cycle counts round to
// one µs value, which the lookups allow). A zero timestamp (µs 0, whatever
// base_cycles turns out to be) makes the lane plain.
void CompleteBars::Add(size_t lane, uint64_t start_cycles, uint64_t end_cycles) {
  if (lane >= lanes_.size()) lanes_.resize(lane + 1);
  Lane& l = lanes_[lane];
  if (!l.plain && (start_cycles == 0 || end_cycles == 0 ||
                   (l.size > 0 && !(start_cycles > l.last_start && end_cycles >= l.last_end)))) {
    MakePlain(l);
  }
  if (l.plain) {
    l.cycles.emplace_back(start_cycles, end_cycles);
  } else {
    if (l.size == 0 && max_bars_ != 0) {
      // The lane may hold every bar: reserved whole, written as it grows.
      const size_t bound = static_cast<size_t>(max_bars_) + 1;
      l.bytes.reserve(bound * kMaxBarBytes);
      l.blocks.reserve(bound / kBlock + 1);
    }
    if (l.size % kBlock == 0) {
      l.blocks.push_back({start_cycles, l.bytes.size()});
    } else {
      PutDelta(l.bytes, start_cycles - l.last_start);
    }
    PutDelta(l.bytes, end_cycles - start_cycles);
  }
  l.last_start = start_cycles;
  l.last_end = end_cycles;
  ++l.size;
}

void CompleteBars::MakePlain(Lane& l) {
  l.cycles.reserve(std::max(static_cast<size_t>(max_bars_), l.size));
  for (size_t b = 0; b < l.blocks.size(); ++b) {
    const uint8_t* p = l.bytes.data() + l.blocks[b].offset;
    uint64_t start = l.blocks[b].first_start;
    const size_t n = std::min(kBlock, l.size - b * kBlock);
    for (size_t i = 0; i < n; ++i) {
      if (i > 0) start += GetDelta(p);
      l.cycles.emplace_back(start, start + GetDelta(p));
    }
  }
  l.blocks = {};
  l.bytes = {};
  l.plain = true;
}

void CompleteBars::Finish(const collectors::SwimlaneRecords& records, size_t lanes) {
  d_ = &records;
  if (lanes > lanes_.size()) lanes_.resize(lanes);
  begin_.assign(lanes_.size() + 1, 0);
  for (size_t t = 0; t < lanes_.size(); ++t) {
    Lane& l = lanes_[t];
    if (l.plain) {
      l.bars.reserve(l.cycles.size());
      for (const auto& [start, end] : l.cycles) l.bars.push_back({d_->Us(start), d_->Us(end)});
      l.cycles = {};
      std::sort(l.bars.begin(), l.bars.end(),
                [](const Bar& a, const Bar& b) { return a.start < b.start; });
    }
    begin_[t + 1] = begin_[t] + l.size;
  }
  for (Decoded& c : cache_) c.lane = SIZE_MAX;
  last_ = nullptr;
}

size_t CompleteBars::LaneOf(size_t bar) const {
  return static_cast<size_t>(std::upper_bound(begin_.begin(), begin_.end(), bar) - begin_.begin() -
                             1);
}

const CompleteBars::Decoded& CompleteBars::Decode(size_t lane, size_t b) const {
  Decoded& c = cache_[b % kCached];
  last_ = &c;
  if (c.lane == lane && c.block == b) return c;
  const Lane& l = lanes_[lane];
  const uint8_t* p = l.bytes.data() + l.blocks[b].offset;
  uint64_t start = l.blocks[b].first_start;
  c.n = std::min(kBlock, l.size - b * kBlock);
  for (size_t i = 0; i < c.n; ++i) {
    if (i > 0) start += GetDelta(p);
    c.start[i] = start;
    c.end[i] = start + GetDelta(p);
  }
  c.lane = lane;
  c.block = b;
  return c;
}

double CompleteBars::FirstEndOf(const Lane& l, size_t b) const {
  const uint8_t* p = l.bytes.data() + l.blocks[b].offset;
  return d_->Us(l.blocks[b].first_start + GetDelta(p));
}

Bar CompleteBars::At(size_t bar) const {
  const size_t lane = LaneOf(bar);
  const Lane& l = lanes_[lane];
  const size_t i = bar - begin_[lane];
  if (l.plain) return l.bars[i];
  const Decoded& c = Decode(lane, i / kBlock);
  return {d_->Us(c.start[i % kBlock]), d_->Us(c.end[i % kBlock])};
}

// Encoded lanes have strictly increasing starts and non-decreasing ends, so
// "key before us" holds for a prefix of the bars (key: start or end): the
// answer is the first bar of a block, or in the block before. Lookups come
// in runs of nearby times (rows in task order, phases in file order), so the
// blocks are searched outwards from the one decoded last (galloping), then
// by halves.
template <bool kByEnd>
size_t CompleteBars::Find(size_t lane, double us) const {
  const Lane& l = lanes_[lane];
  if (l.plain) {
    return begin_[lane] + static_cast<size_t>(std::lower_bound(l.bars.begin(), l.bars.end(), us,
                                                               [](const Bar& b, double v) {
                                                                 return (kByEnd ? b.end : b.start) <
                                                                        v;
                                                               }) -
                                              l.bars.begin());
  }
  const size_t num_blocks = l.blocks.size();
  // Whether block b's first bar's key is before `us`.
  const auto first_before = [&](size_t b) {
    if constexpr (kByEnd) {
      return FirstEndOf(l, b) < us;
    } else {
      return d_->Us(l.blocks[b].first_start) < us;
    }
  };
  const auto before = [&](const Decoded& c, size_t i) {
    return d_->Us(kByEnd ? c.end[i] : c.start[i]) < us;
  };
  // lo: the first block whose first bar's key is not before `us`, searched
  // in [lo, hi) (every block before lo starts before `us`, none from hi on).
  size_t lo = 0, hi = num_blocks;
  if (last_ != nullptr && last_->lane == lane) {
    const size_t c = last_->block;
    if (!before(*last_, 0)) {
      hi = c;  // at or before the cached block: gallop back
      for (size_t step = 1;; step *= 2) {
        if (hi < step) break;
        if (first_before(hi - step)) {
          lo = hi - step + 1;
          break;
        }
        hi -= step;
      }
    } else if (!before(*last_, last_->n - 1)) {
      lo = hi = c + 1;  // in the cached block
    } else {
      lo = c + 1;  // after the cached block: gallop on
      for (size_t step = 1;; step *= 2) {
        const size_t m = c + step;
        if (m >= num_blocks) break;
        if (!first_before(m)) {
          hi = m;
          break;
        }
        lo = m + 1;
      }
      if (lo == c + 1 && hi == c + 1) {
        return begin_[lane] + std::min(hi * kBlock, l.size);  // the next block's first bar
      }
    }
  }
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (first_before(mid)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return begin_[lane];
  // In block lo - 1 after its first bar, or the first bar of block lo.
  const Decoded& block = Decode(lane, lo - 1);
  size_t a = 1, z = block.n;
  while (a < z) {
    const size_t mid = a + (z - a) / 2;
    if (before(block, mid)) {
      a = mid + 1;
    } else {
      z = mid;
    }
  }
  return begin_[lane] + (lo - 1) * kBlock + a;
}

size_t CompleteBars::FirstEndingFrom(size_t lane, double us) const { return Find<true>(lane, us); }

size_t CompleteBars::FirstStartingFrom(size_t lane, double us) const {
  return Find<false>(lane, us);
}

}  // namespace dfx::view
