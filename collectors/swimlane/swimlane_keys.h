// The keys of chip_swimlane_records.json (docs/formats.md §2), written once for
// its writer (SwimlaneRecorder::Export), its readers (ReadSwimlaneRecords,
// the phase streams, sched_phase_scan.h's fast scans) and every viewer.
// Constants only.
#pragma once

#include "collectors/key_text.h"

namespace dfx::collectors::swimlane_keys {

// The top-level object.
inline constexpr KeyText kLevel = "chip_swimlane_level";
inline constexpr KeyText kMetadata = "metadata";
inline constexpr KeyText kAicoreTasks = "aicore_tasks";
inline constexpr KeyText kAicpuTasks = "aicpu_tasks";
inline constexpr KeyText kSchedPhases = "aicpu_scheduler_phases";
inline constexpr KeyText kOrchPhases = "aicpu_orchestrator_phases";
inline constexpr KeyText kHostOrchPhases = "host_orchestrator_phases";
inline constexpr KeyText kHostUploads = "host_device_uploads";

// metadata.
inline constexpr KeyText kClockFreqHz = "clock_freq_hz";
inline constexpr KeyText kNumCores = "num_cores";
inline constexpr KeyText kCoreTypes = "core_types";
inline constexpr KeyText kCoreToThread = "core_to_thread";
inline constexpr KeyText kHostOrchestrationOriginNs = "host_orchestration_origin_ns";
inline constexpr KeyText kHostCapture = "host_capture";
inline constexpr KeyText kHostCaptureStatus = "status";
inline constexpr KeyText kTimelineRelation = "timeline_relation";
// core_types[] values.
inline constexpr KeyText kCoreAic = "aic";
inline constexpr KeyText kCoreAiv = "aiv";

// aicpu_scheduler_phases[][] (§2.4).
inline constexpr KeyText kKind = "kind";
inline constexpr KeyText kLegacyKind = "phase";  // the kind's older name; read, never written
inline constexpr KeyText kStartCycles = "start_cycles";
inline constexpr KeyText kEndCycles = "end_cycles";
inline constexpr KeyText kLoopIter = "loop_iter";
inline constexpr KeyText kTasksProcessed = "tasks_processed";
inline constexpr KeyText kPopHit = "pop_hit";
inline constexpr KeyText kPopMiss = "pop_miss";
inline constexpr KeyText kTaskId = "task_id";
inline constexpr KeyText kSharedAtStart = "shared_at_start";
inline constexpr KeyText kSharedAtEnd = "shared_at_end";

// kind values, one per scheduler phase kind (the writer's SchedPhaseKind,
// the reader's PhaseKind); the reader also takes the older names below.
inline constexpr KeyText kPhaseComplete = "complete";
inline constexpr KeyText kPhaseDispatch = "dispatch";
inline constexpr KeyText kPhaseRelease = "release";
inline constexpr KeyText kPhaseDummy = "dummy";
inline constexpr KeyText kPhaseEarlyDispatch = "early_dispatch";
inline constexpr KeyText kPhaseResolve = "resolve";
inline constexpr KeyText kPhaseDummyTask = "dummy_task";
inline constexpr KeyText kPhaseDrain = "drain";
inline constexpr KeyText kPhaseDrainPrepare = "drain_prepare";
inline constexpr KeyText kPhaseDrainPublish = "drain_publish";
inline constexpr KeyText kPhaseAsyncPoll = "async_poll";
inline constexpr KeyText kPhasePredicatedSkip = "predicated_skip";
inline constexpr KeyText kPhaseGraphPrepare = "graph_prepare";
inline constexpr KeyText kPhaseScan = "scan";
inline constexpr KeyText kPhasePoll = "poll";
inline constexpr KeyText kPhaseIdle = "idle";
inline constexpr KeyText kPhaseOther = "other";
inline constexpr KeyText kLegacyPhaseResolve = "fanout";          // read as resolve
inline constexpr KeyText kLegacyPhaseEarlyDispatch = "prestage";  // read as early_dispatch

// aicpu_orchestrator_phases[][] and host_orchestrator_phases[][] (§2.5):
// kSubmitIdx, kTaskId and start / end in cycles (device) or host ns.
inline constexpr KeyText kSubmitIdx = "submit_idx";
inline constexpr KeyText kStartHostNs = "start_host_ns";
inline constexpr KeyText kEndHostNs = "end_host_ns";

// host_device_uploads[]: kUploadPhase, kStartHostNs, kEndHostNs, kDetail.
inline constexpr KeyText kUploadPhase = "phase";
inline constexpr KeyText kDetail = "detail";

}  // namespace dfx::collectors::swimlane_keys
