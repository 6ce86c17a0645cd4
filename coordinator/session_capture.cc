#include "coordinator/session_capture.h"

#include <fmt/format.h>

#include <chrono>

#include "common/log.h"

namespace dfx::coordinator {

bool PlanMayCapture(const Plan& plan, const config::RunConfig& run) {
  if (run.AnyDfx()) return true;
  auto steps = ResolveStepConfigs(plan, run);
  if (!steps.ok()) return false;
  for (const auto& step : *steps) {
    if (step && step->config.AnyDfx()) return true;
  }
  return false;
}

Status CheckCaptureOptions(const Plan& plan, const config::RunConfig& run,
                           const CaptureSelection& selection, int ranks) {
  DFX_RETURN_IF_ERROR(ResolveStepConfigs(plan, run).status());
  if (selection.empty()) return Status::Ok();
  DFX_ASSIGN_OR_RETURN(std::vector<PlannedDispatch> planned, ExpandPlan(plan, ranks));
  return CheckSelection(selection, ranks, planned);
}

Result<SessionCapture> SessionCapture::Make(const Plan& plan, const config::RunConfig& run,
                                            const CaptureSelection& selection, int ranks,
                                            std::vector<PlannedDispatch> planned) {
  DFX_ASSIGN_OR_RETURN(auto steps, ResolveStepConfigs(plan, run));
  DFX_RETURN_IF_ERROR(CheckSelection(selection, ranks, planned));
  CapturePolicy policy(run, selection, std::move(steps), ranks, PlanMayCapture(plan, run));
  return SessionCapture(std::move(policy), std::move(planned));
}

void SessionCapture::OpenControl(const std::filesystem::path& work_dir) {
  auto server = CaptureControlServer::Open(work_dir);
  if (!server.ok()) {
    DFX_LOG_WARN("on-demand capture is off for this run: {}", server.status().message());
    return;
  }
  control_ = std::move(*server);
  DFX_LOG_DEBUG("capture control socket: {}", ControlSocketPath(work_dir).string());
}

const CapturePolicy::Decision& SessionCapture::Decide(size_t index,
                                                      const collectors::DispatchEntry& d,
                                                      config::PassKind pass) {
  if (decisions_.size() <= index) decisions_.resize(index + 1);
  if (!decisions_[index]) {
    const size_t step = planned_.empty() ? 0 : planned_[index % planned_.size()].step;
    decisions_[index] = policy_.Decide(d.rank, d.k, step, pass);
  }
  return *decisions_[index];
}

bool SessionCapture::Poll(const Clock& clock, const std::function<Json()>& progress) {
  bool changed = false;
  control_.Poll([&](const Json& request, const CaptureControlServer::Peer& peer) {
    return Answer(request, peer, clock, progress, &changed);
  });
  return changed;
}

Json SessionCapture::Answer(const Json& json, const CaptureControlServer::Peer& peer,
                            const Clock& clock, const std::function<Json()>& progress,
                            bool* changed) {
  auto request = CaptureRequestFromJson(json);
  if (!request.ok()) return Json{{"ok", false}, {"error", request.status().message()}};
  if (request->status) return Json{{"ok", true}, {"progress", progress()}};
  CapturePolicy::Who who;
  who.time_ns = clock.NowNs();
  who.unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  who.pid = peer.pid;
  who.uid = peer.uid;
  auto id = policy_.Apply(*request, who);
  if (!id.ok()) {
    DFX_LOG_WARN("capture request from pid {} refused: {}", peer.pid, id.status().message());
    return Json{{"ok", false}, {"error", id.status().message()}};
  }
  *changed = true;
  DFX_LOG_INFO("capture change {} from pid {} (uid {}): {}", *id, peer.pid, peer.uid,
               request->command);
  return Json{{"ok", true}, {"change", *id}, {"progress", progress()}};
}

void SessionCapture::Fill(collectors::RunManifest& manifest) const {
  for (size_t i = 0; i < decisions_.size() && i < manifest.dispatches.size(); ++i) {
    if (decisions_[i]) manifest.dispatches[i].capture = decisions_[i]->capture;
  }
  manifest.capture_changes = policy_.changes();
}

std::vector<collectors::DispatchEntry> SessionCapture::WithRunConfig(
    const std::vector<collectors::DispatchEntry>& dispatches) const {
  std::vector<collectors::DispatchEntry> out;
  for (size_t i = 0; i < dispatches.size(); ++i) {
    if (i < decisions_.size() && decisions_[i] && decisions_[i]->capture.by != "run") continue;
    out.push_back(dispatches[i]);
  }
  return out;
}

}  // namespace dfx::coordinator
