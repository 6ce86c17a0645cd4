// KeyText: a key of an artifact format (a JSON member name, a CSV column) as
// a compile-time constant, so each format spells its keys once, in its keys
// header (e.g. collectors/swimlane/swimlane_keys.h), and its writer, its
// readers and the viewers all use that spelling.
//
//   inline constexpr KeyText kTaskId = "task_id";
//   key == kTaskId                                 // a std::string or string_view
//   x.Lit(JoinedText<",\"", kTaskId, "\":">)       // ,"task_id": as one literal
//
// JoinedText glues keys and punctuation into one constant at compile time: a
// writer appends a member's whole prefix with one copy, and a byte-exact
// scanner compares it as one literal. Constants only; thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

namespace dfx::collectors {

template <size_t N>
struct KeyText {
  char chars[N] = {};  // the text and its terminating NUL

  constexpr KeyText() = default;
  constexpr KeyText(const char (&text)[N]) {  // NOLINT: implicit, from a literal by design
    for (size_t i = 0; i < N; ++i) chars[i] = text[i];
  }
  static constexpr size_t size() { return N - 1; }
  constexpr const char* c_str() const { return chars; }
  constexpr std::string_view view() const { return {chars, N - 1}; }
  constexpr operator std::string_view() const { return view(); }  // NOLINT: implicit by design
  friend constexpr bool operator==(std::string_view text, const KeyText& key) {
    return text == key.view();
  }
};

namespace internal {
template <KeyText... Parts>
constexpr auto Join() {
  KeyText<(Parts.size() + ... + 0) + 1> out;
  size_t at = 0;
  const auto append = [&out, &at](std::string_view part) {
    for (char c : part) out.chars[at++] = c;
  };
  (append(Parts.view()), ...);
  return out;
}
template <KeyText... Parts>
inline constexpr auto kJoined = Join<Parts...>();
}  // namespace internal

// The parts (keys and literals) as one constant text.
template <KeyText... Parts>
inline constexpr std::string_view JoinedText = internal::kJoined<Parts...>.view();
// The same as a KeyText (for a caller that takes a char array).
template <KeyText... Parts>
inline constexpr const auto& JoinedKey = internal::kJoined<Parts...>;

}  // namespace dfx::collectors
