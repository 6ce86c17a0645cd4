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

// The input a viewer uses when none is given: the newest `name` (a file or,
// for args_dump, a directory) among the reference's ./outputs/*/ (**/ when
// `recursive`), ./dfx_outputs/ and its rank<N>/d<K>/, and the current
// directory and its rank<N>/d<K>/ — so a viewer works from the work dir and
// from inside dfx_outputs/ or one dispatch directory.
std::optional<std::filesystem::path> FindDefaultInput(const std::string& name, bool recursive);
// Where FindDefaultInput looked, for the error when it found nothing.
std::string DefaultInputPlaces(const std::string& name);

}  // namespace dfx::view
