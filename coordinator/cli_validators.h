// The value checks of dfx-coordinator's flags, as CLI11 validators: each
// names what it expected when a value is refused.
#pragma once

#include <CLI/CLI.hpp>

#include "common/timeouts.h"

namespace dfx::coordinator {

// The longest deadline a seconds flag takes (agents take the same).
inline constexpr double kMaxFlagSeconds = dfx::kMaxTimeoutSeconds;

// A positive number of seconds, at most kMaxFlagSeconds.
const CLI::Validator& PositiveSeconds();
// A log level an agent also takes (trace ... off).
const CLI::Validator& LogLevel();
// The declared size an artifact may have: 1 byte to 1T, suffixes K, M, G, T.
const CLI::Validator& ByteCount();
// A byte budget (--max-run-bytes): bytes, suffixes K, M, G, T, P; 0 = none.
const CLI::Validator& RunByteBudget();

}  // namespace dfx::coordinator
