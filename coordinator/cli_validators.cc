// The value checks of dfx-coordinator's flags (CLI11 validators).
#include "coordinator/cli_validators.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include "protocol/agent_command_line.h"
#include "protocol/messages.h"

namespace dfx::coordinator {

// Seconds flags are forwarded to agents: the same range as their command line.
const CLI::Validator& PositiveSeconds() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double d = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !(d > 0) || d > kMaxFlagSeconds) {
          return fmt::format("{}: expected a positive number of seconds (at most {:g})", text,
                             kMaxFlagSeconds);
        }
        return "";
      },
      "SECONDS");
  return v;
}

const CLI::Validator& LogLevel() {
  static const CLI::Validator v =
      CLI::IsMember(std::vector<std::string>(std::begin(dfx::protocol::kAgentLogLevels),
                                             std::end(dfx::protocol::kAgentLogLevels)))
          .name("LEVEL");
  return v;
}

// The declared size an artifact may have (bytes; suffixes K, M, G, T of 1024).
const CLI::Validator& ByteCount() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const unsigned long long n = std::strtoull(text.c_str(), &end, 10);
        uint64_t scale = 1;
        std::string suffix = end;
        if (suffix == "K" || suffix == "KiB") scale = 1ull << 10;
        if (suffix == "M" || suffix == "MiB") scale = 1ull << 20;
        if (suffix == "G" || suffix == "GiB") scale = 1ull << 30;
        if (suffix == "T" || suffix == "TiB") scale = 1ull << 40;
        if (end == text.c_str() || errno == ERANGE || (scale == 1 && !suffix.empty()) || n == 0 ||
            n > dfx::protocol::kMaxArtifactBytes / scale) {
          return fmt::format("{}: expected a byte count from 1 to 1T, e.g. 8G or 500M", text);
        }
        text = std::to_string(n * scale);
        return "";
      },
      "BYTES");
  return v;
}

// A byte budget (--max-run-bytes): bytes, suffixes K, M, G, T, P of 1024; 0 = none.
const CLI::Validator& RunByteBudget() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const unsigned long long n = std::strtoull(text.c_str(), &end, 10);
        const std::string suffix = end;
        int shift = -1;
        const char* const kSuffixes[] = {"", "K", "M", "G", "T", "P"};
        for (int i = 0; i < 6; ++i) {
          if (suffix == kSuffixes[i] || (i > 0 && suffix == std::string(kSuffixes[i]) + "iB"))
            shift = 10 * i;
        }
        if (end == text.c_str() || text[0] == '-' || errno == ERANGE || shift < 0 ||
            n > (~0ull >> shift)) {
          return fmt::format("{}: expected a byte count, e.g. 500M, 20G or 2T (0: no budget)",
                             text);
        }
        text = std::to_string(n << shift);
        return "";
      },
      "BYTES");
  return v;
}

}  // namespace dfx::coordinator
