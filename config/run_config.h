// RunConfig: the one value type that says how a run is configured. It is the
// source of truth mirrored 1:1 on the wire (protocol/dfx.capnp RunConfigWire),
// in JSON and on every CLI (docs/design.md §4, docs/run-config.md §2.1–2.3
// and §3). This module (config/) depends on common/ only, so every other
// module can name a RunConfig without linking the collectors.
//
// Plain value type; copy freely. Construct through the parsers below, which
// validate and normalise (true -> 4, bare flags, legacy spellings) and report
// deprecation warnings as strings for the caller to print.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"

namespace dfx::config {

enum class BackendType { kA2A3, kA5 };
enum class ExecutionMode { kSim, kOnboard };

const char* BackendTypeName(BackendType b);      // "a2a3" | "a5"
const char* ExecutionModeName(ExecutionMode m);  // "sim" | "onboard"
// Legacy platform spelling of the pair: a2a3sim, a2a3, a5sim, a5.
std::string PlatformName(BackendType b, ExecutionMode m);

// Per-ring sizing overrides; an entry of 0 means "keep the chip model default".
struct RingSizing {
  std::array<uint64_t, 4> task_window{};  // power of 2 in [4, INT32_MAX]
  std::array<uint64_t, 4> heap{};         // bytes, power of 2, >= 1024
  std::array<uint64_t, 4> dep_pool{};     // in [4, INT32_MAX]
  bool operator==(const RingSizing&) const = default;
};

struct RunConfig {
  BackendType backend_type = BackendType::kA2A3;
  ExecutionMode execution_mode = ExecutionMode::kSim;

  // The five DFX collectors.
  int enable_chip_swimlane = 0;  // 0..4
  bool enable_dep_gen = false;
  int enable_dump_args = 0;  // 0 off, 1 partial, 2 full, 3 hybrid
  int enable_pmu = 0;        // 0 off, else event type 1,2,4,5,6,7,8
  bool enable_scope_stats = false;

  bool save_kernels = false;  // forced true whenever any DFX flag is on
  int aicpu_thread_num = 0;   // 0 = chip model default
  RingSizing rings;

  bool AnyDfx() const {
    return enable_chip_swimlane > 0 || enable_dep_gen || enable_dump_args > 0 || enable_pmu > 0 ||
           enable_scope_stats;
  }
  // Checks every field; messages name the field, the bad value and the allowed
  // range. Does not modify the config.
  Status Validate() const;
  // Applies the forcing rules (save_kernels) in place.
  void Normalize() {
    if (AnyDfx()) save_kernels = true;
  }
  bool operator==(const RunConfig&) const = default;
};

bool IsValidPmuEventType(int event_type);  // 1, 2, 4, 5, 6, 7, 8

// Result of parsing: the config plus deprecation warnings to print
// (e.g. "--platform a2a3sim is deprecated; use --backend-type a2a3 --execution-mode sim").
struct ParsedRunConfig {
  RunConfig config;
  std::vector<std::string> warnings;
};

// Parses the DFX / run-config flags out of `args` (argv without the program
// name), removing every flag it recognises and leaving the rest in order for
// the caller. Flags (exactly as docs/design.md §4): --enable-chip-swimlane (= 4),
// --chip-swimlane-level N, --enable-l2-swimlane (deprecated), --enable-dep-gen,
// --dump-args [LEVEL] (bare = 1), --enable-pmu [N] (bare = 2),
// --enable-scope-stats, --backend-type, --execution-mode, --platform
// (deprecated), --aicpu-thread-num, --ring-task-window, --ring-heap,
// --ring-dep-pool (N or N,N,N,N), --save-kernels. Where the artifacts land
// (--work-dir) is not part of the RunConfig: each binary owns that flag.
// Errors name the flag, the bad value and what would be right.
Result<ParsedRunConfig> ParseRunConfigFlags(std::vector<std::string>& args);

// JSON form (the wire/plan form). Accepts the legacy `platform` and
// `enable_l2_swimlane` keys with warnings; `true` for the swimlane means 4.
// `origin` names the file in errors; `json_path` the object's location.
Result<ParsedRunConfig> RunConfigFromJson(const Json& j, const std::string& origin,
                                          const std::string& json_path = "$");
Json RunConfigToJson(const RunConfig& config);

// The DFX / run-config flags that reproduce `config` on a command line: the
// inverse of ParseRunConfigFlags (parsing the result gives `config` back).
std::vector<std::string> RunConfigToFlags(const RunConfig& config);

// The values each flag accepts, for --help texts.
extern const char* const kSwimlaneLevels;  // "a collection level in [0, 4] ..."
extern const char* const kPmuEventTypes;   // "0 (off) or a PMU event type: ..."
extern const char* const kDumpArgsLevels;  // "0 (off), 1 (partial), ..."

// One line per run-config flag ("  --enable-dep-gen   ..."), for the --help
// of every binary that takes them.
const char* RunConfigFlagsHelp();

}  // namespace dfx::config
