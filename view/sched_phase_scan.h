// A fast reader for the scheduler phases of a records file (artifacts.md
// §2: aicpu_scheduler_phases), which the converter streams twice from the
// file (SwimlaneReadOptions::stream_sched_phases) instead of keeping them.
//
// The swimlane collector writes every phase in one fixed shape:
//   {"kind": "dispatch", "start_cycles": N, "end_cycles": N, "loop_iter": N,
//    "tasks_processed": N[, "pop_hit": N, "pop_miss": N][, "task_id": N],
//    "shared_at_start": [N, N, N], "shared_at_end": [N, N, N]}
// FastForEachSchedPhase reads that subset of JSON with pointer scans over a
// 1 MiB window: any JSON whitespace, the keys SwimlaneRecords reads ("phase"
// too) in any order, plain strings (no escape) and non-negative integers of
// at most 19 digits. At the first byte outside the subset (an unknown key,
// an escape, a negative or fractional number, a phase longer than 4 KiB,
// malformed JSON, the end of the file) it stops and says so; the caller
// then reads with the generic reader (SwimlaneRecords::ForEachSchedPhase),
// whose result or error is what counts. For the subset both give the same
// phases.
//
// Thread-compatible; the records are only read.
#pragma once

#include <cstddef>
#include <functional>

#include "collectors/swimlane/swimlane_reader.h"
#include "common/status.h"

namespace dfx::view {

// The reader's window and the longest phase (with the blanks before it) it
// reads when the phase starts near the end of a window.
inline constexpr size_t kFastSchedPhaseWindow = 1 << 20;
inline constexpr size_t kMaxFastSchedPhase = 4096;

// Calls fn(thread, phase) for each phase of `records` (read with
// stream_sched_phases), in file order. true: every phase was read; false: a
// byte outside the subset was met, after fn was called for the phases before
// it. An error only when the file cannot be opened or read.
Result<bool> FastForEachSchedPhase(
    const collectors::SwimlaneRecords& records,
    const std::function<void(size_t, const collectors::SchedPhase&)>& fn);

}  // namespace dfx::view
