// Default-input discovery shared by the viewers: the newest (by mtime) match
// under ./outputs, the way the reference tools pick one when no path is given.
// Pure functions over the filesystem; thread-safe.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace dfx::view {

// Where the reference test harness leaves its runs (one folder per case).
inline constexpr const char* kDefaultOutputsRoot = "outputs";

// Newest `<root>/*/<name>` (recursive=false) or `<root>/**/<name>` (recursive=true).
std::optional<std::filesystem::path> NewestUnder(const std::filesystem::path& root,
                                                 const std::string& name, bool recursive);

}  // namespace dfx::view
