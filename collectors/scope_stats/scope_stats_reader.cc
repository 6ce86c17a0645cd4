#include "collectors/scope_stats/scope_stats_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <utility>

#include "collectors/scope_stats/scope_stats_keys.h"
#include "common/json.h"
#include "common/json_value.h"

namespace dfx::collectors {
namespace {

namespace keys = scope_stats_keys;

const char* const kResources[] = {keys::kTaskWindow.c_str(), keys::kHeap.c_str(),
                                  keys::kDepPool.c_str(), keys::kTensormap.c_str()};

ScopeCapacity ToCapacity(const Json& meta, const std::string& key) {
  ScopeCapacity c;
  if (!meta.contains(key)) return c;
  const Json& v = meta[key];
  if (v.is_array()) {
    c.per_ring_form = true;
    for (const Json& e : v) c.per_ring.push_back(e.is_number() ? e.get<double>() : 0);
  } else if (v.is_number()) {
    c.all_rings = v.get<double>();
  }
  return c;
}

// The fields of one line: absent keeps the default; another type (a string
// for a number, a number out of range) is an error naming the line and the
// key, never a throw or an undefined cast.
class LineFields {
 public:
  LineFields(const Json& j, const std::string& file, size_t lineno)
      : j_(j), file_(file), lineno_(lineno) {}
  Status Bool(const char* key, bool* out) const {
    const Json* v = Find(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is_boolean()) return Wrong(key, "true or false", *v);
    *out = v->get<bool>();
    return Status::Ok();
  }
  Status Number(const char* key, double* out) const {
    const Json* v = Find(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is_number()) return Wrong(key, "a number", *v);
    *out = v->get<double>();
    return Status::Ok();
  }
  template <typename T>
  Status Integer(const char* key, T* out) const {
    const Json* v = Find(key);
    if (v == nullptr) return Status::Ok();
    std::optional<T> i = v->is_boolean() ? std::nullopt : JsonInteger<T>(*v);
    if (!i) return Wrong(key, "an integer", *v);
    *out = *i;
    return Status::Ok();
  }
  Status String(const char* key, std::string* out) const {
    const Json* v = Find(key);
    if (v == nullptr) return Status::Ok();
    if (!v->is_string()) return Wrong(key, "a string", *v);
    *out = v->get<std::string>();
    return Status::Ok();
  }

 private:
  const Json* Find(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  Status Wrong(const char* key, const char* expected, const Json& got) const {
    return JsonError(file_, fmt::format("line {}: $.{}", lineno_, key), expected, got);
  }
  const Json& j_;
  const std::string& file_;
  size_t lineno_;
};

}  // namespace

Result<ScopeStatsFile> ReadScopeStats(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return NotFound("scope stats file not found: " + path.string());
  const std::string file = path.string();
  ScopeStatsFile out;
  std::string line;
  bool have_metadata = false;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("{}:{}", file, lineno);
    DFX_ASSIGN_OR_RETURN(Json j, ParseJson(line, where));
    if (!j.is_object()) return JsonError(file, fmt::format("line {}", lineno), "an object", j);
    const LineFields f(j, file, lineno);
    if (!have_metadata) {
      if (!j.contains(keys::kVersion.c_str())) {
        return JsonError(
            file, "line 1",
            std::string(JoinedText<"the metadata object with \"", keys::kVersion, "\"">), j);
      }
      have_metadata = true;
      DFX_RETURN_IF_ERROR(f.Bool(keys::kFatal.c_str(), &out.metadata.fatal));
      DFX_RETURN_IF_ERROR(f.Integer(keys::kDropped.c_str(), &out.metadata.dropped));
      for (const char* r : kResources) {
        out.metadata.capacity[r] = ToCapacity(j, std::string(r) + keys::kMaxSuffix.c_str());
      }
      continue;
    }
    ScopeStatsSample s;
    s.site = "?";
    std::string phase;
    DFX_RETURN_IF_ERROR(f.String(keys::kSite.c_str(), &s.site));
    DFX_RETURN_IF_ERROR(f.String(keys::kPhase.c_str(), &phase));
    DFX_RETURN_IF_ERROR(f.Integer(keys::kDepth.c_str(), &s.depth));
    DFX_RETURN_IF_ERROR(f.Integer(keys::kRing.c_str(), &s.ring));
    s.ring = std::clamp(s.ring, 0, 3);
    for (auto [key, field] :
         {std::pair{JoinedKey<keys::kTaskWindow, keys::kStartSuffix>.c_str(), &s.task_window_start},
          std::pair{JoinedKey<keys::kTaskWindow, keys::kEndSuffix>.c_str(), &s.task_window_end},
          std::pair{JoinedKey<keys::kHeap, keys::kStartSuffix>.c_str(), &s.heap_start},
          std::pair{JoinedKey<keys::kHeap, keys::kEndSuffix>.c_str(), &s.heap_end},
          std::pair{JoinedKey<keys::kDepPool, keys::kStartSuffix>.c_str(), &s.dep_pool_start},
          std::pair{JoinedKey<keys::kDepPool, keys::kEndSuffix>.c_str(), &s.dep_pool_end},
          std::pair{keys::kTensormap.c_str(), &s.tensormap}}) {
      DFX_RETURN_IF_ERROR(f.Number(key, field));
    }
    if (phase != keys::kPhaseBegin && phase != keys::kPhaseEnd) {
      return JsonError(
          file, fmt::format("line {}: $.{}", lineno, keys::kPhase.view()),
          std::string(JoinedText<"\"", keys::kPhaseBegin, "\" or \"", keys::kPhaseEnd, "\"">),
          j.contains(keys::kPhase.c_str()) ? j[keys::kPhase.c_str()] : Json());
    }
    s.begin = phase == keys::kPhaseBegin;
    out.samples.push_back(std::move(s));
  }
  if (!have_metadata) return InvalidArgument(file + ": empty file (expected a metadata line)");
  return out;
}

}  // namespace dfx::collectors
