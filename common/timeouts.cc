#include "common/timeouts.h"

#include <fmt/format.h>

namespace dfx {

Status Timeouts::ValidateHeartbeat() const {
  if (heartbeat_interval < kMinHeartbeatInterval) {
    return InvalidArgument(fmt::format(
        "--heartbeat-interval {}: expected at least {} s (a heartbeat more often than that "
        "only costs CPU)",
        ToSeconds(heartbeat_interval), ToSeconds(kMinHeartbeatInterval)));
  }
  const Duration min_timeout = kMinHeartbeatTimeoutIntervals * heartbeat_interval;
  if (heartbeat_timeout < min_timeout) {
    return InvalidArgument(fmt::format(
        "--heartbeat-timeout {}: expected at least {} × --heartbeat-interval = {:g} s, so one "
        "late heartbeat does not declare a live peer dead",
        ToSeconds(heartbeat_timeout), kMinHeartbeatTimeoutIntervals, ToSeconds(min_timeout)));
  }
  return Status::Ok();
}

}  // namespace dfx
