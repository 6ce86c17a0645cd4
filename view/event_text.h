// The text pieces a trace event is made of: trace numbers (NumTo: every
// time and duration of a trace, rounded to the nanosecond and written as
// the shortest round-trip decimal), what such a number reads back as
// (TraceNumber, what the proto trace encodes), and EventText, a bounded
// piece of text (a label, a hint) built in a stack buffer. Header-only;
// thread-safe.
#pragma once

#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "common/decimal.h"

namespace dfx::view {

// Writes a trace number (µs) at `p`, which has room for kNumChars, and
// returns its end: rounded to the nanosecond, then the shortest round-trip
// decimal, so no 0.6399999999999864 reaches the trace.
//
// One call per number of every event, so the common case is written by
// hand: a value with a fraction, below 1e12 µs (where doubles are closer
// than 1 ns, so the nanosecond decimal with its trailing zeros cut IS the
// shortest round-trip form, and is shorter than its exponent form). Whole
// numbers (std::to_chars may choose "1e+06"), huge values and non-finite
// ones ("null") take std::to_chars: the bytes are those of AppendDouble
// (common/json_stream.h) of the rounded value either way.
inline constexpr size_t kNumChars = 40;
[[gnu::always_inline]] inline char* NumTo(char* p, double v) {
  const double ns = std::round(v * 1000.0);
  int64_t n = std::fabs(ns) < 1e15 ? static_cast<int64_t>(ns) : 0;
  if (n % 1000 == 0) {  // whole, huge or not finite: as AppendDouble writes it
    double whole = ns / 1000.0;
    if (!std::isfinite(whole)) {
      std::memcpy(p, "null", 4);
      return p + 4;
    }
    if (whole == 0.0) whole = 0.0;  // no "-0"
    return std::to_chars(p, p + kNumChars, whole).ptr;
  }
  if (n < 0) {
    *p++ = '-';
    n = -n;
  }
  p = WriteDecimal(p, n / 1000);
  const int frac = static_cast<int>(n % 1000);  // 1..999
  *p++ = '.';
  *p++ = static_cast<char>('0' + frac / 100);
  *p++ = static_cast<char>('0' + frac / 10 % 10);
  *p++ = static_cast<char>('0' + frac % 10);
  while (p[-1] == '0') --p;
  return p;
}

// What the text NumTo writes for `v` reads back as: `v` rounded to the
// nanosecond (no -0); NaN where NumTo writes null. The proto trace encodes
// these values, so it holds what a reader of the JSON trace sees.
inline double TraceNumber(double v) {
  const double us = std::round(v * 1000.0) / 1000.0;
  return std::isfinite(us) ? us + 0.0 : std::nan("");
}

// Whether `s` needs no JSON escaping (no quote, backslash or control byte).
inline bool IsPlainText(std::string_view s) {
  for (char c : s) {
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) return false;
  }
  return true;
}

// A piece of text of at most kRoom bytes built in a fixed buffer, e.g. a
// name "submit(t5)" or a hint "Task:t5, FuncId:0, CoreId:3": no allocation.
// The caller bounds what it writes (asserted).
class EventText {
 public:
  static constexpr size_t kRoom = 512;
  // Inline, all of them: a piece is a few of these, written for every
  // event of a trace.
  [[gnu::always_inline]] EventText& Lit(std::string_view s) {
    assert(s.size() <= kRoom - static_cast<size_t>(p_ - buf_));
    if (!s.empty()) std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
    return *this;
  }
  template <typename Integer>
  [[gnu::always_inline]] EventText& Int(Integer v) {
    p_ = WriteDecimal(p_, v);
    return *this;
  }
  // Text written by `write(char* at) -> end`, of at most `bound` bytes.
  template <typename Writer>
  [[gnu::always_inline]] EventText& Put(size_t bound, Writer&& write) {
    assert(bound <= kRoom - static_cast<size_t>(p_ - buf_));
    (void)bound;
    p_ = write(p_);
    return *this;
  }
  std::string_view view() const { return {buf_, static_cast<size_t>(p_ - buf_)}; }

 private:
  char buf_[kRoom];
  char* p_ = buf_;
};

}  // namespace dfx::view
