// TraceFilter: what of a trace is written (dfx-view swimlane --window /
// --no-flows; the run timeline selects ranks and dispatches itself). Both
// trace encoders ask it, so a window cuts the JSON and the proto trace alike.
// A value type.
#pragma once

#include <cmath>
#include <limits>

namespace dfx::view {

struct TraceFilter {
  // Keep only events that overlap [window_start, window_end] µs on the
  // trace's own time axis (after placement); metadata is always kept. A flow
  // is kept only when both its ends fall in the window.
  double window_start = -std::numeric_limits<double>::infinity();
  double window_end = std::numeric_limits<double>::infinity();
  bool flows = true;

  bool windowed() const { return std::isfinite(window_start) || std::isfinite(window_end); }
  // Whether an event at `ts` lasting `dur` (NaN: no duration), both µs as
  // the trace reads them back (TraceNumber), falls outside the window. An
  // event without a time (NaN ts) is kept.
  bool Drops(double ts, double dur) const {
    if (!windowed() || std::isnan(ts)) return false;
    const double end = std::isnan(dur) ? ts : ts + dur;
    return end < window_start || ts > window_end;
  }
  // Whether a flow arrow between two placed times is drawn.
  bool KeepsFlow(double from_ts, double to_ts) const {
    if (!flows) return false;
    if (!windowed()) return true;
    for (double t : {from_ts, to_ts}) {
      if (t < window_start || t > window_end) return false;
    }
    return true;
  }
};

}  // namespace dfx::view
