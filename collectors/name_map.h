// Name maps (docs/formats.md §3): func_id (or callable index) → kernel name, plus
// the orchestrator name. The one owner of the format: the writer the agent and
// the L2 exec path call, the reader every viewer calls, and the discovery of a
// name map beside the artifacts it names.
//
// NameMap is a plain value type. The functions are thread-safe.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dfx::collectors {

struct NameMap {
  int level = 2;  // 2: orchestration + incores; 3: a callables list
  // Written as null when unset or empty.
  std::optional<std::string> orchestrator_name;
  // In write (file) order; the key "callable_id_to_name" is omitted when empty.
  std::vector<std::pair<int, std::string>> callable_id_to_name;

  // The name of `func_id`, or null. A later entry wins over an earlier one
  // with the same id (as a later key wins in the file).
  const std::string* Find(int func_id) const;
};

// Writes {"level", "orchestrator_name", "callable_id_to_name"} indented by 2,
// through a temporary name.
Status WriteNameMap(const std::filesystem::path& path, const NameMap& map);

// Reads the SceneTest shape {"level", "orchestrator_name", "callable_id_to_name"}
// or a flat {"<func_id>": "<name>"} dict. Errors name the file, the JSON path
// and what was expected.
Result<NameMap> ReadNameMap(const std::filesystem::path& path);

// The name_map*.json files (collectors/artifact_layout.h) in `dir`, sorted by name.
std::vector<std::filesystem::path> SiblingNameMaps(const std::filesystem::path& dir);
// The newest (mtime, then name) sibling name map, if any.
std::optional<std::filesystem::path> NewestNameMap(const std::filesystem::path& dir);

}  // namespace dfx::collectors
