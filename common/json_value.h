// Reading one field of a JSON document from outside without trusting its
// type: `get<T>()` of a float out of T's range is undefined behaviour and
// `value(key, default)` throws when the field has another type. These
// return the field only when it is what was asked for, else a fallback.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "common/integer_cast.h"
#include "common/json.h"

namespace dfx {

// The integer `j` holds, as T, when T can represent it: an integer, or a
// number with a fraction (truncated), in T's range. nullopt for anything
// else (out of range, not a number, a bool): `get<T>()` of such a value
// would be undefined (a float out of range) or throw (a string).
template <typename T>
std::optional<T> JsonInteger(const Json& j) {
  using Limits = std::numeric_limits<T>;
  if (j.is_number_unsigned()) {
    const uint64_t v = j.get<uint64_t>();
    if (v > static_cast<uint64_t>(Limits::max())) return std::nullopt;
    return static_cast<T>(v);
  }
  if (j.is_number_integer()) {
    const int64_t v = j.get<int64_t>();
    if (v < 0 ? (!Limits::is_signed || v < static_cast<int64_t>(Limits::min()))
              : static_cast<uint64_t>(v) > static_cast<uint64_t>(Limits::max())) {
      return std::nullopt;
    }
    return static_cast<T>(v);
  }
  if (j.is_number_float()) return TruncatedInteger<T>(j.get<double>());
  return std::nullopt;
}

// `object[key]` as JsonInteger<T>; `fallback` when `object` is not an
// object, has no `key`, or holds no such integer there.
template <typename T>
T JsonIntegerOr(const Json& object, const char* key, T fallback) {
  if (!object.is_object()) return fallback;
  const auto it = object.find(key);
  if (it == object.end()) return fallback;
  return JsonInteger<T>(*it).value_or(fallback);
}

// `object[key]` when it is a string; `fallback` otherwise (`value()` would
// throw for another type).
inline std::string JsonStringOr(const Json& object, const char* key, std::string fallback) {
  if (!object.is_object()) return fallback;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return fallback;
  return it->get<std::string>();
}

}  // namespace dfx
