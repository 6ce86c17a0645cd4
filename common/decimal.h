// Integers as decimal text, written in place two digits at a time (eight
// at a time in 32-bit parts for values past 10^8): the
// exporters' hot loop (deps.json and the swimlane records are mostly
// integers). The same bytes as std::to_chars(p, end, v) in base 10, which
// is not inlined and re-checks the room it was given on every call; the
// caller here guarantees room for kMaxDecimalChars.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace dfx {

// "-9223372036854775808" and "18446744073709551615" are 20 characters.
inline constexpr int kMaxDecimalChars = 20;

namespace decimal_internal {

inline constexpr char kPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

inline int Digits(uint32_t v) {
  int n = 1;
  for (;;) {
    if (v < 10) return n;
    if (v < 100) return n + 1;
    if (v < 1000) return n + 2;
    if (v < 10000) return n + 3;
    v /= 10000;
    n += 4;
  }
}

// v < 10^8, without leading zeros. 32-bit arithmetic: cheaper divisions
// than the 64-bit ones the same loop would take on a uint64_t.
[[gnu::always_inline]] inline char* WriteUpTo8(char* p, uint32_t v) {
  char* end = p + Digits(v);
  char* q = end;
  while (v >= 100) {
    const auto i = static_cast<size_t>(v % 100) * 2;
    v /= 100;
    q -= 2;
    std::memcpy(q, kPairs + i, 2);
  }
  if (v >= 10) {
    std::memcpy(q - 2, kPairs + static_cast<size_t>(v) * 2, 2);
  } else {
    q[-1] = static_cast<char>('0' + v);
  }
  return end;
}

// Exactly 8 digits, zero-padded (v < 10^8): four pairs at fixed places.
[[gnu::always_inline]] inline char* Write8(char* p, uint32_t v) {
  const uint32_t hi = v / 10000, lo = v % 10000;
  std::memcpy(p, kPairs + static_cast<size_t>(hi / 100) * 2, 2);
  std::memcpy(p + 2, kPairs + static_cast<size_t>(hi % 100) * 2, 2);
  std::memcpy(p + 4, kPairs + static_cast<size_t>(lo / 100) * 2, 2);
  std::memcpy(p + 6, kPairs + static_cast<size_t>(lo % 100) * 2, 2);
  return p + 8;
}

// v >= 10^8: the 64-bit value cut into 8-digit parts (ids and hashes in
// deps.json are 19-20 digits; cycle counts 12).
[[gnu::noinline]] inline char* WriteLarge(char* p, uint64_t v) {
  constexpr uint64_t k8 = 100000000, k16 = k8 * k8;
  if (v < k16) {
    const uint64_t hi = v / k8;
    return Write8(WriteUpTo8(p, static_cast<uint32_t>(hi)), static_cast<uint32_t>(v - hi * k8));
  }
  const uint64_t top = v / k16;  // at most 1844
  const uint64_t rest = v - top * k16;
  const uint64_t mid = rest / k8;
  p = WriteUpTo8(p, static_cast<uint32_t>(top));
  p = Write8(p, static_cast<uint32_t>(mid));
  return Write8(p, static_cast<uint32_t>(rest - mid * k8));
}

[[gnu::always_inline]] inline char* WriteUnsigned(char* p, uint64_t v) {
  if (v < 100000000) return WriteUpTo8(p, static_cast<uint32_t>(v));
  return WriteLarge(p, v);
}

}  // namespace decimal_internal

// Writes `v` in decimal at `p` (room for kMaxDecimalChars) and returns the
// end of what it wrote.
template <typename Integer>
[[gnu::always_inline]] inline char* WriteDecimal(char* p, Integer v) {
  static_assert(std::is_integral_v<Integer> && !std::is_same_v<Integer, bool>);
  if constexpr (std::is_signed_v<Integer>) {
    if (v < 0) {
      *p++ = '-';
      // The magnitude in 64-bit unsigned arithmetic (exact for INT64_MIN too).
      return decimal_internal::WriteUnsigned(p, 0 - static_cast<uint64_t>(static_cast<int64_t>(v)));
    }
  }
  return decimal_internal::WriteUnsigned(p, static_cast<uint64_t>(v));
}

}  // namespace dfx
