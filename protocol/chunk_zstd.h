// Artifact chunks compressed on the wire (docs/design.md §7, --wire-compression):
// a chunk of at most kMaxChunkBytes raw bytes travels as one zstd frame that
// records its content size. The offset and the checksum of a stream count
// the file's raw bytes, so the coordinator writes exactly what the agent's
// spool holds. Decompression is bounded: a frame must declare exactly the raw
// size its chunk states, at most kMaxChunkBytes, and decompress to exactly
// that many bytes; anything else (a lie, a zip bomb, garbage) is an
// InvalidArgument naming what was wrong, never a crash or an unbounded
// allocation.
//
// Each object keeps its zstd context (reused across chunks); not
// thread-safe: one per thread or per stream.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "protocol/messages.h"

namespace dfx::protocol {

// The zstd level chunks are compressed at: the fastest positive level
// (artifacts compress 8-18x at it, about 250 MB/s on one core).
constexpr int kChunkZstdLevel = 1;

class ChunkCompressor {
 public:
  ChunkCompressor();
  ~ChunkCompressor();
  ChunkCompressor(const ChunkCompressor&) = delete;
  ChunkCompressor& operator=(const ChunkCompressor&) = delete;
  // One zstd frame of `raw` (at most kMaxChunkBytes) into *out (resized).
  Status Compress(std::string_view raw, std::string* out);

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

class ChunkDecompressor {
 public:
  ChunkDecompressor();
  ~ChunkDecompressor();
  ChunkDecompressor(const ChunkDecompressor&) = delete;
  ChunkDecompressor& operator=(const ChunkDecompressor&) = delete;
  // Decompresses the one zstd frame `frame`, which must hold exactly
  // `raw_size` bytes (1..kMaxChunkBytes), into *out (resized to raw_size).
  Status Decompress(std::string_view frame, uint64_t raw_size, std::string* out);

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace dfx::protocol
