#include "view/perfetto_trace_encoder.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

namespace dfx::view {

namespace f = perfetto_field;
using proto_wire::BeginNested;
using proto_wire::EndNested;
using proto_wire::PutBytes;
using proto_wire::PutDouble;
using proto_wire::PutInt;
using proto_wire::PutUint;

namespace {

constexpr uint32_t kSequenceId = 1;
// Room for the Trace.packet tag (one byte: field 1) and a length of up to
// 2^63 in front of a packet's body.
constexpr size_t kPacketHeadroom = 1 + proto_wire::kMaxVarintBytes;

bool ParseDouble(std::string_view text, double* v) {
  auto r = std::from_chars(text.data(), text.data() + text.size(), *v);
  return r.ec == std::errc() && r.ptr == text.data() + text.size();
}

// A JSON number's text as a DebugAnnotation value: an integer literal as
// int (uint past int64), anything else as double.
bool PutNumberValue(proto_wire::Buffer& out, std::string_view num) {
  bool integer = true;
  for (char ch : num) integer &= ch != '.' && ch != 'e' && ch != 'E';
  if (integer) {
    int64_t i = 0;
    auto r = std::from_chars(num.data(), num.data() + num.size(), i);
    if (r.ec == std::errc() && r.ptr == num.data() + num.size()) {
      PutInt(out, f::kAnnotationInt, i);
      return true;
    }
    uint64_t u = 0;
    r = std::from_chars(num.data(), num.data() + num.size(), u);
    if (r.ec == std::errc() && r.ptr == num.data() + num.size()) {
      PutUint(out, f::kAnnotationUint, u);
      return true;
    }
  }
  double d = 0;
  if (!ParseDouble(num, &d)) return false;
  PutDouble(out, f::kAnnotationDouble, d);
  return true;
}

// µs (ns-exact decimals) → ns; before the trace's zero is clamped to 0
// (TracePacket.timestamp is unsigned).
int64_t Nanos(double us) {
  const double ns = std::round(us * 1000.0);
  if (!(ns > 0)) return 0;
  return ns < 9e18 ? static_cast<int64_t>(ns) : std::numeric_limits<int64_t>::max();
}

}  // namespace

// --- tracks ----------------------------------------------------------------------

uint64_t PerfettoTraceEncoder::ProcessUuid(int pid, bool describe) {
  auto [it, added] = process_uuids_.try_emplace(pid, next_uuid_);
  if (added) ++next_uuid_;
  if (added && describe) {
    const size_t p = BeginPacket(0, false, false);
    const size_t d = BeginNested(packet_, f::kTrackDescriptor);
    PutUint(packet_, f::kTrackUuid, it->second);
    const size_t proc = BeginNested(packet_, f::kTrackProcess);
    PutInt(packet_, f::kPid, pid);
    EndNested(packet_, proc);
    EndNested(packet_, d);
    EndPacket(p);
  }
  return it->second;
}

uint64_t PerfettoTraceEncoder::ThreadUuid(int pid, int tid, bool describe) {
  ThreadSlot& slot = thread_slots_[(static_cast<uint32_t>(pid) * 0x9E3779B1u ^
                                    static_cast<uint32_t>(tid) * 0x85EBCA77u) >>
                                   24];
  if (slot.uuid != 0 && slot.pid == pid && slot.tid == tid) return slot.uuid;
  auto [it, added] = thread_uuids_.try_emplace({pid, tid}, next_uuid_);
  slot = {pid, tid, it->second};
  if (added) ++next_uuid_;
  if (added) ProcessUuid(pid);
  if (added && describe) {
    const size_t p = BeginPacket(0, false, false);
    const size_t d = BeginNested(packet_, f::kTrackDescriptor);
    PutUint(packet_, f::kTrackUuid, it->second);
    const size_t thread = BeginNested(packet_, f::kTrackThread);
    PutInt(packet_, f::kPid, pid);
    PutInt(packet_, f::kTid, tid);
    EndNested(packet_, thread);
    EndNested(packet_, d);
    EndPacket(p);
  }
  return it->second;
}

uint64_t PerfettoTraceEncoder::CounterUuid(int pid, std::string_view name) {
  auto& tracks = counter_uuids_[pid];
  auto it = tracks.find(name);
  if (it == tracks.end()) {
    it = tracks.emplace(std::string(name), next_uuid_++).first;
    const uint64_t parent = ProcessUuid(pid);
    const size_t p = BeginPacket(0, false, false);
    const size_t d = BeginNested(packet_, f::kTrackDescriptor);
    PutUint(packet_, f::kTrackUuid, it->second);
    PutUint(packet_, f::kTrackParentUuid, parent);
    PutBytes(packet_, f::kTrackName, name);
    const size_t counter = BeginNested(packet_, f::kTrackCounter);
    EndNested(packet_, counter);
    EndNested(packet_, d);
    EndPacket(p);
  }
  return it->second;
}

void PerfettoTraceEncoder::Process(int pid, std::string_view name, int sort_index) {
  const uint64_t uuid = ProcessUuid(pid, false);
  const size_t p = BeginPacket(0, false, false);
  const size_t d = BeginNested(packet_, f::kTrackDescriptor);
  PutUint(packet_, f::kTrackUuid, uuid);
  const size_t proc = BeginNested(packet_, f::kTrackProcess);
  PutInt(packet_, f::kPid, pid);
  PutInt(packet_, f::kLegacySortIndex, sort_index);
  PutBytes(packet_, f::kProcessName, name);
  EndNested(packet_, proc);
  EndNested(packet_, d);
  EndPacket(p);
}

void PerfettoTraceEncoder::Thread(int pid, int tid, std::string_view name, int sort_index) {
  const uint64_t uuid = ThreadUuid(pid, tid, false);
  const size_t p = BeginPacket(0, false, false);
  const size_t d = BeginNested(packet_, f::kTrackDescriptor);
  PutUint(packet_, f::kTrackUuid, uuid);
  const size_t thread = BeginNested(packet_, f::kTrackThread);
  PutInt(packet_, f::kPid, pid);
  PutInt(packet_, f::kTid, tid);
  if (sort_index >= 0) PutInt(packet_, f::kLegacySortIndex, sort_index);
  PutBytes(packet_, f::kThreadName, name);
  EndNested(packet_, thread);
  EndNested(packet_, d);
  EndPacket(p);
}

// --- packets and interning ---------------------------------------------------------

size_t PerfettoTraceEncoder::BeginPacket(int64_t ts_ns, bool has_ts, bool interning) {
  packet_.clear();
  packet_.Advance(packet_.Reserve(kPacketHeadroom) + kPacketHeadroom);
  if (has_ts) PutUint(packet_, f::kTimestamp, static_cast<uint64_t>(ts_ns));
  PutUint(packet_, f::kTrustedPacketSequenceId, kSequenceId);
  if (interning) {
    PutUint(packet_, f::kSequenceFlags,
            first_packet_ ? f::kSeqIncrementalStateCleared | f::kSeqNeedsIncrementalState
                          : f::kSeqNeedsIncrementalState);
    first_packet_ = false;
  }
  return kPacketHeadroom;
}

void PerfettoTraceEncoder::EndPacket(size_t packet) {
  Interner* tables[] = {&categories_, &names_, &annotation_names_, &strings_};
  bool any = false;
  for (const Interner* t : tables) any |= !t->pending.empty();
  if (any) {
    const size_t d = BeginNested(packet_, f::kInternedData);
    for (Interner* t : tables) {
      packet_.Append(t->pending.view());
      t->pending.clear();
    }
    EndNested(packet_, d);
  }
  // The Trace.packet tag and length, right in front of the body.
  const uint64_t len = packet_.size() - packet;
  char* header = packet_.data() + packet - 1 - proto_wire::VarintBytes(len);
  proto_wire::WriteVarint(
      proto_wire::WriteTag(header, f::kTracePacket, proto_wire::kLengthDelimited), len);
  out_->append(header, static_cast<size_t>(packet_.data() + packet_.size() - header));
  packet_.clear();
}

namespace {

inline uint64_t Load64(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}
inline uint64_t Load32(const char* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

// The cache slot of `s`: multiply-xorshift over 8-byte words, inline
// (std::hash's out-of-line murmur was 4.7% of a level-4 proto conversion's
// instructions). The last word overlaps the one before it, and a string
// under 8 bytes is read in at most two loads, so a short string (most keys
// and names) costs no byte loop. Only picks a slot: a collision costs a
// miss, not a wrong iid.
inline uint64_t SlotHash(std::string_view s) {
  const char* p = s.data();
  const size_t n = s.size();
  uint64_t h = n * 0x9E3779B97F4A7C15ull;
  uint64_t last = 0;
  if (n >= 8) {
    for (size_t i = 0; i + 8 < n; i += 8) {
      h = (h ^ Load64(p + i)) * 0xBF58476D1CE4E5B9ull;
      h ^= h >> 31;
    }
    last = Load64(p + n - 8);
  } else if (n >= 4) {
    last = (Load32(p) << 32) | Load32(p + n - 4);
  } else if (n > 0) {
    last = (uint64_t{static_cast<unsigned char>(p[0])} << 16) |
           (uint64_t{static_cast<unsigned char>(p[n / 2])} << 8) |
           static_cast<unsigned char>(p[n - 1]);
  }
  // splitmix64's finalizer: every input bit reaches the slot's low bits (a
  // task name's last characters sit in the last word's top bytes).
  h ^= last;
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  return h ^ (h >> 31);
}

// The hot entry of a short string (Interner::Hot, at most 23 bytes): its
// first and last words (or halves), multiplied apart, the top bits picking
// one of the 64 entries. Two independent multiplies, not SlotHash's chain of
// them: a hot hit is most of Intern's calls, and SlotHash was a third of
// Intern's samples. Keys that share a prefix ("shared_at_start",
// "shared_at_end") differ in their last word; a collision only costs a
// miss.
inline size_t HotIndex(std::string_view s) {
  const char* p = s.data();
  const size_t n = s.size();
  uint64_t a = 0, b = 0;
  if (n >= 8) {
    a = Load64(p);
    b = Load64(p + n - 8);
  } else if (n >= 4) {
    a = Load32(p);
    b = Load32(p + n - 4);
  } else if (n > 0) {
    a = (uint64_t{static_cast<unsigned char>(p[0])} << 16) |
        (uint64_t{static_cast<unsigned char>(p[n / 2])} << 8) |
        static_cast<unsigned char>(p[n - 1]);
  }
  return static_cast<size_t>((((a + n) * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full)) >>
                             58);
}

// a == b, inline for the short strings the caches mostly compare (memcmp
// was a call per lookup).
inline bool SameText(std::string_view a, std::string_view b) {
  const size_t n = a.size();
  if (n != b.size()) return false;
  if (n > 16) return std::memcmp(a.data(), b.data(), n) == 0;
  if (n >= 8) {
    return Load64(a.data()) == Load64(b.data()) &&
           Load64(a.data() + n - 8) == Load64(b.data() + n - 8);
  }
  if (n >= 4) {
    return Load32(a.data()) == Load32(b.data()) &&
           Load32(a.data() + n - 4) == Load32(b.data() + n - 4);
  }
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace

uint64_t PerfettoTraceEncoder::Intern(Interner& table, std::string_view s, bool hot) {
  static_assert(std::tuple_size_v<decltype(Interner::hot)> == 64, "HotIndex picks one of 64");
  Interner::Hot* entry = nullptr;
  if (hot && s.size() <= Interner::kHotBytes) {
    entry = &table.hot[HotIndex(s)];
    if (entry->iid != 0 && SameText(std::string_view(entry->text, entry->size), s)) {
      return entry->iid;
    }
  }
  const uint64_t hash = SlotHash(s);
  Interner::Slot& slot = table.cache[hash & (table.cache.size() - 1)];
  if (!SameText(slot.text, s)) {
    slot.text.assign(s);
    slot.iid = 0;
    if (!table.first_use) return 0;
  }
  if (slot.iid == 0) {
    slot.iid = table.next_iid++;
    const size_t e = BeginNested(table.pending, table.field);
    PutUint(table.pending, 1, slot.iid);  // iid
    PutBytes(table.pending, 2, s);        // name / str
    EndNested(table.pending, e);
  }
  if (entry != nullptr) {
    entry->iid = slot.iid;
    entry->size = static_cast<uint8_t>(s.size());
    std::memcpy(entry->text, s.data(), s.size());
  }
  return slot.iid;
}

uint64_t PerfettoTraceEncoder::InternPerTask(Interner& table, std::string_view s) {
  for (const std::string& recent : table.recent_per_task) {
    if (SameText(recent, s)) return Intern(table, s, /*hot=*/false);
  }
  table.recent_per_task[table.next_recent++ % table.recent_per_task.size()].assign(s);
  return 0;
}

void PerfettoTraceEncoder::PutEventName(std::string_view name, bool per_task) {
  if (const uint64_t iid = per_task ? InternPerTask(names_, name) : Intern(names_, name)) {
    PutUint(packet_, f::kEventNameIid, iid);
  } else {
    PutBytes(packet_, f::kEventName, name);
  }
}

// --- events ------------------------------------------------------------------------

size_t PerfettoTraceEncoder::BeginAnnotation(std::string_view key) {
  const size_t a = BeginNested(packet_, f::kEventDebugAnnotations);
  PutUint(packet_, f::kAnnotationNameIid, Intern(annotation_names_, key));
  return a;
}

void PerfettoTraceEncoder::PutStringValue(std::string_view text, bool per_task) {
  if (const uint64_t iid = per_task ? InternPerTask(strings_, text) : Intern(strings_, text)) {
    PutUint(packet_, f::kAnnotationStringIid, iid);
  } else {
    PutBytes(packet_, f::kAnnotationString, text);
  }
}

void PerfettoTraceEncoder::AnnotateInt(std::string_view key, int64_t v) {
  const size_t a = BeginAnnotation(key);
  PutInt(packet_, f::kAnnotationInt, v);
  EndNested(packet_, a);
}

void PerfettoTraceEncoder::AnnotateUint(std::string_view key, uint64_t v) {
  const size_t a = BeginAnnotation(key);
  PutUint(packet_, f::kAnnotationUint, v);
  EndNested(packet_, a);
}

void PerfettoTraceEncoder::AnnotateDouble(std::string_view key, double v) {
  const size_t a = BeginAnnotation(key);
  PutDouble(packet_, f::kAnnotationDouble, v);
  EndNested(packet_, a);
}

void PerfettoTraceEncoder::AnnotateNull(std::string_view key) {
  EndNested(packet_, BeginAnnotation(key));
}

void PerfettoTraceEncoder::AnnotateBool(std::string_view key, bool v) {
  const size_t a = BeginAnnotation(key);
  PutUint(packet_, f::kAnnotationBool, v ? 1 : 0);
  EndNested(packet_, a);
}

void PerfettoTraceEncoder::AnnotateString(std::string_view key, std::string_view text,
                                          bool per_task) {
  const size_t a = BeginAnnotation(key);
  PutStringValue(text, per_task);
  EndNested(packet_, a);
}

bool PerfettoTraceEncoder::AnnotateNumberText(std::string_view key, std::string_view text) {
  const size_t a = BeginAnnotation(key);
  if (!PutNumberValue(packet_, text)) return false;
  EndNested(packet_, a);
  return true;
}

void PerfettoTraceEncoder::AnnotateInts(std::string_view key, const int64_t* values, size_t n) {
  const size_t a = BeginAnnotation(key);
  for (size_t i = 0; i < n; ++i) {
    const size_t entry = BeginNested(packet_, f::kAnnotationArrayValues);
    PutInt(packet_, f::kAnnotationInt, values[i]);
    EndNested(packet_, entry);
  }
  EndNested(packet_, a);
}

void PerfettoTraceEncoder::BeginSlice(int pid, int tid, double ts_us, std::string_view cat,
                                      std::string_view name, bool per_task) {
  slice_track_ = ThreadUuid(pid, tid);
  slice_packet_ = BeginPacket(Nanos(ts_us), true, true);
  slice_event_ = BeginNested(packet_, f::kTrackEvent);
  PutUint(packet_, f::kEventType, f::kTypeSliceBegin);
  PutUint(packet_, f::kEventTrackUuid, slice_track_);
  if (!cat.empty()) PutUint(packet_, f::kEventCategoryIids, Intern(categories_, cat));
  PutEventName(name, per_task);
}

void PerfettoTraceEncoder::EndSlice(double ts_us, double dur_us) {
  EndNested(packet_, slice_event_);
  EndPacket(slice_packet_);
  const int64_t begin = Nanos(ts_us);
  const int64_t end = std::max(begin, Nanos(ts_us + (std::isnan(dur_us) ? 0.0 : dur_us)));
  const size_t p = BeginPacket(end, true, false);
  const size_t te = BeginNested(packet_, f::kTrackEvent);
  PutUint(packet_, f::kEventType, f::kTypeSliceEnd);
  PutUint(packet_, f::kEventTrackUuid, slice_track_);
  EndNested(packet_, te);
  EndPacket(p);
}

std::pair<size_t, size_t> PerfettoTraceEncoder::BeginCounter(int pid, std::string_view name,
                                                             std::string_view key, double ts_us) {
  uint64_t track = 0;
  for (const RecentCounter& r : recent_counters_) {
    if (r.uuid != 0 && r.pid == pid && SameText(r.name, name) && SameText(r.key, key)) {
      track = r.uuid;
      break;
    }
  }
  if (track == 0) {
    counter_name_.assign(name);
    counter_name_.push_back(' ');
    counter_name_.append(key);
    track = CounterUuid(pid, counter_name_);
    RecentCounter& r = recent_counters_[next_recent_counter_++ % recent_counters_.size()];
    r.pid = pid;
    r.name.assign(name);
    r.key.assign(key);
    r.uuid = track;
  }
  const size_t p = BeginPacket(Nanos(ts_us), true, false);
  const size_t te = BeginNested(packet_, f::kTrackEvent);
  PutUint(packet_, f::kEventType, f::kTypeCounter);
  PutUint(packet_, f::kEventTrackUuid, track);
  return {p, te};
}

bool PerfettoTraceEncoder::CounterNumberText(int pid, std::string_view name, std::string_view key,
                                             double ts_us, std::string_view num) {
  int64_t i = 0;
  auto r = std::from_chars(num.data(), num.data() + num.size(), i);
  const bool integer = r.ec == std::errc() && r.ptr == num.data() + num.size();
  double d = 0;
  if (!integer && !ParseDouble(num, &d)) return false;
  const auto [p, te] = BeginCounter(pid, name, key, ts_us);
  if (integer) {
    PutInt(packet_, f::kEventCounterValue, i);
  } else {
    PutDouble(packet_, f::kEventDoubleCounterValue, d);
  }
  EndNested(packet_, te);
  EndPacket(p);
  return true;
}

void PerfettoTraceEncoder::CounterInt(int pid, std::string_view name, std::string_view key,
                                      double ts_us, int64_t v) {
  const auto [p, te] = BeginCounter(pid, name, key, ts_us);
  PutInt(packet_, f::kEventCounterValue, v);
  EndNested(packet_, te);
  EndPacket(p);
}

void PerfettoTraceEncoder::FlowEnd(bool start, uint64_t flow_id, std::string_view name, int pid,
                                   int tid, double ts_us) {
  const uint64_t track = ThreadUuid(pid, tid);
  const size_t p = BeginPacket(Nanos(ts_us), true, true);
  const size_t te = BeginNested(packet_, f::kTrackEvent);
  PutUint(packet_, f::kEventTrackUuid, track);
  if (flow_category_iid_ == 0) flow_category_iid_ = Intern(categories_, "flow");
  PutUint(packet_, f::kEventCategoryIids, flow_category_iid_);
  PutEventName(name);
  const size_t legacy = BeginNested(packet_, f::kEventLegacyEvent);
  PutUint(packet_, f::kLegacyPhase, start ? 's' : 'f');
  PutUint(packet_, f::kLegacyUnscopedId, flow_id);
  if (!start) PutUint(packet_, f::kLegacyBindToEnclosing, 1);
  EndNested(packet_, legacy);
  EndNested(packet_, te);
  EndPacket(p);
}

void PerfettoTraceEncoder::Metadata(std::string_view json) {
  const uint64_t track = next_uuid_++;
  size_t p = BeginPacket(0, false, false);
  size_t d = BeginNested(packet_, f::kTrackDescriptor);
  PutUint(packet_, f::kTrackUuid, track);
  PutBytes(packet_, f::kTrackName, "Trace metadata");
  EndNested(packet_, d);
  EndPacket(p);
  p = BeginPacket(0, true, true);
  const size_t te = BeginNested(packet_, f::kTrackEvent);
  PutUint(packet_, f::kEventType, f::kTypeInstant);
  PutUint(packet_, f::kEventTrackUuid, track);
  PutEventName("trace metadata");
  const size_t a = BeginNested(packet_, f::kEventDebugAnnotations);
  PutUint(packet_, f::kAnnotationNameIid, Intern(annotation_names_, "metadata"));
  PutBytes(packet_, f::kAnnotationLegacyJson, json);
  EndNested(packet_, a);
  EndNested(packet_, te);
  EndPacket(p);
}

}  // namespace dfx::view
