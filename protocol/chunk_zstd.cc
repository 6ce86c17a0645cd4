#include "protocol/chunk_zstd.h"

#include <fmt/format.h>
#include <zstd.h>

#include "common/enum_text.h"

namespace dfx::protocol {

namespace {

constexpr auto kWireCompressionText = MakeEnumTable<WireCompression>({
    {WireCompression::kAuto, "auto"},
    {WireCompression::kZstd, "zstd"},
    {WireCompression::kOff, "off"},
});

}  // namespace

const char* WireCompressionName(WireCompression mode) { return kWireCompressionText.Name(mode); }

bool ParseWireCompression(std::string_view text, WireCompression* mode) {
  auto parsed = kWireCompressionText.Parse(text);
  if (!parsed) return false;
  *mode = *parsed;
  return true;
}

struct ChunkCompressor::Ctx {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ~Ctx() { ZSTD_freeCCtx(cctx); }
};

ChunkCompressor::ChunkCompressor() : ctx_(std::make_unique<Ctx>()) {}
ChunkCompressor::~ChunkCompressor() = default;

Status ChunkCompressor::Compress(std::string_view raw, std::string* out) {
  if (raw.size() > kMaxChunkBytes) {
    return InvalidArgument(
        fmt::format("a chunk of {} bytes exceeds the limit of {}", raw.size(), kMaxChunkBytes));
  }
  if (ctx_->cctx == nullptr) return Internal("zstd: cannot create a compression context");
  out->resize(ZSTD_compressBound(raw.size()));
  // ZSTD_compressCCtx records the content size in the frame header.
  const size_t n = ZSTD_compressCCtx(ctx_->cctx, out->data(), out->size(), raw.data(), raw.size(),
                                     kChunkZstdLevel);
  if (ZSTD_isError(n))
    return Internal(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
  out->resize(n);
  return Status::Ok();
}

struct ChunkDecompressor::Ctx {
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  ~Ctx() { ZSTD_freeDCtx(dctx); }
};

ChunkDecompressor::ChunkDecompressor() : ctx_(std::make_unique<Ctx>()) {}
ChunkDecompressor::~ChunkDecompressor() = default;

Status ChunkDecompressor::Decompress(std::string_view frame, uint64_t raw_size, std::string* out) {
  if (raw_size == 0 || raw_size > kMaxChunkBytes) {
    return InvalidArgument(
        fmt::format("a zstd chunk declares {} raw bytes; a chunk holds 1 to {} bytes", raw_size,
                    kMaxChunkBytes));
  }
  if (ctx_->dctx == nullptr) return Internal("zstd: cannot create a decompression context");
  // Exactly one frame, whose header states the size the chunk declares.
  const size_t frame_bytes = ZSTD_findFrameCompressedSize(frame.data(), frame.size());
  if (ZSTD_isError(frame_bytes) || frame_bytes != frame.size()) {
    return InvalidArgument(fmt::format(
        "a zstd chunk of {} bytes is not one complete zstd frame{}", frame.size(),
        ZSTD_isError(frame_bytes) ? std::string(": ") + ZSTD_getErrorName(frame_bytes) : ""));
  }
  const unsigned long long content = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (content == ZSTD_CONTENTSIZE_UNKNOWN || content == ZSTD_CONTENTSIZE_ERROR) {
    return InvalidArgument("a zstd chunk's frame does not state its content size");
  }
  if (content != raw_size) {
    return InvalidArgument(fmt::format("a zstd chunk declares {} raw bytes but its frame holds {}",
                                       raw_size, content));
  }
  out->resize(raw_size);
  const size_t n =
      ZSTD_decompressDCtx(ctx_->dctx, out->data(), out->size(), frame.data(), frame.size());
  if (ZSTD_isError(n) || n != raw_size) {
    out->clear();
    return InvalidArgument(fmt::format(
        "a zstd chunk does not decompress to its declared {} bytes: {}", raw_size,
        ZSTD_isError(n) ? std::string(ZSTD_getErrorName(n)) : fmt::format("{} bytes", n)));
  }
  return Status::Ok();
}

}  // namespace dfx::protocol
