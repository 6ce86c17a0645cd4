#include "view/proto_wire.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

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

}  // namespace
}  // namespace dfx::view
