// Plans (docs/design.md §6): which programs go to which ranks in what order.
//
//   {"name": "decode",
//    "programs": {"attn": "attention_decode.json", "vec": "vector_pipeline.json"},
//    "steps": [{"program": "attn", "rank": 0},
//              {"program": "vec", "ranks": [1, 2]},
//              {"program": "attn", "ranks": "all"},
//              {"program": "vec"},
//              {"program": "attn", "ranks": "all", "run_config": {"enable_pmu": 4}}]}
//
// Program paths are relative to the plan file. A step without "rank" /
// "ranks" goes round-robin over the ranks in step order (the sequence starts
// at rank 0 on every run). Steps to one rank run in order; different ranks
// overlap. A step's "run_config" overrides the run's configuration for its
// dispatches: the keys it gives (the run-config JSON keys,
// docs/run-config.md §2.1) replace the run's; it is checked at load like
// any run config (coordinator/capture_policy.h merges it). Value types; the
// loader is thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/status.h"

namespace dfx::coordinator {

struct PlanProgram {
  std::string name;
  std::filesystem::path path;  // resolved against the plan's directory
  std::string json_text;       // the program file's text, sent as-is in Dispatch
};

struct PlanStep {
  enum class Target { kRank, kRanks, kAll, kRoundRobin };
  std::string program;
  Target target = Target::kRoundRobin;
  std::vector<int> ranks;  // kRank (one entry) / kRanks
  std::string json_path;   // "$.steps[3]", for errors
  // The step's "run_config" object as given (checked; null when absent).
  Json run_config;
};

struct Plan {
  std::string name;
  std::filesystem::path origin;
  std::map<std::string, PlanProgram> programs;
  std::vector<PlanStep> steps;
};

// One dispatch of the expanded plan: program `program` as rank `rank`'s k-th dispatch.
struct PlannedDispatch {
  int rank = 0;
  uint32_t k = 0;
  std::string program;
  size_t step = 0;  // the index of its step in Plan::steps
};

// Loads and checks a plan file. Every error names the file, the JSON path
// and what was expected (e.g. "plan.json: at $.steps[1].ranks[0]: expected a
// rank number >= 0, got string \"x\"").
Result<Plan> LoadPlan(const std::filesystem::path& path);
Result<Plan> ParsePlan(const Json& json, const std::filesystem::path& origin);

// A plan that is one program: `dfx-coordinator run PROGRAM.json` at L3 form.
// (Used by tests and by `--ranks N` with a single program: all ranks run it.)
Result<Plan> PlanForProgram(const std::filesystem::path& program_path);
// The same of a program already read (once: it may have been a pipe).
Result<Plan> PlanForProgram(const std::filesystem::path& program_path, std::string text);
// Checks that `text` (the program file `path`'s) is one JSON object, bounded in
// depth; the program's own rules are the agents' loader's (and the
// pre-check's, coordinator/program_check.h).
Result<PlanProgram> ProgramFromText(const std::string& name, const std::filesystem::path& path,
                                    std::string text);

// Expands the steps for `ranks` ranks, numbering dispatches d0, d1, ... per
// rank. Error (naming the step) when a step names a rank >= ranks.
Result<std::vector<PlannedDispatch>> ExpandPlan(const Plan& plan, int ranks);

// True when `json` looks like a plan (has "steps"), false for a program.
bool IsPlan(const Json& json);

}  // namespace dfx::coordinator
