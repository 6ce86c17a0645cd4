// TraceWriter: one swimlane trace being written — the Perfetto / Chrome JSON
// trace of docs/formats.md §4.2, or the same events as a Perfetto protobuf
// trace — streamed through common/json_stream's ChunkedWriter so a trace of
// millions of events never sits in memory. It owns what every view of the
// trace shares: the file, the event and flow id counters, the process /
// thread names (each written once), the window, and where the dispatch being
// converted is placed (the run timeline gives every rank its own pid range
// and every dispatch its own time offset).
//
// Every event is given once, as a typed event (trace_event.h), and goes to
// the trace's one encoder: JsonTraceEncoder (json_trace_encoder.h), or
// PerfettoTraceEvent and the Perfetto encoding thread
// (perfetto_trace_event.h). Names and flow arrows are typed calls too.
//
// Not movable (owns an open file, and a proto trace's encoding thread writes
// into it); one calling thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "common/enum_text.h"
#include "common/json.h"
#include "common/json_stream.h"
#include "common/status.h"
#include "view/json_trace_encoder.h"
#include "view/perfetto_encode_thread.h"
#include "view/perfetto_trace_event.h"
#include "view/trace_event.h"
#include "view/trace_filter.h"

namespace dfx::view {

static_assert(TraceEventBuilder<JsonTraceEvent>);
static_assert(TraceEventBuilder<PerfettoTraceEvent>);

// A slice that flow arrows start or end at.
struct Anchor {
  int pid, tid;
  double ts;          // visible start
  double end;         // visible end
  uint64_t event_id;  // bind_id of the slice; 0 = bind by position only
};

// How a trace is written: the JSON trace of docs/formats.md §4.2 (what the
// reference tools read), or the same events as a Perfetto protobuf trace
// (perfetto_trace_encoder.h: several times smaller, opens faster in the UI).
enum class TraceFormat { kJson, kProto };
inline constexpr auto kTraceFormatText =
    MakeEnumTable<TraceFormat>({{TraceFormat::kJson, "json"}, {TraceFormat::kProto, "proto"}});

// "json" / "proto" (dfx-view swimlane --format).
Status ParseTraceFormat(const std::string& text, TraceFormat* format);
// The default output name in `format`: a JSON default "<name>.json" becomes
// "<name>.pftrace" for proto.
std::filesystem::path DefaultTracePath(const std::filesystem::path& json_default,
                                       TraceFormat format);

class TraceWriter {
 public:
  TraceWriter() = default;
  // Not movable: the proto trace's encoding thread writes into writer_.
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Creates the trace (under a temporary name) and writes the container's
  // head; a path ending in ".gz" is written gzip-compressed. With kProto
  // the events are encoded on a thread of their own (PerfettoEncodeThread).
  // `min_bytes`: what the trace is known to reach at least, if anything;
  // when that fills every chunk the trace's writer will use, their pages
  // are mapped here (ChunkedWriter::Open's `map_chunks`), so a caller that
  // opens before a wait pays for them in it.
  Status Open(const std::filesystem::path& path, const TraceFilter& filter = {},
              TraceFormat format = TraceFormat::kJson, uint64_t min_bytes = 0);
  // Closes the event list, adds a top-level "metadata" object unless
  // `metadata` is null (proto: an instant "trace metadata" at time 0), and
  // renames the trace into place. An event the proto trace could not encode
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
  // One event of phase `ph` ('X' or 'C') and category `cat` (a string that
  // outlives the call): `fill(e)` gives its fields (trace_event.h) to the
  // builder `e` of the trace's encoder. The fields go straight to that
  // encoder: JSON text in a stack buffer, or the proto encoder's calls.
  template <typename Fill>
  void Event(char ph, std::string_view cat, Fill&& fill) {
    if (proto_event_) {
      proto_event_->Start(ph, cat);
      fill(*proto_event_);
      last_dropped_ = !proto_event_->End();
    } else {
      JsonTraceEvent e(json_, ph, cat);
      fill(e);
      last_dropped_ = !e.End();
    }
  }
  uint64_t next_event_id() const { return next_event_id_; }
  uint64_t TakeEventId() { return next_event_id_++; }
  // Reserves `n` consecutive ids; returns the first.
  uint64_t TakeEventIds(uint64_t n) {
    uint64_t first = next_event_id_;
    next_event_id_ += n;
    return first;
  }
  // Counts the slice just written (unless the window dropped it).
  void CountSlice() {
    if (!last_dropped_) ++slice_events_;
  }
  // Bytes written so far (compressed when gzip).
  // Proto: as of the last chunk the encoding thread encoded.
  uint64_t bytes_pending() const {
    return proto_ ? proto_->bytes_written() : writer_.bytes_written();
  }

  // Process / thread names and sort indices (§4.3), each written once.
  void ProcessName(int pid, const std::string& name, int sort);
  void ThreadName(int pid, int tid, const std::string& name, int sort = -1);

  // A flow arrow (an "s" and an "f" event) between two anchors; the counts
  // are written when `in_count` > 0 (dependency flows). Drawn only when the
  // filter keeps flows and both ends fall in the window.
  void Flow(std::string_view name, const Anchor& from, double from_ts, const Anchor& to,
            double to_ts, int in_count = 0, int out_count = 0);

  uint64_t slice_events() const { return slice_events_; }
  uint64_t flow_events() const { return flow_events_; }

 private:
  ChunkedWriter writer_;
  TraceFilter filter_;
  JsonTraceEncoder json_{&writer_, &filter_};
  // kProto: encodes into writer_ on a thread of its own (the writer is that
  // thread's until Finish); the event being built.
  std::unique_ptr<PerfettoEncodeThread> proto_;
  std::unique_ptr<PerfettoTraceEvent> proto_event_;
  bool last_dropped_ = false;
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
};

}  // namespace dfx::view
