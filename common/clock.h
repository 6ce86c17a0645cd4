// Clocks. Production code reads time through a Clock so tests can inject a
// fake one (docs/design.md §11.5).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace dfx {

// Monotonic nanoseconds since an arbitrary epoch. Thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual uint64_t NowNs() const = 0;
};

// The host steady clock.
class MonotonicClock final : public Clock {
 public:
  uint64_t NowNs() const override;
  static const MonotonicClock& Instance();
};

// A clock that only moves when told to. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(uint64_t start_ns = 0) : now_ns_(start_ns) {}
  uint64_t NowNs() const override { return now_ns_.load(std::memory_order_acquire); }
  void AdvanceNs(uint64_t delta) { now_ns_.fetch_add(delta, std::memory_order_acq_rel); }
  void SetNs(uint64_t ns) { now_ns_.store(ns, std::memory_order_release); }

 private:
  std::atomic<uint64_t> now_ns_;
};

// Converts host nanoseconds to device counter cycles at `freq_hz`.
inline uint64_t NsToCycles(uint64_t ns, uint64_t freq_hz) {
  // Split so the product cannot overflow for any realistic frequency (< 18 GHz).
  return (ns / 1000000000ull) * freq_hz + (ns % 1000000000ull) * freq_hz / 1000000000ull;
}

// Wall-clock time as "YYYYmmdd_HHMMSS" (local time), for artifact names.
std::string WallTimestamp();

}  // namespace dfx
