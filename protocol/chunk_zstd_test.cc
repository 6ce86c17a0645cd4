#include "protocol/chunk_zstd.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <random>
#include <string>

#include "protocol/codec.h"

namespace dfx::protocol {
namespace {

// Artifact-like bytes: JSON records with small varying numbers (compressible).
std::string Records(size_t bytes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s;
  while (s.size() < bytes) {
    s += "{\"task\": " + std::to_string(rng() % 100000) +
         ", \"core\": " + std::to_string(rng() % 64) + ", \"start\": " + std::to_string(rng()) +
         "},\n";
  }
  s.resize(bytes);
  return s;
}

TEST(ChunkZstdTest, RoundTripsAndShrinksRecords) {
  ChunkCompressor c;
  ChunkDecompressor d;
  for (size_t size : {size_t{1}, size_t{4096}, size_t{1} << 20, size_t{kMaxChunkBytes}}) {
    const std::string raw = Records(size, static_cast<uint32_t>(size));
    std::string frame, back;
    ASSERT_TRUE(c.Compress(raw, &frame).ok());
    if (size >= 4096) EXPECT_LT(frame.size() * 2, raw.size()) << size;
    ASSERT_TRUE(d.Decompress(frame, raw.size(), &back).ok()) << size;
    EXPECT_EQ(back, raw);
  }
}

TEST(ChunkZstdTest, AChunkThatLiesAboutItsSizeIsRefused) {
  ChunkCompressor c;
  ChunkDecompressor d;
  const std::string raw = Records(10000, 1);
  std::string frame, out;
  ASSERT_TRUE(c.Compress(raw, &frame).ok());
  Status fewer = d.Decompress(frame, raw.size() - 1, &out);
  EXPECT_EQ(fewer.code(), Code::kInvalidArgument);
  EXPECT_NE(fewer.message().find("declares 9999 raw bytes but its frame holds 10000"),
            std::string::npos)
      << fewer.message();
  EXPECT_FALSE(d.Decompress(frame, raw.size() + 1, &out).ok());
  EXPECT_FALSE(d.Decompress(frame, 0, &out).ok());
  // Two frames back to back are not one chunk.
  EXPECT_FALSE(d.Decompress(frame + frame, raw.size() * 2, &out).ok());
  // A truncated frame.
  EXPECT_FALSE(d.Decompress(frame.substr(0, frame.size() - 3), raw.size(), &out).ok());
}

// A zip bomb: a tiny frame of 1 GiB of zeros, declared as what it is or as a
// legal chunk size. Neither is decompressed (bounded work and memory).
TEST(ChunkZstdTest, AZipBombIsRefusedWithoutDecompressing) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ASSERT_NE(cctx, nullptr);
  ASSERT_EQ(ZSTD_CCtx_setPledgedSrcSize(cctx, 1ull << 30), 0u);
  std::string zeros(1 << 20, '\0');
  std::string frame(1 << 20, '\0');
  ZSTD_outBuffer out{frame.data(), frame.size(), 0};
  for (int i = 0; i < 1024; ++i) {
    ZSTD_inBuffer in{zeros.data(), zeros.size(), 0};
    const ZSTD_EndDirective end = i == 1023 ? ZSTD_e_end : ZSTD_e_continue;
    size_t left = 0;
    do {
      left = ZSTD_compressStream2(cctx, &out, &in, end);
      ASSERT_FALSE(ZSTD_isError(left));
    } while (in.pos < in.size || (end == ZSTD_e_end && left != 0));
  }
  ZSTD_freeCCtx(cctx);
  frame.resize(out.pos);
  ASSERT_LT(frame.size(), 1u << 20);
  ChunkDecompressor d;
  std::string got;
  Status as_is = d.Decompress(frame, 1ull << 30, &got);
  EXPECT_EQ(as_is.code(), Code::kInvalidArgument);
  EXPECT_NE(as_is.message().find("a chunk holds 1 to"), std::string::npos) << as_is.message();
  Status lie = d.Decompress(frame, kMaxChunkBytes, &got);
  EXPECT_EQ(lie.code(), Code::kInvalidArgument);
  EXPECT_NE(lie.message().find("but its frame holds 1073741824"), std::string::npos)
      << lie.message();
  EXPECT_LE(got.capacity(), kMaxChunkBytes);
}

// Fuzz-friendly: random bytes and every single-byte corruption of a real
// frame either fail with InvalidArgument or decompress to the declared size.
TEST(ChunkZstdTest, GarbageAndCorruptFramesNeverCrash) {
  std::mt19937 rng(7);
  ChunkDecompressor d;
  std::string out;
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 256, '\0');
    for (char& ch : junk) ch = static_cast<char>(rng());
    if (i % 2 == 0 && junk.size() >= 4) junk.replace(0, 4, "\x28\xb5\x2f\xfd", 4);  // zstd magic
    Status s = d.Decompress(junk, 1 + rng() % kMaxChunkBytes, &out);
    if (!s.ok()) EXPECT_EQ(s.code(), Code::kInvalidArgument);
  }
  ChunkCompressor c;
  const std::string raw = Records(3000, 2);
  std::string frame;
  ASSERT_TRUE(c.Compress(raw, &frame).ok());
  for (size_t at = 0; at < frame.size(); ++at) {
    std::string bad = frame;
    bad[at] = static_cast<char>(bad[at] ^ 0x5a);
    Status s = d.Decompress(bad, raw.size(), &out);
    if (s.ok()) {
      EXPECT_EQ(out.size(), raw.size());
    } else {
      EXPECT_EQ(s.code(), Code::kInvalidArgument);
    }
  }
}

TEST(ChunkZstdTest, ACompressedChunkKeepsItsCodingThroughTheCodec) {
  ChunkCompressor c;
  const std::string raw = Records(5000, 3);
  ArtifactChunk chunk{9, 1 << 20, {}, ChunkCoding::kZstd, raw.size()};
  ASSERT_TRUE(c.Compress(raw, &chunk.data).ok());
  Message m{Header{kProtocolVersion, 1, 0, 1}, chunk};
  auto bytes = Encode(m);
  ASSERT_TRUE(bytes.ok());
  auto view = DecodeChunkView(*bytes);
  ASSERT_TRUE(view.ok() && view->has_value());
  EXPECT_EQ((*view)->coding, ChunkCoding::kZstd);
  EXPECT_EQ((*view)->raw_size, raw.size());
  EXPECT_EQ((*view)->offset, 1u << 20);
  auto decoded = Decode(*bytes);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(std::get<ArtifactChunk>(decoded->body), chunk);
  WireCompression mode = WireCompression::kAuto;
  EXPECT_TRUE(ParseWireCompression("off", &mode));
  EXPECT_EQ(mode, WireCompression::kOff);
  EXPECT_FALSE(ParseWireCompression("gzip", &mode));
  EXPECT_STREQ(WireCompressionName(WireCompression::kZstd), "zstd");
}

}  // namespace
}  // namespace dfx::protocol
