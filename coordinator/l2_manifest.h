// The run manifest of an L2 run (docs/formats.md §16.1), so an L2 run says
// what it did the way an L3 run does and the Python front and viewers read
// one file for both: level "L2", launcher "exec", one rank 0, one dispatch
// entry per pass (dir ".": the artifacts lie flat in dfx_outputs/), each
// artifact with its size and checksum. Written with the one writer
// (collectors::WriteRunManifest), rewritten as the run goes.
//
// A new L2 run replaces what an earlier run left: Begin removes the
// run_manifest.json and .session.json of an earlier run (in dfx_outputs/
// and in the work dir) and its rank<N>/d<K>/ directories, so nothing reads
// a stale L3 manifest for it. Not thread-safe; one per run.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "collectors/run_manifest.h"
#include "common/clock.h"
#include "common/status.h"
#include "config/pass_plan.h"
#include "config/run_config.h"

namespace dfx::coordinator {

class L2Manifest {
 public:
  // Clears the earlier run's records under `work_dir` and writes this run's
  // manifest (status running). The manifest is written only into a
  // directory that exists (dfx_outputs/ appears when the chip writes), so a
  // run that fails before that leaves none; Finish of a run that succeeded
  // always writes it. Error: the manifest cannot be written (the message
  // names the file).
  static Result<L2Manifest> Begin(const std::filesystem::path& work_dir,
                                  const std::filesystem::path& program,
                                  const config::RunConfig& config,
                                  const std::vector<config::PassPlan>& passes,
                                  const Clock& clock = MonotonicClock::Instance());

  // Pass `index` (of Begin's passes) started / ended; `error` empty = ok.
  void PassStarted(size_t index);
  void PassEnded(size_t index, const std::string& error);
  // A stop signal ended pass `index`: it is "interrupted", with `why`.
  void Interrupt(size_t index, const std::string& why);
  // The run ended (`status`: ok, failed or interrupted): `artifacts` (relative to dfx_outputs/, as
  // listed after the run) are checksummed and listed under the pass that wrote them (deps.json
  // under the graph pass of a two-pass run, the rest under the last pass); `merged` are the
  // converted traces.
  void Finish(collectors::RunState status, const std::vector<std::string>& artifacts,
              const std::vector<std::string>& merged);

  const std::filesystem::path& path() const { return path_; }
  const collectors::RunManifest& manifest() const { return manifest_; }

 private:
  explicit L2Manifest(const Clock& clock) : clock_(&clock) {}
  void Write();  // best effort after Begin: a failure is logged

  const Clock* clock_;
  std::filesystem::path dir_;   // where run_manifest.json goes
  std::filesystem::path path_;  // dir_ / run_manifest.json
  std::filesystem::path dfx_dir_;
  collectors::RunManifest manifest_;
};

}  // namespace dfx::coordinator
