// The keys of run_manifest.json (docs/design.md §7), written once for its writer
// (RunManifestToJson / RunManifestText) and its reader (RunManifestFromJson),
// with the state names every status field takes. Constants only.
#pragma once

#include "collectors/key_text.h"

namespace dfx::collectors::run_manifest_keys {

// The top-level object.
inline constexpr KeyText kSession = "session";
inline constexpr KeyText kStatus = "status";  // also ranks[], dispatches[], artifacts, gather
inline constexpr KeyText kLevel = "level";
inline constexpr KeyText kPlan = "plan";
inline constexpr KeyText kWorkDir = "work_dir";
inline constexpr KeyText kLauncher = "launcher";
inline constexpr KeyText kEndpoint = "endpoint";
inline constexpr KeyText kBind = "bind";
inline constexpr KeyText kLaunchNs = "launch_ns";
inline constexpr KeyText kRunConfig = "run_config";
inline constexpr KeyText kPasses = "passes";
inline constexpr KeyText kRanks = "ranks";
inline constexpr KeyText kDispatches = "dispatches";  // also ranks[]: a count
inline constexpr KeyText kBytesGathered = "bytes_gathered";
inline constexpr KeyText kMergedSwimlane = "merged_swimlane";
inline constexpr KeyText kGather = "gather";
inline constexpr KeyText kWire = "wire";
inline constexpr KeyText kCompression = "compression";       // wire.
inline constexpr KeyText kChosen = "chosen";                 // wire.
inline constexpr KeyText kArtifactBytes = "artifact_bytes";  // wire.
inline constexpr KeyText kWireBytes = "wire_bytes";          // wire. and artifacts
inline constexpr KeyText kBudget = "budget";
inline constexpr KeyText kMaxRunBytes = "max_run_bytes";       // budget.
inline constexpr KeyText kOverBudget = "over_budget";          // budget.
inline constexpr KeyText kNote = "note";                       // budget.
inline constexpr KeyText kCaptureChanges = "capture_changes";  // run_manifest_capture.h

// ranks[].
inline constexpr KeyText kRank = "rank";  // also dispatches[]
inline constexpr KeyText kHost = "host";
inline constexpr KeyText kAddress = "address";
inline constexpr KeyText kPid = "pid";
inline constexpr KeyText kError = "error";  // also dispatches[] and artifacts
inline constexpr KeyText kClockOffsetNs = "clock_offset_ns";
inline constexpr KeyText kClockOffsetRttNs = "clock_offset_rtt_ns";
inline constexpr KeyText kHelloNs = "hello_ns";
inline constexpr KeyText kReadyNs = "ready_ns";
inline constexpr KeyText kReconnects = "reconnects";  // [{at_ns, gap_ns}], only when any
inline constexpr KeyText kAtNs = "at_ns";
inline constexpr KeyText kGapNs = "gap_ns";

// dispatches[].
inline constexpr KeyText kK = "k";
inline constexpr KeyText kDir = "dir";
inline constexpr KeyText kProgram = "program";
inline constexpr KeyText kPass = "pass";
inline constexpr KeyText kStartNs = "start_ns";
inline constexpr KeyText kEndNs = "end_ns";
inline constexpr KeyText kAcceptedNs = "accepted_ns";
inline constexpr KeyText kStreamNs = "stream_ns";
inline constexpr KeyText kVerifiedNs = "verified_ns";
inline constexpr KeyText kTasksExecuted = "tasks_executed";
inline constexpr KeyText kMakespanNs = "makespan_ns";
inline constexpr KeyText kAgentWallNs = "agent_wall_ns";
inline constexpr KeyText kArtifactCount = "artifact_count";
inline constexpr KeyText kArtifacts = "artifacts";
inline constexpr KeyText kCapture = "capture";  // run_manifest_capture.h

// An artifact (dispatches[].artifacts[], gather.recovered[]).
inline constexpr KeyText kPath = "path";
inline constexpr KeyText kSize = "size";
inline constexpr KeyText kChecksum = "checksum";
inline constexpr KeyText kChecksumPrefix = "xxh64:";  // then 16 hex digits

// gather.
inline constexpr KeyText kGatherId = "gather_id";
inline constexpr KeyText kRecovered = "recovered";  // also an artifact state
inline constexpr KeyText kFailed = "failed";        // also every state enum

// The state names (RunState, RankState, DispatchState, ArtifactState).
// level.
inline constexpr KeyText kLevelL2 = "L2";
inline constexpr KeyText kLevelL3 = "L3";
// Dispatch dir of an L2 run: the artifacts lie in dfx_outputs/ itself.
inline constexpr KeyText kL2DispatchDir = ".";
inline constexpr KeyText kStarting = "starting";
inline constexpr KeyText kRunning = "running";
inline constexpr KeyText kOk = "ok";
inline constexpr KeyText kInterrupted = "interrupted";
inline constexpr KeyText kWaiting = "waiting";
inline constexpr KeyText kReady = "ready";
inline constexpr KeyText kPending = "pending";
inline constexpr KeyText kSent = "sent";
inline constexpr KeyText kNotRun = "not_run";
inline constexpr KeyText kInSpool = "in_spool";
inline constexpr KeyText kStreaming = "streaming";

}  // namespace dfx::collectors::run_manifest_keys
