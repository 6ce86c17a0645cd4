#include "collectors/artifact_layout.h"

#include <algorithm>
#include <charconv>
#include <system_error>

#include "common/file_util.h"

namespace dfx::collectors {

namespace fs = std::filesystem;

namespace {

// Digits only, no sign, no leading zero (except "0"), within `max`.
std::optional<uint64_t> ParseIndex(std::string_view digits, uint64_t max) {
  if (digits.empty() || digits.size() > 10) return std::nullopt;
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || v > max) return std::nullopt;
  return v;
}

bool IsRealDirectory(const fs::directory_entry& entry) {
  std::error_code ec;
  return entry.is_directory(ec) && !entry.is_symlink(ec);
}

}  // namespace

std::string L2NameMapFileName(const fs::path& work_dir) {
  fs::path p = work_dir.lexically_normal();
  std::string label = p.filename().string();
  if (label.empty()) label = p.parent_path().filename().string();
  return "name_map_" + label + ".json";
}

bool IsNameMapFileName(std::string_view n) {
  return n.size() >= 13 && n.substr(0, 8) == "name_map" && n.substr(n.size() - 5) == ".json";
}

std::string MergedSwimlaneFileName(std::string_view timestamp) {
  return "merged_swimlane_" + std::string(timestamp) + ".json";
}

bool IsMergedSwimlaneFileName(std::string_view n) {
  return n.size() >= 20 && n.substr(0, 15) == "merged_swimlane" &&
         n.substr(n.size() - 5) == ".json";
}

fs::path DfxOutputsDir(const fs::path& work_dir) { return work_dir / kDfxOutputsDirName; }

fs::path RunRecordDir(const fs::path& work_dir, bool any_dfx) {
  return any_dfx ? DfxOutputsDir(work_dir) : work_dir;
}

std::optional<fs::path> FindRunRecordDir(const fs::path& work_dir) {
  std::error_code ec;
  for (const fs::path& dir : {DfxOutputsDir(work_dir), work_dir}) {
    if (fs::is_regular_file(fs::symlink_status(dir / kSessionFile, ec))) return dir;
  }
  return std::nullopt;
}

Result<DirectoryLock> LockWorkDir(const fs::path& work_dir) {
  return DirectoryLock::Acquire(work_dir, "work dir");
}

fs::path SessionSpoolDir(const fs::path& spool_root, uint64_t session_id) {
  return spool_root / Hex64(session_id);
}

std::string DefaultSpoolDirName(uint32_t uid) { return "dfx-spool-" + std::to_string(uid); }

std::string RankDirName(int32_t rank) { return "rank" + std::to_string(rank); }
std::string DispatchDirName(uint32_t k) { return "d" + std::to_string(k); }
std::string DispatchDirPath(int32_t rank, uint32_t k) {
  return RankDirName(rank) + "/" + DispatchDirName(k);
}

std::optional<int32_t> ParseRankDirName(std::string_view name) {
  if (name.substr(0, 4) != "rank") return std::nullopt;
  auto v = ParseIndex(name.substr(4), 2147483647ull);
  if (!v) return std::nullopt;
  return static_cast<int32_t>(*v);
}

std::optional<uint32_t> ParseDispatchDirName(std::string_view name) {
  if (name.substr(0, 1) != "d") return std::nullopt;
  auto v = ParseIndex(name.substr(1), 4294967295ull);
  if (!v) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

std::optional<DispatchDir> ParseDispatchDirPath(std::string_view rel) {
  const size_t slash = rel.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto rank = ParseRankDirName(rel.substr(0, slash));
  auto k = ParseDispatchDirName(rel.substr(slash + 1));
  if (!rank || !k) return std::nullopt;
  return DispatchDir{*rank, *k};
}

std::optional<DispatchDir> DispatchDirOf(std::string_view rel) {
  const size_t first = rel.find('/');
  if (first == std::string_view::npos) return std::nullopt;
  const size_t second = rel.find('/', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  return ParseDispatchDirPath(rel.substr(0, second));
}

std::vector<int32_t> ListRankDirs(const fs::path& root) {
  std::vector<int32_t> ranks;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!IsRealDirectory(entry)) continue;
    if (auto r = ParseRankDirName(entry.path().filename().string())) ranks.push_back(*r);
  }
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

std::vector<DispatchDir> ListDispatchDirs(const fs::path& root) {
  std::vector<DispatchDir> dirs;
  std::error_code ec;
  for (int32_t rank : ListRankDirs(root)) {
    for (const auto& entry : fs::directory_iterator(root / RankDirName(rank), ec)) {
      if (!IsRealDirectory(entry)) continue;
      if (auto k = ParseDispatchDirName(entry.path().filename().string())) {
        dirs.push_back({rank, *k});
      }
    }
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

std::vector<std::string> ListArtifactFiles(const fs::path& dir, bool skip_hidden) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return files;
  // recursive_directory_iterator does not follow directory links by default.
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_symlink(ec) || !it->is_regular_file(ec)) continue;
    std::string rel = it->path().lexically_relative(dir).generic_string();
    if (rel.empty() || IsTemporaryPath(rel)) continue;
    if (skip_hidden && rel[0] == '.') continue;
    files.push_back(std::move(rel));
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace dfx::collectors
