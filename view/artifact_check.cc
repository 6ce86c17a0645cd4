#include "view/artifact_check.h"

#include <fmt/format.h>

#include <ostream>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"

namespace dfx::view {

namespace fs = std::filesystem;

namespace {

constexpr int kMaxLevelsUp = 4;

// `path` relative to `root` in the manifest's spelling ("rank0/d1/x"), or
// nullopt when it is not under it.
std::optional<std::string> RelativeTo(const fs::path& path, const fs::path& root) {
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(fs::absolute(path, ec), ec);
  const fs::path b = fs::weakly_canonical(fs::absolute(root, ec), ec);
  if (ec) return std::nullopt;
  const fs::path rel = a.lexically_relative(b);
  if (rel.empty() || *rel.begin() == "..") return std::nullopt;
  return rel == "." ? std::string() : rel.generic_string();
}

Result<collectors::RunManifest> LoadManifest(const fs::path& input, fs::path* manifest_path) {
  auto found = FindRunManifest(input);
  if (!found) return NotFound("no run manifest");
  *manifest_path = *found;
  return collectors::ReadRunManifest(*found);
}

}  // namespace

std::optional<fs::path> FindRunManifest(const fs::path& input) {
  std::error_code ec;
  fs::path dir = fs::absolute(input, ec);
  if (ec) return std::nullopt;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) dir = dir.parent_path();
  for (int level = 0; level <= kMaxLevelsUp && !dir.empty(); ++level) {
    const fs::path candidate = dir / collectors::kRunManifestFile;
    if (fs::is_regular_file(fs::symlink_status(candidate, ec))) return candidate;
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  return std::nullopt;
}

Status CheckAgainstManifest(const fs::path& input, Verify verify, std::ostream& err,
                            bool with_args_bin) {
  if (verify == Verify::kSkip) return Status::Ok();
  fs::path manifest_path;
  auto manifest = LoadManifest(input, &manifest_path);
  if (!manifest.ok()) {
    if (manifest.status().code() != Code::kNotFound || !manifest_path.empty()) {
      err << "Warning: cannot check the artifacts' checksums: " << manifest.status().message()
          << "\n";
    }
    return Status::Ok();
  }
  std::error_code ec;
  const fs::path scope =
      fs::is_directory(fs::symlink_status(input, ec)) ? input : input.parent_path();
  const fs::path root = manifest_path.parent_path();
  std::optional<std::string> prefix = RelativeTo(scope.empty() ? fs::path(".") : scope, root);
  if (!prefix) return Status::Ok();
  if (!prefix->empty()) *prefix += "/";
  for (const collectors::DispatchEntry& d : manifest->dispatches) {
    for (const collectors::ArtifactEntry& a : d.artifacts) {
      if (!a.checksum || a.path.compare(0, prefix->size(), *prefix) != 0) continue;
      const fs::path file = root / a.path;
      if (!with_args_bin && file.filename() == collectors::kArgsDumpBinName) continue;
      if (!fs::is_regular_file(fs::symlink_status(file, ec))) continue;  // the viewer says
      DFX_ASSIGN_OR_RETURN(uint64_t actual, ChecksumFile(file));
      if (actual == *a.checksum) continue;
      const std::string text = fmt::format(
          "{}: checksum xxh64:{} does not match xxh64:{} recorded in {}: the file changed after "
          "the run stored it",
          file.string(), Hex64(actual), Hex64(*a.checksum), manifest_path.string());
      if (verify == Verify::kRefuse) {
        return InvalidArgument(text + "; --no-verify reads it anyway");
      }
      err << "Warning: " << text << " (read anyway: --no-verify)\n";
    }
  }
  return Status::Ok();
}

const char* const kNotCapturedByRequest = "not captured (by request)";

std::optional<RunHealth> ReadRunHealth(const fs::path& input, std::ostream& err) {
  fs::path manifest_path;
  auto manifest = LoadManifest(input, &manifest_path);
  if (!manifest.ok()) {
    if (!manifest_path.empty()) {
      err << "Warning: " << manifest.status().message() << "\n";
    }
    return std::nullopt;
  }
  RunHealth health;
  health.status = collectors::RunStateName(manifest->status);
  health.work_dir = manifest->work_dir;
  for (const collectors::RankEntry& r : manifest->ranks) {
    if (r.status == collectors::RankState::kOk) continue;
    health.not_ok.push_back(
        {fmt::format("rank {}", r.rank), collectors::RankStateName(r.status), r.error});
  }
  for (const collectors::DispatchEntry& d : manifest->dispatches) {
    if (d.capture && !d.capture->captured && d.pass != config::PassKind::kGraph) {
      health.not_captured.push_back(
          {collectors::DispatchDirPath(d.rank, d.k), kNotCapturedByRequest, d.capture->by});
    }
    if (d.status == collectors::DispatchState::kOk) continue;
    health.not_ok.push_back({collectors::DispatchDirPath(d.rank, d.k),
                             collectors::DispatchStateName(d.status), d.error});
  }
  return health;
}

}  // namespace dfx::view
