// The Perfetto protobuf trace (`dfx-view swimlane --format proto`): the same
// trace as the JSON one (docs/formats.md §4.2), written as perfetto.protos.Trace
// — a stream of `repeated TracePacket packet = 1` — with the wire encoding
// written by hand (no protobuf runtime). The subset of the public schema
// used, with its field numbers, is checked in as
// tests/view/perfetto/perfetto_trace.proto (the test decodes our files with
// protoc against it).
//
// How the JSON trace maps onto it:
//   process / thread names   TrackDescriptor{ProcessDescriptor | ThreadDescriptor}
//                            with legacy_sort_index = the JSON sort_index
//   "X" slices               TrackEvent TYPE_SLICE_BEGIN + TYPE_SLICE_END on the
//                            thread's track; "args" become debug annotations
//                            ("cname" has no TrackEvent field and is dropped)
//   "C" counters             one counter track per process, name and arg key
//                            ("<name> <key>", as trace processor names JSON
//                            counters) and TYPE_COUNTER events
//   "s" / "f" flows          TrackEvent.legacy_event phase 's' / 'f' with the
//                            flow id and bind_to_enclosing: the arrows bind to
//                            the enclosing slice like the JSON ones. (Flows are
//                            only known after their slices were streamed out,
//                            so TrackEvent.flow_ids, which must sit on the
//                            slice's own event, cannot be used.)
//   top-level "metadata"     a TYPE_INSTANT "trace metadata" on its own track,
//                            its JSON as a debug annotation (legacy_json_value)
// Names, categories, annotation names and string values are interned
// (InternedData on packet sequence 1, SEQ_INCREMENTAL_STATE_CLEARED on the
// first packet, SEQ_NEEDS_INCREMENTAL_STATE after). The interning tables are
// direct-mapped caches of a fixed size, so memory stays bounded however long
// the trace is; an event name or string value is interned the second time it
// is seen (a task's label drawn once is written inline, costing no entry).
// Timestamps are nanoseconds (the JSON's µs × 1000).
//
// One thread; the encoder appends packets to a caller-owned buffer.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "view/proto_wire.h"

namespace dfx::view {

// Field numbers of the public Perfetto schema (protos/perfetto/trace/...).
namespace perfetto_field {
inline constexpr uint32_t kTracePacket = 1;  // Trace.packet
// TracePacket
inline constexpr uint32_t kTimestamp = 8;
inline constexpr uint32_t kTrustedPacketSequenceId = 10;
inline constexpr uint32_t kTrackEvent = 11;
inline constexpr uint32_t kInternedData = 12;
inline constexpr uint32_t kSequenceFlags = 13;
inline constexpr uint32_t kTrackDescriptor = 60;
inline constexpr uint32_t kSeqIncrementalStateCleared = 1;  // SequenceFlags
inline constexpr uint32_t kSeqNeedsIncrementalState = 2;
// TrackDescriptor
inline constexpr uint32_t kTrackUuid = 1;
inline constexpr uint32_t kTrackName = 2;
inline constexpr uint32_t kTrackProcess = 3;
inline constexpr uint32_t kTrackThread = 4;
inline constexpr uint32_t kTrackParentUuid = 5;
inline constexpr uint32_t kTrackCounter = 8;
// ProcessDescriptor / ThreadDescriptor
inline constexpr uint32_t kPid = 1;
inline constexpr uint32_t kTid = 2;
inline constexpr uint32_t kLegacySortIndex = 3;
inline constexpr uint32_t kProcessName = 6;
inline constexpr uint32_t kThreadName = 5;
// TrackEvent
inline constexpr uint32_t kEventCategoryIids = 3;
inline constexpr uint32_t kEventDebugAnnotations = 4;
inline constexpr uint32_t kEventLegacyEvent = 6;
inline constexpr uint32_t kEventType = 9;
inline constexpr uint32_t kEventNameIid = 10;
inline constexpr uint32_t kEventName = 23;
inline constexpr uint32_t kEventTrackUuid = 11;
inline constexpr uint32_t kEventCounterValue = 30;
inline constexpr uint32_t kEventDoubleCounterValue = 44;
inline constexpr uint32_t kTypeSliceBegin = 1;  // TrackEvent.Type
inline constexpr uint32_t kTypeSliceEnd = 2;
inline constexpr uint32_t kTypeInstant = 3;
inline constexpr uint32_t kTypeCounter = 4;
// TrackEvent.LegacyEvent
inline constexpr uint32_t kLegacyPhase = 2;
inline constexpr uint32_t kLegacyUnscopedId = 6;
inline constexpr uint32_t kLegacyBindToEnclosing = 12;
// DebugAnnotation
inline constexpr uint32_t kAnnotationNameIid = 1;
inline constexpr uint32_t kAnnotationBool = 2;
inline constexpr uint32_t kAnnotationUint = 3;
inline constexpr uint32_t kAnnotationInt = 4;
inline constexpr uint32_t kAnnotationDouble = 5;
inline constexpr uint32_t kAnnotationString = 6;
inline constexpr uint32_t kAnnotationLegacyJson = 9;
inline constexpr uint32_t kAnnotationName = 10;
inline constexpr uint32_t kAnnotationDictEntries = 11;
inline constexpr uint32_t kAnnotationArrayValues = 12;
inline constexpr uint32_t kAnnotationStringIid = 17;
// InternedData (each entry: iid = 1, name / str = 2)
inline constexpr uint32_t kInternedEventCategories = 1;
inline constexpr uint32_t kInternedEventNames = 2;
inline constexpr uint32_t kInternedAnnotationNames = 3;
inline constexpr uint32_t kInternedAnnotationStrings = 29;
}  // namespace perfetto_field

class PerfettoTraceEncoder {
 public:
  // Slots of the event-name and string-value caches (others: 256).
  static constexpr size_t kInternSlots = 1 << 14;

  // Packets are appended to `*out` (not owned; must outlive the encoder).
  explicit PerfettoTraceEncoder(std::string* out) : out_(out) {}

  // Process / thread tracks; a name may be given again later (the last wins).
  void Process(int pid, std::string_view name, int sort_index);
  void Thread(int pid, int tid, std::string_view name, int sort_index);  // sort < 0: none

  // --- events, given field by field (PerfettoTraceEvent) ---
  // Times are µs as the JSON trace reads them back (TraceNumber); the
  // annotations and counter values are those of the JSON event's "args".
  // A slice: BeginSlice, its annotations in "args" order, EndSlice.
  // `per_task`: the name is one task's (see InternPerTask).
  void BeginSlice(int pid, int tid, double ts_us, std::string_view cat, std::string_view name,
                  bool per_task = false);
  void AnnotateInt(std::string_view key, int64_t v);
  void AnnotateUint(std::string_view key, uint64_t v);
  void AnnotateDouble(std::string_view key, double v);
  void AnnotateNull(std::string_view key);  // a JSON null: the name alone
  void AnnotateBool(std::string_view key, bool v);
  // A string value (unescaped text); `per_task`: the text is one task's.
  void AnnotateString(std::string_view key, std::string_view text, bool per_task = false);
  // A JSON number's text, typed as the JSON reader types it (an integer
  // literal as int, or uint past int64, else double); false if not a number.
  bool AnnotateNumberText(std::string_view key, std::string_view text);
  // An array of integers.
  void AnnotateInts(std::string_view key, const int64_t* values, size_t n);
  // `dur_us` NaN: the slice has no duration.
  void EndSlice(double ts_us, double dur_us);
  // One arg of a "C" event: a value on the process's "<name> <key>" counter
  // track; false if `text` is not a number.
  bool CounterNumberText(int pid, std::string_view name, std::string_view key, double ts_us,
                         std::string_view text);
  void CounterInt(int pid, std::string_view name, std::string_view key, double ts_us, int64_t v);
  // One end of a flow arrow ('s' or 'f') at `ts_us` on the thread's track.
  void FlowEnd(bool start, uint64_t flow_id, std::string_view name, int pid, int tid, double ts_us);
  // The trace's metadata (a JSON object) as an instant at time 0.
  void Metadata(std::string_view json);

 private:
  // One InternedData table: a direct-mapped cache of the strings last seen.
  struct Interner {
    struct Slot {
      std::string text;
      uint64_t iid = 0;  // 0: seen once, written inline
    };
    Interner(uint32_t table_field, bool intern_first_use, size_t slots)
        : field(table_field), first_use(intern_first_use), cache(slots) {}
    uint32_t field;
    bool first_use;           // intern on the first sighting (few distinct strings)
    uint64_t next_iid = 1;    // per table; an iid is never given to two strings
    std::vector<Slot> cache;  // a power of two
    // In front of `cache`: the short strings whose iids were found last, in
    // 2 KiB that stay in the CPU's cache (at 1M tasks the big table is
    // 640 KiB, and loading a slot from memory was a third of Intern's
    // time). Keys, categories and flow names are found here; a task's own
    // strings (InternPerTask) are not put here. An iid stays valid for the
    // whole sequence, so an entry never goes stale.
    struct Hot {
      uint64_t iid = 0;  // 0: empty
      uint8_t size = 0;
      char text[23] = {};
    };
    static constexpr size_t kHotBytes = sizeof(Hot::text);
    std::array<Hot, 64> hot;
    proto_wire::Buffer pending;  // the entries new in the packet being built
    // InternPerTask: the strings it saw last (a slice's hints take three).
    std::array<std::string, 4> recent_per_task;
    size_t next_recent = 0;
  };
  // The track's uuid; a new one is described first (unnamed) unless
  // `describe` is false (the caller describes it).
  uint64_t ProcessUuid(int pid, bool describe = true);
  uint64_t ThreadUuid(int pid, int tid, bool describe = true);
  uint64_t CounterUuid(int pid, std::string_view name);
  // Begins a TracePacket at `ts_ns` in packet_ (one at a time); with
  // `interning` it is on the sequence.
  size_t BeginPacket(int64_t ts_ns, bool has_ts, bool interning);
  // Ends it and appends it, with its tag and length, to *out_.
  void EndPacket(size_t packet);
  // The iid of `s` in `table`, adding it to the pending InternedData; 0
  // when `s` is to be written inline (seen for the first time).
  // `hot`: it may go into the table's hot entries.
  uint64_t Intern(Interner& table, std::string_view s, bool hot = true);
  // Intern for a string that names one task (a task slice's name, its
  // hints): such a string comes back only for the task's next row, right
  // after it (SPMD blocks), or much later in another view, long after the
  // cache slot was reused. So it goes to Intern only when it is one of the
  // last few such strings of its table, and is otherwise written inline
  // without a hash or a cache slot (Intern, its hash and its compares were
  // 17% of a 100k-task proto conversion, nearly all misses on these).
  uint64_t InternPerTask(Interner& table, std::string_view s);
  // The event's name as name_iid, or inline.
  void PutEventName(std::string_view name, bool per_task = false);
  // Begins / ends one top-level debug annotation of the slice being written.
  size_t BeginAnnotation(std::string_view key);
  // A string annotation value: interned or inline.
  void PutStringValue(std::string_view text, bool per_task = false);
  // Begins a counter packet on the "<name> <key>" track; returns the packet
  // and the TrackEvent offsets for EndCounter.
  std::pair<size_t, size_t> BeginCounter(int pid, std::string_view name, std::string_view key,
                                         double ts_us);

  std::string* out_;
  // The packet being built: its body starts at kPacketHeadroom, leaving room
  // to write the Trace.packet tag and length in front of it once known.
  proto_wire::Buffer packet_;
  std::map<int, uint64_t> process_uuids_;
  std::map<std::pair<int, int>, uint64_t> thread_uuids_;
  // In front of thread_uuids_ (looked up for every slice and flow arrow):
  // the uuids last found, direct-mapped by (pid, tid).
  struct ThreadSlot {
    int pid = 0, tid = 0;
    uint64_t uuid = 0;  // 0: empty
  };
  std::array<ThreadSlot, 256> thread_slots_;
  std::map<int, std::map<std::string, uint64_t, std::less<>>> counter_uuids_;  // pid, name
  uint64_t next_uuid_ = 1;
  Interner categories_{perfetto_field::kInternedEventCategories, true, 256};
  Interner names_{perfetto_field::kInternedEventNames, false, kInternSlots};
  Interner annotation_names_{perfetto_field::kInternedAnnotationNames, true, 256};
  Interner strings_{perfetto_field::kInternedAnnotationStrings, false, kInternSlots};
  bool first_packet_ = true;
  size_t slice_packet_ = 0, slice_event_ = 0;  // the slice begun by BeginSlice
  uint64_t slice_track_ = 0;
  std::string counter_name_;  // scratch: "<name> <key>"
  // The counter tracks used last (a view writes a few in turn, e.g. one per
  // queue): found without building their name or searching counter_uuids_.
  struct RecentCounter {
    int pid = 0;
    std::string name, key;
    uint64_t uuid = 0;  // 0: empty
  };
  std::array<RecentCounter, 4> recent_counters_;
  size_t next_recent_counter_ = 0;
  // The "flow" category's iid, interned at the first flow arrow (an iid
  // stays valid for the whole sequence).
  uint64_t flow_category_iid_ = 0;
};

}  // namespace dfx::view
