// Enum <-> text from one table: the names an enum has in files, on the wire
// and on command lines are written once, as rows of an EnumTable, and both
// directions (and the list of choices an error message offers) read them.
//
//   inline constexpr auto kRunStateText = MakeEnumTable<RunState>({
//       {RunState::kStarting, "starting"}, {RunState::kRunning, "running"}});
//   kRunStateText.Name(RunState::kRunning)    // "running"
//   kRunStateText.Parse("running")            // RunState::kRunning
//   kRunStateText.Choices()                   // "starting | running"
//
// A value without a row (a bug, or a number cast from outside) names itself
// with the table's fallback text ("?" unless given). Tables are constexpr
// values; every function is thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace dfx {

template <typename E>
struct EnumRow {
  E value;
  const char* text;
};

template <typename E, size_t N>
class EnumTable {
 public:
  constexpr EnumTable(const std::array<EnumRow<E>, N>& rows, const char* fallback)
      : rows_(rows), fallback_(fallback) {}

  // The text of `value`; the fallback when it has no row.
  constexpr const char* Name(E value) const {
    for (const EnumRow<E>& row : rows_) {
      if (row.value == value) return row.text;
    }
    return fallback_;
  }
  // The value named exactly `text`; nullopt for any other text.
  constexpr std::optional<E> Parse(std::string_view text) const {
    for (const EnumRow<E>& row : rows_) {
      if (text == row.text) return row.value;
    }
    return std::nullopt;
  }
  // Every text in table order, joined by `separator` (for error messages
  // and --help: "a2a3 | a5").
  std::string Choices(std::string_view separator = " | ") const {
    std::string out;
    for (const EnumRow<E>& row : rows_) {
      if (!out.empty()) out += separator;
      out += row.text;
    }
    return out;
  }
  constexpr const std::array<EnumRow<E>, N>& rows() const { return rows_; }

 private:
  std::array<EnumRow<E>, N> rows_;
  const char* fallback_;
};

// The table of `rows` (value, text), in the order Choices() lists them.
template <typename E, size_t N>
constexpr EnumTable<E, N> MakeEnumTable(const EnumRow<E> (&rows)[N], const char* fallback = "?") {
  std::array<EnumRow<E>, N> copy{};
  for (size_t i = 0; i < N; ++i) copy[i] = rows[i];
  return EnumTable<E, N>(copy, fallback);
}

}  // namespace dfx
