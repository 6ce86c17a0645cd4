// What one dispatch of a program will write, per collector, before it runs
// (`dfx-coordinator estimate`, README "Large runs"). The estimate comes from
// the program's lowering (device/lowering.h: tasks, blocks, args, tensors,
// edges, scopes, dump marks, all decided before any timing) and the
// per-record text of each writer (docs/formats.md §2-§11): the deterministic
// files (deps.json, the args-dump manifest and args.bin, the name map) are
// counted record by record with the digits each number will have; the
// timing-dependent parts (timestamps, scheduler phases, PMU counter values,
// the merged trace) use the digits of this host's monotonic clock on the
// chip model's counter and per-record sizes measured on real runs
// (bench/estimate, docs/formats.md).
//
// Pure function of (program, config, emulated core counts) and the clock's
// current value; any thread.
#pragma once

#include <cstdint>

#include "collectors/dispatch_bytes.h"
#include "common/status.h"
#include "config/run_config.h"
#include "device/program.h"

namespace dfx::device {

using collectors::DispatchBytes;

struct EstimateCores {
  int aic = 0;  // emulated AIC cores; 0 = the emulator's default
  int aiv = 0;
};

// `config` is the union of what the run's passes arm (an onboard graph pass
// adds deps.json to the timing pass's files). Errors: the program does not
// lower (it names the file and statement).
Result<DispatchBytes> EstimateDispatchBytes(const Program& program, const config::RunConfig& config,
                                            const EstimateCores& cores = {});

}  // namespace dfx::device
