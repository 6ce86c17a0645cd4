// Per-record text for the recorders' writers: format strings compiled at
// build time (FMT_COMPILE) appended straight into a ChunkedWriter's pending
// chunk. ChunkedWriter::Format parses its format string at run time for
// every record, which is most of an export's CPU when every record goes
// through it (dep_gen's above all); the compiled form writes the same bytes
// without parsing. The view's typed trace events (view/json_trace_encoder.h)
// do the same for the converter's events.
#pragma once

#include <fmt/compile.h>
#include <fmt/format.h>

#include <iterator>

#include "collectors/key_text.h"
#include "common/json_stream.h"

namespace dfx::collectors::internal {

// Appends `args` formatted by `format` (which must be FMT_COMPILE("...")) to
// `w`, e.g. Put(w, FMT_COMPILE(",{}"), v).
template <typename CompiledFormat, typename... Args>
void Put(ChunkedWriter& w, const CompiledFormat& format, const Args&... args) {
  static_assert(fmt::detail::is_compiled_string<CompiledFormat>::value,
                "Put takes FMT_COMPILE(\"...\")");
  fmt::format_to(std::back_inserter(w.buffer()), format, args...);
  w.MaybeFlush();
}

// FMT_COMPILE of a format string glued from a format's keys and literals
// at compile time (key_text.h), for Put:
//   Put(w, KeyFormat<"{{\"", keys::kSite, "\": {}}}">{}, site);
// The literals are fmt text: a brace is written "{{" or "}}".
template <KeyText... Parts>
struct KeyFormat : fmt::detail::compiled_string {
  using char_type = char;
  constexpr explicit operator fmt::basic_string_view<char>() const {
    return {JoinedKey<Parts...>.chars, JoinedKey<Parts...>.size()};
  }
};

}  // namespace dfx::collectors::internal
