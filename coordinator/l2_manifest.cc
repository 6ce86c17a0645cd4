#include "coordinator/l2_manifest.h"

#include <algorithm>
#include <system_error>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/log.h"
#include "coordinator/session.h"
#include "coordinator/stale_dirs.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;
using collectors::ArtifactEntry;
using collectors::ArtifactState;
using collectors::DispatchState;
using collectors::RankState;
using collectors::RunState;

Result<L2Manifest> L2Manifest::Begin(const fs::path& work_dir, const fs::path& program,
                                     const config::RunConfig& config,
                                     const std::vector<config::PassPlan>& passes,
                                     const Clock& clock) {
  L2Manifest out(clock);
  std::error_code ec;
  const fs::path abs_work = fs::absolute(work_dir, ec).lexically_normal();
  out.dfx_dir_ = collectors::DfxOutputsDir(work_dir);
  out.dir_ = collectors::RunRecordDir(work_dir, config.AnyDfx());
  out.path_ = out.dir_ / collectors::kRunManifestFile;
  // What an earlier run recorded, wherever it recorded it (dfx_outputs/ when
  // a DFX flag was on, else the work dir), is not this run's.
  for (const fs::path& dir : {out.dfx_dir_, work_dir}) {
    fs::remove(dir / collectors::kRunManifestFile, ec);
    fs::remove(dir / collectors::kSessionFile, ec);
  }
  DFX_RETURN_IF_ERROR(ClearStaleDispatchDirs(out.dfx_dir_));

  collectors::RunManifest& m = out.manifest_;
  m.session = RandomSessionId();
  m.status = RunState::kRunning;
  m.level = collectors::RunLevel::kL2;
  m.plan = program.stem().string();
  m.work_dir = abs_work.string();
  m.launcher = "exec";
  m.launch_ns = clock.NowNs();
  m.run_config = config;
  collectors::RankEntry rank;
  rank.rank = 0;
  rank.status = RankState::kReady;
  rank.dispatches = static_cast<uint32_t>(passes.size());
  m.ranks.push_back(rank);
  for (const config::PassPlan& pass : passes) {
    m.passes.push_back(pass.kind);
    collectors::DispatchEntry d;
    d.rank = 0;
    d.k = 0;
    d.program = m.plan;
    d.pass = pass.kind;
    m.dispatches.push_back(std::move(d));
  }
  // Written where a directory is: a run that fails before its chip wrote
  // anything leaves no dfx_outputs/ behind (Write).
  std::error_code dir_ec;
  if (fs::is_directory(out.dir_, dir_ec)) {
    DFX_RETURN_IF_ERROR(collectors::WriteRunManifest(out.dir_, m));
  }
  return out;
}

void L2Manifest::PassStarted(size_t index) {
  collectors::DispatchEntry& d = manifest_.dispatches.at(index);
  d.status = DispatchState::kRunning;
  d.start_ns = clock_->NowNs();
  Write();
}

void L2Manifest::PassEnded(size_t index, const std::string& error) {
  collectors::DispatchEntry& d = manifest_.dispatches.at(index);
  d.status = error.empty() ? DispatchState::kOk : DispatchState::kFailed;
  d.error = error;
  d.end_ns = clock_->NowNs();
  Write();
}

void L2Manifest::Interrupt(size_t index, const std::string& why) {
  collectors::DispatchEntry& d = manifest_.dispatches.at(index);
  d.status = DispatchState::kInterrupted;
  d.error = why;
  d.end_ns = clock_->NowNs();
  Write();
}

void L2Manifest::Finish(collectors::RunState status, const std::vector<std::string>& artifacts,
                        const std::vector<std::string>& merged) {
  const bool ok = status == RunState::kOk;
  collectors::RunManifest& m = manifest_;
  const bool two_pass = m.dispatches.size() > 1;
  for (const std::string& rel : artifacts) {
    if (std::find(merged.begin(), merged.end(), rel) != merged.end()) continue;
    ArtifactEntry a;
    a.path = rel;
    std::error_code ec;
    a.size = fs::file_size(dfx_dir_ / rel, ec);
    auto sum = ChecksumFile(dfx_dir_ / rel);
    if (sum.ok() && !ec) {
      a.checksum = *sum;
      a.status = ArtifactState::kOk;
    } else {
      a.status = ArtifactState::kFailed;
      a.error = sum.ok() ? ec.message() : sum.status().message();
    }
    const bool graph = two_pass && rel == collectors::kDepsFile;
    collectors::DispatchEntry& d = graph ? m.dispatches.front() : m.dispatches.back();
    d.artifacts.push_back(std::move(a));
  }
  for (collectors::DispatchEntry& d : m.dispatches) {
    d.artifact_count = static_cast<uint32_t>(d.artifacts.size());
    // A pass that never started (the run stopped first) did not run.
    if (d.status == DispatchState::kPending) d.status = DispatchState::kNotRun;
  }
  m.merged_swimlane = merged;
  m.ranks.front().status = ok                                 ? RankState::kOk
                           : status == RunState::kInterrupted ? RankState::kInterrupted
                                                              : RankState::kFailed;
  for (const collectors::DispatchEntry& d : m.dispatches) {
    if (!ok && m.ranks.front().error.empty()) m.ranks.front().error = d.error;
  }
  m.status = status;
  // A run that succeeded or was interrupted says so even when no collector
  // wrote a file (one that failed to start leaves nothing behind).
  if (ok || status == RunState::kInterrupted) {
    Status made = MakeDirs(dir_);
    if (!made.ok()) DFX_LOG_WARN("cannot write {}: {}", path_.string(), made.message());
  }
  Write();
}

void L2Manifest::Write() {
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) return;  // nothing of the run is there yet
  Status s = collectors::WriteRunManifest(dir_, manifest_);
  if (!s.ok()) DFX_LOG_WARN("cannot write {}: {}", path_.string(), s.message());
}

}  // namespace dfx::coordinator
