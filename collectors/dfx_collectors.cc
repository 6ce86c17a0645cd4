// DfxCollectors: the set of recorders armed for one dispatch.
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
}

DfxCollectors::~DfxCollectors() = default;

Status DfxCollectors::ExportAll(bool run_succeeded, std::vector<std::string>* written) {
  Status first_error;
  // NotFound = "no data, nothing written" (not an error); the rest is kept and
  // the remaining collectors still export, as the reference teardown does.
  auto handle = [&](const char* rel, const Status& s) {
    if (s.ok()) {
      if (written != nullptr) written->push_back(rel);
    } else if (s.code() == Code::kNotFound) {
      DFX_LOG_INFO("{} not produced: {}", rel, s.message());
    } else if (first_error.ok()) {
      first_error = s.WithContext(std::string("exporting ") + rel);
    }
  };
  if (swimlane_) {
    handle(kSwimlaneRecordsFile, swimlane_->Export(output_dir_ / kSwimlaneRecordsFile));
  }
  if (args_dump_) {
    Status s = args_dump_->Export();
    handle(kArgsDumpManifestFile, s);
    if (s.ok() && written != nullptr && fs::exists(output_dir_ / kArgsDumpBinFile)) {
      written->push_back(kArgsDumpBinFile);
    }
  }
  if (pmu_) handle(kPmuFile, pmu_->Export(output_dir_ / kPmuFile));
  if (scope_stats_) {
    handle(kScopeStatsFile, scope_stats_->Export(output_dir_ / kScopeStatsFile));
  }
  if (dep_gen_) {
    if (!run_succeeded) {
      DFX_LOG_INFO(
          "dep_gen skipped: the run did not succeed (deps.json is written on the "
          "success path only)");
    } else {
      Status s = dep_gen_->Export(output_dir_ / kDepsFile);
      // A refused incomplete graph is a warning (already logged), not a failed run.
      if (s.code() != Code::kFailedPrecondition) handle(kDepsFile, s);
    }
  }
  return first_error;
}

}  // namespace dfx::collectors
