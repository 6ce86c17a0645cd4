// Capture only what is asked (docs/run-config.md §2.13): which collectors
// each dispatch of an L3 run arms, decided when the coordinator sends it.
// In order, later words winning:
//   1. the run's configuration (its flags), or the dispatch's plan step's
//      "run_config" merged over it (plan.h);
//   2. --capture-ranks LIST / --capture-dispatches LIST: a dispatch of a
//      rank or a d<K> outside them runs with every collector off;
//   3. the `dfx-coordinator capture` changes (capture_control.h), in the
//      order they arrived, each for its ranks and its next N dispatches.
// A dispatch whose collectors are all off by one of these is "not captured
// (by request)" in the manifest, never "missing". The decision is armed for
// the dispatch's pass (config::ArmForPass).
//
// Value types and one class; the class is the event loop's only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collectors/run_manifest_capture.h"
#include "common/json.h"
#include "common/status.h"
#include "config/pass_plan.h"
#include "config/run_config.h"
#include "coordinator/plan.h"

namespace dfx::coordinator {

// A list of indices such as "0,3-5": single numbers and LOW-HIGH ranges,
// comma-separated, no spaces. Bounded: 4096 characters, 1024 items, each
// number below 2^31.
struct IndexList {
  std::string text;                                   // as given, for messages and the manifest
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // inclusive, as given
  bool Contains(uint32_t i) const;
  uint32_t Max() const;
};

// Errors name `flag` and the bad part: "--capture-ranks: '3-1' is not a
// range (write LOW-HIGH with LOW <= HIGH)".
Result<IndexList> ParseIndexList(std::string_view flag, std::string_view text);

// --capture-ranks / --capture-dispatches (unset: every one).
struct CaptureSelection {
  std::optional<IndexList> ranks;
  std::optional<IndexList> dispatches;
  bool empty() const { return !ranks && !dispatches; }
};

// Refuses a selection naming ranks or dispatches outside the run, before it
// starts: "--capture-ranks 1,7: rank 7 does not exist in a run of --ranks 4
// (ranks are 0..3)".
Status CheckSelection(const CaptureSelection& selection, int num_ranks,
                      const std::vector<PlannedDispatch>& planned);

// A plan step's own run configuration: the step's "run_config" merged over
// the run's and validated (the keys it gives replace the run's;
// execution_mode stays the run's, since the pass protocol spans the plan).
struct StepConfig {
  config::RunConfig config;
  std::string origin;  // "plan $.steps[2].run_config"
};
// One per plan step; nullopt for a step without "run_config". Errors name
// the plan file and the step.
Result<std::vector<std::optional<StepConfig>>> ResolveStepConfigs(const Plan& plan,
                                                                  const config::RunConfig& run);

// What `dfx-coordinator capture` asks (capture_control.h carries it as JSON).
struct CaptureRequest {
  std::optional<IndexList> ranks;  // unset: every rank
  std::optional<uint32_t> next;    // per rank; unset: every later dispatch
  // Collector keys (enable_chip_swimlane, enable_dep_gen, enable_dump_args,
  // enable_pmu, enable_scope_stats) and their new values.
  Json set = Json::object();
  bool reset = false;   // first drop every earlier change
  bool status = false;  // change nothing: say how the run is going
  std::string command;  // the request as a command line, for the manifest
};
Json CaptureRequestToJson(const CaptureRequest& request);
// Strict: unknown keys, wrong types and bad values are refused by name.
Result<CaptureRequest> CaptureRequestFromJson(const Json& j);

class CapturePolicy {
 public:
  // `may_capture`: the run made dfx_outputs/ (some collector is on in the
  // run or a step); a change that turns collectors on in a run without it
  // is refused.
  CapturePolicy(config::RunConfig run, CaptureSelection selection,
                std::vector<std::optional<StepConfig>> steps, int num_ranks, bool may_capture,
                bool l3 = true);

  struct Decision {
    config::RunConfig armed;  // what the Dispatch carries
    collectors::DispatchCapture capture;
  };
  // Decides dispatch (rank, k) of plan step `step` in pass `pass`, and
  // counts it against the changes that applied (their --next, their
  // applied_to). Call once per dispatch sent.
  Decision Decide(int32_t rank, uint32_t k, size_t step, config::PassKind pass);

  struct Who {
    uint64_t time_ns = 0;
    int64_t unix_ms = 0;
    int64_t pid = 0;
    int64_t uid = 0;
  };
  // Applies a request from now on; returns the change's id, or why it is refused.
  Result<uint32_t> Apply(const CaptureRequest& request, const Who& who);

  const std::vector<collectors::CaptureChange>& changes() const { return changes_; }

 private:
  struct Active {
    size_t change;  // index into changes_
    CaptureRequest request;
    config::RunConfig values;         // the request's set, parsed
    std::vector<uint32_t> remaining;  // per rank, with --next
  };

  config::RunConfig run_;
  CaptureSelection selection_;
  std::vector<std::optional<StepConfig>> steps_;
  int num_ranks_;
  bool may_capture_;
  bool l3_;
  std::vector<Active> active_;
  std::vector<collectors::CaptureChange> changes_;
};

// The five collectors off, the rest of `config` kept.
config::RunConfig WithoutCollectors(config::RunConfig config);

}  // namespace dfx::coordinator
