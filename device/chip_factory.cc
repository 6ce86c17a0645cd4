#include "device/chip_factory.h"

#include <fmt/format.h>

#include <array>

#include "device/emulator.h"

namespace dfx::device {
namespace {

constexpr std::array<ChipBackend, 1> kBackends = {{
    {"emulator", "the chip emulator: programs run for real on host threads (or on a virtual clock)",
     &MakeEmulatedChip},
}};

}  // namespace

std::span<const ChipBackend> ChipBackends() { return kBackends; }

Result<std::unique_ptr<Chip>> MakeChip(std::string_view name, const ChipOptions& options) {
  for (const ChipBackend& backend : kBackends) {
    if (name != backend.name) continue;
    std::unique_ptr<Chip> chip = backend.make(options);
    if (chip == nullptr) {
      return Internal(fmt::format("the {} chip backend could not make a chip", backend.name));
    }
    return chip;
  }
  std::string known;
  for (const ChipBackend& backend : kBackends) {
    known += known.empty() ? "" : ", ";
    known += backend.name;
  }
  return InvalidArgument(
      fmt::format("chip backend \"{}\": expected one of this build's backends ({})", name, known));
}

ChipMaker ChipMakerFor(std::string name) {
  return [name = std::move(name)](const ChipOptions& options) { return MakeChip(name, options); };
}

}  // namespace dfx::device
