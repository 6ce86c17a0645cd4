// The exporters' per-record text, built in a fixed buffer and handed to a
// ChunkedWriter a few KiB at a time. Appending each piece through fmt into
// the writer's std::string (internal::Put) grows and re-checks the string
// once per number; deps.json (92 MB at 100,000 tasks) is mostly numbers and
// short literals, and formatting it that way is most of an all-five
// export's CPU. The appends are inlined and integers are written by
// common/decimal.h (a call to std::to_chars per number is ~30% of an
// export's instructions).
// The bytes are the same as the fmt form's: integers in decimal, `Hex16` as
// 16 lower-case digits ("{:016x}"). (view/event_text.h's EventText is the
// same idea for the converter's events; collectors cannot depend on view.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "common/decimal.h"
#include "common/json_stream.h"

namespace dfx::collectors::internal {

class RecordText {
 public:
  static constexpr size_t kRoom = 8192;

  explicit RecordText(ChunkedWriter& w) : w_(w) {}
  ~RecordText() { Flush(); }
  RecordText(const RecordText&) = delete;
  RecordText& operator=(const RecordText&) = delete;

  [[gnu::always_inline]] RecordText& Lit(std::string_view s) {
    if (s.size() > Left()) {
      Flush();
      if (s.size() > kRoom) {
        w_.Append(s);
        return *this;
      }
    }
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
    return *this;
  }
  [[gnu::always_inline]] RecordText& Char(char c) {
    if (Left() < 1) Flush();
    *p_++ = c;
    return *this;
  }
  template <typename Integer>
  [[gnu::always_inline]] RecordText& Int(Integer v) {
    static_assert(std::is_integral_v<Integer> && !std::is_same_v<Integer, char> &&
                      !std::is_same_v<Integer, bool>,
                  "Int formats numbers");
    if (Left() < kMaxDecimalChars) Flush();
    p_ = WriteDecimal(p_, v);
    return *this;
  }
  // 16 lower-case hex digits, zero-padded.
  [[gnu::always_inline]] RecordText& Hex16(uint64_t v) {
    static constexpr char kDigits[] = "0123456789abcdef";
    if (Left() < 16) Flush();
    for (int i = 15; i >= 0; --i) {
      p_[i] = kDigits[v & 0xf];
      v >>= 4;
    }
    p_ += 16;
    return *this;
  }
  // `s` as a JSON string literal, escaped as ChunkedWriter::String does.
  RecordText& Str(std::string_view s) {
    bool plain = s.size() + 2 <= kRoom;
    for (char ch : s) {
      const auto c = static_cast<unsigned char>(ch);
      if (c < 0x20 || c == '"' || c == '\\') plain = false;
    }
    if (!plain) {
      Flush();
      w_.String(s);
      return *this;
    }
    if (s.size() + 2 > Left()) Flush();
    *p_++ = '"';
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
    *p_++ = '"';
    return *this;
  }
  // Hands what was built to the writer (the destructor does too).
  void Flush() {
    if (p_ != buf_) w_.Append(std::string_view(buf_, static_cast<size_t>(p_ - buf_)));
    p_ = buf_;
  }

 private:
  size_t Left() const { return kRoom - static_cast<size_t>(p_ - buf_); }

  ChunkedWriter& w_;
  char buf_[kRoom];
  char* p_ = buf_;
};

}  // namespace dfx::collectors::internal
