// The keys of scope_stats.jsonl (docs/formats.md §11.2), written once for its
// writer (ScopeStatsRecorder::Export), its reader (ReadScopeStats) and the
// scope-stats report. Constants only.
#pragma once

#include "collectors/key_text.h"

namespace dfx::collectors::scope_stats_keys {

// The resources a scope samples; with kMaxSuffix a metadata key
// ("heap_max"), with kStartSuffix / kEndSuffix a sample's key ("heap_start").
// kTensormap is a sample's key as it is (one value, not a start and end).
inline constexpr KeyText kTaskWindow = "task_window";
inline constexpr KeyText kHeap = "heap";
inline constexpr KeyText kDepPool = "dep_pool";
inline constexpr KeyText kTensormap = "tensormap";
inline constexpr KeyText kMaxSuffix = "_max";
inline constexpr KeyText kStartSuffix = "_start";
inline constexpr KeyText kEndSuffix = "_end";

// The metadata line (the first).
inline constexpr KeyText kVersion = "version";
inline constexpr KeyText kFatal = "fatal";
inline constexpr KeyText kDropped = "dropped";
inline constexpr KeyText kTotal = "total";

// A sample line.
inline constexpr KeyText kSite = "site";
inline constexpr KeyText kPhase = "phase";
inline constexpr KeyText kPhaseBegin = "begin";  // kPhase's values
inline constexpr KeyText kPhaseEnd = "end";
inline constexpr KeyText kDepth = "depth";
inline constexpr KeyText kRing = "ring";

}  // namespace dfx::collectors::scope_stats_keys
