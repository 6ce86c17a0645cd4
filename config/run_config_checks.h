// The checks and spellings the two run-configuration parsers share, the
// command line's (run_config_flags.cc) and the JSON one (run_config.cc), so
// that a value refused on one surface is refused on the other with the same
// words. Internal to config/.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "config/run_config.h"

namespace dfx::config::internal {

// A deprecated --platform / "platform" name and the pair it stands for.
struct PlatformPair {
  const char* platform;
  BackendType backend;
  ExecutionMode mode;
};
std::optional<PlatformPair> LookupPlatform(std::string_view name);
std::optional<BackendType> ParseBackend(std::string_view s);
std::optional<ExecutionMode> ParseMode(std::string_view s);
// The warning for a deprecated platform `spelling` (a flag or a JSON key).
std::string PlatformDeprecation(const std::string& spelling, const PlatformPair& p);

// Checks the four entries of ring field `name` (a RunConfig field name,
// e.g. "ring_heap"; 0 = keep the default).
Status CheckRing(std::string_view name, const std::array<uint64_t, 4>& values);
// The RingSizing member named `name`.
std::array<uint64_t, 4>& RingField(RingSizing& r, std::string_view name);
// The error for a ring given as the single value 0.
Status ScalarZeroError(const std::string& name);

}  // namespace dfx::config::internal
