// Conversion between collectors::RunConfig and its wire form
// (protocol::RunConfigFields). Header-only on purpose: protocol/ does not
// link collectors/, but the coordinator and the agent link both.
#pragma once

#include <string>

#include "collectors/run_config.h"
#include "common/status.h"
#include "protocol/messages.h"

namespace dfx::protocol {

inline RunConfigFields ToWire(const collectors::RunConfig& c) {
  RunConfigFields w;
  w.backend_type = collectors::BackendTypeName(c.backend_type);
  w.execution_mode = collectors::ExecutionModeName(c.execution_mode);
  w.enable_chip_swimlane = c.enable_chip_swimlane;
  w.enable_dep_gen = c.enable_dep_gen;
  w.enable_dump_args = c.enable_dump_args;
  w.enable_pmu = c.enable_pmu;
  w.enable_scope_stats = c.enable_scope_stats;
  w.save_kernels = c.save_kernels;
  w.aicpu_thread_num = c.aicpu_thread_num;
  w.ring_task_window = c.rings.task_window;
  w.ring_heap = c.rings.heap;
  w.ring_dep_pool = c.rings.dep_pool;
  return w;
}

// Rejects unknown backend / mode names; the caller runs RunConfig::Validate().
inline Result<collectors::RunConfig> FromWire(const RunConfigFields& w) {
  collectors::RunConfig c;
  if (w.backend_type == "a2a3") {
    c.backend_type = collectors::BackendType::kA2A3;
  } else if (w.backend_type == "a5") {
    c.backend_type = collectors::BackendType::kA5;
  } else {
    return InvalidArgument("dispatch config: backend_type must be \"a2a3\" or \"a5\", got \"" +
                           w.backend_type + "\"");
  }
  if (w.execution_mode == "sim") {
    c.execution_mode = collectors::ExecutionMode::kSim;
  } else if (w.execution_mode == "onboard") {
    c.execution_mode = collectors::ExecutionMode::kOnboard;
  } else {
    return InvalidArgument(
        "dispatch config: execution_mode must be \"sim\" or \"onboard\", got \"" +
        w.execution_mode + "\"");
  }
  c.enable_chip_swimlane = w.enable_chip_swimlane;
  c.enable_dep_gen = w.enable_dep_gen;
  c.enable_dump_args = w.enable_dump_args;
  c.enable_pmu = w.enable_pmu;
  c.enable_scope_stats = w.enable_scope_stats;
  c.save_kernels = w.save_kernels;
  c.aicpu_thread_num = w.aicpu_thread_num;
  c.rings.task_window = w.ring_task_window;
  c.rings.heap = w.ring_heap;
  c.rings.dep_pool = w.ring_dep_pool;
  return c;
}

}  // namespace dfx::protocol
