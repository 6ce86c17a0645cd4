// Name maps (artifacts.md §3): func_id → kernel name, plus the orchestrator
// name. Plain value type.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace dfx::view {

struct NameMap {
  std::map<int, std::string> names;  // func_id (or callable index) → name
  std::optional<std::string> orchestrator_name;
  bool empty() const { return names.empty() && !orchestrator_name; }
  const std::string* Find(int func_id) const {
    auto it = names.find(func_id);
    return it == names.end() ? nullptr : &it->second;
  }
};

// Loads the SceneTest shape {"callable_id_to_name": {...}, "orchestrator_name": ...}
// or a flat {"<func_id>": "<name>"} dict.
Result<NameMap> LoadNameMap(const std::filesystem::path& path);

// `name_map*.json` files in `dir`, sorted by name.
std::vector<std::filesystem::path> SiblingNameMaps(const std::filesystem::path& dir);
// The newest (mtime, then name) sibling name map, if any (deps viewer rule).
std::optional<std::filesystem::path> NewestNameMap(const std::filesystem::path& dir);

// Bijective base-26 letters of n: 0→"a", 25→"z", 26→"aa".
std::string FuncLetters(int n);

}  // namespace dfx::view
