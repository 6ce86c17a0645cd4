#include "device/memory_budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "collectors/recorders.h"
#include "device/chip_model.h"
#include "device/dtype.h"
#include "device/program_parser.h"

namespace dfx::device {

std::string ByteSize(uint64_t b) {
  const double d = static_cast<double>(b);
  if (b >= (1ull << 30)) return fmt::format("{:.1f} GiB", d / double(1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.1f} MiB", d / double(1ull << 20));
  if (b >= (1ull << 10)) return fmt::format("{:.1f} KiB", d / double(1ull << 10));
  return fmt::format("{} bytes", b);
}

MemoryNeed ProgramMemory(const Program& program, const config::RunConfig& config,
                         uint64_t dump_arena_bytes) {
  MemoryNeed need;
  std::vector<std::pair<uint64_t, size_t>> sizes;  // bytes, tensor index
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const TensorDecl& t = program.tensors[i];
    if (t.view_of >= 0) continue;
    // Each tensor is capped at 2^28 elements by the loader: no overflow.
    const uint64_t bytes = t.Numel() * DTypeSize(t.dtype);
    need.tensor_bytes += bytes;
    sizes.emplace_back(bytes, i);
  }
  const size_t shown = std::min<size_t>(3, sizes.size());
  std::partial_sort(sizes.begin(), sizes.begin() + static_cast<ptrdiff_t>(shown), sizes.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < shown; ++i) {
    const TensorDecl& t = program.tensors[sizes[i].second];
    need.largest.push_back(fmt::format("{} {} {} {}", t.name, parsing::ShapeString(t.shape),
                                       DTypeName(t.dtype), ByteSize(sizes[i].first)));
  }
  const RingCapacities rings = ResolveRings(GetChipModel(config.backend_type), config.rings);
  for (uint64_t h : rings.heap) need.heap_bytes += h;
  if (config.enable_dump_args > 0) {
    need.dump_arena_bytes =
        dump_arena_bytes > 0 ? dump_arena_bytes : collectors::ArgsDumpOptions{}.arena_bytes;
  }
  return need;
}

std::optional<uint64_t> HostMemoryAvailable() {
  std::FILE* f = std::fopen("/proc/meminfo", "re");
  if (f == nullptr) return std::nullopt;
  char line[256];
  std::optional<uint64_t> out;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long long kib = 0;
    if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
      out = static_cast<uint64_t>(kib) * 1024;
      break;
    }
  }
  std::fclose(f);
  return out;
}

std::optional<uint64_t> HostMemoryToCheck(const Program& program, const config::RunConfig& config,
                                          uint64_t dump_arena_bytes) {
  if (ProgramMemory(program, config, dump_arena_bytes).host_bytes() < kHostCheckBytes) {
    return std::nullopt;
  }
  return HostMemoryAvailable();
}

namespace {

std::string Parts(const MemoryNeed& need, bool host) {
  std::string parts = fmt::format("tensors {}, ring heaps {}", ByteSize(need.tensor_bytes),
                                  ByteSize(need.heap_bytes));
  if (host && need.dump_arena_bytes > 0) {
    parts += fmt::format(", args-dump arena {}", ByteSize(need.dump_arena_bytes));
  }
  std::string largest;
  for (const std::string& t : need.largest) largest += (largest.empty() ? "" : ", ") + t;
  return parts + "; largest tensors: " + largest;
}

}  // namespace

Status CheckMemoryBudget(const Program& program, const config::RunConfig& config,
                         uint64_t dump_arena_bytes, std::optional<uint64_t> host_available) {
  const MemoryNeed need = ProgramMemory(program, config, dump_arena_bytes);
  const ChipModel& model = GetChipModel(config.backend_type);
  if (need.device_bytes() > model.device_memory_bytes) {
    return FailedPrecondition(fmt::format(
        "{}: needs {} of device memory ({}), more than the {} chip model's {}; make the "
        "tensors smaller or fewer",
        program.origin, ByteSize(need.device_bytes()), Parts(need, false), model.name,
        ByteSize(model.device_memory_bytes)));
  }
  if (host_available && need.host_bytes() > *host_available) {
    return FailedPrecondition(fmt::format(
        "{}: needs {} of host memory ({}), more than this host's {} available (MemAvailable "
        "in /proc/meminfo; the emulator holds the device memory in host memory); make the "
        "tensors smaller or fewer, or run on a host with more free memory",
        program.origin, ByteSize(need.host_bytes()), Parts(need, true), ByteSize(*host_available)));
  }
  return Status::Ok();
}

}  // namespace dfx::device
