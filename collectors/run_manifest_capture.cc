#include "collectors/run_manifest_capture.h"

#include <fmt/format.h>

namespace dfx::collectors {

namespace {

constexpr const char* kCollectorKeys[] = {"enable_chip_swimlane", "enable_dep_gen",
                                          "enable_dump_args", "enable_pmu", "enable_scope_stats"};

// A key of an object: its value, or an error naming the path and what was expected.
Result<const Json*> Need(const Json& j, const char* key, const std::string& origin,
                         const std::string& path, const char* expected) {
  auto it = j.find(key);
  if (it == j.end())
    return InvalidArgument(
        fmt::format("{}: at {}.{}: missing; expected {}", origin, path, key, expected));
  return &*it;
}

Result<int64_t> NeedInt(const Json& j, const char* key, const std::string& origin,
                        const std::string& path, int64_t min = 0) {
  DFX_ASSIGN_OR_RETURN(const Json* v, Need(j, key, origin, path, "an integer"));
  if (!v->is_number_integer() || v->get<int64_t>() < min) {
    return JsonError(origin, path + "." + key, fmt::format("an integer >= {}", min), *v);
  }
  return v->get<int64_t>();
}

Result<std::string> NeedString(const Json& j, const char* key, const std::string& origin,
                               const std::string& path) {
  DFX_ASSIGN_OR_RETURN(const Json* v, Need(j, key, origin, path, "a string"));
  if (!v->is_string()) return JsonError(origin, path + "." + key, "a string", *v);
  return v->get<std::string>();
}

}  // namespace

Json CollectorsToJson(const config::RunConfig& config) {
  const Json all = config::RunConfigToJson(config);
  Json out = Json::object();
  for (const char* key : kCollectorKeys) out[key] = all.at(key);
  return out;
}

config::RunConfig CollectorsOf(const config::RunConfig& config) {
  config::RunConfig out;
  out.enable_chip_swimlane = config.enable_chip_swimlane;
  out.enable_dep_gen = config.enable_dep_gen;
  out.enable_dump_args = config.enable_dump_args;
  out.enable_pmu = config.enable_pmu;
  out.enable_scope_stats = config.enable_scope_stats;
  return out;
}

Json DispatchCaptureToJson(const DispatchCapture& capture) {
  Json j;
  j["captured"] = capture.captured;
  j["by"] = capture.by;
  j["collectors"] = CollectorsToJson(capture.collectors);
  return j;
}

Result<DispatchCapture> DispatchCaptureFromJson(const Json& j, const std::string& origin,
                                                const std::string& path) {
  if (!j.is_object()) return JsonError(origin, path, "an object", j);
  DispatchCapture c;
  DFX_ASSIGN_OR_RETURN(const Json* captured, Need(j, "captured", origin, path, "true or false"));
  if (!captured->is_boolean())
    return JsonError(origin, path + ".captured", "true or false", *captured);
  c.captured = captured->get<bool>();
  DFX_ASSIGN_OR_RETURN(c.by, NeedString(j, "by", origin, path));
  DFX_ASSIGN_OR_RETURN(const Json* collectors,
                       Need(j, "collectors", origin, path, "an object of collector keys"));
  if (!collectors->is_object()) {
    return JsonError(origin, path + ".collectors", "an object of collector keys", *collectors);
  }
  for (const auto& [key, value] : collectors->items()) {
    bool known = false;
    for (const char* k : kCollectorKeys) known |= key == k;
    if (!known) {
      return InvalidArgument(fmt::format(
          "{}: at {}.collectors.{}: not a collector key; expected enable_chip_swimlane, "
          "enable_dep_gen, enable_dump_args, enable_pmu, enable_scope_stats",
          origin, path, key));
    }
  }
  DFX_ASSIGN_OR_RETURN(config::ParsedRunConfig parsed,
                       config::RunConfigFromJson(*collectors, origin, path + ".collectors"));
  c.collectors = CollectorsOf(parsed.config);
  return c;
}

Json CaptureChangesToJson(const std::vector<CaptureChange>& changes) {
  Json out = Json::array();
  for (const CaptureChange& c : changes) {
    Json j;
    j["id"] = c.id;
    j["time_ns"] = c.time_ns;
    j["unix_ms"] = c.unix_ms;
    j["pid"] = c.pid;
    j["uid"] = c.uid;
    j["request"] = c.request;
    Json applied = Json::array();
    for (const CaptureTarget& t : c.applied_to) {
      applied.push_back(Json{{"rank", t.rank}, {"k", t.k}, {"pass", config::PassKindName(t.pass)}});
    }
    j["applied_to"] = std::move(applied);
    out.push_back(std::move(j));
  }
  return out;
}

Result<std::vector<CaptureChange>> CaptureChangesFromJson(const Json& j, const std::string& origin,
                                                          const std::string& path) {
  if (!j.is_array()) return JsonError(origin, path, "an array", j);
  std::vector<CaptureChange> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string at = fmt::format("{}[{}]", path, i);
    const Json& e = j[i];
    if (!e.is_object()) return JsonError(origin, at, "an object", e);
    CaptureChange c;
    DFX_ASSIGN_OR_RETURN(const int64_t id, NeedInt(e, "id", origin, at, 1));
    c.id = static_cast<uint32_t>(id);
    DFX_ASSIGN_OR_RETURN(const int64_t time_ns, NeedInt(e, "time_ns", origin, at));
    c.time_ns = static_cast<uint64_t>(time_ns);
    DFX_ASSIGN_OR_RETURN(c.unix_ms, NeedInt(e, "unix_ms", origin, at));
    DFX_ASSIGN_OR_RETURN(c.pid, NeedInt(e, "pid", origin, at));
    DFX_ASSIGN_OR_RETURN(c.uid, NeedInt(e, "uid", origin, at));
    DFX_ASSIGN_OR_RETURN(c.request, NeedString(e, "request", origin, at));
    DFX_ASSIGN_OR_RETURN(const Json* applied, Need(e, "applied_to", origin, at, "an array"));
    if (!applied->is_array()) return JsonError(origin, at + ".applied_to", "an array", *applied);
    for (size_t a = 0; a < applied->size(); ++a) {
      const std::string tat = fmt::format("{}.applied_to[{}]", at, a);
      const Json& t = (*applied)[a];
      if (!t.is_object()) return JsonError(origin, tat, "an object", t);
      CaptureTarget target;
      DFX_ASSIGN_OR_RETURN(const int64_t rank, NeedInt(t, "rank", origin, tat));
      DFX_ASSIGN_OR_RETURN(const int64_t k, NeedInt(t, "k", origin, tat));
      DFX_ASSIGN_OR_RETURN(const std::string pass, NeedString(t, "pass", origin, tat));
      auto kind = config::ParsePassKind(pass);
      if (!kind) return JsonError(origin, tat + ".pass", "single, graph or timing", t["pass"]);
      target.rank = static_cast<int32_t>(rank);
      target.k = static_cast<uint32_t>(k);
      target.pass = *kind;
      c.applied_to.push_back(target);
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace dfx::collectors
