#include "coordinator/dispatch_scheduler.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/metrics.h"

namespace dfx::coordinator {

using collectors::DispatchState;
using collectors::RankState;

DispatchScheduler::DispatchScheduler(int num_ranks, std::vector<config::PassPlan> passes,
                                     const std::vector<PlannedDispatch>& planned,
                                     const Clock& clock)
    : clock_(clock), passes_(std::move(passes)), per_pass_(planned.size()) {
  ranks_.resize(static_cast<size_t>(num_ranks));
  queues_.resize(static_cast<size_t>(num_ranks));
  for (int r = 0; r < num_ranks; ++r) ranks_[r].rank = r;
  for (const config::PassPlan& pass : passes_) {
    for (const PlannedDispatch& p : planned) {
      collectors::DispatchEntry d;
      d.rank = p.rank;
      d.k = p.k;
      d.program = p.program;
      d.pass = pass.kind;
      dispatches_.push_back(std::move(d));
      ++ranks_[p.rank].dispatches;
    }
  }
}

void DispatchScheduler::MarkReady(int32_t rank) {
  if (ranks_[rank].status == RankState::kWaiting) ranks_[rank].status = RankState::kReady;
}

bool DispatchScheduler::AnyWaiting() const {
  for (const auto& r : ranks_) {
    if (r.status == RankState::kWaiting) return true;
  }
  return false;
}

void DispatchScheduler::BeginPass(size_t p) {
  pass_ = p;
  for (size_t i = p * per_pass_; i < (p + 1) * per_pass_; ++i) {
    const int32_t r = dispatches_[i].rank;
    if (Failed(r)) {
      Finish(i, DispatchState::kNotRun,
             "never dispatched: rank " + std::to_string(r) + " failed: " + ranks_[r].error);
    } else {
      queues_[r].queued.push_back(i);
    }
  }
}

void DispatchScheduler::SendReady(const SendFn& send) {
  if (!pass_) return;
  for (size_t r = 0; r < queues_.size(); ++r) {
    Queue& q = queues_[r];
    if (Failed(static_cast<int32_t>(r)) || q.in_flight || q.queued.empty()) continue;
    const size_t index = q.queued.front();
    q.queued.pop_front();
    collectors::DispatchEntry& d = dispatches_[index];
    d.start_ns = clock_.NowNs();
    d.status = DispatchState::kSent;
    q.in_flight = index;
    if (Status s = send(index, passes_[*pass_]); !s.ok()) {
      Finish(index, DispatchState::kFailed, s.message());
    }
  }
}

bool DispatchScheduler::Busy() const {
  for (size_t r = 0; r < queues_.size(); ++r) {
    if (Failed(static_cast<int32_t>(r))) continue;
    if (queues_[r].in_flight || !queues_[r].queued.empty()) return true;
  }
  return false;
}

bool DispatchScheduler::AnyInFlight() const {
  for (const Queue& q : queues_) {
    if (q.in_flight) return true;
  }
  return false;
}

std::optional<size_t> DispatchScheduler::InFlightOf(int32_t rank) const {
  if (rank < 0 || rank >= num_ranks()) return std::nullopt;
  return queues_[rank].in_flight;
}

std::optional<size_t> DispatchScheduler::InFlight(int32_t rank, uint32_t k) const {
  if (rank < 0 || rank >= num_ranks()) return std::nullopt;
  const auto& in_flight = queues_[rank].in_flight;
  if (!in_flight || dispatches_[*in_flight].k != k) return std::nullopt;
  return in_flight;
}

void DispatchScheduler::OnAccepted(int32_t rank, uint32_t k, uint64_t held_ns) {
  if (auto i = InFlight(rank, k)) {
    collectors::DispatchEntry& d = dispatches_[*i];
    d.status = DispatchState::kRunning;
    // The agent held the message back for held_ns: it accepted that much
    // earlier, but never before the dispatch was sent (the peer's number
    // is not trusted further than that).
    const uint64_t now = clock_.NowNs();
    d.accepted_ns = std::max(d.start_ns, now - std::min(now, held_ns));
  }
}

void DispatchScheduler::OnStreamBegun(size_t index) {
  collectors::DispatchEntry& d = dispatches_[index];
  if (!d.stream_ns) d.stream_ns = clock_.NowNs();
}

void DispatchScheduler::OnArtifactVerified(size_t index) {
  if (index < dispatches_.size()) dispatches_[index].verified_ns = clock_.NowNs();
}

void DispatchScheduler::OnProgress(const protocol::Progress& p) {
  if (!InFlight(p.rank, p.k)) return;
  Queue& q = queues_[p.rank];
  q.stage = p.stage;
  q.tasks_done = p.tasks_done;
  q.tasks_total = p.tasks_total;
}

bool DispatchScheduler::OnDone(const protocol::DispatchDone& done) {
  auto index = InFlight(done.rank, done.k);
  if (!index) return false;
  collectors::DispatchEntry& d = dispatches_[*index];
  d.tasks_executed = done.tasks_executed;
  d.makespan_ns = done.makespan_ns;
  d.agent_wall_ns = done.wall_ns;
  d.artifact_count = done.artifact_count;
  const bool ok = done.status == protocol::DispatchStatus::kOk;
  // A failed dispatch is already "failed": the status word only for a
  // rejection or a cancellation.
  std::string why = done.error;
  if (done.status != protocol::DispatchStatus::kFailed) {
    why = fmt::format("{}: {}", protocol::DispatchStatusName(done.status), why);
  }
  Finish(*index, ok ? DispatchState::kOk : DispatchState::kFailed, ok ? "" : why);
  return true;
}

void DispatchScheduler::Finish(size_t index, DispatchState state, const std::string& error) {
  collectors::DispatchEntry& d = dispatches_[index];
  d.status = state;
  metrics::Dispatches(collectors::DispatchStateName(state)).Add();
  if (!error.empty()) d.error = error;
  d.end_ns = clock_.NowNs();
  Queue& q = queues_[d.rank];
  if (q.in_flight == index) q.in_flight.reset();
  q.stage.clear();
  q.tasks_done = q.tasks_total = 0;
  ++q.done;
  if (on_finished_) on_finished_(index, error);
}

void DispatchScheduler::FailRank(int32_t rank, const std::string& why, const SpoolCheck& in_spool) {
  collectors::RankEntry& r = ranks_[rank];
  if (r.status == RankState::kFailed) return;
  r.status = RankState::kFailed;
  r.error = why;
  Queue& q = queues_[rank];
  if (q.in_flight) {
    const collectors::DispatchEntry& d = dispatches_[*q.in_flight];
    if (in_spool && in_spool(d.rank, d.k)) {
      Finish(*q.in_flight, DispatchState::kInSpool,
             "in flight when " + why + "; its files are in the agent's spool");
    } else {
      Finish(*q.in_flight, DispatchState::kFailed, "in flight when " + why);
    }
  }
  while (!q.queued.empty()) {
    const size_t i = q.queued.front();
    q.queued.pop_front();
    Finish(i, DispatchState::kNotRun,
           "never dispatched: rank " + std::to_string(rank) + " failed: " + why);
  }
}

std::vector<std::pair<int32_t, uint32_t>> DispatchScheduler::ExpireInFlight(
    uint64_t budget_ns, const std::string& why_prefix) {
  std::vector<std::pair<int32_t, uint32_t>> expired;
  const uint64_t now = clock_.NowNs();
  for (size_t r = 0; r < queues_.size(); ++r) {
    const auto& in_flight = queues_[r].in_flight;
    if (!in_flight) continue;
    const collectors::DispatchEntry& d = dispatches_[*in_flight];
    if (now - d.start_ns <= budget_ns) continue;
    expired.emplace_back(d.rank, d.k);
    FailRank(static_cast<int32_t>(r), fmt::format("dispatch d{} {}", d.k, why_prefix));
  }
  return expired;
}

void DispatchScheduler::Interrupt(const std::string& why, const SpoolCheck& in_spool) {
  for (size_t r = 0; r < ranks_.size(); ++r) {
    collectors::RankEntry& rank = ranks_[r];
    if (rank.status != RankState::kWaiting && rank.status != RankState::kReady) continue;
    rank.status = RankState::kInterrupted;
    rank.error = why;
    Queue& q = queues_[r];
    if (q.in_flight) {
      const collectors::DispatchEntry& d = dispatches_[*q.in_flight];
      const bool spooled = in_spool && in_spool(d.rank, d.k);
      Finish(*q.in_flight, spooled ? DispatchState::kInSpool : DispatchState::kInterrupted,
             "in flight when " + why +
                 (spooled ? "; its files are in the agent's spool" : "; no file of it arrived"));
    }
    while (!q.queued.empty()) {
      const size_t i = q.queued.front();
      q.queued.pop_front();
      Finish(i, DispatchState::kNotRun, "never dispatched: " + why);
    }
  }
  // Later passes were never queued.
  for (collectors::DispatchEntry& d : dispatches_) {
    if (d.status != DispatchState::kPending) continue;
    d.status = DispatchState::kNotRun;
    d.error = "never dispatched: " + why;
  }
}

void DispatchScheduler::ReconcileArtifacts(const SpoolCheck& in_spool) {
  for (collectors::DispatchEntry& d : dispatches_) {
    if (d.status != DispatchState::kOk) continue;
    uint32_t verified = 0;
    std::string problem;
    for (const collectors::ArtifactEntry& a : d.artifacts) {
      if (a.status == collectors::ArtifactState::kOk ||
          a.status == collectors::ArtifactState::kRecovered) {
        ++verified;
      } else if (problem.empty()) {
        problem = fmt::format("{} {}: {}", a.path, collectors::ArtifactStateName(a.status),
                              a.error.empty() ? std::string("no verified copy") : a.error);
      }
    }
    const uint32_t expected = d.artifact_count.value_or(verified);
    if (verified >= expected && problem.empty()) continue;
    // An artifact the byte budget refused is in its agent's spool by definition.
    const bool budget = std::any_of(d.artifacts.begin(), d.artifacts.end(), [](const auto& a) {
      return a.status == collectors::ArtifactState::kInSpool;
    });
    const bool spooled = budget || (in_spool && in_spool(d.rank, d.k));
    d.status = spooled ? DispatchState::kInSpool : DispatchState::kFailed;
    d.error = fmt::format("{} of the {} artifact(s) the agent reported arrived verified{}{}{}",
                          verified, expected, problem.empty() ? "" : "; first missing: ", problem,
                          spooled ? "; the rest are in the agent's spool" : "");
  }
}

void DispatchScheduler::CompleteRanks() {
  for (auto& r : ranks_) {
    if (r.status == RankState::kReady) r.status = RankState::kOk;
  }
}

DispatchScheduler::RankProgress DispatchScheduler::Progress(int32_t rank) const {
  const Queue& q = queues_[rank];
  RankProgress p;
  p.done = q.done;
  p.total = ranks_[rank].dispatches;
  p.in_flight = q.in_flight.has_value();
  p.stage = q.stage;
  p.tasks_done = q.tasks_done;
  p.tasks_total = q.tasks_total;
  p.failed = Failed(rank);
  return p;
}

void DispatchScheduler::Snapshot(collectors::RunManifest& manifest) const {
  manifest.ranks = ranks_;
  manifest.dispatches = dispatches_;
  manifest.passes.clear();
  for (const config::PassPlan& p : passes_) manifest.passes.push_back(p.kind);
}

size_t DispatchScheduler::BeginArtifact(size_t index, collectors::ArtifactEntry entry) {
  return BeginEntry(dispatches_[index].artifacts, std::move(entry), true);
}

void DispatchScheduler::RefuseArtifact(size_t index, collectors::ArtifactEntry entry) {
  RefuseEntry(dispatches_[index].artifacts, std::move(entry));
}

void DispatchScheduler::SettleArtifact(size_t index, size_t artifact,
                                       ArtifactSettlement settlement) {
  SettleEntry(dispatches_[index].artifacts[artifact], std::move(settlement));
}

}  // namespace dfx::coordinator
