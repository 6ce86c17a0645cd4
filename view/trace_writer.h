// TraceWriter: one Perfetto / Chrome JSON trace being written (artifacts.md
// §4.2), streamed one event per line through common/json_stream's
// ChunkedWriter so a trace of millions of events never sits in memory. It
// owns what every view of the trace shares: the event and flow id counters,
// the process/thread name metadata (each emitted once), flow events, and
// where the dispatch being converted is placed (the run timeline gives every
// rank its own pid range and every dispatch its own time offset).
//
// Views build an event in place: `std::string& b = Begin(); ...; End();`.
//
// Not movable (owns an open file, and a proto trace's encoding thread writes
// into it); one calling thread.
#pragma once

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "common/decimal.h"
#include "common/json.h"
#include "common/json_stream.h"
#include "common/status.h"
#include "view/perfetto_pipe.h"
#include "view/perfetto_proto.h"

namespace dfx::view {

// A slice that flow arrows start or end at.
struct Anchor {
  int pid, tid;
  double ts;          // visible start
  double end;         // visible end
  uint64_t event_id;  // bind_id of the slice; 0 = bind by position only
};

// Appends a trace number (µs): rounded to the nanosecond, then the shortest
// round-trip decimal, so no 0.6399999999999864 reaches the trace.
//
// One call per number of every event, so the common case is written by
// hand: a value with a fraction, below 1e12 µs (where doubles are closer
// than 1 ns, so the nanosecond decimal with its trailing zeros cut IS the
// shortest round-trip form, and is shorter than its exponent form). Whole
// numbers (std::to_chars may choose "1e+06"), huge values and non-finite
// ones take AppendDouble: the bytes are the same either way.
// Writes the number at `p` (which has room for kNumChars) and returns its end.
inline constexpr size_t kNumChars = 40;
[[gnu::always_inline]] inline char* NumTo(char* p, double v) {
  const double ns = std::round(v * 1000.0);
  int64_t n = std::fabs(ns) < 1e15 ? static_cast<int64_t>(ns) : 0;
  if (n % 1000 == 0) {  // whole, huge or not finite: as AppendDouble writes it
    double whole = ns / 1000.0;
    if (!std::isfinite(whole)) {
      std::memcpy(p, "null", 4);
      return p + 4;
    }
    if (whole == 0.0) whole = 0.0;  // no "-0"
    return std::to_chars(p, p + kNumChars, whole).ptr;
  }
  if (n < 0) {
    *p++ = '-';
    n = -n;
  }
  p = WriteDecimal(p, n / 1000);
  const int frac = static_cast<int>(n % 1000);  // 1..999
  *p++ = '.';
  *p++ = static_cast<char>('0' + frac / 100);
  *p++ = static_cast<char>('0' + frac / 10 % 10);
  *p++ = static_cast<char>('0' + frac % 10);
  while (p[-1] == '0') --p;
  return p;
}

inline void Num(std::string& b, double v) {
  char buf[kNumChars];
  b.append(buf, static_cast<size_t>(NumTo(buf, v) - buf));
}

// One event's text built in a fixed buffer and appended at once: the
// per-piece appends (a memcpy call each) were most of what an event cost.
// The caller bounds what it writes: kRoom bytes at most.
class EventText {
 public:
  static constexpr size_t kRoom = 512;
  // Inline, all of them: an event is a few of these, and when GCC stopped
  // inlining one (Int, in TraceWriter::Flow once its proto branch grew) the
  // calls cost a 100k-task JSON conversion 5% of its wall.
  [[gnu::always_inline]] EventText& Lit(std::string_view s) {
    assert(s.size() <= kRoom - static_cast<size_t>(p_ - buf_));
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
    return *this;
  }
  template <typename Integer>
  [[gnu::always_inline]] EventText& Int(Integer v) {
    p_ = WriteDecimal(p_, v);
    return *this;
  }
  [[gnu::always_inline]] EventText& Num(double v) {
    p_ = NumTo(p_, v);
    return *this;
  }
  // Text written by `write(char* at) -> end`, of at most `bound` bytes.
  template <typename Writer>
  [[gnu::always_inline]] EventText& Put(size_t bound, Writer&& write) {
    assert(bound <= kRoom - static_cast<size_t>(p_ - buf_));
    (void)bound;
    p_ = write(p_);
    return *this;
  }
  std::string_view view() const { return {buf_, static_cast<size_t>(p_ - buf_)}; }

 private:
  char buf_[kRoom];
  char* p_ = buf_;
};

// What of a trace is written (dfx-view swimlane --window / --no-flows; the
// run timeline adds --ranks / --dispatch itself).
struct TraceFilter {
  // Keep only events that overlap [window_start, window_end] µs on the
  // trace's own time axis (after placement); metadata is always kept. A flow
  // is kept only when both its ends fall in the window.
  double window_start = -std::numeric_limits<double>::infinity();
  double window_end = std::numeric_limits<double>::infinity();
  bool flows = true;
  bool windowed() const { return std::isfinite(window_start) || std::isfinite(window_end); }
};

// How a trace is written: the JSON trace of artifacts.md §4.2 (what the
// reference tools read), or the same events as a Perfetto protobuf trace
// (view/perfetto_proto.h: several times smaller, opens faster in the UI).
enum class TraceFormat { kJson, kProto };

// "json" / "proto" (dfx-view swimlane --format).
Status ParseTraceFormat(const std::string& text, TraceFormat* format);
// The default output name in `format`: a JSON default "<name>.json" becomes
// "<name>.pftrace" for proto.
std::filesystem::path DefaultTracePath(const std::filesystem::path& json_default,
                                       TraceFormat format);

// Appends `args` formatted by a format string compiled at build time
// (FMT_COMPILE: no format-string parsing per event, which was an eighth of
// a conversion's profile), e.g. AppendF(b, FMT_COMPILE(R"(,"pid":{})"), pid).
template <typename CompiledFormat, typename... Args>
void AppendF(std::string& b, const CompiledFormat& format, const Args&... args) {
  static_assert(fmt::detail::is_compiled_string<CompiledFormat>::value,
                "AppendF takes FMT_COMPILE(\"...\")");
  fmt::format_to(std::back_inserter(b), format, args...);
}

class TraceWriter;

// Whether `s` needs no JSON escaping (no quote, backslash or control byte).
inline bool IsPlainText(std::string_view s) {
  for (char c : s) {
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) return false;
  }
  return true;
}

// What the JSON text Num writes for `v` reads back as: `v` rounded to the
// nanosecond (no -0); NaN when Num writes null. The proto trace encodes
// these values, so it is what it would be had the JSON text been parsed.
inline double TraceNumber(double v) {
  const double us = std::round(v * 1000.0) / 1000.0;
  return std::isfinite(us) ? us + 0.0 : std::nan("");
}

// One event given field by field, in the order of its JSON keys
// (TraceWriter::Event): the JSON trace gets the text the views wrote by hand
// before, byte for byte; the proto trace gets the fields directly, with no
// JSON built and parsed again. For the shapes the views write per task:
//   trace.Event('X', "scheduler").Id(id).Cname("good").Name("complete(3)")
//       .At(pid, tid, ts).Dur(dur).Str("phase", "complete").Int("loop_iter", 2).End();
// Fields: Id and Cname optional, then Name, At, Dur (optional), then the args
// in order. Texts called `plain` need no JSON escaping (asserted). A
// reference from TraceWriter::Event, valid until End.
class TraceEvent {
 public:
  [[gnu::always_inline]] TraceEvent& Id(uint64_t id) {
    if (json_ != nullptr) Room(24).Lit(R"(,"id":)").Dec(id);
    return *this;
  }
  [[gnu::always_inline]] TraceEvent& Cname(std::string_view plain) {
    if (json_ != nullptr) Room(16 + plain.size()).Lit(R"(,"cname":")").Lit(plain).Lit("\"");
    return *this;
  }
  // The name is `head` + `plain_tail`: `json_head` is the head's JSON string
  // body (escaped, no quotes), `raw_head` its text. A name with a tail (a
  // task slice's "<kernel>(<task>)") names one task: the proto trace looks
  // it up in its string cache only when it repeats a recent one
  // (PerfettoTraceEncoder::InternPerTask).
  [[gnu::always_inline]] TraceEvent& Name(std::string_view json_head, std::string_view raw_head,
                                          std::string_view plain_tail) {
    assert(IsPlainText(plain_tail));
    if (json_ == nullptr || json_head.size() + plain_tail.size() > kRoom / 2) {
      return LongName(json_head, raw_head, plain_tail);
    }
    Room(10 + json_head.size() + plain_tail.size()).Lit(R"(,"name":")");
    return Lit(json_head).Lit(plain_tail).Lit("\"");
  }
  TraceEvent& Name(std::string_view plain) { return Name(plain, plain, {}); }
  // pid, tid and ts as the trace shows them (placed).
  [[gnu::always_inline]] TraceEvent& At(int pid, int tid, double ts) {
    pid_ = pid;
    tid_ = tid;
    ts_ = ts;
    if (json_ != nullptr) {
      Room(32 + kNumChars).Lit(R"(,"pid":)").Dec(pid).Lit(R"(,"tid":)").Dec(tid);
      Lit(R"(,"ts":)").NumText(ts);
    }
    return *this;
  }
  [[gnu::always_inline]] TraceEvent& Dur(double dur) {
    dur_ = dur;
    has_dur_ = true;
    if (json_ != nullptr) Room(8 + kNumChars).Lit(R"(,"dur":)").NumText(dur);
    return *this;
  }
  // --- args ---
  template <typename Integer>
  [[gnu::always_inline]] TraceEvent& Int(std::string_view key, Integer v) {
    if (json_ != nullptr) {
      Key(key, 24).Dec(v);
    } else if constexpr (std::is_signed_v<Integer>) {
      ProtoInt(key, static_cast<int64_t>(v), false);
    } else {
      ProtoInt(key, static_cast<int64_t>(v), v > static_cast<uint64_t>(INT64_MAX));
    }
    return *this;
  }
  // A trace number (Num).
  [[gnu::always_inline]] TraceEvent& Num(std::string_view key, double v) {
    if (json_ != nullptr) {
      Key(key, kNumChars).NumText(v);
    } else {
      ProtoNum(key, v);
    }
    return *this;
  }
  [[gnu::always_inline]] TraceEvent& Str(std::string_view key, std::string_view plain) {
    if (json_ == nullptr) return ProtoStr(key, plain, false);
    assert(IsPlainText(plain));
    if (plain.size() <= kRoom / 2) return Key(key, plain.size() + 2).Lit("\"").Lit(plain).Lit("\"");
    Key(key, 1).Lit("\"");
    Text(plain);
    return Room(1).Lit("\"");
  }
  // Str for a text that belongs to one task (its hints): the proto trace
  // treats it as a task's name (InternPerTask); the JSON is the same.
  [[gnu::always_inline]] TraceEvent& PerTaskStr(std::string_view key, std::string_view plain) {
    if (json_ == nullptr) return ProtoStr(key, plain, true);
    return Str(key, plain);
  }
  // An array of up to 8 integers ("key":[a,b,c]).
  template <typename Integer>
  TraceEvent& Ints(std::string_view key, const Integer* v, size_t n) {
    assert(n <= 8);
    if (json_ != nullptr) {
      Key(key, 2 + 21 * n).Lit("[");
      for (size_t i = 0; i < n; ++i) {
        if (i) Lit(",");
        Dec(v[i]);
      }
      Lit("]");
    } else {
      int64_t values[8];
      for (size_t i = 0; i < n; ++i) values[i] = static_cast<int64_t>(v[i]);
      ProtoInts(key, values, n);
    }
    return *this;
  }
  // Ends the event (TraceWriter::End: outside the window it is taken back).
  inline void End();

 private:
  friend class TraceWriter;
  static constexpr size_t kRoom = 512;
  // Starts an event: JSON text into `json` (null: proto fields).
  void Start(TraceWriter* trace, std::string* json, char ph, std::string_view cat);
  // Makes room for `n` bytes (at most kRoom) in the text buffer.
  [[gnu::always_inline]] TraceEvent& Room(size_t n) {
    assert(n <= kRoom);
    if (n > static_cast<size_t>(buf_ + kRoom - p_)) FlushText();
    return *this;
  }
  [[gnu::always_inline]] TraceEvent& Lit(std::string_view s) {
    // An empty view may have no data (a null source is undefined for memcpy).
    if (!s.empty()) std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
    return *this;
  }
  template <typename Integer>
  [[gnu::always_inline]] TraceEvent& Dec(Integer v) {
    p_ = WriteDecimal(p_, v);
    return *this;
  }
  [[gnu::always_inline]] TraceEvent& NumText(double v) {
    p_ = NumTo(p_, v);
    return *this;
  }
  // ,"args":{"key": (the first) or ,"key": with room for `value` bytes after.
  [[gnu::always_inline]] TraceEvent& Key(std::string_view key, size_t value) {
    Room(12 + key.size() + value);
    Lit(args_ ? "," : R"(,"args":{)");
    args_ = true;
    return Lit("\"").Lit(key).Lit("\":");
  }
  // Text of any length (long ones are appended directly).
  void Text(std::string_view s);
  // Out of line: one more inlined std::string::append here made GCC stop
  // inlining the one in TraceWriter::Flow (+11 M instructions at 100k).
  [[gnu::noinline]] void FlushText();
  // Proto: begins the encoded slice at the first arg (or End), unless the
  // window drops the event; false when it is dropped or failed. Every arg
  // asks, so the asks after the first are answered inline (the call's
  // prologue was most of a 1M-task conversion's 5% in Open).
  [[gnu::always_inline]] bool Open() { return opened_ ? !skip_ : OpenFirst(); }
  bool OpenFirst();
  void ProtoInt(std::string_view key, int64_t v, bool is_unsigned);
  void ProtoNum(std::string_view key, double v);
  void ProtoInts(std::string_view key, const int64_t* v, size_t n);
  TraceEvent& ProtoStr(std::string_view key, std::string_view text, bool per_task);
  // Name in the proto trace, or one longer than the text buffer.
  TraceEvent& LongName(std::string_view json_head, std::string_view raw_head,
                       std::string_view plain_tail);
  void ProtoEnd();
  // Proto: the first error of the trace (reported by Finish); the event is dropped.
  void Fail(std::string message);

  TraceWriter* trace_ = nullptr;
  std::string* json_ = nullptr;  // JSON: the writer's buffer
  bool args_ = false;
  // Proto: the fields until Open.
  char ph_ = 0;
  std::string_view cat_;
  std::string name_;
  int pid_ = 0, tid_ = 0;
  double ts_ = 0, dur_ = 0;
  bool has_dur_ = false, opened_ = false, skip_ = false;
  bool name_per_task_ = false;  // proto: the name has a tail (Name)
  char buf_[kRoom];
  char* p_ = buf_;
};

class TraceWriter {
 public:
  TraceWriter() = default;
  // Not movable: the proto trace's encoding thread writes into writer_.
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Creates the trace (under a temporary name) and writes the container's
  // head; a path ending in ".gz" is written gzip-compressed. With kProto
  // the events go to the encoder on a thread of its own
  // (PerfettoEncodeThread): the views' JSON events (Begin/End) are parsed
  // here and encoded there, and the fields of Event, names and flows are
  // encoded there directly. `min_bytes`: what the trace is known to reach at
  // least, if anything; when that fills every chunk the trace's writer will
  // use, their pages are mapped here (ChunkedWriter::Open's `map_chunks`),
  // so a caller that opens before a wait pays for them in it.
  Status Open(const std::filesystem::path& path, const TraceFilter& filter = {},
              TraceFormat format = TraceFormat::kJson, uint64_t min_bytes = 0);
  // Closes the event list, adds a top-level "metadata" object unless
  // `metadata` is null (proto: an instant "trace metadata" at time 0), and
  // renames the trace into place. An event the proto encoder could not read
  // is reported here, and then nothing is renamed into place.
  Status Finish(const Json& metadata);

  // --- placement of the dispatch being converted ---------------------------------
  // Every pid is offset by `pid_base` and every process name prefixed.
  void PlaceProcesses(int pid_base, std::string process_prefix) {
    pid_base_ = pid_base;
    process_prefix_ = std::move(process_prefix);
  }
  // Every ts is offset by `ts_offset`; max_ts() restarts there.
  void PlaceDispatchAt(double ts_offset) {
    ts_offset_ = ts_offset;
    max_ts_ = ts_offset;
  }
  int Pid(int pid) const { return pid_base_ + pid; }
  double T(double ts) const { return ts + ts_offset_; }
  // Notes that something is drawn until `ts` (before placement).
  void SeeEnd(double ts) { max_ts_ = std::max(max_ts_, T(ts)); }
  double ts_offset() const { return ts_offset_; }
  // The latest end drawn since PlaceDispatchAt (placed).
  double max_ts() const { return max_ts_; }

  // --- events ---------------------------------------------------------------------
  // Whether the trace is the Perfetto protobuf one: the per-task views write
  // the JSON text themselves (EventText, fewer instructions than Event's
  // JSON branch) and give Event the fields only for proto.
  bool proto() const { return proto_ != nullptr; }
  // Begins an event of phase `ph` ('X' or 'C') and category `cat` (a string
  // that outlives the event) given field by field (TraceEvent).
  TraceEvent& Event(char ph, std::string_view cat) {
    if (proto_) {
      last_dropped_ = false;
      event_.Start(this, nullptr, ph, cat);
    } else {
      event_.Start(this, &Begin(), ph, cat);
    }
    return event_;
  }
  // The buffer to append one event's JSON object to (the separator is
  // written); the proto trace parses the event again at End: what Event does
  // not cover (the shapes written once per dispatch or per marker).
  std::string& Begin();
  // Ends the event begun last; outside the window it is taken back.
  void End();
  uint64_t next_event_id() const { return next_event_id_; }
  uint64_t TakeEventId() { return next_event_id_++; }
  // Reserves `n` consecutive ids; returns the first.
  uint64_t TakeEventIds(uint64_t n) {
    uint64_t first = next_event_id_;
    next_event_id_ += n;
    return first;
  }
  // Counts the slice just ended (unless the window took it back).
  void CountSlice() {
    if (!last_dropped_) ++slice_events_;
  }
  // Bytes written so far (compressed when gzip).
  // Proto: as of the last chunk the encoding thread encoded.
  uint64_t bytes_pending() const {
    return proto_ ? proto_->bytes_written() : writer_.bytes_written();
  }
  // A task slice of `dur_us` was drawn (the shortest is compared with the
  // run timeline's clock uncertainty).
  void NoteTaskDuration(double dur_us) { shortest_task_us_ = std::min(shortest_task_us_, dur_us); }
  // +infinity when no task was drawn.
  double shortest_task_us() const { return shortest_task_us_; }

  // Process / thread names and sort indices (§4.3), each written once.
  void ProcessName(int pid, const std::string& name, int sort);
  void ThreadName(int pid, int tid, const std::string& name, int sort = -1);

  // A flow arrow (an "s" and an "f" event) between two anchors; the counts
  // are written when `in_count` > 0 (dependency flows).
  void Flow(const char* name, const Anchor& from, double from_ts, const Anchor& to, double to_ts,
            int in_count = 0, int out_count = 0);

  uint64_t slice_events() const { return slice_events_; }
  uint64_t flow_events() const { return flow_events_; }

 private:
  friend class TraceEvent;
  void Meta(const char* what, int pid, int tid, bool is_name, const std::string& name, int sort);
  // Whether an event at ts (µs, placed) lasting `dur` (NaN: none) is outside the window.
  bool OutsideWindow(double ts, double dur) const {
    if (!filter_.windowed() || std::isnan(ts)) return false;
    const double end = std::isnan(dur) ? ts : ts + dur;
    return end < filter_.window_start || ts > filter_.window_end;
  }

  ChunkedWriter writer_;
  TraceFilter filter_;
  TraceFormat format_ = TraceFormat::kJson;
  // kProto: encodes into writer_ on a thread of its own (the writer is that
  // thread's until Finish).
  std::unique_ptr<PerfettoEncodeThread> proto_;
  std::string proto_event_;  // kProto: the event being built
  JsonTraceEvent proto_parsed_;
  TraceEvent event_;        // the event begun by Event
  Status proto_status_;     // the first event the encoder could not read
  size_t event_begin_ = 0;  // offset of the event being built in the writer's buffer
  bool last_dropped_ = false;
  bool in_flow_ = false;
  bool first_event_ = true;
  uint64_t next_event_id_ = 1;
  uint64_t next_flow_id_ = 1;
  int pid_base_ = 0;            // run timeline: 100 * (rank + 1)
  std::string process_prefix_;  // run timeline: "Rank N · "
  double ts_offset_ = 0.0;
  double max_ts_ = 0.0;
  std::set<std::pair<int, int>> named_threads_;
  std::set<std::string> named_processes_;
  uint64_t flow_events_ = 0;
  uint64_t slice_events_ = 0;
  double shortest_task_us_ = std::numeric_limits<double>::infinity();
};

void TraceEvent::End() {
  if (json_ == nullptr) return ProtoEnd();
  Room(2).Lit(args_ ? "}}" : "}");
  FlushText();
  trace_->End();
}

}  // namespace dfx::view
