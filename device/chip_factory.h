// The chip seam's factory: which Chip implementation (device/chip.h) backs a
// host's chips, chosen by name from one table of the backends built into
// this binary. The rank agent and the L2 exec path ask it for chips and
// never name an implementation, so another backend (a real runtime's) is one
// more row here and nothing else changes above device/.
//
// The table is fixed at build time; every function is thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"
#include "device/chip.h"

namespace dfx::device {

struct ChipBackend {
  const char* name;         // as a command line or a test names it: "emulator"
  const char* description;  // one line for --help
  std::unique_ptr<Chip> (*make)(const ChipOptions& options);
};

// The backend a chip gets when none is named.
inline constexpr const char* kDefaultChipBackend = "emulator";

// Every backend of this binary, the default first.
std::span<const ChipBackend> ChipBackends();

// A chip of the backend called `name`; an InvalidArgument naming the known
// backends for any other name, or an Internal error when the backend could
// not make one.
Result<std::unique_ptr<Chip>> MakeChip(std::string_view name, const ChipOptions& options);

// How an owner of chips (the rank agent) makes each of them: a backend
// chosen once, or a test's own Chip.
using ChipMaker = std::function<Result<std::unique_ptr<Chip>>(const ChipOptions& options)>;
// The maker of backend `name` (checked when it is called).
ChipMaker ChipMakerFor(std::string name = kDefaultChipBackend);

}  // namespace dfx::device
