#include "collectors/swimlane/swimlane_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <string_view>
#include <tuple>

#include "collectors/swimlane/sched_phase_scan.h"
#include "common/json_stream.h"

namespace dfx::collectors {
namespace {

struct PhaseName_ {
  PhaseKind kind;
  std::string_view name;  // a literal: .data() ends in '\0'
};
constexpr PhaseName_ kPhaseNames[] = {
    {PhaseKind::kComplete, "complete"},
    {PhaseKind::kDispatch, "dispatch"},
    {PhaseKind::kRelease, "release"},
    {PhaseKind::kDummy, "dummy"},
    {PhaseKind::kEarlyDispatch, "early_dispatch"},
    {PhaseKind::kResolve, "resolve"},
    {PhaseKind::kDummyTask, "dummy_task"},
    {PhaseKind::kDrain, "drain"},
    {PhaseKind::kDrainPrepare, "drain_prepare"},
    {PhaseKind::kDrainPublish, "drain_publish"},
    {PhaseKind::kAsyncPoll, "async_poll"},
    {PhaseKind::kPredicatedSkip, "predicated_skip"},
    {PhaseKind::kGraphPrepare, "graph_prepare"},
    {PhaseKind::kScan, "scan"},
    {PhaseKind::kPoll, "poll"},
    {PhaseKind::kIdle, "idle"},
    {PhaseKind::kOther, "other"},
};

// Running minimum of non-zero timestamps (§2.6 step 2).
struct BaseTracker {
  uint64_t base = 0;
  void See(uint64_t v) {
    if (v != 0 && (base == 0 || v < base)) base = v;
  }
};

// Read in place (two per scheduler phase: no vector per call).
bool ReadInt16Triple(JsonPullReader& r, int16_t out[3]) {
  out[0] = out[1] = out[2] = 0;
  if (!r.BeginArray()) return false;
  JsonNumber n;
  for (size_t i = 0; r.NextElement(); ++i) {
    if (!r.ReadNumber(&n)) return false;
    const uint64_t v = n.negative ? static_cast<uint64_t>(n.AsInt64())
                                  : (n.is_integer ? n.magnitude : static_cast<uint64_t>(n.value));
    if (i < 3) out[i] = static_cast<int16_t>(static_cast<int64_t>(v));
  }
  return r.ok();
}

bool ReadSchedPhase(JsonPullReader& r, SchedPhase* p) {
  if (!r.BeginObject()) return false;
  std::string key, s;
  JsonNumber n;
  while (r.NextKey(&key)) {
    if (key == "kind" || key == "phase") {
      if (!r.ReadString(&s)) return false;
      p->kind = ParsePhaseKind(s);
    } else if (key == "shared_at_start") {
      if (!ReadInt16Triple(r, p->shared_at_start)) return false;
      p->has_depths = true;
    } else if (key == "shared_at_end") {
      if (!ReadInt16Triple(r, p->shared_at_end)) return false;
      p->has_depths = true;
    } else if (r.Peek() == JsonPullReader::Kind::kNumber) {
      if (!r.ReadNumber(&n)) return false;
      if (key == "start_cycles")
        p->start = n.AsUint64();
      else if (key == "end_cycles")
        p->end = n.AsUint64();
      else if (key == "loop_iter")
        p->loop_iter = static_cast<uint32_t>(n.magnitude);
      else if (key == "tasks_processed")
        p->tasks_processed = static_cast<uint32_t>(n.magnitude);
      else if (key == "pop_hit")
        p->pop_hit = static_cast<uint32_t>(n.magnitude);
      else if (key == "pop_miss")
        p->pop_miss = static_cast<uint32_t>(n.magnitude);
      else if (key == "task_id")
        p->task_id = static_cast<int64_t>(n.magnitude);
    } else {
      if (!r.Skip()) return false;
    }
  }
  return r.ok();
}

bool ReadOrchPhase(JsonPullReader& r, bool host, OrchPhase* p) {
  if (!r.BeginObject()) return false;
  std::string key;
  JsonNumber n;
  while (r.NextKey(&key)) {
    if (r.Peek() != JsonPullReader::Kind::kNumber) {
      if (!r.Skip()) return false;
      continue;
    }
    if (!r.ReadNumber(&n)) return false;
    if (key == "submit_idx")
      p->submit_idx = n.AsInt64();
    else if (key == "task_id")
      p->task_id = n.negative ? -1 : static_cast<int64_t>(n.magnitude);
    else if (key == (host ? "start_host_ns" : "start_cycles"))
      p->start = n.AsUint64();
    else if (key == (host ? "end_host_ns" : "end_cycles"))
      p->end = n.AsUint64();
  }
  return r.ok();
}

}  // namespace

const char* PhaseName(PhaseKind kind) {
  for (const auto& e : kPhaseNames) {
    if (e.kind == kind) return e.name.data();
  }
  return "other";
}

PhaseKind ParsePhaseKind(std::string_view name) {
  if (name == "fanout") return PhaseKind::kResolve;
  if (name == "prestage") return PhaseKind::kEarlyDispatch;
  for (const auto& e : kPhaseNames) {
    if (name == e.name) return e.kind;
  }
  return PhaseKind::kOther;
}

bool SwimlaneRecords::Rel(uint64_t cycles, uint32_t* rel) const {
  if (cycles == 0) {
    *rel = 0;
    return true;
  }
  if (cycles <= epoch || cycles - epoch > std::numeric_limits<uint32_t>::max()) return false;
  *rel = static_cast<uint32_t>(cycles - epoch);
  return true;
}

namespace {
// Compact finish: 0 = zero, else finish - end + 1 when it fits 16 bits.
bool Tail(uint64_t end, uint64_t finish, uint16_t* tail) {
  if (finish == 0) {
    *tail = 0;
    return true;
  }
  if (finish < end || finish - end >= 0xFFFF) return false;
  *tail = static_cast<uint16_t>(finish - end + 1);
  return true;
}
}  // namespace

TaskRow SwimlaneRecords::MakeRow(uint64_t task_id, int core, uint64_t start, uint64_t end,
                                 uint64_t dispatch, uint64_t finish, uint32_t receive_to_start,
                                 uint32_t reg_task_id) {
  TaskRow r;
  r.core_id = static_cast<uint16_t>(core);
  r.slot = reg_task_id;
  if (task_id < (uint64_t{1} << 40) && receive_to_start <= 0xFFFF && Rel(start, &r.start) &&
      Rel(end, &r.end) && Rel(dispatch, &r.dispatch) && Tail(end, finish, &r.tail)) {
    r.id_lo = static_cast<uint32_t>(task_id);
    r.id_hi = static_cast<uint8_t>(task_id >> 32);
    r.r2s = static_cast<uint16_t>(receive_to_start);
    return r;
  }
  r = TaskRow{};
  r.core_id = static_cast<uint16_t>(core);
  r.slot = reg_task_id;
  r.flags = TaskRow::kWide;
  r.start = static_cast<uint32_t>(wide_rows.size());
  wide_rows.push_back({task_id, start, end, dispatch, finish, receive_to_start});
  return r;
}

void SwimlaneRecords::SetAicpuTimes(TaskRow& r, uint64_t dispatch, uint64_t finish) {
  if (r.wide()) {
    wide_rows[r.start].dispatch = dispatch;
    wide_rows[r.start].finish = finish;
    return;
  }
  if (Rel(dispatch, &r.dispatch) && Tail(End(r), finish, &r.tail)) return;
  uint8_t scratch = r.flags & TaskRow::kScratchMask;
  r = MakeRow(TaskId(r), r.core_id, Start(r), End(r), dispatch, finish, ReceiveToStart(r), r.slot);
  r.flags |= scratch;
}

Status SwimlaneRecords::ForEachSchedPhase(
    const std::function<void(size_t, const SchedPhase&)>& fn) const {
  if (!sched_phases_streamed) {
    for (size_t t = 0; t < sched_phases.size(); ++t) {
      for (const auto& p : sched_phases[t]) fn(t, p);
    }
    return Status::Ok();
  }
  JsonPullReader r;
  DFX_RETURN_IF_ERROR(r.OpenAt(path, sched_phases_offset));
  if (!r.BeginArray()) return r.status();
  size_t t = 0;
  while (r.NextElement()) {
    if (!r.BeginArray()) return r.status();
    while (r.NextElement()) {
      SchedPhase p;
      if (!ReadSchedPhase(r, &p)) return r.status();
      fn(t, p);
    }
    ++t;
  }
  return r.status();
}

Status SwimlaneRecords::ForEachOrchPhase(
    const std::function<void(size_t, const OrchPhase&)>& fn) const {
  const auto drain = [&fn](auto& stream) {
    size_t pool = 0;
    OrchPhase p;
    while (stream.Next(&pool, &p)) fn(pool, p);
    return Status(stream.status());
  };
  if (orch_phases_streamed) {  // read from the file: parsed on the other core
    OrchPhaseStreamAhead stream(*this);
    return drain(stream);
  }
  OrchPhaseStream stream(*this);
  return drain(stream);
}

OrchPhaseStreamAhead::OrchPhaseStreamAhead(const SwimlaneRecords& records)
    : ahead_([&records](const Prefetch<std::pair<size_t, OrchPhase>>::Push& push) {
        if (records.orch_phases_fast) {  // pools numbered on across the values, as below
          size_t first_pool = 0;
          for (const uint64_t offset : records.orch_phases_offsets) {
            bool stopped = false;
            DFX_ASSIGN_OR_RETURN(
                FastSchedScan scan,
                FastScanOrchPhases(records.path, offset, [&](size_t t, const OrchPhase& p) {
                  stopped = !push({first_pool + t, p});
                  return !stopped;
                }));
            if (stopped) return Status::Ok();  // the consumer stopped
            if (!scan.whole) {
              return FailedPrecondition(records.path.string() +
                                        ": the orchestrator phases changed while being read (the "
                                        "first pass read them whole); convert again");
            }
            first_pool += scan.lanes;
          }
          return Status::Ok();
        }
        OrchPhaseStream stream(records);
        size_t pool = 0;
        OrchPhase p;
        while (stream.Next(&pool, &p)) {
          if (!push({pool, p})) return Status::Ok();  // the consumer stopped
        }
        return stream.status();
      }) {}

bool OrchPhaseStreamAhead::Next(size_t* pool, OrchPhase* phase) {
  std::pair<size_t, OrchPhase> item;
  if (!ahead_.Next(&item)) return false;
  *pool = item.first;
  *phase = item.second;
  return true;
}

bool SwimlaneRecords::HasOrchPhases() const {
  if (orch_phases_streamed && num_streamed_orch_phases > 0) return true;
  for (const auto& lane : orch_phases) {
    if (!lane.empty()) return true;
  }
  return false;
}

bool OrchPhaseStream::Next(size_t* pool, OrchPhase* phase) {
  if (!status_.ok()) return false;
  if (!d_.orch_phases_streamed) {
    while (pool_ < d_.orch_phases.size()) {
      if (index_ < d_.orch_phases[pool_].size()) {
        *pool = pool_;
        *phase = d_.orch_phases[pool_][index_++];
        return true;
      }
      ++pool_;
      index_ = 0;
    }
    return false;
  }
  // The arrays of every aicpu_orchestrator_phases value, as the first pass
  // read them; pools are numbered across values.
  for (;;) {
    if (!in_value_) {
      if (next_offset_ >= d_.orch_phases_offsets.size()) return false;
      status_ = r_.OpenAt(d_.path, d_.orch_phases_offsets[next_offset_++]);
      if (!status_.ok()) return false;
      if (!r_.BeginArray()) break;
      in_value_ = true;
    }
    if (!in_pool_) {
      if (!r_.NextElement()) {
        if (!r_.ok()) break;
        in_value_ = false;
        continue;
      }
      if (!r_.BeginArray()) break;
      in_pool_ = true;
      ++pool_;
    }
    if (r_.NextElement()) {
      *phase = OrchPhase{};
      if (!ReadOrchPhase(r_, false, phase)) break;
      *pool = pool_ - 1;
      return true;
    }
    if (!r_.ok()) break;
    in_pool_ = false;
  }
  status_ = r_.status();
  return false;
}

namespace {

// Reads one row of an aicore_tasks / aicpu_tasks array.
bool ReadRow(JsonPullReader& r, std::vector<uint64_t>* row, bool aicore) {
  if (!r.ReadUint64Array(row)) return false;
  if (aicore && row->size() < 5) {
    return r.Fail(
        fmt::format("aicore_tasks row has {} columns, expected 6 (or legacy 5)", row->size()));
  }
  if (!aicore && row->size() < 4) {
    return r.Fail(fmt::format("aicpu_tasks row has {} columns, expected 4", row->size()));
  }
  if ((*row)[0] > std::numeric_limits<uint16_t>::max()) {
    return r.Fail(fmt::format("{} row has core_id {}, expected 0..65535",
                              aicore ? "aicore_tasks" : "aicpu_tasks",
                              static_cast<int64_t>((*row)[0])));
  }
  return true;
}

bool RowKeyLess(const TaskRow& a, const TaskRow& b) {
  return a.core_id != b.core_id ? a.core_id < b.core_id : a.slot < b.slot;
}

}  // namespace

Result<SwimlaneRecords> ReadSwimlaneRecords(const std::filesystem::path& path,
                                            const SwimlaneReadOptions& options) {
  SwimlaneRecords data;
  data.path = path;
  JsonPullReader r;
  DFX_RETURN_IF_ERROR(r.Open(path));
  BaseTracker base;
  bool have_level = false;
  std::map<int, uint64_t> unmatched;
  std::vector<uint64_t> row;
  std::vector<std::vector<OrchPhase>> host_orch;
  // Pass 1: everything but the task rows; the rows only feed the base time and
  // their counts, and their offsets are kept for pass 2.
  int64_t aicore_offset = -1, aicpu_offset = -1;
  size_t aicore_rows = 0;
  int64_t last_orch_task = -1;  // orch_phases_sorted_by_task

  if (!r.BeginObject()) return r.status();
  std::string key;
  JsonNumber n;
  while (r.NextKey(&key)) {
    data.top_level_keys.push_back(key);
    if (key == "chip_swimlane_level") {
      if (!r.ReadNumber(&n)) return r.status();
      data.level = static_cast<int>(n.AsInt64());
      have_level = true;
      if (data.level < 1 || data.level > 4) {
        return InvalidArgument(fmt::format(
            "Unsupported chip_swimlane_level: {} (expected 1, 2, 3, or 4)", data.level));
      }
    } else if (key == "metadata") {
      if (!r.ReadJson(&data.metadata)) return r.status();
    } else if (key == "aicore_tasks") {
      r.Peek();
      aicore_offset = static_cast<int64_t>(r.bytes_read());
      aicore_rows = 0;
      if (!r.BeginArray()) return r.status();
      while (r.NextElement()) {
        if (!ReadRow(r, &row, true)) return r.status();
        uint64_t start = row[3];
        uint32_t r2s = row.size() > 5 ? static_cast<uint32_t>(row[5]) : 0;
        if (r2s > start) r2s = 0;
        base.See(start - r2s);
        base.See(row[4]);
        ++aicore_rows;
      }
      if (!r.ok()) return r.status();
    } else if (key == "aicpu_tasks") {
      r.Peek();
      aicpu_offset = static_cast<int64_t>(r.bytes_read());
      if (!r.BeginArray()) return r.status();
      while (r.NextElement()) {
        if (!ReadRow(r, &row, false)) return r.status();
        base.See(row[2]);
        base.See(row[3]);
      }
      if (!r.ok()) return r.status();
    } else if (key == "aicpu_scheduler_phases") {
      // A second value (a duplicate key) replaces the first.
      if (data.has_sched_phases && options.restart_sched_phases) options.restart_sched_phases();
      data.has_sched_phases = true;
      data.sched_phases_fast = false;
      r.Peek();
      data.sched_phases_offset = r.bytes_read();
      data.sched_phases_streamed = options.stream_sched_phases;
      data.sched_phases.clear();
      data.num_sched_threads = 0;
      data.num_sched_phases = 0;
      if (options.stream_sched_phases) {
        // The fast reader's pointer scans, then on after the value; the
        // generic reader below only when a phase is outside its subset.
        BaseTracker fast_base = base;
        uint64_t phases = 0;
        const auto& see = options.see_sched_phase;
        DFX_ASSIGN_OR_RETURN(
            FastSchedScan scan,
            FastScanSchedPhases(path, data.sched_phases_offset, [&](size_t t, const SchedPhase& p) {
              fast_base.See(p.start);
              fast_base.See(p.end);
              ++phases;
              if (see) see(t, p);
            }));
        if (scan.whole && r.SkipTo(scan.end_offset)) {
          base = fast_base;
          data.num_sched_threads = scan.lanes;
          data.num_sched_phases = phases;
          data.sched_phases_fast = true;
          continue;
        }
        if (!r.ok()) return r.status();
        if (options.restart_sched_phases) options.restart_sched_phases();
      }
      if (!r.BeginArray()) return r.status();
      while (r.NextElement()) {
        const size_t t = data.num_sched_threads++;
        std::deque<SchedPhase>* lane =
            options.stream_sched_phases ? nullptr : &data.sched_phases.emplace_back();
        if (!r.BeginArray()) return r.status();
        while (r.NextElement()) {
          SchedPhase p;
          if (!ReadSchedPhase(r, &p)) return r.status();
          base.See(p.start);
          base.See(p.end);
          ++data.num_sched_phases;
          if (lane != nullptr) lane->push_back(p);
          if (options.see_sched_phase) options.see_sched_phase(t, p);
        }
      }
      if (!r.ok()) return r.status();
    } else if (key == "aicpu_orchestrator_phases" || key == "host_orchestrator_phases") {
      bool host = key == "host_orchestrator_phases";
      // Device phases streamed: counted and checked here, re-read on demand.
      const bool stream = !host && options.stream_orch_phases;
      auto& target = host ? host_orch : data.orch_phases;
      if (stream) {
        r.Peek();
        if (data.orch_phases_offsets.empty()) data.orch_phases_fast = true;
        data.orch_phases_offsets.push_back(r.bytes_read());
        data.orch_phases_streamed = true;
        // The fast reader, then on after the value, as for the scheduler
        // phases; the generic reader below only for a phase outside its subset.
        BaseTracker fast_base = base;
        int64_t fast_last = last_orch_task;
        bool fast_sorted = data.orch_phases_sorted_by_task;
        uint64_t phases = 0;
        DFX_ASSIGN_OR_RETURN(FastSchedScan scan,
                             FastScanOrchPhases(path, data.orch_phases_offsets.back(),
                                                [&](size_t, const OrchPhase& p) {
                                                  fast_base.See(p.start);
                                                  fast_base.See(p.end);
                                                  if (p.task_id >= 0) {
                                                    if (p.task_id < fast_last) fast_sorted = false;
                                                    fast_last = p.task_id;
                                                  }
                                                  ++phases;
                                                  return true;
                                                }));
        if (scan.whole && r.SkipTo(scan.end_offset)) {
          base = fast_base;
          last_orch_task = fast_last;
          data.orch_phases_sorted_by_task = fast_sorted;
          data.num_streamed_orch_pools += scan.lanes;
          data.num_streamed_orch_phases += phases;
          continue;
        }
        if (!r.ok()) return r.status();
        data.orch_phases_fast = false;
      }
      if (!r.BeginArray()) return r.status();
      while (r.NextElement()) {
        auto* lane = stream ? nullptr : &target.emplace_back();
        if (stream) ++data.num_streamed_orch_pools;
        if (!r.BeginArray()) return r.status();
        while (r.NextElement()) {
          OrchPhase p;
          if (!ReadOrchPhase(r, host, &p)) return r.status();
          if (!host) {
            base.See(p.start);
            base.See(p.end);
            if (p.task_id >= 0) {
              if (p.task_id < last_orch_task) data.orch_phases_sorted_by_task = false;
              last_orch_task = p.task_id;
            }
          }
          if (stream) {
            ++data.num_streamed_orch_phases;
          } else {
            lane->push_back(p);
          }
        }
      }
      if (!r.ok()) return r.status();
    } else if (key == "host_device_uploads") {
      Json uploads;
      if (!r.ReadJson(&uploads)) return r.status();
      if (uploads.is_array()) {
        for (const auto& u : uploads) {
          HostUpload h;
          h.phase = u.value("phase", std::string("upload"));
          h.start_ns = u.value("start_host_ns", uint64_t{0});
          h.end_ns = u.value("end_host_ns", uint64_t{0});
          h.detail = u.value("detail", int64_t{0});
          data.host_uploads.push_back(h);
        }
      }
    } else {
      if (!r.Skip()) return r.status();
    }
  }
  if (!r.ok()) return r.status();
  if (!have_level) {
    return InvalidArgument(path.string() + ": missing chip_swimlane_level");
  }
  data.base_cycles = base.base;
  data.epoch = base.base == 0 ? 0 : base.base - 1;

  // Metadata.
  const Json& md = data.metadata;
  int64_t freq = 0;
  if (md.is_object() && md.contains("clock_freq_hz") && md["clock_freq_hz"].is_number()) {
    freq = md["clock_freq_hz"].get<int64_t>();
  }
  if (freq <= 0) {
    return InvalidArgument(fmt::format("metadata missing/zero clock_freq_hz: {}", freq));
  }
  data.clock_freq_hz = static_cast<uint64_t>(freq);
  if (md.contains("core_types") && md["core_types"].is_array()) {
    for (const auto& t : md["core_types"])
      data.core_types.push_back(t.is_string() ? t.get<std::string>() : "aiv");
  }
  int64_t num_cores = md.value("num_cores", int64_t{0});
  if (num_cores > 0 && static_cast<size_t>(num_cores) > data.core_types.size()) {
    data.core_types.resize(static_cast<size_t>(num_cores), "aiv");
  }
  if (md.contains("core_to_thread") && md["core_to_thread"].is_array()) {
    for (const auto& t : md["core_to_thread"])
      data.core_to_thread.push_back(t.is_number() ? t.get<int>() : -1);
  }
  // Pass 2: AICore rows, sorted by (core, reg), then the AICPU join.
  std::vector<TaskRow> aicore;
  if (aicore_offset >= 0) {
    aicore.reserve(aicore_rows);
    DFX_RETURN_IF_ERROR(r.OpenAt(path, static_cast<uint64_t>(aicore_offset)));
    if (!r.BeginArray()) return r.status();
    while (r.NextElement()) {
      if (!ReadRow(r, &row, true)) return r.status();
      uint32_t r2s = row.size() > 5 ? static_cast<uint32_t>(row[5]) : 0;
      if (r2s > row[3]) r2s = 0;
      aicore.push_back(data.MakeRow(row[1], static_cast<int>(row[0]), row[3], row[4], 0, 0, r2s,
                                    static_cast<uint32_t>(row[2])));
    }
    if (!r.ok()) return r.status();
  }
  // File order is core order and reg order within a core: usually sorted already.
  if (!std::is_sorted(aicore.begin(), aicore.end(), RowKeyLess)) {
    std::stable_sort(aicore.begin(), aicore.end(), RowKeyLess);
  }
  constexpr uint8_t kMatched = 0x10;  // scratch bit while joining
  std::vector<TaskRow> extra;         // duplicate (core, reg) matches
  if (aicpu_offset >= 0) {
    DFX_RETURN_IF_ERROR(r.OpenAt(path, static_cast<uint64_t>(aicpu_offset)));
    if (!r.BeginArray()) return r.status();
    while (r.NextElement()) {
      if (!ReadRow(r, &row, false)) return r.status();
      TaskRow key_row;
      key_row.core_id = static_cast<uint16_t>(row[0]);
      key_row.slot = static_cast<uint32_t>(row[1]);
      auto it = std::lower_bound(aicore.begin(), aicore.end(), key_row, RowKeyLess);
      if (it == aicore.end() || it->core_id != key_row.core_id || it->slot != key_row.slot) {
        ++unmatched[key_row.core_id];
        continue;
      }
      if (it->flags & kMatched) {
        TaskRow dup = data.MakeRow(data.TaskId(*it), it->core_id, data.Start(*it), data.End(*it),
                                   row[2], row[3], data.ReceiveToStart(*it), it->slot);
        extra.push_back(dup);
        continue;
      }
      it->flags |= kMatched;
      data.SetAicpuTimes(*it, row[2], row[3]);
    }
    if (!r.ok()) return r.status();
  }
  // Join result.
  if (data.level == 1) {
    for (auto& t : aicore) {
      data.SetAicpuTimes(t, 0, 0);
      t.flags &= static_cast<uint8_t>(~kMatched);
    }
  } else {
    size_t w = 0;
    for (size_t i = 0; i < aicore.size(); ++i) {
      if (aicore[i].flags & kMatched) {
        aicore[w] = aicore[i];
        aicore[w++].flags &= static_cast<uint8_t>(~kMatched);
      }
    }
    aicore.resize(w);
    aicore.insert(aicore.end(), extra.begin(), extra.end());
  }
  extra = {};
  data.tasks = std::move(aicore);
  // Rows of one task keep core order (the file's row order); a full key keeps
  // the order deterministic without stable_sort's N/2-element buffer.
  // The task id and core decide almost every comparison: the rest of the
  // key is built only for rows of one task on one core.
  auto rest_of = [&data](const TaskRow& t) {
    return std::make_tuple(data.Start(t), data.End(t), data.ReceiveToStart(t), data.Dispatch(t),
                           data.Finish(t), t.slot);
  };
  std::sort(data.tasks.begin(), data.tasks.end(), [&](const TaskRow& a, const TaskRow& b) {
    const uint64_t ia = data.TaskId(a), ib = data.TaskId(b);
    if (ia != ib) return ia < ib;
    if (a.core_id != b.core_id) return a.core_id < b.core_id;
    return rest_of(a) < rest_of(b);
  });
  for (const auto& [core, count] : unmatched) {
    data.unmatched_aicpu_rows += count;
    data.unmatched_by_core.emplace_back(core, count);
  }
  std::stable_sort(data.unmatched_by_core.begin(), data.unmatched_by_core.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (auto& c : data.core_to_thread) {
    if (c < -1) c = -1;
  }
  // Host-orchestrated runs (§2.6 step 6), causal composite layout only.
  bool host_records = false;
  for (const auto& lane : host_orch) host_records |= !lane.empty();
  const bool aicpu_records = data.HasOrchPhases();
  if (host_records && aicpu_records) {
    return InvalidArgument(
        "both AICPU and host orchestrator phases are present; clock-domain source is ambiguous");
  }
  if (host_records || !data.host_uploads.empty()) {
    data.host_mode = host_records;
    uint64_t origin = md.value("host_orchestration_origin_ns", uint64_t{0});
    uint64_t last = 0;
    uint64_t first = 0;
    auto see = [&](uint64_t s, uint64_t e) {
      if (s != 0 && (first == 0 || s < first)) first = s;
      last = std::max(last, e);
    };
    for (const auto& lane : host_orch) {
      for (const auto& p : lane) see(p.start, p.end);
    }
    for (const auto& u : data.host_uploads) see(u.start_ns, u.end_ns);
    if (origin == 0) origin = first;
    data.host_origin_ns = origin;
    data.device_offset_us = last > origin ? static_cast<double>(last - origin) / 1000.0 : 0.0;
    if (host_records) {
      // The device pools (all empty, or this was an error above) give way
      // to the host's, which are in memory.
      data.orch_phases = std::move(host_orch);
      data.orch_phases_streamed = false;
      data.orch_phases_fast = false;
      data.orch_phases_offsets.clear();
      data.num_streamed_orch_pools = 0;
      data.num_streamed_orch_phases = 0;
    }
    Json tm = Json::object();
    tm["layout"] = "causal_composite";
    std::string status = "complete";
    if (md.contains("host_capture") && md["host_capture"].is_object()) {
      status = md["host_capture"].value("status", std::string("complete")) == "complete"
                   ? "complete"
                   : "partial";
      tm["host_capture"] = md["host_capture"];
    }
    tm["trace_status"] = status;
    tm["relation"] =
        md.value("timeline_relation", std::string("host_orchestration_precedes_device"));
    tm["clock_alignment"] = {{"calibrated", false}};
    tm["host_records_complete"] = status == "complete";
    tm["cross_domain_latency_available"] = false;
    tm["cross_domain_gap_unknown"] = true;
    tm["logical_seam_us"] = data.device_offset_us;
    data.timeline_metadata = std::move(tm);
  }
  return data;
}

Status ForEachTaskRecord(const std::filesystem::path& path,
                         const std::function<void(const SwimlaneAicoreRow&)>& on_aicore,
                         const std::function<void(const SwimlaneAicpuRow&)>& on_aicpu) {
  JsonPullReader r;
  DFX_RETURN_IF_ERROR(r.Open(path));
  if (!r.BeginObject()) return r.status();
  std::string key;
  std::vector<uint64_t> row;
  while (r.NextKey(&key)) {
    const bool aicore = key == "aicore_tasks";
    if (!aicore && key != "aicpu_tasks") {
      if (!r.Skip()) return r.status();
      continue;
    }
    if (!r.BeginArray()) return r.status();
    while (r.NextElement()) {
      if (!ReadRow(r, &row, aicore)) return r.status();
      if (aicore) {
        on_aicore({static_cast<uint32_t>(row[0]), row[1], static_cast<uint32_t>(row[2]), row[3],
                   row[4], row.size() > 5 ? static_cast<uint32_t>(row[5]) : 0});
      } else {
        on_aicpu({static_cast<uint32_t>(row[0]), static_cast<uint32_t>(row[1]), row[2], row[3]});
      }
    }
  }
  return r.status();
}

std::string UnmatchedWarning(const SwimlaneRecords& data) {
  if (data.unmatched_aicpu_rows == 0) return "";
  std::string top;
  for (size_t i = 0; i < data.unmatched_by_core.size() && i < 5; ++i) {
    if (i) top += ", ";
    top += fmt::format("core {}: {}", data.unmatched_by_core[i].first,
                       data.unmatched_by_core[i].second);
  }
  return fmt::format(
      "Warning: {} aicpu_task(s) had no matching AICore record (top offenders: {}); the missing "
      "AICore buffer(s) were dropped on rotation. Bump PLATFORM_AICORE_BUFFERS_PER_CORE if you "
      "see this regularly.",
      data.unmatched_aicpu_rows, top);
}

}  // namespace dfx::collectors
