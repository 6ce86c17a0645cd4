// The run configuration's command-line surface: the DFX flags parsed out of
// a command line (ParseRunConfigFlags), a RunConfig written back as flags
// (RunConfigToFlags) and their help text. The checks are the JSON parser's
// (run_config_checks.h), so a value refused on one surface is refused on the
// other with the same words (docs/run-config.md).
#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/run_config.h"
#include "config/run_config_checks.h"

namespace dfx::config {

using namespace internal;  // NOLINT: the checks shared with the JSON parser

namespace {

const char* const kSwimlaneRange = kSwimlaneLevels;
const char* const kPmuTypes = kPmuEventTypes;

std::optional<int64_t> ParseInt(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int64_t v = 0;
  const char* begin = s.data();
  const char* end = s.data() + s.size();
  if (*begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, v);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

// A word after a flag that takes an optional value, which is neither another
// flag nor the program / plan file (a .json name, a path with a '/', or any
// existing file): the user meant it as the flag's value.
bool LooksLikeAValue(const std::string& word) {
  if (word.empty() || word[0] == '-' || word.find('/') != std::string::npos) return false;
  if (word.size() >= 5 && word.compare(word.size() - 5, 5, ".json") == 0) return false;
  std::error_code ec;
  return !std::filesystem::exists(word, ec);
}

// Parses "N" or "N,N,N,N" for a ring flag.
Status ParseRingFlag(const std::string& flag, const std::string& field, const std::string& text,
                     std::array<uint64_t, 4>* out) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    parts.push_back(
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (parts.size() != 1 && parts.size() != 4) {
    return InvalidArgument(flag + " " + text +
                           ": expected one value or exactly 4 comma-separated "
                           "values (one per ring), got " +
                           std::to_string(parts.size()));
  }
  std::array<uint64_t, 4> values{};
  for (size_t i = 0; i < parts.size(); ++i) {
    auto v = ParseInt(parts[i]);
    if (!v || *v < 0) {
      return InvalidArgument(flag + " " + text + ": '" + parts[i] +
                             "' is not a non-negative integer");
    }
    values[i] = static_cast<uint64_t>(*v);
  }
  if (parts.size() == 1) {
    if (values[0] == 0) return ScalarZeroError(flag + " (" + field + ")");
    values.fill(values[0]);
  }
  Status s = CheckRing(field, values);
  if (!s.ok()) return InvalidArgument(flag + ": " + s.message());
  *out = values;
  return Status::Ok();
}

// One `--name[=value]` of the command line and the words after it.
class FlagCursor {
 public:
  FlagCursor(const std::vector<std::string>& args, size_t& i) : args_(args), i_(i) {
    const std::string& arg = args[i];
    name_ = arg;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      name_ = arg.substr(0, eq);
      inline_value_ = arg.substr(eq + 1);
    }
  }
  const std::string& name() const { return name_; }

  // A value that must be present: `--flag=v` or the next token.
  Status Required(std::string* value) {
    if (inline_value_) {
      *value = *inline_value_;
      return Status::Ok();
    }
    if (i_ + 1 >= args_.size()) return InvalidArgument(name_ + ": missing value");
    *value = args_[++i_];
    return Status::Ok();
  }

  // An optional integer value: `--flag=v`, or the next token only if it
  // is an integer. A following word that is neither a flag nor the
  // program / plan file (a .json name or an existing path) is what the
  // user meant as the value: it is refused, naming the values allowed.
  Result<int> OptionalInt(int bare, const std::string& allowed) {
    std::string text;
    if (inline_value_) {
      text = *inline_value_;
    } else if (i_ + 1 < args_.size() && ParseInt(args_[i_ + 1])) {
      text = args_[++i_];
    } else if (i_ + 1 < args_.size() && LooksLikeAValue(args_[i_ + 1])) {
      return InvalidArgument(name_ + " " + args_[i_ + 1] + ": not an integer; allowed: " + allowed +
                             " (if " + args_[i_ + 1] +
                             " is the program or plan file, it does not exist)");
    } else {
      return bare;
    }
    auto v = ParseInt(text);
    if (!v) return InvalidArgument(name_ + " " + text + ": not an integer; allowed: " + allowed);
    if (*v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max()) {
      return InvalidArgument(name_ + " " + text + ": out of range; allowed: " + allowed);
    }
    return static_cast<int>(*v);
  }

  Status NoValue() const {
    if (inline_value_) {
      return InvalidArgument(name_ + " takes no value, got '" + *inline_value_ + "'");
    }
    return Status::Ok();
  }

 private:
  const std::vector<std::string>& args_;
  size_t& i_;
  std::string name_;
  std::optional<std::string> inline_value_;
};

// What the flags said where several flags set one field; resolved once
// every flag is read (FlagChoices::Apply).
struct FlagChoices {
  std::optional<int> level_flag;   // --chip-swimlane-level
  std::optional<int> enable_flag;  // --enable-chip-swimlane
  std::optional<int> l2_flag;      // --enable-l2-swimlane
  std::optional<BackendType> backend;
  std::optional<ExecutionMode> mode;
  std::optional<PlatformPair> platform;

  Status Apply(RunConfig& c) const;
};

Status FlagChoices::Apply(RunConfig& c) const {
  // Swimlane precedence: --chip-swimlane-level > --enable-chip-swimlane > --enable-l2-swimlane.
  if (level_flag) {
    c.enable_chip_swimlane = *level_flag;
  } else if (enable_flag) {
    c.enable_chip_swimlane = *enable_flag;
  } else if (l2_flag) {
    c.enable_chip_swimlane = *l2_flag;
  }

  if (platform) {
    if (backend && *backend != platform->backend) {
      return InvalidArgument(std::string("--platform ") + platform->platform +
                             " contradicts --backend-type " + BackendTypeName(*backend) +
                             "; give only --backend-type and --execution-mode");
    }
    if (mode && *mode != platform->mode) {
      return InvalidArgument(std::string("--platform ") + platform->platform +
                             " contradicts --execution-mode " + ExecutionModeName(*mode) +
                             "; give only --backend-type and --execution-mode");
    }
    c.backend_type = platform->backend;
    c.execution_mode = platform->mode;
  }
  if (backend) c.backend_type = *backend;
  if (mode) c.execution_mode = *mode;
  return Status::Ok();
}

// The swimlane flags: --enable-chip-swimlane, --enable-l2-swimlane,
// --chip-swimlane-level. Returns false for another flag.
Result<bool> ParseSwimlaneFlag(FlagCursor& flag, FlagChoices& choices,
                               std::vector<std::string>& warnings) {
  const std::string& name = flag.name();
  if (name == "--enable-chip-swimlane" || name == "--enable-l2-swimlane") {
    // `--enable-chip-swimlane [LEVEL]` (bare = 4), as the reference
    // execute_artifact CLI: only an integer token is taken as the level, so
    // a following path or flag is never swallowed.
    DFX_ASSIGN_OR_RETURN(int v, flag.OptionalInt(4, kSwimlaneRange));
    if (v < 0 || v > 4) {
      return InvalidArgument(name + " " + std::to_string(v) + ": the swimlane level must be " +
                             kSwimlaneRange);
    }
    if (name == "--enable-chip-swimlane") {
      choices.enable_flag = v;
    } else {
      choices.l2_flag = v;
      warnings.push_back(
          "--enable-l2-swimlane is deprecated; use --enable-chip-swimlane or "
          "--chip-swimlane-level N");
    }
    return true;
  }
  if (name == "--chip-swimlane-level") {
    std::string text;
    DFX_RETURN_IF_ERROR(flag.Required(&text));
    auto v = ParseInt(text);
    if (!v) {
      return InvalidArgument(name + " " + text + ": not an integer; the swimlane level must be " +
                             kSwimlaneRange);
    }
    if (*v < 0 || *v > 4) {
      return InvalidArgument(name + " " + text + ": the swimlane level must be " + kSwimlaneRange);
    }
    choices.level_flag = static_cast<int>(*v);
    return true;
  }
  return false;
}

// The collector switches: --enable-dep-gen, --enable-scope-stats,
// --save-kernels, --dump-args, --enable-pmu. Returns false for another flag.
Result<bool> ParseCollectorFlag(FlagCursor& flag, RunConfig& c) {
  const std::string& name = flag.name();
  if (name == "--enable-dep-gen") {
    DFX_RETURN_IF_ERROR(flag.NoValue());
    c.enable_dep_gen = true;
  } else if (name == "--enable-scope-stats") {
    DFX_RETURN_IF_ERROR(flag.NoValue());
    c.enable_scope_stats = true;
  } else if (name == "--save-kernels") {
    DFX_RETURN_IF_ERROR(flag.NoValue());
    c.save_kernels = true;
  } else if (name == "--dump-args") {
    const std::string allowed = kDumpArgsLevels;
    DFX_ASSIGN_OR_RETURN(int v, flag.OptionalInt(1, allowed));
    if (v < 0 || v > 3) {
      return InvalidArgument(name + " " + std::to_string(v) + ": allowed: " + allowed);
    }
    c.enable_dump_args = v;
  } else if (name == "--enable-pmu") {
    const std::string allowed = std::string(kPmuTypes) + "; bare = 2";
    DFX_ASSIGN_OR_RETURN(int v, flag.OptionalInt(2, allowed));
    if (v != 0 && !IsValidPmuEventType(v)) {
      return InvalidArgument(name + " " + std::to_string(v) +
                             ": not a PMU event type; allowed: " + allowed);
    }
    c.enable_pmu = v;
  } else {
    return false;
  }
  return true;
}

// The chip and platform flags: --backend-type, --execution-mode,
// --platform, --aicpu-thread-num, --ring-*. Returns false for another flag.
Result<bool> ParseChipFlag(FlagCursor& flag, RunConfig& c, FlagChoices& choices,
                           std::vector<std::string>& warnings) {
  const std::string& name = flag.name();
  if (name == "--backend-type") {
    std::string text;
    DFX_RETURN_IF_ERROR(flag.Required(&text));
    choices.backend = ParseBackend(text);
    if (!choices.backend) return InvalidArgument(name + " " + text + ": allowed: a2a3, a5");
  } else if (name == "--execution-mode") {
    std::string text;
    DFX_RETURN_IF_ERROR(flag.Required(&text));
    choices.mode = ParseMode(text);
    if (!choices.mode) return InvalidArgument(name + " " + text + ": allowed: sim, onboard");
  } else if (name == "--platform") {
    std::string text;
    DFX_RETURN_IF_ERROR(flag.Required(&text));
    choices.platform = LookupPlatform(text);
    if (!choices.platform) {
      return InvalidArgument(name + " " + text +
                             ": allowed: a2a3sim, a2a3, a5sim, a5 (deprecated; prefer "
                             "--backend-type and --execution-mode)");
    }
    warnings.push_back(PlatformDeprecation("--platform", *choices.platform));
  } else if (name == "--aicpu-thread-num") {
    std::string text;
    DFX_RETURN_IF_ERROR(flag.Required(&text));
    auto v = ParseInt(text);
    if (!v || *v < 0 || *v > 1024) {
      return InvalidArgument(name + " " + text +
                             ": expected a non-negative integer (0 = chip model default)");
    }
    c.aicpu_thread_num = static_cast<int>(*v);
  } else if (name == "--ring-task-window" || name == "--ring-heap" || name == "--ring-dep-pool") {
    std::string text;
    DFX_RETURN_IF_ERROR(flag.Required(&text));
    std::string field = "ring_" + name.substr(7);
    for (auto& ch : field) {
      if (ch == '-') ch = '_';
    }
    DFX_RETURN_IF_ERROR(ParseRingFlag(name, field, text, &RingField(c.rings, field)));
  } else {
    return false;
  }
  return true;
}

}  // namespace

Result<ParsedRunConfig> ParseRunConfigFlags(std::vector<std::string>& args) {
  ParsedRunConfig out;
  RunConfig& c = out.config;
  std::vector<std::string> rest;
  FlagChoices choices;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0) {
      rest.push_back(arg);
      continue;
    }
    FlagCursor flag(args, i);
    DFX_ASSIGN_OR_RETURN(bool taken, ParseSwimlaneFlag(flag, choices, out.warnings));
    if (!taken) {
      DFX_ASSIGN_OR_RETURN(taken, ParseCollectorFlag(flag, c));
    }
    if (!taken) {
      DFX_ASSIGN_OR_RETURN(taken, ParseChipFlag(flag, c, choices, out.warnings));
    }
    if (!taken) rest.push_back(arg);
  }
  DFX_RETURN_IF_ERROR(choices.Apply(c));
  DFX_RETURN_IF_ERROR(c.Validate());
  c.Normalize();
  args = std::move(rest);
  return out;
}

std::vector<std::string> RunConfigToFlags(const RunConfig& c) {
  std::vector<std::string> f = {"--backend-type", BackendTypeName(c.backend_type),
                                "--execution-mode", ExecutionModeName(c.execution_mode)};
  if (c.enable_chip_swimlane > 0) {
    f.push_back("--chip-swimlane-level");
    f.push_back(std::to_string(c.enable_chip_swimlane));
  }
  if (c.enable_dep_gen) f.push_back("--enable-dep-gen");
  if (c.enable_dump_args > 0) f.push_back("--dump-args=" + std::to_string(c.enable_dump_args));
  if (c.enable_pmu > 0) f.push_back("--enable-pmu=" + std::to_string(c.enable_pmu));
  if (c.enable_scope_stats) f.push_back("--enable-scope-stats");
  if (c.save_kernels) f.push_back("--save-kernels");
  if (c.aicpu_thread_num > 0) {
    f.push_back("--aicpu-thread-num");
    f.push_back(std::to_string(c.aicpu_thread_num));
  }
  auto rings = [&](const char* flag, const std::array<uint64_t, 4>& v) {
    if (v == std::array<uint64_t, 4>{}) return;
    f.push_back(flag);
    f.push_back(fmt::format("{},{},{},{}", v[0], v[1], v[2], v[3]));
  };
  rings("--ring-task-window", c.rings.task_window);
  rings("--ring-heap", c.rings.heap);
  rings("--ring-dep-pool", c.rings.dep_pool);
  return f;
}

const char* RunConfigFlagsHelp() {
  return R"(run configuration (the Runtime DFX flags; any subset):
  --enable-chip-swimlane [LEVEL]  per-task timing, level 0-4 (bare = 4)
  --chip-swimlane-level N         the same, level N (wins over --enable-chip-swimlane)
  --enable-l2-swimlane [LEVEL]    deprecated spelling of --enable-chip-swimlane
  --enable-dep-gen                task dependency graph (deps.json)
  --dump-args [LEVEL]             tensor argument dumps: 0 off, 1 partial, 2 full, 3 hybrid (bare = 1)
  --enable-pmu [N]                PMU counters, event type 1, 2, 4, 5, 6, 7 or 8 (bare = 2)
  --enable-scope-stats            ring-occupancy scope stats
  --backend-type a2a3|a5          chip model (default a2a3)
  --execution-mode sim|onboard    DFX pass protocol (default sim)
  --platform P                    deprecated: a2a3sim, a2a3, a5sim, a5
  --save-kernels                  keep the outputs (forced on by any DFX flag)
  --aicpu-thread-num N            AICPU threads incl. the orchestrator (0 = chip default)
  --ring-task-window/--ring-heap/--ring-dep-pool N|N,N,N,N   ring sizing (one or four values)
)";
}

}  // namespace dfx::config
