#include "coordinator/stale_dirs.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "collectors/artifact_layout.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;

namespace {

// A directory is bounded in what is walked before it is removed.
constexpr size_t kMaxCheckedEntries = 1'000'000;

Status CannotRemove(const fs::path& dir, const std::string& why) {
  return FailedPrecondition(
      fmt::format("{}: the earlier run's dispatch directory cannot be removed ({}); the d<K> "
                  "numbering restarts every run, so it would pass for this run's: remove or "
                  "move it, then run again",
                  dir.string(), why));
}

// Why `dir` (a real directory on device `dev`) could not be removed by this
// process, or "" when nothing in it stands in the way.
std::string RemovalObstacle(const fs::path& dir, dev_t dev) {
  std::vector<fs::path> dirs = {dir};
  size_t seen = 0;
  while (!dirs.empty()) {
    const fs::path d = std::move(dirs.back());
    dirs.pop_back();
    struct stat st {};
    if (::lstat(d.c_str(), &st) != 0)
      return fmt::format("{}: {}", d.string(), std::strerror(errno));
    if (st.st_dev != dev) {
      return fmt::format("{}: {} is a mount point", std::strerror(EBUSY), d.string());
    }
    if (::access(d.c_str(), W_OK | X_OK) != 0) {
      return fmt::format("{}: {}", std::strerror(errno), d.string());
    }
    std::error_code ec;
    for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec)) {
      if (++seen > kMaxCheckedEntries) return "";  // the removal itself will tell
      if (it->symlink_status(ec).type() == fs::file_type::directory) dirs.push_back(it->path());
    }
    if (ec) return fmt::format("{}: {}", d.string(), ec.message());
  }
  return "";
}

}  // namespace

Status ClearStaleDispatchDirs(const fs::path& dfx_dir) {
  const std::vector<collectors::DispatchDir> stale = collectors::ListDispatchDirs(dfx_dir);
  struct stat root {};
  if (!stale.empty() && ::stat(dfx_dir.c_str(), &root) == 0) {
    for (const collectors::DispatchDir& d : stale) {
      const fs::path dir = dfx_dir / collectors::DispatchDirPath(d);
      // Its rank<N>/ must let it go too.
      if (::access(dir.parent_path().c_str(), W_OK | X_OK) != 0) {
        return CannotRemove(
            dir, fmt::format("{}: {}", std::strerror(errno), dir.parent_path().string()));
      }
      if (std::string why = RemovalObstacle(dir, root.st_dev); !why.empty()) {
        return CannotRemove(dir, why);
      }
    }
  }
  std::error_code ec;
  for (const collectors::DispatchDir& d : stale) {
    const fs::path dir = dfx_dir / collectors::DispatchDirPath(d);
    fs::remove_all(dir, ec);
    if (ec) return CannotRemove(dir, ec.message());
  }
  for (int32_t rank : collectors::ListRankDirs(dfx_dir)) {
    const fs::path dir = dfx_dir / collectors::RankDirName(rank);
    if (fs::is_empty(dir, ec)) fs::remove(dir, ec);
  }
  return Status::Ok();
}

}  // namespace dfx::coordinator
