// Validate before you clear (docs/design.md §11.14): every program of an L3
// plan is checked completely, by the agents' own loader, before the session
// touches anything of the previous run. The coordinator never links the
// device (docs/design.md §3), so it runs `dfx-rank-agent exec --check-only`
// on each program: the text the coordinator read once (and sends in
// Dispatch) is written to a scratch file under the work dir, parsed with the
// loader the agents use, its run config validated, and its memory budget
// checked against the chip model's capacity and, when the agents run on
// this host (--launcher local), this host's available memory
// (device/memory_budget.h). Threads: the caller's.
#pragma once

#include <map>
#include <string>

#include "collectors/dispatch_bytes.h"
#include "common/status.h"
#include "coordinator/plan.h"
#include "coordinator/session.h"

namespace dfx::coordinator {

// OK when every program of `plan` would be accepted by an agent under
// `options` (config, launcher, agent_binary, work_dir); else the first
// refusal, as the agent words it (it names the program file, the JSON path
// and what is accepted, or the memory total, the limit and the largest
// tensors). Writes only <work_dir>/.dfx_check.<pid>/, removed before it
// returns.
//
// With `estimates`, each check also says what one dispatch of the program
// writes under `estimate_config` (the union of the run's passes, see
// coordinator/run_estimate.h): `dfx-rank-agent exec --check-only
// --estimate`, one entry per plan program name.
Status CheckPlanPrograms(const Plan& plan, const SessionOptions& options,
                         std::map<std::string, collectors::DispatchBytes>* estimates = nullptr,
                         const config::RunConfig* estimate_config = nullptr);

}  // namespace dfx::coordinator
