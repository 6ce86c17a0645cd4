// The capture side of an L3 session (capture_policy.h, capture_control.h):
// the policy that decides each dispatch's collectors, the decisions made
// (one per dispatch record, kept so that a dispatch sent again is the same),
// and the control socket that `dfx-coordinator capture` talks to. The
// session calls it; it never calls back into the session.
//
// Threads: the event loop's only.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "collectors/run_manifest.h"
#include "common/clock.h"
#include "common/json.h"
#include "common/status.h"
#include "config/run_config.h"
#include "coordinator/capture_control.h"
#include "coordinator/capture_policy.h"
#include "coordinator/plan.h"

namespace dfx::coordinator {

// Whether some dispatch of `plan` may capture: a collector is on in the
// run's configuration or in some step's run_config (the run then keeps
// dfx_outputs/).
bool PlanMayCapture(const Plan& plan, const config::RunConfig& run);

// The checks of a run's capture options before it starts (exit 2 material):
// the steps' run_config merged over the run's, and --capture-ranks /
// --capture-dispatches against the ranks and dispatches of the run.
Status CheckCaptureOptions(const Plan& plan, const config::RunConfig& run,
                           const CaptureSelection& selection, int ranks);

class SessionCapture {
 public:
  // `planned`: the plan expanded for the run (record i of any pass is
  // planned[i % planned.size()]).
  static Result<SessionCapture> Make(const Plan& plan, const config::RunConfig& run,
                                     const CaptureSelection& selection, int ranks,
                                     std::vector<PlannedDispatch> planned);

  // Listens on W/.dfx_control/capture.sock; a failure only warns (the run
  // goes on without on-demand capture).
  void OpenControl(const std::filesystem::path& work_dir);
  // Stops taking requests (the fan-out is over, or the run is stopping).
  void CloseControl() { control_.Close(); }

  // What dispatch record `index` arms in `pass` (decided once per record).
  const CapturePolicy::Decision& Decide(size_t index, const collectors::DispatchEntry& d,
                                        config::PassKind pass);

  // Serves waiting `dfx-coordinator capture` requests. `progress` answers
  // a status request; returns true when a change was applied.
  bool Poll(const Clock& clock, const std::function<Json()>& progress);

  // The decisions and the changes, into a manifest built from the records.
  void Fill(collectors::RunManifest& manifest) const;
  // The records that armed the run's own configuration (for the idle
  // collector lines, which reason from it).
  std::vector<collectors::DispatchEntry> WithRunConfig(
      const std::vector<collectors::DispatchEntry>& dispatches) const;

 private:
  SessionCapture(CapturePolicy policy, std::vector<PlannedDispatch> planned)
      : policy_(std::move(policy)), planned_(std::move(planned)) {}
  Json Answer(const Json& request, const CaptureControlServer::Peer& peer, const Clock& clock,
              const std::function<Json()>& progress, bool* changed);

  CapturePolicy policy_;
  std::vector<PlannedDispatch> planned_;
  std::vector<std::optional<CapturePolicy::Decision>> decisions_;
  CaptureControlServer control_;
};

}  // namespace dfx::coordinator
