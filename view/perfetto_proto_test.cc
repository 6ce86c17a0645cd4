#include "view/perfetto_proto.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace dfx::view {
namespace {

using namespace proto_wire;

std::string Hex(std::string_view s) {
  static const char* d = "0123456789abcdef";
  std::string h;
  for (unsigned char c : s) {
    if (!h.empty()) h.push_back(' ');
    h.push_back(d[c >> 4]);
    h.push_back(d[c & 15]);
  }
  return h;
}

// How many times `s` occurs in `out` from byte `from` on.
size_t Occurrences(const std::string& out, std::string_view s, size_t from) {
  size_t n = 0;
  for (size_t at = out.find(s, from); at != std::string::npos; at = out.find(s, at + 1)) ++n;
  return n;
}

TEST(ProtoWireTest, VarintsAreLittleEndianSevenBitGroups) {
  // Golden bytes from the protobuf encoding guide.
  const std::pair<uint64_t, const char*> cases[] = {
      {0, "00"},           {1, "01"},
      {127, "7f"},         {128, "80 01"},
      {150, "96 01"},      {300, "ac 02"},
      {16384, "80 80 01"}, {~uint64_t{0}, "ff ff ff ff ff ff ff ff ff 01"},
  };
  for (const auto& [v, hex] : cases) {
    Buffer out;
    PutVarint(out, v);
    EXPECT_EQ(Hex(out.view()), hex) << v;
  }
}

TEST(ProtoWireTest, FieldsCarryTheirTagAndWireType) {
  Buffer out;
  PutUint(out, 1, 150);  // field 1, varint
  EXPECT_EQ(Hex(out.view()), "08 96 01");
  out.clear();
  PutInt(out, 4, -1);  // int64 -1: ten bytes, as protobuf writes it
  EXPECT_EQ(Hex(out.view()), "20 ff ff ff ff ff ff ff ff ff 01");
  out.clear();
  PutBytes(out, 2, "testing");
  EXPECT_EQ(Hex(out.view()), "12 07 74 65 73 74 69 6e 67");
  out.clear();
  PutUint(out, 60, 1);  // a field number past 15 takes a two-byte tag
  EXPECT_EQ(Hex(out.view()), "e0 03 01");
  out.clear();
  PutFixed64(out, 47, 0x0102030405060708ull);
  EXPECT_EQ(Hex(out.view()), "f9 02 08 07 06 05 04 03 02 01");
  out.clear();
  PutDouble(out, 5, 1.0);
  EXPECT_EQ(Hex(out.view()), "29 00 00 00 00 00 00 f0 3f");
}

TEST(ProtoWireTest, NestedLengthsArePatchedAndGrowPastOneByte) {
  Buffer out;
  out.Push('x');
  size_t m = BeginNested(out, 1);
  PutUint(out, 2, 3);
  EndNested(out, m);
  EXPECT_EQ(Hex(out.view()), "78 0a 02 10 03");

  // A 200-byte body needs a two-byte length; nested inside another message.
  out.clear();
  size_t outer = BeginNested(out, 1);
  size_t inner = BeginNested(out, 2);
  out.Append(std::string(200, 'a'));
  EndNested(out, inner);
  EndNested(out, outer);
  ASSERT_EQ(out.size(), 1 + 2 + 1 + 2 + 200u);
  EXPECT_EQ(Hex(out.view().substr(0, 6)), "0a cb 01 12 c8 01");  // 203 = cb 01, 200 = c8 01
  EXPECT_EQ(out.view().substr(6), std::string(200, 'a'));
}

TEST(ProtoWireTest, ABufferKeepsItsBytesAsItGrowsAndALongBodyMovesIntact) {
  // 110 KiB written a field at a time (the buffer starts at 256 bytes and
  // grows many times), then closed: its three-byte length moves the body by
  // two bytes.
  Buffer out;
  const size_t body = BeginNested(out, 1);
  std::string expected;
  for (int i = 0; i < 10240; ++i) {
    const std::string piece = std::to_string(i % 10) + "abcdefgh";  // 9 bytes
    PutBytes(out, 2, piece);
    expected += "\x12\x09" + piece;
  }
  ASSERT_EQ(out.size(), body + expected.size());
  EndNested(out, body);
  ASSERT_EQ(expected.size(), 112640u);  // = 80 f0 06 as a varint
  EXPECT_EQ(Hex(out.view().substr(0, 4)), "0a 80 f0 06");
  EXPECT_EQ(out.view().substr(4), expected);
}

TEST(JsonTraceEventTest, ReadsTheShapesTheViewsWrite) {
  JsonTraceEvent e;
  ASSERT_TRUE(ParseJsonTraceEvent(
                  R"J({"ph":"X","cat":"event","id":7,"cname":"olive","name":"dummy(\"t\u00e9\")",)J"
                  R"("pid":104,"tid":19000,"ts":12.345,"dur":0.02,"args":{"a":[1,2],"b":"x"}})",
                  &e)
                  .ok());
  EXPECT_EQ(e.ph, 'X');
  EXPECT_EQ(e.cat, "event");
  EXPECT_EQ(e.name, "dummy(\"t\xc3\xa9\")");
  EXPECT_EQ(e.pid, 104);
  EXPECT_EQ(e.tid, 19000);
  EXPECT_TRUE(e.has_tid);
  EXPECT_DOUBLE_EQ(e.ts, 12.345);
  EXPECT_DOUBLE_EQ(e.dur, 0.02);
  EXPECT_EQ(e.args, R"({"a":[1,2],"b":"x"})");

  ASSERT_TRUE(ParseJsonTraceEvent(R"({"ph":"C","name":"q","pid":2,"tid":3999,"ts":1})", &e).ok());
  EXPECT_EQ(e.ph, 'C');
  EXPECT_TRUE(std::isnan(e.dur));

  EXPECT_FALSE(ParseJsonTraceEvent(R"({"ph":"X","ts":})", &e).ok());
  EXPECT_FALSE(ParseJsonTraceEvent(R"({"ph":"X"} trailing)", &e).ok());
}

TEST(PerfettoTraceEncoderTest, InternsANameTheSecondTimeItIsSeen) {
  std::string out;
  PerfettoTraceEncoder enc(&out);
  JsonTraceEvent e;
  ASSERT_TRUE(ParseJsonTraceEvent(
                  R"({"ph":"X","cat":"event","name":"Task_1","pid":4,"tid":1,"ts":1,"dur":2})", &e)
                  .ok());
  auto count = [&](size_t from) { return Occurrences(out, "Task_1", from); };
  ASSERT_TRUE(enc.Event(e).ok());  // inline: a name drawn once costs no table entry
  EXPECT_EQ(count(0), 1u);
  const size_t first = out.size();
  ASSERT_TRUE(enc.Event(e).ok());  // interned: the entry rides this packet
  EXPECT_EQ(count(first), 1u);
  const size_t second = out.size();
  ASSERT_TRUE(enc.Event(e).ok());  // the iid only; no track descriptor again
  EXPECT_EQ(count(second), 0u);
  EXPECT_LT(out.size() - second, second - first);

  JsonTraceEvent bad;
  bad.ph = 'B';
  EXPECT_FALSE(enc.Event(bad).ok());
}

// A task's name (or hint) is looked up in the string cache only when it is
// one of the last few such strings (a task's next SPMD block): the third of
// three in a row is an iid, and so is a hint that alternates with others
// (a slice's event-hint, fan-out and fan-in hints); a name that comes back
// after several other tasks' is written inline again, with no lookup.
TEST(PerfettoTraceEncoderTest, InternsAPerTaskStringOnlyWhenItRepeatsARecentOne) {
  std::string out;
  PerfettoTraceEncoder enc(&out);
  auto count = [&](const char* s, size_t from) { return Occurrences(out, s, from); };
  auto slice = [&](std::string_view name) {
    const size_t at = out.size();
    enc.BeginSlice(4, 1, 1.0, "event", name, /*per_task=*/true);
    enc.EndSlice(1.0, 2.0);
    return at;
  };
  slice("add(t1)");
  const size_t second = slice("add(t1)");
  EXPECT_EQ(count("add(t1)", second), 1u);  // inline again, now in the cache
  const size_t third = slice("add(t1)");
  EXPECT_EQ(count("add(t1)", third), 1u);  // the InternedData entry, then its iid
  const size_t fourth = slice("add(t1)");
  EXPECT_EQ(count("add(t1)", fourth), 0u);  // the iid only
  for (const char* other : {"mul(t2)", "sub(t3)", "div(t4)", "neg(t5)"}) slice(other);
  const size_t back = slice("add(t1)");
  EXPECT_EQ(count("add(t1)", back), 1u) << "after four other tasks' names: inline";
  // Four SPMD blocks of one task: each has its own event-hint (its core),
  // and the same fan-out hint: inline, inline, interned, then the iid only.
  size_t block_at[4];
  for (int b = 0; b < 4; ++b) {
    block_at[b] = out.size();
    enc.BeginSlice(4, 1, 2.0 + b, "event", "mul(t2)", true);
    enc.AnnotateString("event-hint", "Task:t2, FuncId:1, CoreId:" + std::to_string(b), true);
    enc.AnnotateString("fanout-hint", "2: [t7, t8]", true);
    enc.EndSlice(2.0 + b, 1.0);
  }
  EXPECT_EQ(count("2: [t7, t8]", block_at[0]), 3u);
  EXPECT_EQ(count("2: [t7, t8]", block_at[2]), 1u);                  // the InternedData entry
  EXPECT_EQ(count("2: [t7, t8]", block_at[3]), 0u);                  // its iid
  EXPECT_EQ(count("Task:t2, FuncId:1, CoreId:3", block_at[3]), 1u);  // inline
}

}  // namespace
}  // namespace dfx::view
