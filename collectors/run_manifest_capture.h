// What the run manifest says about capture (docs/formats.md §16.1): which
// collectors each dispatch armed and what decided it (the run's flags, a
// plan step's run_config, --capture-ranks / --capture-dispatches, or a
// `dfx-coordinator capture` change), and the list of those changes: when,
// who (the control socket peer's pid and uid), what was asked and which
// dispatches it applied to. A dispatch with `captured: false` ran its
// program without collectors because someone asked so; it is not missing.
//
// Value types and pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"
#include "config/pass_plan.h"
#include "config/run_config.h"

namespace dfx::collectors {

// One dispatch's capture (dispatches[].capture; null until it is sent).
struct DispatchCapture {
  // False: every collector was off by request (the program still ran).
  bool captured = true;
  // What decided: "run", "--capture-ranks 1,3", "--capture-dispatches 1-2",
  // "plan $.steps[2].run_config", "capture change 1".
  std::string by;
  // The collectors this dispatch's pass armed: the five DFX fields
  // (CollectorsOf; the rest of the RunConfig is the run's or its step's).
  config::RunConfig collectors;
  bool operator==(const DispatchCapture&) const = default;
};

struct CaptureTarget {
  int32_t rank = 0;
  uint32_t k = 0;
  config::PassKind pass = config::PassKind::kSingle;
  bool operator==(const CaptureTarget&) const = default;
};

// One `dfx-coordinator capture` request the run applied (capture_changes[]).
struct CaptureChange {
  uint32_t id = 0;       // 1, 2, ... in the order they arrived
  uint64_t time_ns = 0;  // coordinator clock (the manifest's *_ns clock)
  int64_t unix_ms = 0;   // wall clock, for people
  int64_t pid = 0;       // the requesting process (SO_PEERCRED)
  int64_t uid = 0;
  std::string request;                    // what was asked, as a command line
  std::vector<CaptureTarget> applied_to;  // the dispatches it changed so far
  bool operator==(const CaptureChange&) const = default;
};

// The five collector keys of a RunConfig's JSON form, in its order.
Json CollectorsToJson(const config::RunConfig& config);
// A RunConfig with only the five collector fields of `config` (the rest
// default): what DispatchCapture::collectors holds, so that a manifest reads
// back equal to what was written.
config::RunConfig CollectorsOf(const config::RunConfig& config);

Json DispatchCaptureToJson(const DispatchCapture& capture);
Result<DispatchCapture> DispatchCaptureFromJson(const Json& j, const std::string& origin,
                                                const std::string& path);
Json CaptureChangesToJson(const std::vector<CaptureChange>& changes);
Result<std::vector<CaptureChange>> CaptureChangesFromJson(const Json& j, const std::string& origin,
                                                          const std::string& path);

}  // namespace dfx::collectors
