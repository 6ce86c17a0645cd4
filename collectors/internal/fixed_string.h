// The recorders keep names in fixed, NUL-terminated char arrays so recording
// never allocates; the writers read them back through FixedString.
#pragma once

#include <cstddef>
#include <string_view>

namespace dfx::collectors::internal {

// A NUL-terminated fixed char array as a string_view (no terminator -> whole array).
template <size_t N>
std::string_view FixedString(const char (&s)[N]) {
  size_t n = 0;
  while (n < N && s[n] != '\0') ++n;
  return std::string_view(s, n);
}

}  // namespace dfx::collectors::internal
