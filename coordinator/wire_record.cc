#include "coordinator/wire_record.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/log.h"
#include "common/subprocess.h"
#include "coordinator/session_outcome.h"

namespace dfx::coordinator {

namespace {

uint64_t RefusedBytes(const collectors::RunManifest& m) {
  uint64_t bytes = 0;
  for (const collectors::DispatchEntry& d : m.dispatches) {
    for (const collectors::ArtifactEntry& a : d.artifacts) {
      if (a.status == collectors::ArtifactState::kInSpool) bytes += a.size;
    }
  }
  return bytes;
}

std::string RefusedNote(size_t count, uint64_t max_run_bytes, const std::string& gather) {
  return fmt::format(
      "{} artifact(s) would have taken the run past --max-run-bytes {}: they were not "
      "gathered and stay in the agents' spools; fetch them with: {}",
      count, max_run_bytes, gather);
}

}  // namespace

std::string BudgetGatherCommand(const std::filesystem::path& work_dir, uint64_t needed_bytes) {
  constexpr uint64_t kMiB = 1ull << 20;
  const uint64_t rounded = (needed_bytes + kMiB - 1) / kMiB * kMiB;
  return fmt::format("dfx-coordinator gather --work-dir {} --max-run-bytes {}",
                     ShellQuote(std::filesystem::absolute(work_dir).string()), rounded);
}

void RecordWireAndBudget(const ArtifactReceiver& receiver, protocol::WireCompression mode,
                         uint64_t max_run_bytes, const std::filesystem::path& work_dir,
                         collectors::RunManifest* m) {
  const ArtifactReceiver::WireTotals& t = receiver.wire_totals();
  m->wire = collectors::WireEntry{protocol::WireCompressionName(mode), receiver.WireChoice(),
                                  t.artifact_bytes, t.wire_bytes};
  if (max_run_bytes == 0) return;
  collectors::BudgetEntry budget;
  budget.max_run_bytes = max_run_bytes;
  budget.over_budget = receiver.over_budget();
  if (!budget.over_budget.empty()) {
    budget.note = RefusedNote(budget.over_budget.size(), max_run_bytes,
                              BudgetGatherCommand(work_dir, RefusedBytes(*m)));
  }
  m->budget = std::move(budget);
}

void LogWireAndBudget(const ArtifactReceiver& receiver, protocol::WireCompression mode,
                      uint64_t max_run_bytes, const std::filesystem::path& work_dir) {
  const ArtifactReceiver::WireTotals& t = receiver.wire_totals();
  if (t.streams > 0) {
    DFX_LOG_INFO("wire compression {}: {}; {} of artifacts took {} on the wire ({:.1f}x)",
                 protocol::WireCompressionName(mode), receiver.WireChoice(),
                 FormatBytes(t.artifact_bytes), FormatBytes(t.wire_bytes),
                 t.wire_bytes == 0 ? 1.0 : double(t.artifact_bytes) / double(t.wire_bytes));
  }
  if (max_run_bytes == 0 || receiver.over_budget().empty()) return;
  // A gather's budget counts what it fetches: the refused bytes suffice.
  DFX_LOG_WARN("{}", RefusedNote(receiver.over_budget().size(), max_run_bytes,
                                 BudgetGatherCommand(work_dir, receiver.refused_bytes())));
}

void SettleBudget(const std::vector<std::string>& fetched, collectors::RunManifest* m) {
  if (!m->budget || m->budget->over_budget.empty()) return;
  const std::set<std::string> got(fetched.begin(), fetched.end());
  auto& left = m->budget->over_budget;
  left.erase(std::remove_if(left.begin(), left.end(),
                            [&got](const std::string& p) { return got.count(p) > 0; }),
             left.end());
  if (!left.empty()) return;
  m->budget->note = "every artifact the budget left in a spool was fetched by gather";
  if (m->status != collectors::RunState::kFailed) return;
  for (const collectors::DispatchEntry& d : m->dispatches) {
    if (d.status != collectors::DispatchState::kOk) return;
  }
  for (const collectors::RankEntry& r : m->ranks) {
    if (r.status != collectors::RankState::kOk) return;
  }
  m->status = collectors::RunState::kOk;
}

}  // namespace dfx::coordinator
