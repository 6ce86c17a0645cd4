// Hash once, at write: a spooled artifact's checksum is computed when its
// dispatch ends and kept beside it, at <dispatch dir>/.xxh64/<rel> ("xxh64:"
// and 16 hex digits, then a newline; written atomically; hidden, so no
// listing of artifacts sees it). Streams send it without hashing again, and
// the coordinator, which hashes what it receives, thereby also catches a
// spool copy that changed at rest (e.g. before a recovery gather).
//
// Threads: any (each call touches only the files it names).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace dfx::rank_agent {

// The folder, in each dispatch dir, where the checksums are kept.
inline constexpr std::string_view kSumDir = ".xxh64";

// Where the checksum of <dispatch_dir>/<rel> is kept.
std::filesystem::path SumPath(const std::filesystem::path& dispatch_dir, const std::string& rel);

// Whether `rel` (relative to a dispatch dir) is a kept checksum, not an artifact.
bool IsSumFile(const std::string& rel);

// Hashes <dispatch_dir>/<rel> and keeps its checksum at SumPath.
Status WriteSum(const std::filesystem::path& dispatch_dir, const std::string& rel);

// The kept checksum, or nothing (none kept, or not readable as one).
std::optional<uint64_t> ReadSum(const std::filesystem::path& dispatch_dir, const std::string& rel);

}  // namespace dfx::rank_agent
