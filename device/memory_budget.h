// The memory a program needs, computed at load from its declarations and
// checked before anything is allocated (docs/design.md §11.14: budget
// before you allocate): the device memory of a dispatch (every base
// tensor's buffer and the four ring heaps) against the chip model's
// capacity, and the host memory the emulator spends on it (the device
// memory, which the emulator holds in host memory, plus the args-dump arena
// when args dump is on) against the host's available memory
// (/proc/meminfo MemAvailable). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "config/run_config.h"
#include "device/program.h"

namespace dfx::device {

struct MemoryNeed {
  uint64_t tensor_bytes = 0;  // base tensors (views share their parent's buffer)
  uint64_t heap_bytes = 0;    // the four rings' heaps
  uint64_t dump_arena_bytes = 0;
  uint64_t device_bytes() const { return tensor_bytes + heap_bytes; }
  uint64_t host_bytes() const { return device_bytes() + dump_arena_bytes; }
  // The largest base tensors, largest first (at most three): "name
  // [16384,16384] FLOAT32 1.0 GiB".
  std::vector<std::string> largest;
};

// What `program` needs under `config`; `dump_arena_bytes` is the chip's
// (0 = the collector's default), counted only when args dump is on.
MemoryNeed ProgramMemory(const Program& program, const config::RunConfig& config,
                         uint64_t dump_arena_bytes);

// MemAvailable of /proc/meminfo in bytes; nullopt when it cannot be read.
std::optional<uint64_t> HostMemoryAvailable();

// Refuses a program whose device memory exceeds the chip model's capacity,
// or (when `host_available` is given) whose host memory exceeds it; the
// error names the program, the total, the limit and the largest tensors.
Status CheckMemoryBudget(const Program& program, const config::RunConfig& config,
                         uint64_t dump_arena_bytes, std::optional<uint64_t> host_available);

// HostMemoryAvailable() when `program` needs at least kHostCheckBytes of
// host memory, else nullopt: a dispatch of a small program does not read
// /proc/meminfo.
inline constexpr uint64_t kHostCheckBytes = 1ull << 30;
std::optional<uint64_t> HostMemoryToCheck(const Program& program, const config::RunConfig& config,
                                          uint64_t dump_arena_bytes);

// "1.5 GiB", "12.0 MiB", "512 bytes".
std::string ByteSize(uint64_t bytes);

}  // namespace dfx::device
