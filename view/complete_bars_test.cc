#include "view/complete_bars.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace dfx::view {
namespace {

using collectors::SwimlaneRecords;

// What the converter kept before CompleteBars: each lane's bars as doubles,
// std::sort by start, looked up with std::lower_bound.
struct Reference {
  std::vector<std::vector<Bar>> lanes;
  size_t Begin(size_t lane) const {
    size_t n = 0;
    for (size_t t = 0; t < lane; ++t) n += lanes[t].size();
    return n;
  }
  size_t FirstEndingFrom(size_t lane, double us) const {
    const auto& b = lanes[lane];
    return Begin(lane) +
           static_cast<size_t>(std::lower_bound(b.begin(), b.end(), us,
                                                [](const Bar& x, double v) { return x.end < v; }) -
                               b.begin());
  }
  size_t FirstStartingFrom(size_t lane, double us) const {
    const auto& b = lanes[lane];
    return Begin(lane) + static_cast<size_t>(
                             std::lower_bound(b.begin(), b.end(), us,
                                              [](const Bar& x, double v) { return x.start < v; }) -
                             b.begin());
  }
};

SwimlaneRecords Clock() {
  SwimlaneRecords d;
  d.clock_freq_hz = 50'000'000;
  d.base_cycles = 100'000'000'000;
  return d;
}

// Lanes of (start, end) cycles, in file order, into both.
void Fill(const SwimlaneRecords& d,
          const std::vector<std::vector<std::pair<uint64_t, uint64_t>>>& in, CompleteBars* bars,
          Reference* ref) {
  size_t total = 0;
  for (const auto& lane : in) total += lane.size();
  bars->Reset(in.size(), total);
  ref->lanes.assign(in.size(), {});
  for (size_t t = 0; t < in.size(); ++t) {
    for (const auto& [s, e] : in[t]) {
      bars->Add(t, s, e);
      ref->lanes[t].push_back({d.Us(s), d.Us(e)});
    }
    std::sort(ref->lanes[t].begin(), ref->lanes[t].end(),
              [](const Bar& a, const Bar& b) { return a.start < b.start; });
  }
  bars->Finish(d);
}

// Every bar and every lookup (before, at, between and after the bars) as
// the sorted doubles give them.
void ExpectSame(const CompleteBars& bars, const Reference& ref) {
  size_t total = 0;
  for (const auto& lane : ref.lanes) total += lane.size();
  ASSERT_EQ(bars.size(), total);
  for (size_t t = 0; t < ref.lanes.size(); ++t) {
    ASSERT_EQ(bars.LaneBegin(t), ref.Begin(t));
    ASSERT_EQ(bars.LaneEnd(t), ref.Begin(t) + ref.lanes[t].size());
    std::vector<double> probes = {-1e18, 1e18};
    for (size_t i = 0; i < ref.lanes[t].size(); ++i) {
      const Bar want = ref.lanes[t][i];
      const Bar got = bars.At(ref.Begin(t) + i);
      EXPECT_EQ(got.start, want.start) << t << " " << i;
      EXPECT_EQ(got.end, want.end) << t << " " << i;
      EXPECT_EQ(bars.LaneOf(ref.Begin(t) + i), t);
      for (double v : {want.start, want.end}) {
        probes.push_back(v);
        probes.push_back(v - 0.01);
        probes.push_back(v + 0.01);
      }
    }
    for (double v : probes) {
      EXPECT_EQ(bars.FirstEndingFrom(t, v), ref.FirstEndingFrom(t, v)) << t << " " << v;
      EXPECT_EQ(bars.FirstStartingFrom(t, v), ref.FirstStartingFrom(t, v)) << t << " " << v;
    }
  }
}

// The collector's shape (each lane in time order, several blocks, gaps and
// durations of every varint length), the same after a zero timestamp, an
// empty lane, and a lane out of order: lookups as before.
TEST(CompleteBarsTest, LooksUpAsTheSortedBarsDid) {
  const SwimlaneRecords d = Clock();
  std::mt19937_64 rng(7);
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> in(4);
  uint64_t at = d.base_cycles;
  in[0].push_back({0, 0});
  for (int i = 0; i < 1000; ++i) {
    const uint64_t gap = 1 + (rng() >> (rng() % 64));  // 1 .. 2^64 / 2^k: lengths up to 10
    const uint64_t dur = rng() % 3 == 0 ? 0 : (rng() >> (20 + rng() % 44));
    at += gap % (uint64_t{1} << 40);
    in[0].push_back({at, at + dur});
    at += dur;
  }
  for (uint64_t s = 5; s < 5 + 17 * 10; s += 10)
    in[2].push_back({d.base_cycles + s, d.base_cycles + s + 3});
  in[3] = in[2];
  std::swap(in[3][4], in[3][11]);                  // out of order: sorted as before
  in[3].push_back(in[3][0]);                       // a repeated bar
  in.push_back({in[0].begin() + 1, in[0].end()});  // in order, no zero: encoded
  CompleteBars bars;
  Reference ref;
  Fill(d, in, &bars, &ref);
  ExpectSame(bars, ref);
  // Refilled (the converter's second reader after the fast one stopped).
  Fill(d, {in[2]}, &bars, &ref);
  ExpectSame(bars, ref);
}

// Filled as the records' first pass reads the phases: no lanes known before,
// no records until Finish, and the last lanes without a complete bar.
TEST(CompleteBarsTest, FilledBeforeTheRecordsAreReadItLooksUpTheSame) {
  const SwimlaneRecords d = Clock();
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> in(2);
  for (uint64_t s = 7; s < 7 + 40 * 9; s += 9) {
    in[0].push_back({d.base_cycles + s, d.base_cycles + s + 5});
    in[1].push_back({d.base_cycles + 2 * s, d.base_cycles + 2 * s + 1});
  }
  CompleteBars bars;
  bars.Reset(0, 80);
  for (size_t t = 0; t < in.size(); ++t) {
    for (const auto& [s, e] : in[t]) bars.Add(t, s, e);
  }
  bars.Finish(d, 4);
  CompleteBars reference;
  Reference ref;
  in.resize(4);
  Fill(d, in, &reference, &ref);
  ExpectSame(bars, ref);
  EXPECT_EQ(bars.LaneBegin(3), 80u);
  EXPECT_EQ(bars.LaneEnd(3), 80u);
}

}  // namespace
}  // namespace dfx::view
