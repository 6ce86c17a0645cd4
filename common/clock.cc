#include "common/clock.h"

#include <ctime>

namespace dfx {

uint64_t MonotonicClock::NowNs() const {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

const MonotonicClock& MonotonicClock::Instance() {
  static const MonotonicClock clock;
  return clock;
}

std::string WallTimestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d_%H%M%S", &tm);
  return buf;
}

}  // namespace dfx
