// The virtual-clock run (ChipOptions::virtual_clock, device/emulator.h): the
// engine's state machine as a deterministic discrete-event simulation on the
// calling thread. The orchestrator submits while its clock is not ahead of
// the next block completion; every completion is retired in (finish cycle,
// core) order; kernel durations come from the kernel cost model
// (EstimateWork) and the runtime's own costs from engine_state.h. The same
// program gives byte-identical artifacts.
#pragma once

#include "device/chip_model.h"
#include "device/engine_scheduler.h"
#include "device/recorder_hooks.h"

namespace dfx::device {

// Runs the whole stream to its end (or the run's failure) on this thread.
void RunVirtualClock(EngineScheduler& sched, RecorderHooks& hooks, const ChipModel& model);

}  // namespace dfx::device
