#include "view/discovery.h"

#include "collectors/artifact_layout.h"

namespace dfx::view {

std::optional<std::filesystem::path> NewestUnder(const std::filesystem::path& root,
                                                 const std::string& name, bool recursive) {
  std::error_code ec;
  std::optional<std::filesystem::path> best;
  std::filesystem::file_time_type best_time;
  auto consider = [&](const std::filesystem::path& p) {
    if (!std::filesystem::exists(p, ec)) return;
    auto t = std::filesystem::last_write_time(p, ec);
    if (!best || t > best_time) {
      best = p;
      best_time = t;
    }
  };
  if (!std::filesystem::is_directory(root, ec)) return std::nullopt;
  if (recursive) {
    for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (it->path().filename() == name) consider(it->path());
    }
  } else {
    for (const auto& e : std::filesystem::directory_iterator(root, ec)) {
      if (e.is_directory()) consider(e.path() / name);
    }
  }
  return best;
}

std::optional<std::filesystem::path> FindDefaultInput(const std::string& name, bool recursive) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::optional<fs::path> best;
  fs::file_time_type best_time;
  auto consider = [&](const fs::path& p) {
    if (!fs::exists(p, ec) || fs::is_symlink(p, ec)) return;
    const auto t = fs::last_write_time(p, ec);
    if (!best || t > best_time) {
      best = p;
      best_time = t;
    }
  };
  if (auto ref = NewestUnder(kDefaultOutputsRoot, name, recursive)) consider(*ref);
  for (const fs::path& root : {fs::path(collectors::kDfxOutputsDirName), fs::path(".")}) {
    if (!fs::is_directory(root, ec)) continue;
    consider(root / name);
    for (const collectors::DispatchDir& d : collectors::ListDispatchDirs(root)) {
      consider(root / collectors::DispatchDirPath(d) / name);
    }
  }
  if (best && best->begin() != best->end() && *best->begin() == ".") {
    *best = best->lexically_relative(".");
  }
  return best;
}

std::string DefaultInputPlaces(const std::string& name) {
  return "./" + std::string(kDefaultOutputsRoot) + "/*/" + name + ", ./" +
         collectors::kDfxOutputsDirName + "/ and its rank<N>/d<K>/, or " +
         std::filesystem::current_path().string() + " and its rank<N>/d<K>/";
}

}  // namespace dfx::view
