#include "collectors/dispatch_bytes.h"

#include <utility>

#include "common/json.h"

namespace dfx::collectors {

namespace {

// One table for both directions.
constexpr std::pair<const char*, uint64_t DispatchBytes::*> kFields[] = {
    {"tasks", &DispatchBytes::tasks},       {"blocks", &DispatchBytes::blocks},
    {"scopes", &DispatchBytes::scopes},     {"chip_swimlane", &DispatchBytes::chip_swimlane},
    {"deps", &DispatchBytes::deps},         {"args_dump", &DispatchBytes::args_dump},
    {"pmu", &DispatchBytes::pmu},           {"scope_stats", &DispatchBytes::scope_stats},
    {"name_map", &DispatchBytes::name_map}, {"merged_trace", &DispatchBytes::merged_trace},
};

}  // namespace

std::string DispatchBytesJson(const DispatchBytes& bytes) {
  Json j = Json::object();
  for (const auto& [key, field] : kFields) j[key] = bytes.*field;
  return j.dump();
}

Result<DispatchBytes> ParseDispatchBytes(const std::string& text, const std::string& origin) {
  DFX_ASSIGN_OR_RETURN(Json j, ParseJson(text, origin));
  if (!j.is_object()) return JsonError(origin, "$", "an object", j);
  DispatchBytes out;
  for (const auto& [key, field] : kFields) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_unsigned()) {
      return JsonError(origin, std::string("$.") + key, "a non-negative integer",
                       it == j.end() ? Json() : *it);
    }
    out.*field = it->get<uint64_t>();
  }
  return out;
}

}  // namespace dfx::collectors
