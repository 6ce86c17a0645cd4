// One scheduler / orchestrator phase object of a records file (docs/formats.md
// §2.4, §2.5) read by the generic pull reader, for ReadSwimlaneRecords' first
// pass and the streams over the phases (swimlane_phases.cc). Internal to the
// swimlane reader. Thread-compatible: the reader is the caller's.
#pragma once

#include "collectors/swimlane/swimlane_reader.h"
#include "common/json_stream.h"

namespace dfx::collectors {

// The object at the reader's position into `p` (unknown keys are skipped);
// false on malformed JSON (the reader's status says where).
bool ReadSchedPhase(JsonPullReader& r, SchedPhase* p);
// The same for an orchestrator phase: device cycles, or host ns when `host`.
bool ReadOrchPhase(JsonPullReader& r, bool host, OrchPhase* p);

}  // namespace dfx::collectors
