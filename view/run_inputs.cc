#include "view/run_inputs.h"

#include <fmt/format.h>

#include <ostream>
#include <system_error>

#include "collectors/artifact_layout.h"
#include "common/json.h"

namespace dfx::view {

namespace fs = std::filesystem;

namespace {

bool IsFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The plan's program name of a dispatch directory; at L2 (no
// dispatch_program.json) the orchestrator's name from the name map.
std::string ProgramOf(const fs::path& dir) {
  const fs::path label = dir / collectors::kDispatchProgramFile;
  if (IsFile(label)) {
    auto j = ReadJsonFile(label);
    if (j.ok() && j->is_object() && j->contains("program") && (*j)["program"].is_string()) {
      return (*j)["program"].get<std::string>();
    }
  }
  auto maps = collectors::SiblingNameMaps(dir);
  if (maps.size() == 1) {
    auto names = collectors::ReadNameMap(maps[0]);
    if (names.ok() && names->orchestrator_name) return *names->orchestrator_name;
  }
  return "?";
}

}  // namespace

Result<std::vector<RunDispatch>> ListRunDispatches(const fs::path& input) {
  std::error_code ec;
  if (!fs::is_directory(input, ec)) {
    return NotFound(fmt::format(
        "{}: not a directory (expected W/dfx_outputs of a run, or one rank<N>/d<K> directory)",
        input.string()));
  }
  std::vector<RunDispatch> out;
  for (const collectors::DispatchDir& d : collectors::ListDispatchDirs(input)) {
    RunDispatch r;
    r.rank = d.rank;
    r.k = d.k;
    r.dir = input / collectors::DispatchDirPath(d);
    r.program = ProgramOf(r.dir);
    out.push_back(std::move(r));
  }
  if (!out.empty()) return out;
  if (IsFile(input / collectors::kSwimlaneRecordsFile)) {
    // One dispatch: rank<N>/d<K>/ itself, or the flat dfx_outputs/ of an L2 run.
    RunDispatch r;
    r.dir = input;
    const fs::path abs = fs::absolute(input, ec).lexically_normal();
    fs::path leaf = abs.filename().empty() ? abs.parent_path() : abs;
    auto k = collectors::ParseDispatchDirName(leaf.filename().string());
    auto rank = collectors::ParseRankDirName(leaf.parent_path().filename().string());
    if (k && rank) {
      r.rank = *rank;
      r.k = *k;
    }
    r.program = ProgramOf(input);
    out.push_back(std::move(r));
    return out;
  }
  return NotFound(fmt::format(
      "{}: no rank<N>/d<K>/ directories and no {} in it (expected W/dfx_outputs of a run with "
      "--enable-chip-swimlane, or one rank<N>/d<K> directory)",
      input.string(), collectors::kSwimlaneRecordsFile));
}

std::optional<fs::path> DefaultRunInput() {
  std::error_code ec;
  const fs::path outputs = collectors::kDfxOutputsDirName;
  if (fs::is_directory(outputs, ec)) return outputs;
  const fs::path here = ".";
  if (IsFile(here / collectors::kRunManifestFile) ||
      IsFile(here / collectors::kSwimlaneRecordsFile) ||
      !collectors::ListDispatchDirs(here).empty()) {
    return here;
  }
  return std::nullopt;
}

Result<collectors::NameMap> LoadNameMapFor(const fs::path& dir,
                                           const std::optional<fs::path>& explicit_path,
                                           const std::string& what, std::ostream& err) {
  if (explicit_path) return collectors::ReadNameMap(*explicit_path);
  collectors::NameMap names;
  auto maps = collectors::SiblingNameMaps(dir);
  if (maps.size() == 1) {
    auto loaded = collectors::ReadNameMap(maps[0]);
    if (loaded.ok()) return std::move(loaded).value();
    err << "Warning: couldn't read " << maps[0].string() << ": " << loaded.status().message()
        << "\n";
  } else if (maps.size() > 1) {
    err << "Warning: multiple sibling name maps found next to " << what
        << "; pass --func-names explicitly.\n";
  }
  return names;
}

std::optional<collectors::TaskGraph> LoadDepsIfPresent(const fs::path& path, std::ostream& err) {
  if (!IsFile(path)) return std::nullopt;
  auto loaded = collectors::ReadTaskGraph(path);
  if (loaded.ok()) return std::move(loaded).value();
  err << "Warning: couldn't read " << path.string() << ": " << loaded.status().message() << "\n";
  return std::nullopt;
}

Result<DispatchData> LoadDispatch(const RunDispatch& d, std::ostream& err) {
  const fs::path records = d.dir / collectors::kSwimlaneRecordsFile;
  if (!IsFile(records)) {
    return NotFound(fmt::format("{}: no {} (run with --enable-chip-swimlane)", d.dir.string(),
                                collectors::kSwimlaneRecordsFile));
  }
  DispatchData out;
  collectors::SwimlaneReadOptions options;
  options.stream_sched_phases = true;
  DFX_ASSIGN_OR_RETURN(out.records, collectors::ReadSwimlaneRecords(records, options));
  out.deps = LoadDepsIfPresent(d.dir / collectors::kDepsFile, err);
  DFX_ASSIGN_OR_RETURN(out.names, LoadNameMapFor(d.dir, std::nullopt, records.string(), err));
  return out;
}

}  // namespace dfx::view
