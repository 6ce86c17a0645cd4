#include "rank_agent/exec.h"

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/input_file.h"
#include "common/json.h"
#include "common/log.h"
#include "device/memory_budget.h"
#include "rank_agent/run_dispatch.h"

namespace dfx::rank_agent {

namespace {

// The live progress line of an L2 run on a terminal (log::SetStatusLine):
// loading the program, tasks done of the chip's run, writing the
// artifacts. Its own thread looks every 10 ms: a new stage (the run
// starting, its last task done) is drawn at once, the counts within a
// stage every 100 ms. So even a run shorter than 100 ms shows its task
// count.
class ProgressLine {
 public:
  ProgressLine(std::string label, std::shared_ptr<device::ChipProgress> progress)
      : label_(std::move(label)), progress_(std::move(progress)), thread_([this] { Loop(); }) {}
  ~ProgressLine() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    log::SetStatusLine("");
  }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

 private:
  void Loop() {
    using Clock = std::chrono::steady_clock;
    std::unique_lock<std::mutex> lock(mu_);
    int drawn_stage = -1;
    Clock::time_point drawn_at;
    do {
      const uint64_t total = progress_->tasks_total.load(std::memory_order_relaxed);
      const uint64_t done = progress_->tasks_done.load(std::memory_order_relaxed);
      const int stage = total == 0 ? 0 : done < total ? 1 : 2;
      const Clock::time_point now = Clock::now();
      if (stage == drawn_stage && now - drawn_at < std::chrono::milliseconds(100)) continue;
      drawn_stage = stage;
      drawn_at = now;
      if (stage == 0) {
        log::SetStatusLine(fmt::format("{}: loading the program", label_));
      } else if (stage == 1) {
        log::SetStatusLine(fmt::format("{}: {}/{} tasks ({:.0f}%)", label_, done, total,
                                       100.0 * static_cast<double>(done) / total));
      } else {
        log::SetStatusLine(fmt::format("{}: {} tasks done, writing the artifacts", label_, total));
      }
    } while (!cv_.wait_for(lock, std::chrono::milliseconds(10), [this] { return stop_; }));
  }

  const std::string label_;
  const std::shared_ptr<device::ChipProgress> progress_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace

Result<ExecResult> RunExec(const ExecOptions& options) {
  DispatchRequest request;
  DFX_ASSIGN_OR_RETURN(request.program_json,
                       ReadInputFile(options.program_path, kMaxProgramFileBytes));
  request.program_origin =
      options.program_origin.empty() ? options.program_path.string() : options.program_origin;
  // The program, the config and the memory budget, before a chip is made:
  // a program larger than the chip or this host is refused by its budget,
  // not met by std::bad_alloc. --check-only stops here.
  DFX_ASSIGN_OR_RETURN(request.program,
                       ParseDispatchProgram(request.program_json, request.program_origin, "",
                                            [&options] { return options.config.Validate(); }));
  DFX_RETURN_IF_ERROR(device::CheckMemoryBudget(
      *request.program, options.config, options.chip.dump_arena_bytes,
      !options.check_only || options.check_host_memory ? device::HostMemoryAvailable()
                                                       : std::nullopt));
  if (options.check_only) {
    ExecResult checked;
    if (options.estimate) {
      // A program that does not lower (a tensor larger than its ring heap)
      // fails its dispatch at run time, with its own message; before the
      // run it is estimated at nothing rather than refused here.
      auto bytes = device::EstimateDispatchBytes(*request.program, options.config,
                                                 {options.chip.aic_cores, options.chip.aiv_cores});
      checked.estimate = bytes.ok() ? *bytes : device::DispatchBytes{};
    }
    return checked;
  }
  request.config = options.config;
  request.pass = options.pass;
  request.output_dir = options.output_dir;
  // L2 form: name_map_<work_dir name>.json beside the artifacts (docs/formats.md §3).
  request.name_map_file = collectors::L2NameMapFileName(
      options.work_dir.empty() ? options.output_dir.parent_path() : options.work_dir);
  if (!options.device_state_dir.empty())
    request.resident_state_file = options.device_state_dir / collectors::kDeviceStateFile;
  request.faults = options.faults;

  device::ChipOptions chip_options = options.chip;
  if (!chip_options.progress) chip_options.progress = std::make_shared<device::ChipProgress>();
  DFX_ASSIGN_OR_RETURN(std::unique_ptr<device::Chip> chip, options.make_chip(chip_options));
  DispatchOutcome run;
  {
    // Only where the line shows: elsewhere its thread would wake for nothing.
    std::optional<ProgressLine> line;
    if (log::StatusLineShown())
      line.emplace(options.program_path.filename().string(), chip_options.progress);
    run = RunDispatch(*chip, request);
  }
  if (run.failure == DispatchFailure::kRun) {
    return Status(
        run.status.code(),
        fmt::format("{}: the run failed: {}", options.program_path.string(), run.status.message()));
  }
  if (!run.status.ok()) return run.status;
  ExecResult result;
  result.tasks_executed = run.tasks_executed;
  result.wall_ns = run.wall_ns;
  result.makespan_ns = run.makespan_ns;
  result.warnings = std::move(run.warnings);
  result.artifacts = std::move(run.artifacts);
  return result;
}

}  // namespace dfx::rank_agent
