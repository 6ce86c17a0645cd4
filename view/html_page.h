// Text helpers of the self-contained HTML pages dfx-view writes (the deps
// viewer, deps_html.h, and the run report, run_report.h): escaping text for
// HTML and filling a page template's markers. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace dfx::view {

// `s` with &, <, > and " escaped, safe in HTML text and in a quoted attribute.
std::string HtmlEscape(std::string_view s);

// `text` with every `marker` replaced by `with`; what is inserted is not
// searched again.
std::string ReplaceAll(std::string text, std::string_view marker, std::string_view with);

}  // namespace dfx::view
