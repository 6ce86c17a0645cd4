#include "coordinator/capture_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace dfx::coordinator {

namespace {

constexpr size_t kMaxListChars = 4096;
constexpr size_t kMaxListItems = 1024;
constexpr uint32_t kMaxIndex = 0x7fffffff;
constexpr size_t kMaxCommandChars = 4096;
constexpr uint32_t kMaxNext = 1000000000;
constexpr const char* kCollectorKeys[] = {"enable_chip_swimlane", "enable_dep_gen",
                                          "enable_dump_args", "enable_pmu", "enable_scope_stats"};

std::optional<uint32_t> Number(std::string_view s) {
  if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  uint64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  if (v > kMaxIndex) return std::nullopt;
  return static_cast<uint32_t>(v);
}

bool IsCollectorKey(const std::string& key) {
  return std::any_of(std::begin(kCollectorKeys), std::end(kCollectorKeys),
                     [&](const char* k) { return key == k; });
}

// `values`' collector fields named in `set` onto `config`.
void Overlay(const Json& set, const config::RunConfig& values, config::RunConfig& config) {
  for (const auto& [key, _] : set.items()) {
    if (key == "enable_chip_swimlane") config.enable_chip_swimlane = values.enable_chip_swimlane;
    if (key == "enable_dep_gen") config.enable_dep_gen = values.enable_dep_gen;
    if (key == "enable_dump_args") config.enable_dump_args = values.enable_dump_args;
    if (key == "enable_pmu") config.enable_pmu = values.enable_pmu;
    if (key == "enable_scope_stats") config.enable_scope_stats = values.enable_scope_stats;
  }
}

}  // namespace

bool IndexList::Contains(uint32_t i) const {
  return std::any_of(ranges.begin(), ranges.end(),
                     [i](const auto& r) { return r.first <= i && i <= r.second; });
}

uint32_t IndexList::Max() const {
  uint32_t m = 0;
  for (const auto& r : ranges) m = std::max(m, r.second);
  return m;
}

Result<IndexList> ParseIndexList(std::string_view flag, std::string_view text) {
  const std::string example = "(write e.g. 0,3-5: numbers and LOW-HIGH ranges, comma-separated)";
  if (text.empty()) return InvalidArgument(fmt::format("{}: an empty list {}", flag, example));
  if (text.size() > kMaxListChars) {
    return InvalidArgument(
        fmt::format("{}: a list of {} characters; at most {}", flag, text.size(), kMaxListChars));
  }
  IndexList list;
  list.text = std::string(text);
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    if (item.empty()) {
      return InvalidArgument(fmt::format("{}: '{}' has an empty item {}", flag, text, example));
    }
    if (list.ranges.size() == kMaxListItems) {
      return InvalidArgument(fmt::format("{}: more than {} items", flag, kMaxListItems));
    }
    const size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      auto n = Number(item);
      if (!n) {
        return InvalidArgument(
            fmt::format("{}: '{}' is not a number or a range {}", flag, item, example));
      }
      list.ranges.emplace_back(*n, *n);
    } else {
      auto lo = Number(item.substr(0, dash));
      auto hi = Number(item.substr(dash + 1));
      if (!lo || !hi) {
        return InvalidArgument(
            fmt::format("{}: '{}' is not a number or a range {}", flag, item, example));
      }
      if (*lo > *hi) {
        return InvalidArgument(
            fmt::format("{}: '{}' is not a range (write LOW-HIGH with LOW <= HIGH)", flag, item));
      }
      list.ranges.emplace_back(*lo, *hi);
    }
    start = comma + 1;
  }
  return list;
}

Status CheckSelection(const CaptureSelection& selection, int num_ranks,
                      const std::vector<PlannedDispatch>& planned) {
  if (selection.ranks && selection.ranks->Max() >= static_cast<uint32_t>(num_ranks)) {
    return InvalidArgument(fmt::format(
        "--capture-ranks {}: rank {} does not exist in a run of --ranks {} (ranks are 0..{})",
        selection.ranks->text, selection.ranks->Max(), num_ranks, num_ranks - 1));
  }
  if (selection.dispatches) {
    uint32_t most = 0;  // dispatches of the busiest rank
    for (const PlannedDispatch& p : planned) most = std::max(most, p.k + 1);
    if (selection.dispatches->Max() >= most) {
      return InvalidArgument(fmt::format(
          "--capture-dispatches {}: d{} does not exist: the plan gives a rank at most {} "
          "dispatch(es) (d0..d{})",
          selection.dispatches->text, selection.dispatches->Max(), most, most - 1));
    }
  }
  return Status::Ok();
}

Result<std::vector<std::optional<StepConfig>>> ResolveStepConfigs(const Plan& plan,
                                                                  const config::RunConfig& run) {
  std::vector<std::optional<StepConfig>> out(plan.steps.size());
  const Json base = config::RunConfigToJson(run);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& step = plan.steps[i];
    if (!step.run_config.is_object()) continue;
    const std::string at = step.json_path + ".run_config";
    Json merged = base;
    // A legacy spelling in the step replaces what it stands for.
    if (step.run_config.contains("platform")) {
      merged.erase("backend_type");
      merged.erase("execution_mode");
    }
    if (step.run_config.contains("enable_l2_swimlane")) merged.erase("enable_chip_swimlane");
    for (const auto& [key, value] : step.run_config.items()) merged[key] = value;
    DFX_ASSIGN_OR_RETURN(config::ParsedRunConfig parsed,
                         config::RunConfigFromJson(merged, plan.origin.string(), at));
    if (parsed.config.execution_mode != run.execution_mode) {
      return InvalidArgument(fmt::format(
          "{}: at {}: execution_mode {} differs from the run's ({}); the pass protocol spans the "
          "whole plan, so a step keeps the run's execution mode: drop it from the step",
          plan.origin.string(), at, config::ExecutionModeName(parsed.config.execution_mode),
          config::ExecutionModeName(run.execution_mode)));
    }
    parsed.config.Normalize();
    out[i] = StepConfig{parsed.config, "plan " + at};
  }
  return out;
}

Json CaptureRequestToJson(const CaptureRequest& request) {
  Json j;
  j["ranks"] = request.ranks ? Json(request.ranks->text) : Json(nullptr);
  j["next"] = request.next ? Json(*request.next) : Json(nullptr);
  j["set"] = request.set;
  j["reset"] = request.reset;
  j["status"] = request.status;
  j["command"] = request.command;
  return j;
}

Result<CaptureRequest> CaptureRequestFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgument("a capture request is one JSON object");
  CaptureRequest r;
  for (const auto& [key, value] : j.items()) {
    if (key == "ranks") {
      if (value.is_null()) continue;
      if (!value.is_string()) return InvalidArgument("ranks: expected a list such as \"0,3-5\"");
      DFX_ASSIGN_OR_RETURN(r.ranks, ParseIndexList("--ranks", value.get<std::string>()));
    } else if (key == "next") {
      if (value.is_null()) continue;
      if (!value.is_number_integer() || value.get<int64_t>() < 1 ||
          value.get<int64_t>() > kMaxNext) {
        return InvalidArgument(fmt::format(
            "--next {}: expected a number of dispatches from 1 to {}", value.dump(), kMaxNext));
      }
      r.next = static_cast<uint32_t>(value.get<int64_t>());
    } else if (key == "set") {
      if (!value.is_object()) return InvalidArgument("set: expected an object of collector keys");
      for (const auto& [k, _] : value.items()) {
        if (!IsCollectorKey(k)) {
          return InvalidArgument(fmt::format(
              "{}: a capture changes the collectors only (enable_chip_swimlane, enable_dep_gen, "
              "enable_dump_args, enable_pmu, enable_scope_stats); the rest is the run's",
              k));
        }
      }
      DFX_RETURN_IF_ERROR(
          config::RunConfigFromJson(value, "the capture request", "$.set").status());
      r.set = value;
    } else if (key == "reset" || key == "status") {
      if (!value.is_boolean()) return InvalidArgument(key + ": expected true or false");
      (key == "reset" ? r.reset : r.status) = value.get<bool>();
    } else if (key == "command") {
      if (!value.is_string() || value.get<std::string>().size() > kMaxCommandChars) {
        return InvalidArgument(
            fmt::format("command: expected a string of at most {} characters", kMaxCommandChars));
      }
      r.command = value.get<std::string>();
    } else {
      return InvalidArgument(fmt::format(
          "unknown key \"{}\"; a capture request has ranks, next, set, reset, status, command",
          key));
    }
  }
  return r;
}

config::RunConfig WithoutCollectors(config::RunConfig config) {
  config.enable_chip_swimlane = 0;
  config.enable_dep_gen = false;
  config.enable_dump_args = 0;
  config.enable_pmu = 0;
  config.enable_scope_stats = false;
  return config;
}

CapturePolicy::CapturePolicy(config::RunConfig run, CaptureSelection selection,
                             std::vector<std::optional<StepConfig>> steps, int num_ranks,
                             bool may_capture, bool l3)
    : run_(std::move(run)),
      selection_(std::move(selection)),
      steps_(std::move(steps)),
      num_ranks_(num_ranks),
      may_capture_(may_capture),
      l3_(l3) {}

CapturePolicy::Decision CapturePolicy::Decide(int32_t rank, uint32_t k, size_t step,
                                              config::PassKind pass) {
  const bool own = step < steps_.size() && steps_[step].has_value();
  config::RunConfig config = own ? steps_[step]->config : run_;
  std::string by = own ? steps_[step]->origin : std::string("run");
  if (selection_.ranks && !selection_.ranks->Contains(static_cast<uint32_t>(rank))) {
    config = WithoutCollectors(config);
    by = "--capture-ranks " + selection_.ranks->text;
  } else if (selection_.dispatches && !selection_.dispatches->Contains(k)) {
    config = WithoutCollectors(config);
    by = "--capture-dispatches " + selection_.dispatches->text;
  }
  for (Active& a : active_) {
    if (a.request.ranks && !a.request.ranks->Contains(static_cast<uint32_t>(rank))) continue;
    if (a.request.next) {
      uint32_t& left = a.remaining[static_cast<size_t>(rank)];
      if (left == 0) continue;
      --left;
    }
    Overlay(a.request.set, a.values, config);
    collectors::CaptureChange& change = changes_[a.change];
    by = fmt::format("capture change {}", change.id);
    change.applied_to.push_back({rank, k, pass});
  }
  config.Normalize();
  Decision d;
  d.armed = config::ArmForPass(pass, config, l3_);
  d.capture.captured = config.AnyDfx();
  d.capture.by = std::move(by);
  d.capture.collectors = collectors::CollectorsOf(d.armed);
  return d;
}

Result<uint32_t> CapturePolicy::Apply(const CaptureRequest& request, const Who& who) {
  if (request.ranks && request.ranks->Max() >= static_cast<uint32_t>(num_ranks_)) {
    return InvalidArgument(
        fmt::format("--ranks {}: rank {} does not exist in this run (ranks 0..{})",
                    request.ranks->text, request.ranks->Max(), num_ranks_ - 1));
  }
  if (request.set.empty() && !request.reset) {
    return InvalidArgument(
        "nothing to change: give a collector flag (e.g. --enable-chip-swimlane 2), --disable, "
        "--off or --reset");
  }
  config::RunConfig values;
  if (!request.set.empty()) {
    DFX_ASSIGN_OR_RETURN(config::ParsedRunConfig parsed,
                         config::RunConfigFromJson(request.set, "the capture request", "$.set"));
    values = parsed.config;
    if (values.AnyDfx() && !may_capture_) {
      return InvalidArgument(
          "this run writes no dfx_outputs/ (no collector is on in its flags or its plan), so a "
          "capture cannot turn collectors on; start the run with the collectors you may want "
          "and keep them off where not needed with --capture-ranks / --capture-dispatches");
    }
  }
  if (request.reset) active_.clear();
  collectors::CaptureChange change;
  change.id = static_cast<uint32_t>(changes_.size() + 1);
  change.time_ns = who.time_ns;
  change.unix_ms = who.unix_ms;
  change.pid = who.pid;
  change.uid = who.uid;
  change.request = request.command;
  changes_.push_back(std::move(change));
  if (!request.set.empty()) {
    Active a{changes_.size() - 1, request, values, {}};
    if (request.next) a.remaining.assign(static_cast<size_t>(num_ranks_), *request.next);
    active_.push_back(std::move(a));
  }
  return changes_.back().id;
}

}  // namespace dfx::coordinator
