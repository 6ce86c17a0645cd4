// Word-at-a-time byte search for the JSON readers' hot loops: eight bytes are
// loaded at once and tested for given byte values with the classic
// "has zero byte" trick, instead of one compare per byte.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// The first '"', '\\' or '\0' at or after `p`, sixteen bytes at a time with
// SSE2 (eight without it). The caller guarantees one of them occurs, with at
// least kStopPad readable bytes after it (a '\0' sentinel after a buffer
// and kStopPad bytes of padding behind it).
inline constexpr size_t kStopPad = 16;
inline const char* StringStop(const char* p) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i zero = _mm_setzero_si128();
  for (;; p += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i hit =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                     _mm_cmpeq_epi8(v, zero));
    const int mask = _mm_movemask_epi8(hit);
    if (mask != 0) return p + std::countr_zero(static_cast<unsigned>(mask));
  }
#else
  for (;; p += 8) {
    const uint64_t v = Load(p);
    const uint64_t hit = ZeroBytes(v) | QuoteOrBackslash(v);
    if (hit != 0) return p + FirstFlagged(hit);
  }
#endif
}

}  // namespace dfx::byte_scan
