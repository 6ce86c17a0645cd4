#include "common/json_stream.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace dfx {
namespace {

std::filesystem::path WriteTemp(const std::string& name, const std::string& text) {
  auto p = std::filesystem::temp_directory_path() / (name + std::to_string(getpid()));
  std::ofstream(p) << text;
  return p;
}

TEST(JsonPullReaderTest, SkipAndReadJsonStopAtTheDepthLimit) {
  auto p = WriteTemp("pull_deep", "{\"metadata\": " + std::string(100000, '[') + "}");
  JsonPullReader r;
  ASSERT_TRUE(r.Open(p).ok());
  ASSERT_TRUE(r.BeginObject());
  std::string key;
  ASSERT_TRUE(r.NextKey(&key));
  EXPECT_FALSE(r.Skip());
  EXPECT_NE(r.status().message().find("nested deeper than 256 levels"), std::string::npos)
      << r.status().message();
  JsonPullReader again;
  ASSERT_TRUE(again.Open(p).ok());
  Json j;
  EXPECT_FALSE(again.ReadJson(&j));
  std::filesystem::remove(p);
}

TEST(JsonPullReaderTest, WalksNestedDocumentWithFull64BitIntegers) {
  auto p = WriteTemp("pull_ok", R"( {"a": [1, -2, 18446744073709551615, 2.5e3],
     "s": "q\"\u00e9\n", "o": {"t": true, "n": null}, "e": [] } )");
  JsonPullReader r;
  ASSERT_TRUE(r.Open(p).ok());
  ASSERT_TRUE(r.BeginObject());
  std::string key;
  ASSERT_TRUE(r.NextKey(&key));
  EXPECT_EQ(key, "a");
  ASSERT_TRUE(r.BeginArray());
  std::vector<JsonNumber> nums;
  while (r.NextElement()) {
    JsonNumber n;
    ASSERT_TRUE(r.ReadNumber(&n));
    nums.push_back(n);
  }
  ASSERT_EQ(nums.size(), 4u);
  EXPECT_EQ(nums[0].AsUint64(), 1u);
  EXPECT_EQ(nums[1].AsInt64(), -2);
  EXPECT_EQ(nums[2].AsUint64(), 18446744073709551615ull);
  EXPECT_FALSE(nums[3].is_integer);
  EXPECT_DOUBLE_EQ(nums[3].value, 2500.0);
  ASSERT_TRUE(r.NextKey(&key));
  std::string s;
  ASSERT_TRUE(r.ReadString(&s));
  EXPECT_EQ(s, "q\"\xC3\xA9\n");
  ASSERT_TRUE(r.NextKey(&key));
  Json o;
  ASSERT_TRUE(r.ReadJson(&o));
  EXPECT_EQ(o, Json::parse(R"({"t": true, "n": null})"));
  ASSERT_TRUE(r.NextKey(&key));
  ASSERT_TRUE(r.Skip());
  EXPECT_FALSE(r.NextKey(&key));
  EXPECT_TRUE(r.ok());
  std::filesystem::remove(p);
}

// Strings, escapes, integers (up to 20 digits) and separators land on every
// side of the 1 MiB refill boundary: the in-buffer fast paths must hand over
// to the byte-at-a-time paths without losing or repeating a byte.
TEST(JsonPullReaderTest, ValuesAcrossTheRefillBoundaryReadTheSame) {
  std::vector<std::string> strings;
  std::vector<uint64_t> ints;
  std::string text = "[";
  for (uint64_t i = 0; text.size() < (3u << 20); ++i) {
    std::string s(i % 37, static_cast<char>('a' + i % 26));
    if (i % 5 == 0) s += "\"q\\";
    const uint64_t v = i % 3 == 0 ? 18446744073709551615ull - i : i * 7919;
    strings.push_back(s);
    ints.push_back(v);
    if (i > 0) text += ",";
    text += "{\"s\":";
    AppendJsonString(&text, s);
    text += ",\"n\":" + std::to_string(v) + ",\"skip\":[";
    AppendJsonString(&text, s.substr(0, 3));
    text += ",-" + std::to_string(v % 1000) + "]}";
  }
  text += "]";
  auto p = WriteTemp("pull_boundary", text);
  JsonPullReader r;
  ASSERT_TRUE(r.Open(p).ok());
  ASSERT_TRUE(r.BeginArray());
  size_t i = 0;
  std::string key, s;
  while (r.NextElement()) {
    ASSERT_LT(i, strings.size());
    ASSERT_TRUE(r.BeginObject());
    ASSERT_TRUE(r.NextKey(&key));
    ASSERT_TRUE(r.ReadString(&s));
    ASSERT_EQ(s, strings[i]) << "entry " << i;
    ASSERT_TRUE(r.NextKey(&key));
    JsonNumber n;
    ASSERT_TRUE(r.ReadNumber(&n));
    ASSERT_TRUE(n.is_integer);
    ASSERT_EQ(n.magnitude, ints[i]) << "entry " << i;
    ASSERT_TRUE(r.NextKey(&key));
    ASSERT_EQ(key, "skip");
    ASSERT_TRUE(r.Skip()) << r.status().message();
    ASSERT_FALSE(r.NextKey(&key));
    ++i;
  }
  EXPECT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(i, strings.size());
  std::filesystem::remove(p);
}

// ReadUint64Array against BeginArray + ReadNumber on the same text: the
// in-place path (plain integer rows) and every case it leaves to the general
// path (signs, fractions, 20 digits, tabs, a missing comma, a truncated file)
// give the same values, or the same error at the same byte.
TEST(JsonPullReaderTest, ReadUint64ArrayReadsAsReadNumberDoes) {
  const std::vector<std::string> arrays = {
      "[]",
      "[ ]",
      "[0, 3, 1, 87032694784, 87032695608, 544]",
      "[0,3,1]",
      "[ 7 , 8 ]",
      "[1234567890123456789]",
      "[18446744073709551615]",
      "[12345678, 123456789, 1234567890123456, 12345678901234567, 98765432109876543]",
      "[1372826692996,1372826693172,99999999,100000000,0000000012]",
      "[12345678901234567890, 1]",
      "[1234567a, 2]",
      "[87654321]",
      "[-2, 5]",
      "[2.5e3, 1]",
      "[1,\t2]",
      "[1 2]",
      "[1,]",
      "[1, \"x\"]",
      "[1, 2",
      "[",
      "7",
  };
  for (const std::string& text : arrays) {
    const std::string doc = "{\"rows\": [" + text + ", " + text + "]}";
    auto p = WriteTemp("pull_u64_rows", doc);
    std::vector<std::vector<uint64_t>> fast, general;
    Status fast_status, general_status;
    for (bool use_fast : {true, false}) {
      JsonPullReader r;
      ASSERT_TRUE(r.Open(p).ok());
      std::string key;
      bool ok = r.BeginObject() && r.NextKey(&key) && r.BeginArray();
      auto& out = use_fast ? fast : general;
      while (ok && r.NextElement()) {
        std::vector<uint64_t> values;
        if (use_fast) {
          ok = r.ReadUint64Array(&values);
        } else {
          ok = r.BeginArray();
          JsonNumber n;
          while (ok && r.NextElement()) {
            ok = r.ReadNumber(&n);
            if (ok) {
              values.push_back(n.AsRowUint64());
            }
          }
          ok = ok && r.ok();
        }
        if (ok) out.push_back(values);
      }
      (use_fast ? fast_status : general_status) = r.status();
    }
    EXPECT_EQ(fast, general) << text;
    EXPECT_EQ(fast_status.ok(), general_status.ok()) << text;
    EXPECT_EQ(fast_status.message(), general_status.message()) << text;
    std::filesystem::remove(p);
  }
}

// A value read by other means is skipped by offset: within the buffer, or
// past it (the reader buffers 1 MiB), and the reader goes on in its object.
TEST(JsonPullReaderTest, SkipToGoesOnAfterAValueReadByOtherMeans) {
  for (size_t filler : {size_t{10}, size_t{3} << 20}) {
    const std::string big = "[\"" + std::string(filler, 'x') + "\"]";
    auto p = WriteTemp("pull_skipto", R"({"a": )" + big + R"(, "b": 7})");
    JsonPullReader r;
    ASSERT_TRUE(r.Open(p).ok());
    ASSERT_TRUE(r.BeginObject());
    std::string key;
    ASSERT_TRUE(r.NextKey(&key));
    r.Peek();
    const uint64_t at = r.bytes_read();
    EXPECT_EQ(at, 6u);
    ASSERT_TRUE(r.SkipTo(at + big.size())) << r.status().message();
    ASSERT_TRUE(r.NextKey(&key)) << filler << ": " << r.status().message();
    EXPECT_EQ(key, "b");
    JsonNumber n;
    ASSERT_TRUE(r.ReadNumber(&n));
    EXPECT_EQ(n.AsInt64(), 7);
    EXPECT_FALSE(r.NextKey(&key));
    EXPECT_TRUE(r.ok()) << r.status().message();
    // Never back.
    EXPECT_FALSE(r.SkipTo(at));
    EXPECT_NE(r.status().message().find("cannot skip back to byte 6"), std::string::npos)
        << r.status().message();
    std::filesystem::remove(p);
  }
}

TEST(JsonPullReaderTest, ErrorNamesFileAndByteOffset) {
  auto p = WriteTemp("pull_bad", R"({"a": [1, 2 3]})");
  JsonPullReader r;
  ASSERT_TRUE(r.Open(p).ok());
  EXPECT_FALSE(r.Skip());
  EXPECT_NE(r.status().message().find(p.string() + ": at byte"), std::string::npos);
  EXPECT_NE(r.status().message().find("expected ','"), std::string::npos) << r.status().message();
  std::filesystem::remove(p);
}

TEST(JsonPullReaderTest, MissingFileIsNotFound) {
  JsonPullReader r;
  Status s = r.Open("/nonexistent/records.json");
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.message(), "Input file not found: /nonexistent/records.json");
}

TEST(JsonWriterTest, StringsAndDoublesAreValidJson) {
  std::string out;
  AppendJsonString(&out, "a\"b\\c\x01");
  EXPECT_EQ(out, R"("a\"b\\c\u0001")");
  EXPECT_EQ(FormatDouble(1.5), "1.5");
  EXPECT_EQ(FormatDouble(-0.0), "0");
  EXPECT_EQ(FormatDouble(0.1 + 0.2), "0.30000000000000004");
}

TEST(ChunkedWriterTest, StreamsAcrossChunksAndAppearsOnlyOnCommit) {
  auto p = std::filesystem::temp_directory_path() / ("chunked" + std::to_string(getpid()));
  std::filesystem::remove(p);
  ChunkedWriter w;
  ASSERT_TRUE(w.Open(p).ok());
  std::string expected;
  for (int i = 0; expected.size() < 3 * ChunkedWriter::kChunkBytes; ++i) {
    w.Format("{},", i);
    expected += std::to_string(i) + ",";
  }
  w.String("q\"\n");
  expected += R"("q\"\n")";
  EXPECT_FALSE(std::filesystem::exists(p));  // only the temporary name exists until Commit
  ASSERT_TRUE(w.Commit().ok());
  auto text = ReadFile(p);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, expected);
  std::filesystem::remove(p);
}

// With map_chunks, the chunk the caller fills is resident as soon as Open
// returns (its page faults were taken there), and the file is the same.
TEST(ChunkedWriterTest, MappedChunksAreResidentAtOpenAndWriteTheSameFile) {
  const auto dir = std::filesystem::temp_directory_path();
  auto plain = dir / ("chunked_plain" + std::to_string(getpid()));
  auto mapped = dir / ("chunked_mapped" + std::to_string(getpid()));
  ChunkedWriter a, b;
  ASSERT_TRUE(a.Open(plain, false, /*background=*/true).ok());
  ASSERT_TRUE(b.Open(mapped, false, /*background=*/true, /*map_chunks=*/true).ok());
  ASSERT_GE(b.buffer().capacity(), ChunkedWriter::kChunkBytes);
  const long page = ::sysconf(_SC_PAGESIZE);
  const auto begin = reinterpret_cast<uintptr_t>(b.buffer().data()) & ~uintptr_t(page - 1);
  const auto end = reinterpret_cast<uintptr_t>(b.buffer().data()) + ChunkedWriter::kChunkBytes;
  std::vector<unsigned char> resident((end - begin + page - 1) / page);
  ASSERT_EQ(::mincore(reinterpret_cast<void*>(begin), end - begin, resident.data()), 0);
  size_t in_memory = 0;
  for (unsigned char r : resident) in_memory += r & 1;
  EXPECT_EQ(in_memory, resident.size()) << "pages of the first chunk not yet mapped at Open";
  for (int i = 0; i < 700000; ++i) {  // about 5 chunks
    a.Format("{},", i);
    b.Format("{},", i);
  }
  ASSERT_TRUE(a.Commit().ok());
  ASSERT_TRUE(b.Commit().ok());
  auto x = ReadFile(plain), y = ReadFile(mapped);
  ASSERT_TRUE(x.ok() && y.ok());
  EXPECT_EQ(*x, *y);
  std::filesystem::remove(plain);
  std::filesystem::remove(mapped);
}

// With a writer thread: the same bytes, gzip or not, the buffer callers
// build in place stays the same object, and Abort leaves no file at all.
TEST(ChunkedWriterTest, BackgroundWritesTheSameFileAndAbortLeavesNone) {
  const auto dir = std::filesystem::temp_directory_path();
  for (bool gzip : {false, true}) {
    auto fg = dir / ("chunked_fg" + std::to_string(getpid()) + (gzip ? ".gz" : ""));
    auto bg = dir / ("chunked_bg" + std::to_string(getpid()) + (gzip ? ".gz" : ""));
    ChunkedWriter a, b;
    ASSERT_TRUE(a.Open(fg, gzip).ok());
    ASSERT_TRUE(b.Open(bg, gzip, /*background=*/true).ok());
    std::string* in_place = &b.buffer();
    uint64_t last = 0;
    for (int i = 0; i < 700000; ++i) {  // about 5 chunks
      a.Format("{},", i);
      b.buffer().append(std::to_string(i)).push_back(',');
      b.MaybeFlush();
      EXPECT_GE(b.bytes_written(), last);
      last = b.bytes_written();
    }
    EXPECT_EQ(&b.buffer(), in_place);
    if (!gzip) {
      EXPECT_EQ(b.bytes_written(), a.bytes_written());
    }
    ASSERT_TRUE(a.Commit().ok());
    ASSERT_TRUE(b.Commit().ok());
    auto x = ReadFile(fg), y = ReadFile(bg);
    ASSERT_TRUE(x.ok() && y.ok());
    EXPECT_EQ(*x, *y);
    EXPECT_GT(y->size(), gzip ? 1000u : 4 * ChunkedWriter::kChunkBytes);
    std::filesystem::remove(fg);
    std::filesystem::remove(bg);
  }
  auto aborted = dir / ("chunked_abort" + std::to_string(getpid()));
  ChunkedWriter w;
  ASSERT_TRUE(w.Open(aborted, false, /*background=*/true).ok());
  for (int i = 0; i < 500000; ++i) w.Format("{},", i);
  w.Abort();
  EXPECT_FALSE(std::filesystem::exists(aborted));
  EXPECT_FALSE(std::filesystem::exists(TemporaryPathFor(aborted)));
}

}  // namespace
}  // namespace dfx
