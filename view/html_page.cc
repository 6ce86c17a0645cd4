#include "view/html_page.h"

namespace dfx::view {

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string ReplaceAll(std::string text, std::string_view marker, std::string_view with) {
  for (size_t at = text.find(marker); at != std::string::npos;
       at = text.find(marker, at + with.size())) {
    text.replace(at, marker.size(), with);
  }
  return text;
}

}  // namespace dfx::view
