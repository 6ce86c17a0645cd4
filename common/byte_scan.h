// Word-at-a-time byte search for the JSON readers' hot loops: eight bytes are
// loaded at once and tested for given byte values with the classic
// "has zero byte" trick, instead of one compare per byte.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace dfx::byte_scan {

static_assert(std::endian::native == std::endian::little);
inline constexpr uint64_t kOnes = 0x0101010101010101ull;
inline constexpr uint64_t kHigh = 0x8080808080808080ull;

// The 8 bytes at `p` as one little-endian word.
inline uint64_t Load(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
// A mask flagging (high bit set) the bytes of `v` that are 0. Flags can be
// false only above a true one, so the lowest flag is exact.
inline uint64_t ZeroBytes(uint64_t v) { return (v - kOnes) & ~v & kHigh; }
// A mask flagging the bytes of `v` equal to `c` (the same caveat).
inline uint64_t BytesEqual(uint64_t v, char c) {
  return ZeroBytes(v ^ (kOnes * static_cast<uint8_t>(c)));
}
// The offset (0..7) of the lowest flagged byte of a nonzero mask.
inline int FirstFlagged(uint64_t mask) { return std::countr_zero(mask) / 8; }
// Flags the bytes that end a plain run of a JSON string: '"' and '\\'.
inline uint64_t QuoteOrBackslash(uint64_t v) { return BytesEqual(v, '"') | BytesEqual(v, '\\'); }

}  // namespace dfx::byte_scan
