// The L3 host orchestration's bookkeeping (docs/design.md §1 step 2, §6, §9):
// which dispatch each rank runs next. Dispatches of one rank run in plan
// order, one in flight per chip; ranks run in parallel; the passes of the
// DFX pass protocol run one after the other. A rank that fails (its agent
// died, a dispatch exceeded its budget) fails for the rest of the run: what
// it had in flight is failed, what was queued is "not_run", and the other
// ranks go on.
//
// The records it keeps are the run manifest's rank and dispatch entries.
// Pure state: sending goes through the SendFn the owner gives, time through
// the Clock. Threads: the event loop's only.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "collectors/run_manifest.h"
#include "common/clock.h"
#include "common/status.h"
#include "config/pass_plan.h"
#include "coordinator/artifact_ledger.h"
#include "coordinator/plan.h"
#include "protocol/messages.h"

namespace dfx::coordinator {

class DispatchScheduler {
 public:
  // One record per (pass, planned dispatch), pass-major, all pending.
  DispatchScheduler(int num_ranks, std::vector<config::PassPlan> passes,
                    const std::vector<PlannedDispatch>& planned, const Clock& clock);

  // Read-only views of the records; every change goes through the
  // transitions below.
  const std::vector<collectors::DispatchEntry>& dispatches() const { return dispatches_; }
  const std::vector<collectors::RankEntry>& ranks() const { return ranks_; }
  const collectors::DispatchEntry& dispatch(size_t index) const { return dispatches_[index]; }
  collectors::RankState rank_status(int32_t rank) const { return ranks_[rank].status; }
  const std::vector<config::PassPlan>& passes() const { return passes_; }
  int num_ranks() const { return static_cast<int>(ranks_.size()); }

  // Called with (record index, error) whenever a record finishes in any way.
  void set_on_finished(std::function<void(size_t, const std::string&)> fn) {
    on_finished_ = std::move(fn);
  }

  // --- start-up -------------------------------------------------------------
  void MarkReady(int32_t rank);  // waiting -> ready
  bool AnyWaiting() const;

  // --- fan-out --------------------------------------------------------------
  // Queues pass `p`: the dispatches of a failed rank finish as not_run.
  void BeginPass(size_t p);
  // Sends each ready rank its next dispatch when it has none in flight.
  // `send(index)` returns an error when the dispatch could not go out (the
  // record then fails with it). The record is "sent" and in flight.
  using SendFn = std::function<Status(size_t index, const config::PassPlan& pass)>;
  void SendReady(const SendFn& send);
  // Something of the current pass is queued or in flight.
  bool Busy() const;
  // Some rank has a dispatch in flight.
  bool AnyInFlight() const;

  // --- what agents report ------------------------------------------------------
  // The record of rank's in-flight dispatch k, if that is what is in flight.
  std::optional<size_t> InFlight(int32_t rank, uint32_t k) const;
  // The record in flight on `rank`, if any (a reconnect's Resume lists it).
  std::optional<size_t> InFlightOf(int32_t rank) const;
  // The agent accepted (rank, k) `held_ns` before its DispatchAccepted
  // arrived (it may hold the message back, protocol/dfx.capnp).
  void OnAccepted(int32_t rank, uint32_t k, uint64_t held_ns = 0);
  // Times for the run timeline's host lane: the first artifact stream of
  // dispatch record `index` began; one of its artifacts was verified.
  void OnStreamBegun(size_t index);
  void OnArtifactVerified(size_t index);
  void OnProgress(const protocol::Progress& progress);
  // Returns false when (rank, k) is not in flight (the message is ignored).
  bool OnDone(const protocol::DispatchDone& done);

  // The artifact entries of dispatch record `index`, changed only by the
  // ArtifactReceiver's streams (artifact_ledger.h; RunCoordinator forwards).
  size_t BeginArtifact(size_t index, collectors::ArtifactEntry entry);
  void RefuseArtifact(size_t index, collectors::ArtifactEntry entry);
  void SettleArtifact(size_t index, size_t artifact, ArtifactSettlement settlement);

  // --- failure --------------------------------------------------------------
  // Whether rank's dispatch k left files in its agent's spool (the owner
  // looks; an empty function: never).
  using SpoolCheck = std::function<bool(int32_t rank, uint32_t k)>;
  // What was in flight fails, or is "in_spool" when `in_spool` finds its
  // files there (an agent that gave up on a paused coordinator).
  void FailRank(int32_t rank, const std::string& why, const SpoolCheck& in_spool = {});
  // The coordinator was stopped by a signal (`why`): every rank still
  // waiting or ready is "interrupted"; its in-flight dispatch is "in_spool"
  // (files in the spool) or "interrupted"; nothing else is sent: what was
  // not sent yet, in any pass, is "not_run".
  void Interrupt(const std::string& why, const SpoolCheck& in_spool);
  // Fails the ranks whose in-flight dispatch is older than `budget_ns`;
  // returns their (rank, k) so the owner can send a Cancel.
  std::vector<std::pair<int32_t, uint32_t>> ExpireInFlight(uint64_t budget_ns,
                                                           const std::string& why_prefix);
  // The end of the run: every rank still ready is ok.
  void CompleteRanks();
  // Once every stream has ended (the writer drained): a dispatch its agent
  // reported ok is ok only if all its artifacts arrived verified — as many
  // as DispatchDone.artifact_count said, none refused or failed. Otherwise
  // it fails, naming what is missing, or (`in_spool` finds its files in
  // the spool) is "in_spool".
  void ReconcileArtifacts(const SpoolCheck& in_spool = {});

  // --- the manifest ---------------------------------------------------------
  // Copies the rank and dispatch records into `manifest` (its ranks and
  // dispatches), for the one place that builds the manifest.
  void Snapshot(collectors::RunManifest& manifest) const;

  // --- display --------------------------------------------------------------
  struct RankProgress {
    uint32_t done = 0;   // dispatch records finished
    uint32_t total = 0;  // dispatch records of the rank (all passes)
    bool in_flight = false;
    std::string stage;  // of the in-flight dispatch: "running" | "streaming" | ""
    uint64_t tasks_done = 0;
    uint64_t tasks_total = 0;
    bool failed = false;
  };
  RankProgress Progress(int32_t rank) const;

 private:
  struct Queue {
    std::deque<size_t> queued;
    std::optional<size_t> in_flight;
    uint32_t done = 0;
    std::string stage;
    uint64_t tasks_done = 0;
    uint64_t tasks_total = 0;
  };
  void Finish(size_t index, collectors::DispatchState state, const std::string& error);
  bool Failed(int32_t rank) const { return ranks_[rank].status == collectors::RankState::kFailed; }

  const Clock& clock_;
  std::vector<config::PassPlan> passes_;
  size_t per_pass_ = 0;
  std::optional<size_t> pass_;
  std::vector<collectors::DispatchEntry> dispatches_;
  std::vector<collectors::RankEntry> ranks_;
  std::vector<Queue> queues_;
  std::function<void(size_t, const std::string&)> on_finished_;
};

}  // namespace dfx::coordinator
