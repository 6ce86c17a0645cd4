#include "view/discovery.h"

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

}  // namespace dfx::view
