#include "rank_agent/spool_dirs.h"

#include <system_error>

namespace dfx::rank_agent {

namespace fs = std::filesystem;

Status SpoolDirs::Claim(const fs::path& dir, const std::function<Status()>& then) {
  std::lock_guard<std::mutex> lock(mu_);
  std::error_code ec;
  fs::remove_all(dir, ec);
  claimed_.insert(dir);
  return then();
}

void SpoolDirs::Release(const fs::path& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  claimed_.erase(dir);
}

void SpoolDirs::PruneEmpty(fs::path dir, const fs::path& stop) {
  std::lock_guard<std::mutex> lock(mu_);
  std::error_code ec;
  while (!dir.empty() && dir != stop && !claimed_.count(dir) && fs::is_directory(dir, ec) &&
         fs::is_empty(dir, ec)) {
    fs::remove(dir, ec);
    dir = dir.parent_path();
  }
}

}  // namespace dfx::rank_agent
