// Reading what a user names as input (a program, a plan, a key, a run
// manifest) under one rule (docs/design.md §11.13): a regular file of
// bounded size, or a pipe this process was handed, read once. Thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "common/status.h"

namespace dfx {

// The largest program or plan file any level reads: the most a Dispatch
// frame carries (protocol::kMaxProgramJsonBytes equals it), so what L2 runs,
// L3 runs too.
inline constexpr uint64_t kMaxProgramFileBytes = 32ull << 20;

// Reads `path` once, bounded: a regular file of at most `max_bytes`, or a
// pipe already open in this process (a process substitution, `run <(cat
// program.json)`: /dev/fd/N), read to its end under the same limit.
// Anything else is refused at once by what it is, naming the path: a
// directory, a named FIFO (opening one never waits for a writer), a
// character or block device (/dev/zero), a socket. Size errors name the
// limit; a missing file is NotFound. Links are followed (/dev/fd/N is one).
Result<std::string> ReadInputFile(const std::filesystem::path& path, uint64_t max_bytes);

}  // namespace dfx
