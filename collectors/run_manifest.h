// The run manifest (<dfx_outputs>/run_manifest.json; docs/design.md §1 step 5,
// §9): what an L2 or L3 run did, rank by rank and dispatch by dispatch, and every
// artifact with its size, checksum and status — including what is missing
// and why. One typed struct, one writer (WriteRunManifest), one reader
// (ReadRunManifest), used by the coordinator while it runs, by `gather` when
// it recovers files after a crash, and by the viewers (dfx-view --run).
//
// The JSON keeps the field names below (snake_case, in this order); states
// are the lower-case names of the enums. Value types; the functions are
// thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/run_manifest_capture.h"
#include "common/json.h"
#include "common/status.h"
#include "config/pass_plan.h"
#include "config/run_config.h"

namespace dfx::collectors {

// What kind of run wrote the manifest: an L2 run (one program on one local
// chip, its artifacts flat in dfx_outputs/; one rank 0 and one dispatch
// entry per pass, each with dir ".") or an L3 run (rank<N>/d<K>/).
enum class RunLevel { kL2, kL3 };
// The run as a whole.
enum class RunState {
  kStarting,     // agents are being launched / attached
  kRunning,      // dispatches are being sent and gathered
  kOk,           // every rank, dispatch and artifact succeeded
  kFailed,       // the run ended and something is missing (see the entries)
  kInterrupted,  // the coordinator stopped before the run ended (crash, signal)
};
// One rank (chip).
enum class RankState {
  kWaiting,      // no agent said HELLO / READY for it yet
  kReady,        // its agent is READY; dispatches may go to it
  kOk,           // all its dispatches ran
  kFailed,       // its agent died or a dispatch timed out: the rest of its dispatches did not run
  kInterrupted,  // the coordinator stopped (crash, signal) while the rank was waiting or ready
};
// One dispatch of one pass on one rank.
enum class DispatchState {
  kPending,  // queued, not yet sent
  kSent,     // sent to the agent, not yet accepted (as far as the coordinator knows)
  kRunning,  // the agent accepted it (queued on or running on its chip); a
             // short dispatch's acceptance arrives with its completion
  kOk,
  kFailed,
  kNotRun,       // never dispatched: its rank failed first
  kInterrupted,  // the coordinator stopped before it finished (what `gather` recovered is listed)
  // Its agent stopped (told to by an interrupted coordinator, or it gave
  // up on a paused one) with files of it in its spool, not yet gathered:
  // `dfx-coordinator gather` fetches them.
  kInSpool,
};
// One artifact file.
enum class ArtifactState {
  kStreaming,  // being received
  kOk,         // received, checksum verified, renamed into place
  kFailed,     // not stored (see error)
  kRecovered,  // stored later by `dfx-coordinator gather`
  // Refused because it would take the run past --max-run-bytes: the file is
  // in its agent's spool (`dfx-coordinator gather --max-run-bytes N` fetches it).
  kInSpool,
};

const char* RunLevelName(RunLevel l);
std::optional<RunLevel> ParseRunLevel(std::string_view name);
const char* RunStateName(RunState s);
const char* RankStateName(RankState s);
const char* DispatchStateName(DispatchState s);
const char* ArtifactStateName(ArtifactState s);
std::optional<RunState> ParseRunState(std::string_view name);
std::optional<RankState> ParseRankState(std::string_view name);
std::optional<DispatchState> ParseDispatchState(std::string_view name);
std::optional<ArtifactState> ParseArtifactState(std::string_view name);

struct ArtifactEntry {
  std::string path;  // relative to dfx_outputs, e.g. "rank0/d1/deps.json"
  uint64_t size = 0;
  std::optional<uint64_t> checksum;  // XXH64, written as "xxh64:<16 hex>"; set when ok/recovered
  ArtifactState status = ArtifactState::kStreaming;
  std::string error;  // empty = none (written as null)
  // Payload bytes it took on the wire (zstd-coded chunks count their frames);
  // unset until its stream ended, and in manifests older than the field.
  std::optional<uint64_t> wire_bytes;
  bool operator==(const ArtifactEntry&) const = default;
};

// One time a rank's agent lost its connection and came back within the
// reconnect window (docs/design.md §9): coordinator clock when it was taken
// back, and how long it was away.
struct ReconnectEntry {
  uint64_t at_ns = 0;
  uint64_t gap_ns = 0;
  bool operator==(const ReconnectEntry&) const = default;
};

struct RankEntry {
  int32_t rank = 0;
  std::optional<std::string> host;  // the agent's host, once it said HELLO
  std::optional<uint32_t> pid;
  RankState status = RankState::kWaiting;
  std::string error;
  // Agent clock minus coordinator clock, and the best round trip it was
  // measured over (the offset's uncertainty is half of it).
  std::optional<int64_t> clock_offset_ns;
  std::optional<uint64_t> clock_offset_rtt_ns;
  uint32_t dispatches = 0;  // dispatch entries of this rank (all passes)
  // The address its connection came from (the coordinator's view), once it said HELLO.
  std::optional<std::string> address;
  // Coordinator clock: when its agent said HELLO, and READY (the chips are up).
  std::optional<uint64_t> hello_ns;
  std::optional<uint64_t> ready_ns;
  std::vector<ReconnectEntry> reconnects;  // written only when there is one
  bool operator==(const RankEntry&) const = default;
};

struct DispatchEntry {
  int32_t rank = 0;
  uint32_t k = 0;  // its directory is DispatchDirPath(rank, k) (written as "dir"; L2: ".")
  std::string program;
  config::PassKind pass = config::PassKind::kSingle;
  DispatchState status = DispatchState::kPending;
  std::string error;
  uint64_t start_ns = 0;  // coordinator clock: sent
  uint64_t end_ns = 0;    // coordinator clock: finished (DispatchDone, or failed)
  uint64_t tasks_executed = 0;
  // The number of artifacts the agent reported in DispatchDone (unset until
  // then); a dispatch is ok only if that many arrived verified.
  std::optional<uint32_t> artifact_count;
  std::vector<ArtifactEntry> artifacts;
  // Coordinator clock, for the host lane of the run timeline: the agent
  // accepted it (dated back by the time the agent held its
  // DispatchAccepted), its first artifact stream began, and its last
  // artifact was verified and renamed into place (unset until then).
  std::optional<uint64_t> accepted_ns;
  std::optional<uint64_t> stream_ns;
  std::optional<uint64_t> verified_ns;
  // From DispatchDone (unset until then): the chip's makespan on its own
  // clock (first task dispatched to last retired) and the agent's host wall
  // time of the execution.
  std::optional<uint64_t> makespan_ns;
  std::optional<uint64_t> agent_wall_ns;
  // Which collectors it armed and why (run_manifest_capture.h); unset
  // until it is sent (and in manifests older than capture selection).
  std::optional<DispatchCapture> capture;
  bool operator==(const DispatchEntry&) const = default;
};

// What one `dfx-coordinator gather` recovered (several spools of one gather
// accumulate into one record).
struct GatherEntry {
  std::string gather_id;
  bool ok = false;  // written as "status": "ok" | "failed"
  std::vector<ArtifactEntry> recovered;
  std::vector<std::string> failed;  // "path: why"
  bool operator==(const GatherEntry&) const = default;
};

// How artifact bytes travelled (--wire-compression): the mode asked for,
// what the agents chose, and the totals of the streams received.
struct WireEntry {
  std::string compression;  // "auto" | "zstd" | "off"
  std::string chosen;       // e.g. "zstd on 12 of 14 streams"
  uint64_t artifact_bytes = 0;
  uint64_t wire_bytes = 0;
  bool operator==(const WireEntry&) const = default;
};

// The run's byte budget (--max-run-bytes) and the streams it refused.
struct BudgetEntry {
  uint64_t max_run_bytes = 0;
  std::vector<std::string> over_budget;  // artifact paths left in spools
  std::string note;                      // what happened and the gather that fetches them
  bool operator==(const BudgetEntry&) const = default;
};

struct RunManifest {
  uint64_t session = 0;  // written as 16 hex digits
  RunState status = RunState::kStarting;
  RunLevel level = RunLevel::kL3;  // "L2" | "L3" (a manifest without it is L3's)
  std::string plan;                // the plan's name (L2: the program file's stem)
  std::string work_dir;            // absolute
  std::string launcher;            // "local" | "mpirun" | "srun" | "attach"; L2: "exec"
  std::string endpoint;  // what agents were told to dial (--advertise or derived from --bind)
  std::string bind;      // what the coordinator listened on, with its real port
  // Coordinator clock: when it started launching agents (attach: waiting for them).
  std::optional<uint64_t> launch_ns;
  config::RunConfig run_config;  // as the user asked (passes derive from it)
  std::vector<config::PassKind> passes;
  std::vector<RankEntry> ranks;
  std::vector<DispatchEntry> dispatches;
  uint64_t bytes_gathered = 0;
  std::vector<std::string> merged_swimlane;  // converted traces, relative to dfx_outputs
  std::optional<GatherEntry> gather;
  std::optional<WireEntry> wire;      // written when set ("wire")
  std::optional<BudgetEntry> budget;  // written when the run had a budget ("budget")
  // The `dfx-coordinator capture` changes the run applied, in order.
  std::vector<CaptureChange> capture_changes;
  bool operator==(const RunManifest&) const = default;
};

Json RunManifestToJson(const RunManifest& manifest);
// RunManifestToJson(manifest).dump(2) and a newline, byte for byte, made one
// dispatch row at a time (what WriteRunManifest writes).
std::string RunManifestText(const RunManifest& manifest);
// Errors name `origin`, the JSON path and what was expected.
Result<RunManifest> RunManifestFromJson(const Json& json, const std::string& origin);

// The one writer: <dir>/run_manifest.json, atomically (temporary + rename).
Status WriteRunManifest(const std::filesystem::path& dir, const RunManifest& manifest);
// The one reader. The file is bounded (kMaxRunManifestBytes) before parsing.
Result<RunManifest> ReadRunManifest(const std::filesystem::path& path);
inline constexpr uint64_t kMaxRunManifestBytes = 1ull << 30;

}  // namespace dfx::collectors
