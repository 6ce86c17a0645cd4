#include "collectors/name_map.h"

#include <algorithm>
#include <cstdlib>
#include <system_error>

#include "collectors/artifact_layout.h"
#include "collectors/name_map_keys.h"
#include "common/json.h"

namespace dfx::collectors {

namespace keys = name_map_keys;

namespace fs = std::filesystem;

const std::string* NameMap::Find(int func_id) const {
  for (auto it = callable_id_to_name.rbegin(); it != callable_id_to_name.rend(); ++it) {
    if (it->first == func_id) return &it->second;
  }
  return nullptr;
}

Status WriteNameMap(const fs::path& path, const NameMap& map) {
  Json j = Json::object();
  j[keys::kLevel.c_str()] = map.level;
  j[keys::kOrchestratorName.c_str()] = map.orchestrator_name && !map.orchestrator_name->empty()
                                           ? Json(*map.orchestrator_name)
                                           : Json(nullptr);
  if (!map.callable_id_to_name.empty()) {
    Json names = Json::object();
    for (const auto& [id, name] : map.callable_id_to_name) names[std::to_string(id)] = name;
    j[keys::kCallableIdToName.c_str()] = std::move(names);
  }
  return WriteJsonFileAtomic(path, j, 2);
}

Result<NameMap> ReadNameMap(const fs::path& path) {
  DFX_ASSIGN_OR_RETURN(Json j, ReadJsonFile(path));
  if (!j.is_object()) return JsonError(path.string(), "$", "an object", j);
  NameMap map;
  const Json* table = &j;
  bool scene_shape = j.contains(keys::kCallableIdToName.c_str()) ||
                     j.contains(keys::kOrchestratorName.c_str()) ||
                     j.contains(keys::kLevel.c_str());
  if (scene_shape) {
    if (j.contains(keys::kLevel.c_str()) && j[keys::kLevel.c_str()].is_number_integer())
      map.level = j[keys::kLevel.c_str()].get<int>();
    if (j.contains(keys::kOrchestratorName.c_str()) &&
        j[keys::kOrchestratorName.c_str()].is_string()) {
      map.orchestrator_name = j[keys::kOrchestratorName.c_str()].get<std::string>();
    }
    static const Json kEmpty = Json::object();
    table =
        j.contains(keys::kCallableIdToName.c_str()) ? &j[keys::kCallableIdToName.c_str()] : &kEmpty;
    if (!table->is_object()) {
      return JsonError(path.string(), std::string(JoinedText<"$.", keys::kCallableIdToName>),
                       "an object", *table);
    }
  }
  for (const auto& [key, value] : table->items()) {
    char* end = nullptr;
    long id = std::strtol(key.c_str(), &end, 10);
    if (end == key.c_str() || *end != '\0') {
      return JsonError(path.string(), "$." + key, "an integer func_id key", Json(key));
    }
    if (!value.is_string()) return JsonError(path.string(), "$." + key, "a name string", value);
    map.callable_id_to_name.emplace_back(static_cast<int>(id), value.get<std::string>());
  }
  return map;
}

std::vector<fs::path> SiblingNameMaps(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir.empty() ? "." : dir, ec)) {
    if (e.is_regular_file() && IsNameMapFileName(e.path().filename().string())) {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<fs::path> NewestNameMap(const fs::path& dir) {
  auto maps = SiblingNameMaps(dir);
  if (maps.empty()) return std::nullopt;
  std::error_code ec;
  auto best = maps.front();
  auto best_time = fs::last_write_time(best, ec);
  for (const auto& p : maps) {
    auto t = fs::last_write_time(p, ec);
    if (t > best_time || (t == best_time && p.filename() > best.filename())) {
      best = p;
      best_time = t;
    }
  }
  return best;
}

}  // namespace dfx::collectors
