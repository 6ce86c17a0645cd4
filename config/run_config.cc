// RunConfig validation and its JSON codec (docs/run-config.md,
// docs/design.md §4). The command-line parser (run_config_flags.cc) shares
// the checks (run_config_checks.h), so a value refused on one surface is
// refused on the other with the same words.
#include "config/run_config.h"

#include "config/run_config_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "common/enum_text.h"

namespace dfx::config {

const char* const kSwimlaneLevels = "a collection level in [0, 4] (0–4; true = 4)";
const char* const kPmuEventTypes = "0 (off) or a PMU event type: 1, 2, 4, 5, 6, 7, 8";
const char* const kDumpArgsLevels = "0 (off), 1 (partial), 2 (full), 3 (hybrid); bare = 1";

namespace {

constexpr uint64_t kInt32Max = 2147483647ull;

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Checks one ring entry (0 = keep default). `name` is the RunConfig field name;
// `ring` is -1 when one value was given for all rings.
Status CheckRingEntry(std::string_view name, int ring, uint64_t v) {
  if (v == 0) return Status::Ok();
  std::string got = ", got " + std::to_string(v);
  if (ring >= 0) got += " (ring " + std::to_string(ring) + ")";
  if (name == "ring_task_window") {
    if (!IsPowerOfTwo(v) || v < 4 || v > kInt32Max) {
      return InvalidArgument("ring_task_window must be a power of 2 in [4, 2147483647]" + got);
    }
  } else if (name == "ring_heap") {
    if (!IsPowerOfTwo(v) || v < 1024) {
      return InvalidArgument("ring_heap must be a power of 2 >= 1024 (bytes per ring)" + got);
    }
  } else if (v < 4 || v > kInt32Max) {
    return InvalidArgument("ring_dep_pool must be in [4, 2147483647]" + got);
  }
  return Status::Ok();
}

const char* const kSwimlaneRange = kSwimlaneLevels;
const char* const kPmuTypes = kPmuEventTypes;

}  // namespace

namespace internal {

constexpr PlatformPair kPlatforms[] = {
    {"a2a3sim", BackendType::kA2A3, ExecutionMode::kSim},
    {"a2a3", BackendType::kA2A3, ExecutionMode::kOnboard},
    {"a5sim", BackendType::kA5, ExecutionMode::kSim},
    {"a5", BackendType::kA5, ExecutionMode::kOnboard},
};

std::optional<PlatformPair> LookupPlatform(std::string_view name) {
  for (const auto& p : kPlatforms) {
    if (name == p.platform) return p;
  }
  return std::nullopt;
}

constexpr auto kBackendTypeText = MakeEnumTable<BackendType>({
    {BackendType::kA2A3, "a2a3"},
    {BackendType::kA5, "a5"},
});

constexpr auto kExecutionModeText = MakeEnumTable<ExecutionMode>({
    {ExecutionMode::kSim, "sim"},
    {ExecutionMode::kOnboard, "onboard"},
});

std::optional<BackendType> ParseBackend(std::string_view s) { return kBackendTypeText.Parse(s); }

std::optional<ExecutionMode> ParseMode(std::string_view s) { return kExecutionModeText.Parse(s); }

std::string PlatformDeprecation(const std::string& spelling, const PlatformPair& p) {
  return spelling + " " + p.platform + " is deprecated; use --backend-type " +
         BackendTypeName(p.backend) + " --execution-mode " + ExecutionModeName(p.mode);
}

Status CheckRing(std::string_view name, const std::array<uint64_t, 4>& values) {
  const bool uniform = values[0] == values[1] && values[1] == values[2] && values[2] == values[3];
  for (int i = 0; i < 4; ++i) {
    DFX_RETURN_IF_ERROR(CheckRingEntry(name, uniform ? -1 : i, values[i]));
  }
  return Status::Ok();
}

std::array<uint64_t, 4>& RingField(RingSizing& r, std::string_view name) {
  if (name == "ring_task_window") return r.task_window;
  if (name == "ring_heap") return r.heap;
  return r.dep_pool;
}

// Message for a scalar 0 (a list entry of 0 is fine).
Status ScalarZeroError(const std::string& name) {
  return InvalidArgument(name +
                         " must not be 0 as a single value (0 is only allowed as a per-ring "
                         "list entry meaning 'keep the default'; omit the field instead)");
}

}  // namespace internal

using namespace internal;  // NOLINT: the checks shared with the flag parser

const char* BackendTypeName(BackendType b) { return kBackendTypeText.Name(b); }
const char* ExecutionModeName(ExecutionMode m) { return kExecutionModeText.Name(m); }
std::string PlatformName(BackendType b, ExecutionMode m) {
  return std::string(BackendTypeName(b)) + (m == ExecutionMode::kSim ? "sim" : "");
}

bool IsValidPmuEventType(int t) {
  return t == 1 || t == 2 || t == 4 || t == 5 || t == 6 || t == 7 || t == 8;
}

Status RunConfig::Validate() const {
  if (enable_chip_swimlane < 0 || enable_chip_swimlane > 4) {
    return InvalidArgument("enable_chip_swimlane must be " + std::string(kSwimlaneRange) +
                           ", got " + std::to_string(enable_chip_swimlane));
  }
  if (enable_dump_args < 0 || enable_dump_args > 3) {
    return InvalidArgument(
        "enable_dump_args must be in [0, 3] (0 off, 1 partial, 2 full, 3 hybrid), got " +
        std::to_string(enable_dump_args));
  }
  if (enable_pmu != 0 && !IsValidPmuEventType(enable_pmu)) {
    return InvalidArgument("enable_pmu must be " + std::string(kPmuTypes) + ", got " +
                           std::to_string(enable_pmu));
  }
  if (aicpu_thread_num < 0) {
    return InvalidArgument("aicpu_thread_num must be >= 0 (0 = chip model default), got " +
                           std::to_string(aicpu_thread_num));
  }
  DFX_RETURN_IF_ERROR(CheckRing("ring_task_window", rings.task_window));
  DFX_RETURN_IF_ERROR(CheckRing("ring_heap", rings.heap));
  DFX_RETURN_IF_ERROR(CheckRing("ring_dep_pool", rings.dep_pool));
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------

namespace {

struct JsonCtx {
  const std::string& origin;
  const std::string& base;
  std::string Path(const std::string& key) const { return base + "." + key; }
  Status Error(const std::string& key, const std::string& expected, const Json& got) const {
    return JsonError(origin, Path(key), expected, got);
  }
};

Result<int> JsonSwimlane(const JsonCtx& ctx, const std::string& key, const Json& v) {
  if (v.is_boolean()) return v.get<bool>() ? 4 : 0;
  if (!v.is_number_integer()) {
    return Status(Code::kInvalidArgument, ctx.origin + ": at " + ctx.Path(key) +
                                              ": type error: expected " + kSwimlaneRange +
                                              " as an integer or boolean, got " + DescribeJson(v));
  }
  int64_t level = v.get<int64_t>();
  if (level < 0 || level > 4) return ctx.Error(key, kSwimlaneRange, v);
  return static_cast<int>(level);
}

Result<bool> JsonBool(const JsonCtx& ctx, const std::string& key, const Json& v) {
  if (!v.is_boolean()) return ctx.Error(key, "a boolean", v);
  return v.get<bool>();
}

Status JsonRing(const JsonCtx& ctx, const std::string& key, const Json& v,
                std::array<uint64_t, 4>* out) {
  if (v.is_null()) return Status::Ok();
  auto entry = [&](const Json& e, const std::string& path_key) -> Result<uint64_t> {
    if (e.is_boolean() || !e.is_number_integer() || e.get<int64_t>() < 0) {
      return ctx.Error(path_key, "a non-negative integer size (booleans are not sizes)", e);
    }
    return e.get<uint64_t>();
  };
  std::array<uint64_t, 4> values{};
  if (v.is_array()) {
    if (v.size() != 4) {
      return ctx.Error(key, "a single size or a list of exactly 4 per-ring sizes", v);
    }
    for (size_t i = 0; i < 4; ++i) {
      DFX_ASSIGN_OR_RETURN(values[i], entry(v[i], key + "[" + std::to_string(i) + "]"));
    }
  } else {
    DFX_ASSIGN_OR_RETURN(uint64_t s, entry(v, key));
    if (s == 0) {
      return Status(Code::kInvalidArgument,
                    ctx.origin + ": at " + ctx.Path(key) + ": " + ScalarZeroError(key).message());
    }
    values.fill(s);
  }
  Status s = CheckRing(key, values);
  if (!s.ok()) {
    return Status(Code::kInvalidArgument,
                  ctx.origin + ": at " + ctx.Path(key) + ": " + s.message());
  }
  *out = values;
  return Status::Ok();
}

Json RingToJson(const std::array<uint64_t, 4>& r) {
  Json a = Json::array();
  for (uint64_t v : r) a.push_back(v);
  return a;
}

}  // namespace

Result<ParsedRunConfig> RunConfigFromJson(const Json& j, const std::string& origin,
                                          const std::string& json_path) {
  if (!j.is_object()) return JsonError(origin, json_path, "a RunConfig object", j);
  JsonCtx ctx{origin, json_path};
  ParsedRunConfig out;
  RunConfig& c = out.config;
  std::optional<BackendType> backend;
  std::optional<ExecutionMode> mode;
  std::optional<PlatformPair> platform;
  std::optional<int> chip_level;
  std::optional<int> l2_level;

  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const Json& v = it.value();
    if (key == "backend_type") {
      if (!v.is_string() || !(backend = ParseBackend(v.get<std::string>()))) {
        return ctx.Error(key, "\"a2a3\" or \"a5\"", v);
      }
    } else if (key == "execution_mode") {
      if (!v.is_string() || !(mode = ParseMode(v.get<std::string>()))) {
        return ctx.Error(key, "\"sim\" or \"onboard\"", v);
      }
    } else if (key == "platform") {
      if (!v.is_string() || !(platform = LookupPlatform(v.get<std::string>()))) {
        return ctx.Error(key, "one of \"a2a3sim\", \"a2a3\", \"a5sim\", \"a5\"", v);
      }
      out.warnings.push_back(origin + ": " + PlatformDeprecation("platform", *platform));
    } else if (key == "enable_chip_swimlane") {
      DFX_ASSIGN_OR_RETURN(chip_level, JsonSwimlane(ctx, key, v));
    } else if (key == "enable_l2_swimlane") {
      if (v.is_null()) continue;  // None is silently ignored, as in the reference
      DFX_ASSIGN_OR_RETURN(l2_level, JsonSwimlane(ctx, key, v));
      out.warnings.push_back(origin +
                             ": enable_l2_swimlane is deprecated; use "
                             "enable_chip_swimlane");
    } else if (key == "enable_dep_gen") {
      DFX_ASSIGN_OR_RETURN(c.enable_dep_gen, JsonBool(ctx, key, v));
    } else if (key == "enable_scope_stats") {
      DFX_ASSIGN_OR_RETURN(c.enable_scope_stats, JsonBool(ctx, key, v));
    } else if (key == "save_kernels") {
      DFX_ASSIGN_OR_RETURN(c.save_kernels, JsonBool(ctx, key, v));
    } else if (key == "enable_dump_args") {
      const char* expected = "an integer in [0, 3] (0 off, 1 partial, 2 full, 3 hybrid)";
      if (v.is_boolean()) {
        c.enable_dump_args = v.get<bool>() ? 1 : 0;
      } else if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 3) {
        return ctx.Error(key, expected, v);
      } else {
        c.enable_dump_args = v.get<int>();
      }
    } else if (key == "enable_pmu") {
      if (v.is_boolean()) {
        c.enable_pmu = v.get<bool>() ? 2 : 0;
      } else if (!v.is_number_integer() ||
                 (v.get<int64_t>() != 0 && !IsValidPmuEventType(static_cast<int>(
                                               std::clamp<int64_t>(v.get<int64_t>(), -1, 99))))) {
        return ctx.Error(key, kPmuTypes, v);
      } else {
        c.enable_pmu = v.get<int>();
      }
    } else if (key == "aicpu_thread_num") {
      if (v.is_null()) continue;
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 1024) {
        return ctx.Error(key, "a non-negative integer (0 = chip model default)", v);
      }
      c.aicpu_thread_num = v.get<int>();
    } else if (key == "ring_task_window" || key == "ring_heap" || key == "ring_dep_pool") {
      DFX_RETURN_IF_ERROR(JsonRing(ctx, key, v, &RingField(c.rings, key)));
    } else {
      return InvalidArgument(origin + ": at " + ctx.Path(key) + ": unknown RunConfig key \"" + key +
                             "\"; known keys: backend_type, execution_mode, platform "
                             "(deprecated), enable_chip_swimlane, enable_l2_swimlane "
                             "(deprecated), enable_dep_gen, enable_dump_args, enable_pmu, "
                             "enable_scope_stats, save_kernels, aicpu_thread_num, "
                             "ring_task_window, ring_heap, ring_dep_pool");
    }
  }

  if (chip_level && l2_level) {
    return InvalidArgument(origin + ": at " + json_path +
                           ": both enable_chip_swimlane and the deprecated enable_l2_swimlane "
                           "are given; keep only enable_chip_swimlane");
  }
  if (chip_level) c.enable_chip_swimlane = *chip_level;
  if (l2_level) c.enable_chip_swimlane = *l2_level;

  if (platform) {
    if ((backend && *backend != platform->backend) || (mode && *mode != platform->mode)) {
      return InvalidArgument(origin + ": at " + json_path + ": platform \"" + platform->platform +
                             "\" contradicts backend_type/execution_mode (\"" +
                             BackendTypeName(backend.value_or(platform->backend)) + "\", \"" +
                             ExecutionModeName(mode.value_or(platform->mode)) +
                             "\"); give only backend_type and execution_mode");
    }
    c.backend_type = platform->backend;
    c.execution_mode = platform->mode;
  }
  if (backend) c.backend_type = *backend;
  if (mode) c.execution_mode = *mode;

  Status s = c.Validate();
  if (!s.ok()) return InvalidArgument(origin + ": at " + json_path + ": " + s.message());
  c.Normalize();
  return out;
}

Json RunConfigToJson(const RunConfig& c) {
  Json j = Json::object();
  j["backend_type"] = BackendTypeName(c.backend_type);
  j["execution_mode"] = ExecutionModeName(c.execution_mode);
  j["enable_chip_swimlane"] = c.enable_chip_swimlane;
  j["enable_dep_gen"] = c.enable_dep_gen;
  j["enable_dump_args"] = c.enable_dump_args;
  j["enable_pmu"] = c.enable_pmu;
  j["enable_scope_stats"] = c.enable_scope_stats;
  j["save_kernels"] = c.save_kernels;
  j["aicpu_thread_num"] = c.aicpu_thread_num;
  j["ring_task_window"] = RingToJson(c.rings.task_window);
  j["ring_heap"] = RingToJson(c.rings.heap);
  j["ring_dep_pool"] = RingToJson(c.rings.dep_pool);
  return j;
}

}  // namespace dfx::config
