// A trace event, given once, field by field: what every view of the swimlane
// trace builds (TraceWriter::Event) and what both trace encoders take — the
// JSON trace (JsonTraceEvent, json_trace_encoder.h) and the Perfetto
// protobuf trace (PerfettoTraceEvent, perfetto_trace_event.h).
//
// An event is its phase ('X' slice, 'C' counter) and category (given to
// TraceWriter::Event), then its fields in the order of its JSON keys, then its
// args in order:
//
//   trace.Event('X', "scheduler", [&](auto& e) {
//     e.Id(id).Cname("good").Name("complete(3)").At(pid, tid, ts).Dur(dur)
//         .Str("phase", "complete").Int("loop_iter", 2);
//   });
//
// Fields (each at most once; all but At optional, in the order the event's
// JSON keys take):
//   Id(id)                 the slice's id (flow arrows bind to it)
//   Cname(plain)           a colour name; the proto trace has no place for it
//   Name(json_head, raw_head, plain_tail)
//                          a task's label: `raw_head` + `plain_tail`, with
//                          `json_head` the head already escaped for JSON (kept
//                          per kernel, not escaped per task); the proto trace
//                          treats the name as one task's (see
//                          PerfettoTraceEncoder::InternPerTask)
//   Name(plain)            a name that needs no escaping (asserted)
//   NameText(text)         any name (escaped as JSON needs)
//   At(pid, tid, ts)       where and when, as the trace shows them (placed)
//   Dur(dur)               µs
// Args, in order, each with a key that needs no escaping:
//   Int(key, integer)      any integer type (uint64 past int64 included)
//   Num(key, v)            a trace number (NumTo)
//   Bool(key, v)
//   Str(key, plain)        a string that needs no escaping (asserted)
//   PerTaskStr(key, plain) the same, one task's own text (a hint)
//   Text(key, text)        any string (escaped as JSON needs)
//   Ints(key, v, n)        an array of up to 8 integers
//
// Every call returns the event, so calls chain. An event outside the trace's
// window (TraceFilter) is dropped whole.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace dfx::view {

template <typename E>
concept TraceEventBuilder = requires(E& e, std::string_view s, uint64_t u, int64_t i, int n,
                                     double d, bool b, const int64_t* v, size_t count) {
  { e.Id(u) } -> std::same_as<E&>;
  { e.Cname(s) } -> std::same_as<E&>;
  { e.Name(s, s, s) } -> std::same_as<E&>;
  { e.Name(s) } -> std::same_as<E&>;
  { e.NameText(s) } -> std::same_as<E&>;
  { e.At(n, n, d) } -> std::same_as<E&>;
  { e.Dur(d) } -> std::same_as<E&>;
  { e.Int(s, i) } -> std::same_as<E&>;
  { e.Int(s, u) } -> std::same_as<E&>;
  { e.Num(s, d) } -> std::same_as<E&>;
  { e.Bool(s, b) } -> std::same_as<E&>;
  { e.Str(s, s) } -> std::same_as<E&>;
  { e.PerTaskStr(s, s) } -> std::same_as<E&>;
  { e.Text(s, s) } -> std::same_as<E&>;
  { e.Ints(s, v, count) } -> std::same_as<E&>;
};

}  // namespace dfx::view
