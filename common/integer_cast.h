// A double as an integer type without undefined behaviour: a plain
// static_cast of a double outside the target's range (or of NaN) is
// undefined, and numbers from outside (JSON fields, records rows, program
// scalars) can be anything.
#pragma once

#include <limits>
#include <optional>

namespace dfx {

// The integer `d` truncates to, when T can hold it; nullopt when it is out
// of T's range or NaN.
template <typename T>
constexpr std::optional<T> TruncatedInteger(double d) {
  using Limits = std::numeric_limits<T>;
  // max() + 1 as a double is exact for every T (a power of two).
  const double upper = static_cast<double>(Limits::max() / 2 + 1) * 2.0;
  if (!(d >= static_cast<double>(Limits::min()) && d < upper)) return std::nullopt;
  return static_cast<T>(d);
}

// The same, clamped: below T's range gives its min, above its max, NaN 0.
template <typename T>
constexpr T SaturatedInteger(double d) {
  if (const std::optional<T> v = TruncatedInteger<T>(d)) return *v;
  if (d != d) return 0;
  return d < 0 ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max();
}

}  // namespace dfx
