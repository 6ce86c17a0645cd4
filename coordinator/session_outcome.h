// What an L3 run tells the user, read from the scheduler's records: the
// live progress line while it goes on, and once it finished the outcome
// (SessionOutcome, session.h): the verdict, one summary line per failure
// and the artifacts that arrived.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "coordinator/dispatch_scheduler.h"
#include "coordinator/session.h"

namespace dfx::coordinator {

// A byte count for people: "512 B", "1.5 KiB", "1.2 GiB".
std::string FormatBytes(uint64_t bytes);

// "12/16 ranks done, 40/48 dispatches, slowest r3 54%, 1.2 GiB gathered":
// one short line whatever the number of ranks.
std::string ProgressLine(const DispatchScheduler& scheduler, uint64_t bytes_gathered);

// Builds the outcome from the scheduler's records once every stream has
// ended. A failed graph-pass dispatch is best effort (the timing pass still
// ran): its warning, naming the deps file under `outputs_dir`
// (<work_dir>/dfx_outputs), goes to `out` and it does not fail the run.
// With `any_dfx`, each dispatch's program label
// (collectors::kDispatchProgramFile) that exists under `record_dir` is
// listed among the artifacts.
SessionOutcome SummarizeSession(const DispatchScheduler& scheduler,
                                const std::filesystem::path& outputs_dir,
                                const std::filesystem::path& record_dir, bool any_dfx,
                                std::FILE* out);

}  // namespace dfx::coordinator
