// PerfettoTraceEvent: one event of a Perfetto protobuf trace, built field
// by field (trace_event.h) and handed to the encoding thread
// (PerfettoEncodeThread) as the encoder's calls. A slice is begun at its
// first arg (or at its end), once its time is known to fall inside the
// window; then each arg is one debug annotation. A counter's args are one
// value each on the process's "<name> <key>" counter track. Values are
// encoded as a reader of the JSON trace of the same event reads them back:
// times rounded to the nanosecond (TraceNumber), a whole number typed by
// its text (PerfettoTraceEncoder::AnnotateNumberText).
//
// One per trace, reused for every event (Start, the fields, End); one
// thread. The thread and the filter are not owned and outlive it.
#pragma once

#include <cassert>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/status.h"
#include "view/perfetto_encode_thread.h"
#include "view/trace_filter.h"

namespace dfx::view {

class PerfettoTraceEvent {
 public:
  PerfettoTraceEvent(PerfettoEncodeThread* thread, const TraceFilter* filter)
      : thread_(thread), filter_(filter) {}
  PerfettoTraceEvent(const PerfettoTraceEvent&) = delete;
  PerfettoTraceEvent& operator=(const PerfettoTraceEvent&) = delete;

  // Begins an event of phase `ph` and category `cat` (which outlives the event).
  void Start(char ph, std::string_view cat);

  // The fields of trace_event.h. Id and Cname have no place in the proto trace.
  PerfettoTraceEvent& Id(uint64_t) { return *this; }
  PerfettoTraceEvent& Cname(std::string_view) { return *this; }
  PerfettoTraceEvent& Name(std::string_view json_head, std::string_view raw_head,
                           std::string_view plain_tail);
  PerfettoTraceEvent& Name(std::string_view plain) { return NameText(plain); }
  PerfettoTraceEvent& NameText(std::string_view text);
  PerfettoTraceEvent& At(int pid, int tid, double ts) {
    pid_ = pid;
    tid_ = tid;
    ts_ = ts;
    return *this;
  }
  PerfettoTraceEvent& Dur(double dur) {
    dur_ = dur;
    has_dur_ = true;
    return *this;
  }
  template <typename Integer>
  PerfettoTraceEvent& Int(std::string_view key, Integer v) {
    if constexpr (std::is_signed_v<Integer>) {
      Integral(key, static_cast<int64_t>(v), false);
    } else {
      Integral(key, static_cast<int64_t>(v), v > static_cast<uint64_t>(INT64_MAX));
    }
    return *this;
  }
  PerfettoTraceEvent& Num(std::string_view key, double v);
  PerfettoTraceEvent& Bool(std::string_view key, bool v);
  PerfettoTraceEvent& Str(std::string_view key, std::string_view plain) {
    return String(key, plain, false);
  }
  PerfettoTraceEvent& PerTaskStr(std::string_view key, std::string_view plain) {
    return String(key, plain, true);
  }
  PerfettoTraceEvent& Text(std::string_view key, std::string_view text) {
    return String(key, text, false);
  }
  template <typename Integer>
  PerfettoTraceEvent& Ints(std::string_view key, const Integer* v, size_t n) {
    assert(n <= 8);
    int64_t values[8];
    for (size_t i = 0; i < n; ++i) values[i] = static_cast<int64_t>(v[i]);
    return Integers(key, values, n);
  }

  // Ends the event; false when the window dropped it.
  bool End();
  // The first event of the trace that could not be encoded (a time that is
  // not a finite number, a phase or a counter arg with no encoding); the
  // events after it are dropped. OK when there was none.
  const Status& status() const { return status_; }

 private:
  // Begins the encoded slice at the first arg (or End), unless the window
  // drops the event; false when it is dropped or failed. Every arg asks,
  // so the asks after the first are answered inline.
  bool Open() { return opened_ ? !skip_ : OpenFirst(); }
  bool OpenFirst();
  void Integral(std::string_view key, int64_t v, bool is_unsigned);
  PerfettoTraceEvent& Integers(std::string_view key, const int64_t* v, size_t n);
  PerfettoTraceEvent& String(std::string_view key, std::string_view text, bool per_task);
  // The trace's first error; the event is dropped.
  void Fail(std::string message);

  PerfettoEncodeThread* thread_;
  const TraceFilter* filter_;
  Status status_;
  // The event's fields until Open.
  char ph_ = 0;
  std::string_view cat_;
  std::string name_;
  bool name_per_task_ = false;  // the name has a tail (Name)
  int pid_ = 0, tid_ = 0;
  double ts_ = 0, dur_ = 0;
  bool has_dur_ = false, opened_ = false, skip_ = false, dropped_ = false;
};

}  // namespace dfx::view
