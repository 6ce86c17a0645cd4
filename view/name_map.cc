#include "view/name_map.h"

#include <algorithm>
#include <cstdlib>
#include <system_error>

#include "common/json.h"

namespace dfx::view {

Result<NameMap> LoadNameMap(const std::filesystem::path& path) {
  DFX_ASSIGN_OR_RETURN(Json j, ReadJsonFile(path));
  if (!j.is_object()) return JsonError(path.string(), "$", "an object", j);
  NameMap map;
  const Json* table = &j;
  bool scene_shape =
      j.contains("callable_id_to_name") || j.contains("orchestrator_name") || j.contains("level");
  if (scene_shape) {
    if (j.contains("orchestrator_name") && j["orchestrator_name"].is_string()) {
      map.orchestrator_name = j["orchestrator_name"].get<std::string>();
    }
    static const Json kEmpty = Json::object();
    table = j.contains("callable_id_to_name") ? &j["callable_id_to_name"] : &kEmpty;
    if (!table->is_object()) {
      return JsonError(path.string(), "$.callable_id_to_name", "an object", *table);
    }
  }
  for (const auto& [key, value] : table->items()) {
    char* end = nullptr;
    long id = std::strtol(key.c_str(), &end, 10);
    if (end == key.c_str() || *end != '\0') {
      return JsonError(path.string(), "$." + key, "an integer func_id key", Json(key));
    }
    if (!value.is_string()) return JsonError(path.string(), "$." + key, "a name string", value);
    map.names[static_cast<int>(id)] = value.get<std::string>();
  }
  return map;
}

std::vector<std::filesystem::path> SiblingNameMaps(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir.empty() ? "." : dir, ec)) {
    std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.rfind("name_map", 0) == 0 && name.size() > 5 &&
        name.substr(name.size() - 5) == ".json") {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::filesystem::path> NewestNameMap(const std::filesystem::path& dir) {
  auto maps = SiblingNameMaps(dir);
  if (maps.empty()) return std::nullopt;
  std::error_code ec;
  auto best = maps.front();
  auto best_time = std::filesystem::last_write_time(best, ec);
  for (const auto& p : maps) {
    auto t = std::filesystem::last_write_time(p, ec);
    if (t > best_time || (t == best_time && p.filename() > best.filename())) {
      best = p;
      best_time = t;
    }
  }
  return best;
}

std::string FuncLetters(int n) {
  if (n < 0) return "";
  std::string s;
  long v = static_cast<long>(n) + 1;
  while (v > 0) {
    --v;
    s.push_back(static_cast<char>('a' + v % 26));
    v /= 26;
  }
  std::reverse(s.begin(), s.end());
  return s;
}

}  // namespace dfx::view
