// DfxCollectors: the set of recorders armed for one dispatch.
#include <sched.h>

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "collectors/artifact_layout.h"
#include "collectors/recorders.h"
#include "common/log.h"
#include "config/run_config.h"

namespace dfx::collectors {

DfxCollectors::DfxCollectors(const config::RunConfig& config, const ChipLayout& layout,
                             const CapacityHint& hint, const fs::path& output_dir,
                             const ArgsDumpOptions& dump_options)
    : output_dir_(output_dir) {
  if (config.enable_chip_swimlane > 0) {
    swimlane_ = std::make_unique<SwimlaneRecorder>(config.enable_chip_swimlane, layout, hint);
  }
  if (config.enable_dep_gen) dep_gen_ = std::make_unique<DepGenRecorder>(hint);
  if (config.enable_dump_args > 0) {
    ArgsDumpOptions options = dump_options;
    options.level = config.enable_dump_args;
    args_dump_ = std::make_unique<ArgsDumpRecorder>(options, hint, output_dir);
  }
  if (config.enable_pmu > 0) pmu_ = std::make_unique<PmuRecorder>(config.enable_pmu, layout, hint);
  if (config.enable_scope_stats) scope_stats_ = std::make_unique<ScopeStatsRecorder>(layout, hint);
  if (swimlane_ || dep_gen_ || pmu_) {
    // The recorders' buffers are mapped as rows land in them, which would put
    // a page fault every 4 KiB on the orchestrator's and schedulers' paths
    // (~60 MB at 100k tasks with dep_gen). This thread maps the expected
    // rows ahead of them instead, in the run's idle moments: SCHED_IDLE runs
    // only when a core has nothing else to run. First the rows whose count
    // the program fixes, then, until the run ends, the next MiB ahead of
    // each stream whose length the run decides.
    prefault_ = std::thread([this] {
      sched_param param{};
      (void)sched_setscheduler(0, SCHED_IDLE, &param);  // best effort
      constexpr int kSlices = 64;
      for (int i = 0; i < kSlices && !prefault_stop_.load(std::memory_order_relaxed); ++i) {
        if (dep_gen_) dep_gen_->Prefault(i, kSlices);
        if (swimlane_) swimlane_->Prefault(i, kSlices);
      }
      while (!prefault_stop_.load(std::memory_order_relaxed)) {
        if (dep_gen_) dep_gen_->PrefaultAhead();
        if (swimlane_) swimlane_->PrefaultAhead();
        if (pmu_) pmu_->PrefaultAhead();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  }
}

DfxCollectors::~DfxCollectors() { StopPrefault(); }

void DfxCollectors::StopPrefault() {
  prefault_stop_.store(true, std::memory_order_relaxed);
  if (prefault_.joinable()) prefault_.join();
}

Status DfxCollectors::ExportAll(bool run_succeeded, std::vector<std::string>* written) {
  // Every collector writes its own files from its own buffers, so the five
  // exports run side by side, one thread each (the chip's threads are done
  // by now: on a 2-core host the all-five export went from one core to
  // two). Their results are then taken in the reference's order, so
  // `written`, the log and the first error read as when they ran in turn.
  StopPrefault();
  Status swimlane_status, args_dump_status, pmu_status, scope_stats_status, dep_gen_status;
  const bool export_dep_gen = dep_gen_ && run_succeeded;
  std::vector<std::function<void()>> exports;
  if (swimlane_) {
    exports.emplace_back(
        [&] { swimlane_status = swimlane_->Export(output_dir_ / kSwimlaneRecordsFile); });
  }
  if (args_dump_) exports.emplace_back([&] { args_dump_status = args_dump_->Export(); });
  if (pmu_) exports.emplace_back([&] { pmu_status = pmu_->Export(output_dir_ / kPmuFile); });
  if (scope_stats_) {
    exports.emplace_back(
        [&] { scope_stats_status = scope_stats_->Export(output_dir_ / kScopeStatsFile); });
  }
  if (export_dep_gen) {
    exports.emplace_back([&] { dep_gen_status = dep_gen_->Export(output_dir_ / kDepsFile); });
  }
  {
    std::vector<std::jthread> threads;
    for (size_t i = 1; i < exports.size(); ++i) threads.emplace_back(exports[i]);
    if (!exports.empty()) exports[0]();
  }  // joins

  Status first_error;
  // NotFound = "no data, nothing written" (not an error); the rest is kept and
  // the remaining collectors still export, as the reference teardown does.
  auto handle = [&](const char* rel, const Status& s) {
    if (s.ok()) {
      if (written != nullptr) written->push_back(rel);
    } else if (s.code() == Code::kNotFound) {
      // Nothing to write is normal; the coordinator counts such dispatches
      // and says so once per run (coordinator/idle_collectors.h).
      DFX_LOG_DEBUG("{} not produced: {}", rel, s.message());
    } else if (first_error.ok()) {
      first_error = s.WithContext(std::string("exporting ") + rel);
    }
  };
  if (swimlane_) handle(kSwimlaneRecordsFile, swimlane_status);
  if (args_dump_) {
    handle(kArgsDumpManifestFile, args_dump_status);
    if (args_dump_status.ok() && written != nullptr && fs::exists(output_dir_ / kArgsDumpBinFile)) {
      written->push_back(kArgsDumpBinFile);
    }
  }
  if (pmu_) handle(kPmuFile, pmu_status);
  if (scope_stats_) handle(kScopeStatsFile, scope_stats_status);
  if (dep_gen_ && !run_succeeded) {
    DFX_LOG_INFO(
        "dep_gen skipped: the run did not succeed (deps.json is written on the "
        "success path only)");
  } else if (export_dep_gen && dep_gen_status.code() != Code::kFailedPrecondition) {
    // A refused incomplete graph is a warning (already logged), not a failed run.
    handle(kDepsFile, dep_gen_status);
  }
  return first_error;
}

}  // namespace dfx::collectors
