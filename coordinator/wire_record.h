// What a run or a gather records about its artifact bytes on the wire and its
// byte budget (docs/formats.md §16.1, "wire" and "budget"): the manifest's
// entries, the console lines that say what --wire-compression chose and
// which artifacts --max-run-bytes left in the agents' spools, with the
// gather command that fetches them.
//
// Stateless functions, any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "collectors/run_manifest.h"
#include "coordinator/artifact_receiver.h"
#include "protocol/messages.h"

namespace dfx::coordinator {

// `dfx-coordinator gather --work-dir W --max-run-bytes N`, N enough for what
// the budget refused (declared so far + refused, rounded up to a MiB).
std::string BudgetGatherCommand(const std::filesystem::path& work_dir, uint64_t needed_bytes);

// Sets m->wire from the receiver's totals and, with a budget (max_run_bytes
// > 0), m->budget with the refused paths and a note naming the gather.
void RecordWireAndBudget(const ArtifactReceiver& receiver, protocol::WireCompression mode,
                         uint64_t max_run_bytes, const std::filesystem::path& work_dir,
                         collectors::RunManifest* m);

// Logs what the wire carried (info) and, when the budget refused streams,
// a warning with the gather command.
void LogWireAndBudget(const ArtifactReceiver& receiver, protocol::WireCompression mode,
                      uint64_t max_run_bytes, const std::filesystem::path& work_dir);

// A gather's view of the run's budget: the artifacts it fetched leave
// budget.over_budget; once none is left (and every dispatch is ok) a run
// that failed only for the budget is ok. `fetched` are dfx_outputs paths.
void SettleBudget(const std::vector<std::string>& fetched, collectors::RunManifest* m);

}  // namespace dfx::coordinator
