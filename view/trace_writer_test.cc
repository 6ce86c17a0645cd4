#include "view/trace_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "collectors/testing/test_util.h"

namespace dfx::view {
namespace {

// What Num wrote before its hand-written fast path: the shortest round-trip
// form of the value rounded to the nanosecond. Every trace's bytes depend
// on the two agreeing.
std::string Reference(double v) {
  std::string s;
  AppendDouble(&s, std::round(v * 1000.0) / 1000.0);
  return s;
}

std::string Written(double v) {
  std::string s = "x";  // Num appends
  Num(s, v);
  return s.substr(1);
}

TEST(TraceNumberTest, HandWrittenFormMatchesTheShortestRoundTripForm) {
  for (double v : {0.0,
                   -0.0,
                   0.001,
                   -0.001,
                   0.005,
                   0.0004,
                   0.0005,
                   0.02,
                   0.1,
                   0.12,
                   0.125,
                   1.0,
                   1.5,
                   12.3,
                   12.34,
                   12.345,
                   12.3456,
                   -12.345,
                   99.999,
                   100.0,
                   1e6,
                   1e6 + 0.02,
                   123000000.0,
                   1e8,
                   0.6399999999999864,
                   1234567.001,
                   999999999999.999,
                   1e12 + 0.5,
                   4.5e12 + 0.25,
                   1e15 + 0.5,
                   1e21,
                   -1e21,
                   1e300,
                   std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::quiet_NaN(),
                   std::numeric_limits<double>::min(),
                   std::numeric_limits<double>::denorm_min()}) {
    EXPECT_EQ(Written(v), Reference(v)) << v;
  }
  EXPECT_EQ(Written(12.345), "12.345");
  EXPECT_EQ(Written(1e6), "1e+06");  // whole numbers keep to_chars' choice
  EXPECT_EQ(Written(-0.005), "-0.005");
  EXPECT_EQ(Written(0.1204), "0.12");
}

TEST(TraceNumberTest, AgreesOnMillionsOfTimestampsOfEveryMagnitude) {
  std::mt19937_64 rng(13);
  std::uniform_real_distribution<double> exponent(-4.0, 16.0);
  std::uniform_int_distribution<int64_t> cycles(0, int64_t{1} << 45);
  for (int i = 0; i < 1000000; ++i) {
    const double v = std::pow(10.0, exponent(rng)) * (i % 7 == 0 ? -1 : 1);
    ASSERT_EQ(Written(v), Reference(v)) << v;
    // Chip timestamps: cycles of a 50 MHz and a 1 GHz clock, in µs.
    const int64_t c = cycles(rng);
    for (double hz : {50e6, 1e9}) {
      const double us = static_cast<double>(c) / hz * 1e6;
      ASSERT_EQ(Written(us), Reference(us)) << us;
    }
  }
}

// Typed events (TraceWriter::Event) against the JSON text the views wrote
// by hand before: the same JSON bytes, and the same proto bytes as that
// text parsed again (the values below are the ones whose typing or rounding
// could differ: whole numbers, "1e+06", sub-nanosecond parts, sums of
// rounded parts, clamped negative times, integers past int64, names with
// escapes, a window that drops events).
struct TypedAndText {
  std::function<void(TraceWriter&)> typed;
  std::string json;  // what `typed` writes as JSON
};

std::vector<TypedAndText> Events() {
  const uint64_t big = uint64_t{1} << 63;
  const int16_t depths[3] = {-2, 0, 7};
  return {
      {[](TraceWriter& t) {
         t.Event('X', "event")
             .Id(7)
             .Name("k\\\"x(", "k\"x(", "t5)")
             .At(4, 10010, 12.3456)
             .Dur(1e6)
             .Str("event-hint", "Task:t5, FuncId:0, CoreId:1")
             .Num("duration-us", 1e6)
             .Num("whole", 5.0)
             .Num("tiny", 0.0004)
             .Num("neg", -0.0004)
             .Num("inf", std::numeric_limits<double>::infinity())
             .Int("taskId", uint64_t{5})
             .End();
       },
       R"J({"ph":"X","cat":"event","id":7,"name":"k\"x(t5)","pid":4,"tid":10010,"ts":12.346,)J"
       R"J("dur":1e+06,"args":{"event-hint":"Task:t5, FuncId:0, CoreId:1","duration-us":1e+06,)J"
       R"J("whole":5,"tiny":0,"neg":0,"inf":null,"taskId":5}})J"},
      {[=](TraceWriter& t) {
         t.Event('X', "scheduler")
             .Id(8)
             .Cname("good")
             .Name("complete(3)")
             .At(2, 30000, 0.0004)
             .Dur(0.0004)
             .Str("phase", "complete")
             .Int("loop_iter", -3)
             .Int("big", big)
             .Ints("depths", depths, 3)
             .Num("x", 2.5e15)
             .End();
       },
       R"J({"ph":"X","cat":"scheduler","id":8,"cname":"good","name":"complete(3)","pid":2,)J"
       R"J("tid":30000,"ts":0,"dur":0,"args":{"phase":"complete","loop_iter":-3,)J"
       R"J("big":9223372036854775808,"depths":[-2,0,7],"x":2.5e+15}})J"},
      {[](TraceWriter& t) {
         t.Event('X', "orchestrator").Name("submit(t1)").At(1, 4000, -3.25).Dur(1.0005).End();
       },
       R"J({"ph":"X","cat":"orchestrator","name":"submit(t1)","pid":1,"tid":4000,"ts":-3.25,)J"
       R"J("dur":1.001})J"},
      {[](TraceWriter& t) {
         t.Event('X', "late").Name("outside").At(1, 4000, 5000.0).Dur(1.0).Int("n", 1).End();
       },
       R"J({"ph":"X","cat":"late","name":"outside","pid":1,"tid":4000,"ts":5000,"dur":1,)J"
       R"J("args":{"n":1}})J"},
      {[](TraceWriter& t) {
         t.Event('C', "queue")
             .Name("shared_ready_queue")
             .At(2, 3999, 7.5)
             .Int("AIC", 3)
             .Int("AIV", int16_t{-1})
             .Num("MIX", 1e6)
             .Num("f", 0.25)
             .End();
       },
       R"J({"ph":"C","cat":"queue","name":"shared_ready_queue","pid":2,"tid":3999,"ts":7.5,)J"
       R"J("args":{"AIC":3,"AIV":-1,"MIX":1e+06,"f":0.25}})J"},
  };
}

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Writes Events() typed or as text into `path`; returns the slices counted.
uint64_t WriteEvents(const std::filesystem::path& path, TraceFormat format, bool typed,
                     const TraceFilter& filter) {
  TraceWriter t;
  EXPECT_TRUE(t.Open(path, filter, format).ok());
  uint64_t counted = 0;
  for (const TypedAndText& e : Events()) {
    if (typed) {
      e.typed(t);
    } else {
      t.Begin().append(e.json);
      t.End();
    }
    t.CountSlice();
    counted = t.slice_events();
  }
  EXPECT_TRUE(t.Finish(nullptr).ok());
  return counted;
}

TEST(TraceEventTest, TypedEventsWriteWhatTheirJsonTextWrites) {
  collectors::testing::TempDir dir;
  TraceFilter window;
  window.window_end = 1000.0;  // drops the event at 5000 µs
  for (const TraceFilter& filter : {TraceFilter{}, window}) {
    for (TraceFormat format : {TraceFormat::kJson, TraceFormat::kProto}) {
      const auto typed = dir.path() / "typed", text = dir.path() / "text";
      const uint64_t typed_slices = WriteEvents(typed, format, true, filter);
      const uint64_t text_slices = WriteEvents(text, format, false, filter);
      const std::string a = Slurp(typed), b = Slurp(text);
      EXPECT_FALSE(a.empty());
      EXPECT_EQ(a, b) << "format " << static_cast<int>(format) << ", windowed "
                      << filter.windowed();
      EXPECT_EQ(typed_slices, text_slices);
      EXPECT_EQ(typed_slices, filter.windowed() ? 4u : 5u);
    }
  }
}

TEST(TraceEventTest, ANonFiniteTimeFailsTheProtoTraceAndWritesNothing) {
  collectors::testing::TempDir dir;
  const auto path = dir.path() / "t.pftrace";
  TraceWriter t;
  ASSERT_TRUE(t.Open(path, {}, TraceFormat::kProto).ok());
  t.Event('X', "event").Name("a").At(1, 2, std::nan("")).Dur(1).Int("n", 1).End();
  EXPECT_FALSE(t.Finish(nullptr).ok());
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace dfx::view
