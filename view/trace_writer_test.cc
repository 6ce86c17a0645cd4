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

// The shortest round-trip form of the value rounded to the nanosecond
// (AppendDouble), which NumTo's hand-written fast path must match: every
// trace's bytes depend on the two agreeing.
std::string Reference(double v) {
  std::string s;
  AppendDouble(&s, std::round(v * 1000.0) / 1000.0);
  return s;
}

std::string Written(double v) {
  char buf[kNumChars];
  return std::string(buf, static_cast<size_t>(NumTo(buf, v) - buf));
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

// Typed events (TraceWriter::Event) against the JSON text each one stands
// for: the JSON trace holds that text byte for byte, and the proto trace
// holds what the encoder writes for that text read back (the golden traces
// tests/view/fixtures/golden/typed_events*.pftrace). The values are the ones
// whose typing or rounding could differ: whole numbers, "1e+06",
// sub-nanosecond parts, sums of rounded parts, clamped negative times,
// integers past int64, names and strings with escapes, booleans, texts too
// long for one event buffer, and a window that drops an event.
struct TypedAndText {
  std::function<void(TraceWriter&)> typed;
  std::string json;  // what `typed` writes as JSON
};

std::vector<TypedAndText> Events() {
  const uint64_t big = uint64_t{1} << 63;
  const int16_t depths[3] = {-2, 0, 7};
  const std::string long_head(300, 'a'), long_hint(600, 'b');
  return {
      {[](TraceWriter& t) {
         t.Event('X', "event", [](auto& e) {
           e.Id(7)
               .Name("k\\\"x(", "k\"x(", "t5)")
               .At(4, 10010, 12.3456)
               .Dur(1e6)
               .PerTaskStr("event-hint", "Task:t5, FuncId:0, CoreId:1")
               .Num("duration-us", 1e6)
               .Num("whole", 5.0)
               .Num("tiny", 0.0004)
               .Num("neg", -0.0004)
               .Num("inf", std::numeric_limits<double>::infinity())
               .Int("taskId", uint64_t{5});
         });
       },
       R"J({"ph":"X","cat":"event","id":7,"name":"k\"x(t5)","pid":4,"tid":10010,"ts":12.346,)J"
       R"J("dur":1e+06,"args":{"event-hint":"Task:t5, FuncId:0, CoreId:1","duration-us":1e+06,)J"
       R"J("whole":5,"tiny":0,"neg":0,"inf":null,"taskId":5}})J"},
      {[=](TraceWriter& t) {
         t.Event('X', "scheduler", [&](auto& e) {
           e.Id(8)
               .Cname("good")
               .Name("complete(3)")
               .At(2, 30000, 0.0004)
               .Dur(0.0004)
               .Str("phase", "complete")
               .Int("loop_iter", -3)
               .Int("big", big)
               .Ints("depths", depths, 3)
               .Num("x", 2.5e15);
         });
       },
       R"J({"ph":"X","cat":"scheduler","id":8,"cname":"good","name":"complete(3)","pid":2,)J"
       R"J("tid":30000,"ts":0,"dur":0,"args":{"phase":"complete","loop_iter":-3,)J"
       R"J("big":9223372036854775808,"depths":[-2,0,7],"x":2.5e+15}})J"},
      {[](TraceWriter& t) {
         t.Event('X', "orchestrator",
                 [](auto& e) { e.Name("submit(t1)").At(1, 4000, -3.25).Dur(1.0005); });
       },
       R"J({"ph":"X","cat":"orchestrator","name":"submit(t1)","pid":1,"tid":4000,"ts":-3.25,)J"
       R"J("dur":1.001})J"},
      {[](TraceWriter& t) {
         t.Event('X', "late",
                 [](auto& e) { e.Name("outside").At(1, 4000, 5000.0).Dur(1.0).Int("n", 1); });
       },
       R"J({"ph":"X","cat":"late","name":"outside","pid":1,"tid":4000,"ts":5000,"dur":1,)J"
       R"J("args":{"n":1}})J"},
      {[](TraceWriter& t) {
         t.Event('C', "queue", [](auto& e) {
           e.Name("shared_ready_queue")
               .At(2, 3999, 7.5)
               .Int("AIC", 3)
               .Int("AIV", int16_t{-1})
               .Num("MIX", 1e6)
               .Num("f", 0.25);
         });
       },
       R"J({"ph":"C","cat":"queue","name":"shared_ready_queue","pid":2,"tid":3999,"ts":7.5,)J"
       R"J("args":{"AIC":3,"AIV":-1,"MIX":1e+06,"f":0.25}})J"},
      // A name before its colour, escaped (a host upload).
      {[](TraceWriter& t) {
         t.Event('X', "host_h2d", [](auto& e) {
           e.NameText("up\"load\n")
               .Cname("thread_state_iowait")
               .At(1, 4100, 2.5)
               .Dur(0.125)
               .Int("bytes", int64_t{4096});
         });
       },
       R"J({"ph":"X","cat":"host_h2d","name":"up\"load\n","cname":"thread_state_iowait",)J"
       R"J("pid":1,"tid":4100,"ts":2.5,"dur":0.125,"args":{"bytes":4096}})J"},
      // A name after the duration, a string arg escaped (a dispatch bar).
      {[](TraceWriter& t) {
         t.Event('X', "dispatch", [](auto& e) {
           e.At(100, 1, 0.0)
               .Dur(0.02)
               .NameText("d0: prog \xc2\xb7 x")
               .Int("rank", 0)
               .Int("dispatch", 0)
               .Text("program", "p\\q\"");
         });
       },
       "{\"ph\":\"X\",\"cat\":\"dispatch\",\"pid\":100,\"tid\":1,\"ts\":0,\"dur\":0.02,"
       "\"name\":\"d0: prog \xc2\xb7 x\",\"args\":{\"rank\":0,\"dispatch\":0,"
       "\"program\":\"p\\\\q\\\"\"}}"},
      // Booleans (a predicated-skip marker).
      {[](TraceWriter& t) {
         t.Event('X', "event", [](auto& e) {
           e.Id(9)
               .Cname("olive")
               .NameText("alloc(t3)")
               .At(4, 19000, 1.0)
               .Dur(0.02)
               .Int("loop_iter", uint32_t{1})
               .Int("task_id", uint64_t{3})
               .Str("event-hint", "Task:t3")
               .Bool("predicated_pass", false)
               .Bool("t", true);
         });
       },
       R"J({"ph":"X","cat":"event","id":9,"cname":"olive","name":"alloc(t3)","pid":4,)J"
       R"J("tid":19000,"ts":1,"dur":0.02,"args":{"loop_iter":1,"task_id":3,)J"
       R"J("event-hint":"Task:t3","predicated_pass":false,"t":true}})J"},
      {[](TraceWriter& t) {
         t.Event('C', "overhead",
                 [](auto& e) { e.Name("oh_aic_idle").At(2, 9101, 3.5).Int("oh_aic_idle", 2L); });
       },
       R"J({"ph":"C","cat":"overhead","name":"oh_aic_idle","pid":2,"tid":9101,"ts":3.5,)J"
       R"J("args":{"oh_aic_idle":2}})J"},
      {[](TraceWriter& t) {
         t.Event('X', "graph_execution", [](auto& e) {
           e.NameText("GraphExecution(t1, 3 visible nodes)")
               .At(5, 5000, 10.0)
               .Dur(4.5)
               .Int("outer_task_id", uint64_t{1})
               .Num("prepare_duration_us", 0.75)
               .Num("execution_start_us", 12.0)
               .Str("synthetic_id_layout", "ring1:(outer_task_id << 10) | node_index");
         });
       },
       R"J({"ph":"X","cat":"graph_execution","name":"GraphExecution(t1, 3 visible nodes)",)J"
       R"J("pid":5,"tid":5000,"ts":10,"dur":4.5,"args":{"outer_task_id":1,)J"
       R"J("prepare_duration_us":0.75,"execution_start_us":12,)J"
       R"J("synthetic_id_layout":"ring1:(outer_task_id << 10) | node_index"}})J"},
      // A name and a string longer than the event's buffer.
      {[=](TraceWriter& t) {
         t.Event('X', "event", [&](auto& e) {
           e.Name(long_head + "(", long_head + "(", "t1)")
               .At(4, 1, 1.0)
               .Dur(1.0)
               .Str("hint", long_hint);
         });
       },
       R"J({"ph":"X","cat":"event","name":")J" + long_head +
           R"J((t1)","pid":4,"tid":1,"ts":1,"dur":1,"args":{"hint":")J" + long_hint + "\"}}"},
  };
}

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Writes Events() typed into `path`; returns the slices counted.
uint64_t WriteEvents(const std::filesystem::path& path, TraceFormat format,
                     const TraceFilter& filter) {
  TraceWriter t;
  EXPECT_TRUE(t.Open(path, filter, format).ok());
  for (const TypedAndText& e : Events()) {
    e.typed(t);
    t.CountSlice();
  }
  EXPECT_TRUE(t.Finish(nullptr).ok());
  return t.slice_events();
}

TEST(TraceEventTest, TypedEventsWriteWhatTheirJsonTextWrites) {
  collectors::testing::TempDir dir;
  TraceFilter window;
  window.window_end = 1000.0;  // drops the event at 5000 µs
  for (const TraceFilter& filter : {TraceFilter{}, window}) {
    std::string json = "{\"traceEvents\": [\n";
    bool first = true;
    for (const TypedAndText& e : Events()) {
      if (filter.windowed() && e.json.find("\"ts\":5000,") != std::string::npos) continue;
      json += (first ? "" : ",\n") + e.json;
      first = false;
    }
    json += "\n]}\n";
    const auto path = dir.path() / "typed";
    EXPECT_EQ(WriteEvents(path, TraceFormat::kJson, filter), filter.windowed() ? 10u : 11u);
    EXPECT_EQ(Slurp(path), json) << "windowed " << filter.windowed();
    EXPECT_EQ(WriteEvents(path, TraceFormat::kProto, filter), filter.windowed() ? 10u : 11u);
    EXPECT_EQ(Slurp(path), collectors::testing::Slurp(collectors::testing::ViewFixture(
                               filter.windowed() ? "golden/typed_events_windowed.pftrace"
                                                 : "golden/typed_events.pftrace")))
        << "windowed " << filter.windowed();
  }
}

TEST(TraceEventTest, AnEventOfAPhaseWithNoProtoEncodingFailsTheProtoTrace) {
  collectors::testing::TempDir dir;
  const auto path = dir.path() / "t.pftrace";
  TraceWriter t;
  ASSERT_TRUE(t.Open(path, {}, TraceFormat::kProto).ok());
  t.Event('B', "event", [](auto& e) { e.Name("begin").At(1, 2, 1.0).Int("n", 1); });
  const Status s = t.Finish(nullptr);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("phase 'B'"), std::string::npos) << s.message();
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(TraceEventTest, ANonFiniteTimeFailsTheProtoTraceAndWritesNothing) {
  collectors::testing::TempDir dir;
  const auto path = dir.path() / "t.pftrace";
  TraceWriter t;
  ASSERT_TRUE(t.Open(path, {}, TraceFormat::kProto).ok());
  t.Event('X', "event", [](auto& e) { e.Name("a").At(1, 2, std::nan("")).Dur(1).Int("n", 1); });
  EXPECT_FALSE(t.Finish(nullptr).ok());
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace dfx::view
