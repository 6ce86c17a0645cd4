// A fast reader for the scheduler and orchestrator phases of a records file (docs/formats.md
// §2: aicpu_scheduler_phases). With SwimlaneReadOptions::stream_sched_phases
// the phases are not kept: ReadSwimlaneRecords' first pass reads them once
// (for the base time and the counts, and for a caller that asks to see them,
// SwimlaneReadOptions::see_sched_phase), and the converter streams them once
// more from the file to draw them (twice without a first-pass digest).
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
#include <cstdint>
#include <filesystem>
#include <functional>

#include "collectors/swimlane/swimlane_reader.h"
#include "common/status.h"

namespace dfx::collectors {

// The reader's window and the longest phase (with the blanks before it) it
// reads when the phase starts near the end of a window.
inline constexpr size_t kFastSchedPhaseWindow = 1 << 20;
inline constexpr size_t kMaxFastSchedPhase = 4096;

// What FastScanSchedPhases read of an aicpu_scheduler_phases value.
struct FastSchedScan {
  bool whole = false;       // every phase was in the subset, up to the value's ']'
  size_t lanes = 0;         // inner arrays begun (all of them when whole)
  uint64_t end_offset = 0;  // whole: the file offset right after the value
};

// Calls fn(thread, phase) for each phase of the aicpu_scheduler_phases
// value at byte `offset` of `path`, in file order, until the value's end
// or the first byte outside the subset. An error only when the file cannot
// be opened or read. ReadSwimlaneRecords' first pass reads with it (and
// goes on reading after end_offset); the converter through the two below.
Result<FastSchedScan> FastScanSchedPhases(const std::filesystem::path& path, uint64_t offset,
                                          const std::function<void(size_t, const SchedPhase&)>& fn);

// The same for the device orchestrator phases (aicpu_orchestrator_phases)
// at byte `offset`, in the collector's shape:
//   {"submit_idx": N, "task_id": N, "start_cycles": N, "end_cycles": N}
// (the keys in any order; non-negative integers only). fn returns false to
// stop (the scan is then not whole). ReadSwimlaneRecords' first pass reads
// streamed orchestrator phases with it, and so do the streams after a first
// pass that read them all this way (SwimlaneRecords::orch_phases_fast).
Result<FastSchedScan> FastScanOrchPhases(const std::filesystem::path& path, uint64_t offset,
                                         const std::function<bool(size_t, const OrchPhase&)>& fn);

// Calls fn(thread, phase) for each phase of `records` (read with
// stream_sched_phases), in file order. true: every phase was read; false: a
// byte outside the subset was met, after fn was called for the phases before
// it. An error only when the file cannot be opened or read.
Result<bool> FastForEachSchedPhase(const SwimlaneRecords& records,
                                   const std::function<void(size_t, const SchedPhase&)>& fn);

// The same, with the reading on a thread of its own (common/prefetch.h):
// fn is called on the calling thread, in the same order, while the next
// phases are parsed on the other core.
Result<bool> FastForEachSchedPhaseAhead(const SwimlaneRecords& records,
                                        const std::function<void(size_t, const SchedPhase&)>& fn);

}  // namespace dfx::collectors
