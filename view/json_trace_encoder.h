// The JSON trace of docs/formats.md §4.2 — {"traceEvents": [ ... ], "metadata":
// {...}} with one event per line — written from typed events into a
// ChunkedWriter, so a trace of millions of events never sits in memory.
//
// JsonTraceEncoder writes the container, the process and thread metadata
// events and the flow arrows; JsonTraceEvent is one event's builder
// (trace_event.h): its text is built in a stack buffer and appended to the
// writer at once, one call per event rather than one per piece. Every
// number goes through NumTo and every integer through WriteDecimal.
//
// One thread. The encoder writes into a writer it does not own (it must
// outlive the encoder); a JsonTraceEvent lives for one event.
#pragma once

#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/decimal.h"
#include "common/json.h"
#include "common/json_stream.h"
#include "view/event_text.h"
#include "view/trace_filter.h"

namespace dfx::view {

class JsonTraceEncoder {
 public:
  // One end of a flow arrow, placed: a slice's thread and the time, and the
  // slice's id to bind to (0: bind by position only).
  struct FlowPoint {
    int pid, tid;
    double ts;
    uint64_t bind_id;
  };

  // Writes into `writer` (open) what `filter` keeps (both outlive this).
  JsonTraceEncoder(ChunkedWriter* writer, const TraceFilter* filter)
      : writer_(writer), filter_(filter) {}

  // The container's head: {"traceEvents": [
  void Head();
  // Closes the event list and adds the top-level "metadata" object unless
  // `metadata` is null.
  void Tail(const Json& metadata);

  // The "process_name" and "process_sort_index" metadata events (§4.3).
  void Process(int pid, std::string_view name, int sort_index);
  // "thread_name", and "thread_sort_index" unless `sort_index` < 0.
  void Thread(int pid, int tid, std::string_view name, int sort_index);
  // The "s" and "f" events of one arrow; the counts are written when
  // `in_count` > 0 (dependency flows). The window was asked by the caller.
  void Flow(uint64_t id, std::string_view name, const FlowPoint& from, const FlowPoint& to,
            int in_count, int out_count);

 private:
  friend class JsonTraceEvent;
  void Meta(const char* what, int pid, int tid, bool is_name, std::string_view name, int sort);
  // The buffer an event is appended to, after its separator.
  std::string& Separated() {
    std::string& b = writer_->buffer();
    if (!first_event_) b.append(",\n");
    return b;
  }
  // An event was appended.
  void Appended() {
    first_event_ = false;
    writer_->MaybeFlush();
  }

  ChunkedWriter* writer_;
  const TraceFilter* filter_;
  bool first_event_ = true;
};

// One event of a JSON trace, built field by field in the order its keys are
// written (trace_event.h). Texts called `plain` need no JSON escaping
// (asserted); the pieces of bounded size are written into a fixed buffer
// without a check each, the unbounded ones (names, strings) make room.
class JsonTraceEvent {
 public:
  // Begins an event of phase `ph` and category `cat` (plain, short).
  [[gnu::always_inline]] JsonTraceEvent(JsonTraceEncoder& encoder, char ph, std::string_view cat)
      : encoder_(encoder), out_(encoder.writer_->buffer()), begin_(out_.size()) {
    assert(IsPlainText(cat) && cat.size() <= 64);
    if (!encoder.first_event_) Lit(",\n");
    Lit(R"({"ph":")").Lit({&ph, 1}).Lit(R"(","cat":")").Lit(cat).Lit("\"");
  }
  JsonTraceEvent(const JsonTraceEvent&) = delete;
  JsonTraceEvent& operator=(const JsonTraceEvent&) = delete;

  [[gnu::always_inline]] JsonTraceEvent& Id(uint64_t id) {
    Room(8 + kMaxDecimalChars).Lit(R"(,"id":)").Dec(id);
    return *this;
  }
  [[gnu::always_inline]] JsonTraceEvent& Cname(std::string_view plain) {
    assert(IsPlainText(plain) && plain.size() <= kRoom / 2);
    Room(12 + plain.size()).Lit(R"(,"cname":")").Lit(plain).Lit("\"");
    return *this;
  }
  [[gnu::always_inline]] JsonTraceEvent& Name(std::string_view json_head, std::string_view raw_head,
                                              std::string_view plain_tail) {
    (void)raw_head;
    assert(IsPlainText(plain_tail));
    if (json_head.size() + plain_tail.size() > kRoom / 2) return LongName(json_head, plain_tail);
    Room(10 + json_head.size() + plain_tail.size()).Lit(R"(,"name":")");
    Lit(json_head).Lit(plain_tail).Lit("\"");
    return *this;
  }
  [[gnu::always_inline]] JsonTraceEvent& Name(std::string_view plain) {
    assert(IsPlainText(plain));
    return Name(plain, plain, {});
  }
  JsonTraceEvent& NameText(std::string_view text) {
    Room(8).Lit(R"(,"name":)");
    return Quoted(text);
  }
  [[gnu::always_inline]] JsonTraceEvent& At(int pid, int tid, double ts) {
    ts_ = ts;
    Room(2 * (7 + 11) + 6 + kNumChars).Lit(R"(,"pid":)").Dec(pid).Lit(R"(,"tid":)").Dec(tid);
    Lit(R"(,"ts":)").NumText(ts);
    return *this;
  }
  [[gnu::always_inline]] JsonTraceEvent& Dur(double dur) {
    dur_ = dur;
    Room(8 + kNumChars).Lit(R"(,"dur":)").NumText(dur);
    return *this;
  }

  // --- args ---
  template <typename Integer>
  [[gnu::always_inline]] JsonTraceEvent& Int(std::string_view key, Integer v) {
    Key(key, kMaxDecimalChars).Dec(v);
    return *this;
  }
  [[gnu::always_inline]] JsonTraceEvent& Num(std::string_view key, double v) {
    Key(key, kNumChars).NumText(v);
    return *this;
  }
  JsonTraceEvent& Bool(std::string_view key, bool v) {
    Key(key, 5).Lit(v ? "true" : "false");
    return *this;
  }
  [[gnu::always_inline]] JsonTraceEvent& Str(std::string_view key, std::string_view plain) {
    assert(IsPlainText(plain));
    if (plain.size() <= kRoom / 2) {
      Key(key, plain.size() + 2).Lit("\"").Lit(plain).Lit("\"");
      return *this;
    }
    Key(key, 1).Lit("\"");
    Long(plain);
    Room(1).Lit("\"");
    return *this;
  }
  [[gnu::always_inline]] JsonTraceEvent& PerTaskStr(std::string_view key, std::string_view plain) {
    return Str(key, plain);
  }
  JsonTraceEvent& Text(std::string_view key, std::string_view text) {
    Key(key, 0);
    return Quoted(text);
  }
  template <typename Integer>
  JsonTraceEvent& Ints(std::string_view key, const Integer* v, size_t n) {
    assert(n <= 8);
    Key(key, 2 + (kMaxDecimalChars + 1) * n).Lit("[");
    for (size_t i = 0; i < n; ++i) {
      if (i) Lit(",");
      Dec(v[i]);
    }
    Lit("]");
    return *this;
  }

  // Ends the event: appends it to the trace, or drops it when it falls
  // outside the window. False when dropped.
  [[gnu::always_inline]] bool End() {
    Room(2).Lit(args_ ? "}}" : "}");
    if (encoder_.filter_->windowed() && Dropped()) return false;
    Flush();
    encoder_.Appended();
    return true;
  }

 private:
  static constexpr size_t kRoom = 512;
  // Makes room for `n` bytes (at most kRoom) in the buffer.
  [[gnu::always_inline]] JsonTraceEvent& Room(size_t n) {
    assert(n <= kRoom);
    if (n > static_cast<size_t>(buf_ + kRoom - p_)) Flush();
    return *this;
  }
  [[gnu::always_inline]] JsonTraceEvent& Lit(std::string_view s) {
    // An empty view may have no data (a null source is undefined for memcpy).
    if (!s.empty()) std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
    return *this;
  }
  template <typename Integer>
  [[gnu::always_inline]] JsonTraceEvent& Dec(Integer v) {
    p_ = WriteDecimal(p_, v);
    return *this;
  }
  [[gnu::always_inline]] JsonTraceEvent& NumText(double v) {
    p_ = NumTo(p_, v);
    return *this;
  }
  // ,"args":{"key": (the first) or ,"key": with room for `value` bytes after.
  [[gnu::always_inline]] JsonTraceEvent& Key(std::string_view key, size_t value) {
    assert(IsPlainText(key) && key.size() <= kRoom / 4);
    Room(12 + key.size() + value);
    Lit(args_ ? "," : R"(,"args":{)");
    args_ = true;
    return Lit("\"").Lit(key).Lit("\":");
  }
  // Text of any length that needs no escaping (a long one is appended directly).
  void Long(std::string_view plain);
  // `text` as a JSON string literal, escaped as AppendJsonString does.
  JsonTraceEvent& Quoted(std::string_view text);
  JsonTraceEvent& LongName(std::string_view json_head, std::string_view plain_tail);
  // Whether the window drops the event (its text is taken back).
  bool Dropped();
  // Appends the buffer to the trace. Out of line, so that the field calls
  // around it stay small enough for GCC to inline into the views' loops.
  [[gnu::noinline]] void Flush();

  JsonTraceEncoder& encoder_;
  std::string& out_;
  size_t begin_;  // where the event begins in out_
  double ts_ = std::numeric_limits<double>::quiet_NaN();
  double dur_ = std::numeric_limits<double>::quiet_NaN();
  bool args_ = false;
  char buf_[kRoom];
  char* p_ = buf_;
};

}  // namespace dfx::view
