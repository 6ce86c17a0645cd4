// The output layout (docs/design.md §1, §10; docs/formats.md §0.1): where dfx_outputs/ lives, the
// fixed artifact file names, the per-dispatch rank<N>/d<K>/ directories of an
// L3 run, and the run's own records. This header is the only place that
// formats or parses any of them (docs/design.md §11.12): writers, the coordinator, the
// agent, gather and the viewers all ask it.
//
// Temporary names ("<final>.tmp.<pid>", never a final name until renamed) are
// owned by common/file_util.h (TemporaryPathFor / IsTemporaryPath), where the
// atomic writer lives; everything that lists artifacts skips them.
//
// Pure functions over names, plus ListDispatchDirs (reads a directory; never
// follows a symbolic link). Thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_util.h"
#include "common/status.h"

namespace dfx::collectors {

// --- the five artifacts, relative to their output directory -------------------
inline constexpr const char* kSwimlaneRecordsFile = "chip_swimlane_records.json";
inline constexpr const char* kDepsFile = "deps.json";
inline constexpr const char* kArgsDumpDir = "args_dump";
inline constexpr const char* kArgsDumpManifestFile = "args_dump/args_dump.json";
inline constexpr const char* kArgsDumpBinFile = "args_dump/args.bin";
// The same two inside the args_dump/ directory.
inline constexpr const char* kArgsDumpManifestName = "args_dump.json";
inline constexpr const char* kArgsDumpBinName = "args.bin";
inline constexpr const char* kPmuFile = "pmu.csv";
inline constexpr const char* kScopeStatsDir = "scope_stats";
inline constexpr const char* kScopeStatsFile = "scope_stats/scope_stats.jsonl";

// --- derived files beside them --------------------------------------------------
// The name map of one L3 dispatch (rank<N>/d<K>/name_map.json).
inline constexpr const char* kDispatchNameMapFile = "name_map.json";
// The plan's name for the program a dispatch ran (rank<N>/d<K>/).
inline constexpr const char* kDispatchProgramFile = "dispatch_program.json";
// The run-level trace of every rank and dispatch (dfx-view swimlane --run).
inline constexpr const char* kRunSwimlaneFile = "merged_run_swimlane.json";
// The converted trace beside a records file when no output is named
// (dfx-view swimlane, as the reference converter names it).
inline constexpr const char* kMergedSwimlaneFile = "merged_swimlane.json";

// name_map_<work_dir.name>.json, the L2 name map (docs/run-config.md §2.4).
std::string L2NameMapFileName(const std::filesystem::path& work_dir);
// True for name_map*.json (both forms; what the viewers discover).
bool IsNameMapFileName(std::string_view file_name);
// merged_swimlane_<YYYYmmdd_HHMMSS>.json, the converted per-directory trace.
std::string MergedSwimlaneFileName(std::string_view timestamp);
// True for merged_swimlane*.json.
bool IsMergedSwimlaneFileName(std::string_view file_name);

// --- where things live ------------------------------------------------------------
inline constexpr const char* kDfxOutputsDirName = "dfx_outputs";
// <work_dir>/dfx_outputs: the artifacts of an L2 run lie flat in it; an L3
// run's are under rank<N>/d<K>/ in it.
std::filesystem::path DfxOutputsDir(const std::filesystem::path& work_dir);

// The run's own records (the coordinator writes them; gather and the viewers
// read them): the typed run manifest and the session record.
inline constexpr const char* kRunManifestFile = "run_manifest.json";
inline constexpr const char* kSessionFile = ".session.json";
// Every artifact of the run with the command that renders it (the console
// prints the summary and the verdict instead of the paths).
inline constexpr const char* kArtifactsReadmeFile = "README.txt";
// The run report (`dfx-view report`, docs/formats.md §16), in dfx_outputs/ after an L3 run.
inline constexpr const char* kRunReportFile = "report.html";
// Where they go: dfx_outputs/ when any DFX flag is on; the work dir itself
// otherwise (no flag, no dfx_outputs/: docs/run-config.md §2.12 row 1).
std::filesystem::path RunRecordDir(const std::filesystem::path& work_dir, bool any_dfx);
// The directory that holds the session record of the last run in `work_dir`
// (either place above); nullopt when neither does.
std::optional<std::filesystem::path> FindRunRecordDir(const std::filesystem::path& work_dir);

// The lock every dfx-coordinator run and gather holds on its work dir (a
// flock of the directory itself: nothing else lands in the work dir). The
// error of a work dir in use names the pid and command that hold it.
Result<DirectoryLock> LockWorkDir(const std::filesystem::path& work_dir);

// Default spool root of locally launched agents, and the L2 device state.
inline constexpr const char* kSpoolDirName = ".dfx_spool";
inline constexpr const char* kDeviceStateDirName = "device_state";
// The device memory of the one L2 chip inside <work_dir>/device_state/.
inline constexpr const char* kDeviceStateFile = "chip0.json";

// --- the agents' spools (docs/design.md §9) -----------------------------------------------
// An agent keeps each artifact of a session in <spool_root>/<session hex>/
// rank<N>/d<K>/ until the coordinator confirms it; gather reads it there.
std::filesystem::path SessionSpoolDir(const std::filesystem::path& spool_root, uint64_t session_id);
// "dfx-spool-<uid>": the spool root, under $TMPDIR, of an agent given no --spool.
std::string DefaultSpoolDirName(uint32_t uid);

// --- rank<N>/d<K> ---------------------------------------------------------------
struct DispatchDir {
  int32_t rank = 0;
  uint32_t k = 0;
  bool operator==(const DispatchDir&) const = default;
  auto operator<=>(const DispatchDir&) const = default;
};

std::string RankDirName(int32_t rank);                  // "rank3"
std::string DispatchDirName(uint32_t k);                // "d1"
std::string DispatchDirPath(int32_t rank, uint32_t k);  // "rank3/d1"
inline std::string DispatchDirPath(const DispatchDir& d) { return DispatchDirPath(d.rank, d.k); }
// Strict inverses: "rank3" -> 3 (digits only, no sign, no leading zero but
// "rank0", fits int32), "d1" -> 1, "rank3/d1" -> {3, 1}; anything else nullopt.
std::optional<int32_t> ParseRankDirName(std::string_view name);
std::optional<uint32_t> ParseDispatchDirName(std::string_view name);
std::optional<DispatchDir> ParseDispatchDirPath(std::string_view rel);
// The dispatch directory an artifact path (relative to dfx_outputs) lies in,
// e.g. "rank3/d1/args_dump/args.bin" -> {3, 1}; nullopt for an L2 path.
std::optional<DispatchDir> DispatchDirOf(std::string_view artifact_rel);

// Every rank<N>/d<K>/ directory under `root`, sorted by (rank, k). Real
// directories only: a symbolic link (at either level) is skipped, never
// followed.
std::vector<DispatchDir> ListDispatchDirs(const std::filesystem::path& root);
// Every rank<N>/ directory under `root` (real directories only), sorted.
std::vector<int32_t> ListRankDirs(const std::filesystem::path& root);

// Every regular file under `dir`, relative to it, sorted. Symbolic links are
// neither listed nor followed; temporary files (common/file_util.h) and, when
// `skip_hidden`, names starting with '.' are skipped.
std::vector<std::string> ListArtifactFiles(const std::filesystem::path& dir,
                                           bool skip_hidden = false);

}  // namespace dfx::collectors
