// Default-input discovery shared by the viewers: the newest (by mtime) match
// under ./outputs, the way the reference tools pick one when no path is given.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace dfx::view {

// Newest `<root>/*/<name>` (recursive=false) or `<root>/**/<name>` (recursive=true).
std::optional<std::filesystem::path> NewestUnder(const std::filesystem::path& root,
                                                 const std::string& name, bool recursive);

}  // namespace dfx::view
