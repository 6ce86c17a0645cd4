// JSON tokenizing for the program text reader (ParseProgramFast,
// device/program_fast_path.cc): a cursor that reads the plain forms of JSON
// text only and says false on anything else. Header-only so the reader's
// per-character loops inline. Thread-safe (no shared state).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace dfx::device::parsing {

inline bool IsJsonSpace(char ch) { return ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t'; }

// A cursor over JSON text that reads the plain forms only (the text reader
// of the orchestration, ParseProgramFast): strings of printable ASCII
// without escapes, non-negative integers without a fraction or exponent.
// Each read skips white space first and is false when the text holds
// anything else there.
class TextCursor {
 public:
  TextCursor(std::string_view text, size_t at) : t_(text), i_(at) {}
  size_t pos() const { return i_; }
  void Ws() {
    while (i_ < t_.size() && IsJsonSpace(t_[i_])) ++i_;
  }
  bool Eat(char ch) {
    Ws();
    if (i_ >= t_.size() || t_[i_] != ch) return false;
    ++i_;
    return true;
  }
  bool Str(std::string_view* out) {
    if (!Eat('"')) return false;
    const size_t begin = i_;
    for (; i_ < t_.size(); ++i_) {
      const auto ch = static_cast<unsigned char>(t_[i_]);
      if (ch == '"') {
        *out = t_.substr(begin, i_ - begin);
        ++i_;
        return true;
      }
      if (ch < 0x20 || ch >= 0x7f || ch == '\\') return false;
    }
    return false;
  }
  // At most 9 digits.
  bool Int(int64_t* out) {
    Ws();
    const size_t begin = i_;
    int64_t v = 0;
    while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9' && i_ - begin < 10) {
      v = v * 10 + (t_[i_] - '0');
      ++i_;
    }
    const size_t n = i_ - begin;
    if (n == 0 || n > 9 || (n > 1 && t_[begin] == '0')) return false;
    if (i_ < t_.size() && (t_[i_] == '.' || t_[i_] == 'e' || t_[i_] == 'E')) return false;
    *out = v;
    return true;
  }
  bool Bool(bool* out) {
    Ws();
    for (bool v : {true, false}) {
      const std::string_view word = v ? "true" : "false";
      if (t_.substr(i_, word.size()) == word) {
        i_ += word.size();
        *out = v;
        return true;
      }
    }
    return false;
  }
  bool StrArray(std::vector<std::string_view>* out) {
    if (!Eat('[')) return false;
    if (Eat(']')) return true;
    do {
      std::string_view v;
      if (!Str(&v)) return false;
      out->push_back(v);
    } while (Eat(','));
    return Eat(']');
  }
  // Moves past any one JSON value: a string with its escapes, an array or
  // object by its brackets, anything else up to the next delimiter. False
  // where no value can end. Syntax is not checked: the caller's reader does.
  bool Skip() {
    Ws();
    size_t i = i_;
    int depth = 0;
    do {
      if (i >= t_.size()) return false;
      const char ch = t_[i];
      if (ch == '"') {
        for (++i; i < t_.size() && t_[i] != '"'; ++i) {
          if (t_[i] == '\\') ++i;
        }
        if (i >= t_.size()) return false;
        ++i;
      } else if (ch == '[' || ch == '{') {
        if (++depth > kMaxJsonDepth) return false;
        ++i;
      } else if (ch == ']' || ch == '}') {
        if (depth == 0) return false;
        --depth;
        ++i;
      } else if (depth == 0) {
        const size_t begin = i;
        while (i < t_.size() && !IsJsonSpace(t_[i]) && t_[i] != ',' && t_[i] != '}' && t_[i] != ']')
          ++i;
        if (i == begin) return false;
      } else {
        ++i;
      }
    } while (depth > 0);
    i_ = i;
    return true;
  }

 private:
  std::string_view t_;
  size_t i_;
};

}  // namespace dfx::device::parsing
