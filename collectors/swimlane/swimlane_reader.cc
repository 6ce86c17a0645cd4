#include "collectors/swimlane/swimlane_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "collectors/swimlane/sched_phase_scan.h"
#include "collectors/swimlane/swimlane_keys.h"
#include "collectors/swimlane/swimlane_phase_json.h"
#include "common/json_stream.h"
#include "common/json_value.h"

namespace dfx::collectors {
namespace {

namespace keys = swimlane_keys;

// Running minimum of non-zero timestamps (§2.6 step 2).
struct BaseTracker {
  uint64_t base = 0;
  void See(uint64_t v) {
    if (v != 0 && (base == 0 || v < base)) base = v;
  }
};

}  // namespace

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

namespace {

// Reads one row of an aicore_tasks / aicpu_tasks array.
bool ReadRow(JsonPullReader& r, std::vector<uint64_t>* row, bool aicore) {
  if (!r.ReadUint64Array(row)) return false;
  if (aicore && row->size() < 5) {
    return r.Fail(fmt::format("{} row has {} columns, expected 6 (or legacy 5)",
                              keys::kAicoreTasks.view(), row->size()));
  }
  if (!aicore && row->size() < 4) {
    return r.Fail(
        fmt::format("{} row has {} columns, expected 4", keys::kAicpuTasks.view(), row->size()));
  }
  if ((*row)[0] > std::numeric_limits<uint16_t>::max()) {
    return r.Fail(fmt::format("{} row has core_id {}, expected 0..65535",
                              aicore ? keys::kAicoreTasks.view() : keys::kAicpuTasks.view(),
                              static_cast<int64_t>((*row)[0])));
  }
  return true;
}

bool RowKeyLess(const TaskRow& a, const TaskRow& b) {
  return a.core_id != b.core_id ? a.core_id < b.core_id : a.slot < b.slot;
}

// The first pass over a records file: everything but the task rows, which
// only feed the base time and their counts; their offsets are kept for the
// second pass (JoinTaskRows).
class FirstPass {
 public:
  FirstPass(const std::filesystem::path& path, const SwimlaneReadOptions& options,
            JsonPullReader& r, SwimlaneRecords* data)
      : path_(path), options_(options), r_(r), data_(*data) {}

  Status Run();

  BaseTracker base;
  std::vector<std::vector<OrchPhase>> host_orch;
  int64_t aicore_offset = -1, aicpu_offset = -1;
  size_t aicore_rows = 0;

 private:
  Status Level();
  Status AicoreRows();
  Status AicpuRows();
  Status SchedPhases();
  // True when the fast reader read the whole value and the reader is past it.
  Result<bool> FastSchedPhases();
  Status OrchPhases(bool host);
  Result<bool> FastOrchPhases();
  Status HostUploads();

  const std::filesystem::path& path_;
  const SwimlaneReadOptions& options_;
  JsonPullReader& r_;
  SwimlaneRecords& data_;
  bool have_level_ = false;
  std::vector<uint64_t> row_;
  int64_t last_orch_task_ = -1;  // orch_phases_sorted_by_task
};

Status FirstPass::Run() {
  if (!r_.BeginObject()) return r_.status();
  std::string key;
  while (r_.NextKey(&key)) {
    data_.top_level_keys.push_back(key);
    Status status;
    if (key == keys::kLevel) {
      status = Level();
    } else if (key == keys::kMetadata) {
      if (!r_.ReadJson(&data_.metadata)) return r_.status();
    } else if (key == keys::kAicoreTasks) {
      status = AicoreRows();
    } else if (key == keys::kAicpuTasks) {
      status = AicpuRows();
    } else if (key == keys::kSchedPhases) {
      status = SchedPhases();
    } else if (key == keys::kOrchPhases || key == keys::kHostOrchPhases) {
      status = OrchPhases(key == keys::kHostOrchPhases);
    } else if (key == keys::kHostUploads) {
      status = HostUploads();
    } else {
      if (!r_.Skip()) return r_.status();
    }
    DFX_RETURN_IF_ERROR(status);
  }
  if (!r_.ok()) return r_.status();
  if (!have_level_) {
    return InvalidArgument(path_.string() + ": missing chip_swimlane_level");
  }
  return Status::Ok();
}

Status FirstPass::Level() {
  JsonNumber n;
  if (!r_.ReadNumber(&n)) return r_.status();
  data_.level = static_cast<int>(n.AsInt64());
  have_level_ = true;
  if (data_.level < 1 || data_.level > 4) {
    return InvalidArgument(
        fmt::format("Unsupported chip_swimlane_level: {} (expected 1, 2, 3, or 4)", data_.level));
  }
  return Status::Ok();
}

Status FirstPass::AicoreRows() {
  r_.Peek();
  aicore_offset = static_cast<int64_t>(r_.bytes_read());
  aicore_rows = 0;
  if (!r_.BeginArray()) return r_.status();
  while (r_.NextElement()) {
    if (!ReadRow(r_, &row_, true)) return r_.status();
    uint64_t start = row_[3];
    uint32_t r2s = row_.size() > 5 ? static_cast<uint32_t>(row_[5]) : 0;
    if (r2s > start) r2s = 0;
    base.See(start - r2s);
    base.See(row_[4]);
    ++aicore_rows;
  }
  return r_.status();
}

Status FirstPass::AicpuRows() {
  r_.Peek();
  aicpu_offset = static_cast<int64_t>(r_.bytes_read());
  if (!r_.BeginArray()) return r_.status();
  while (r_.NextElement()) {
    if (!ReadRow(r_, &row_, false)) return r_.status();
    base.See(row_[2]);
    base.See(row_[3]);
  }
  return r_.status();
}

Status FirstPass::SchedPhases() {
  // A second value (a duplicate key) replaces the first.
  if (data_.has_sched_phases && options_.restart_sched_phases) options_.restart_sched_phases();
  data_.has_sched_phases = true;
  data_.sched_phases_fast = false;
  r_.Peek();
  data_.sched_phases_offset = r_.bytes_read();
  data_.sched_phases_streamed = options_.stream_sched_phases;
  data_.sched_phases.clear();
  data_.num_sched_threads = 0;
  data_.num_sched_phases = 0;
  if (options_.stream_sched_phases) {
    DFX_ASSIGN_OR_RETURN(bool fast, FastSchedPhases());
    if (fast) return Status::Ok();
    if (!r_.ok()) return r_.status();
    if (options_.restart_sched_phases) options_.restart_sched_phases();
  }
  if (!r_.BeginArray()) return r_.status();
  while (r_.NextElement()) {
    const size_t t = data_.num_sched_threads++;
    std::deque<SchedPhase>* lane =
        options_.stream_sched_phases ? nullptr : &data_.sched_phases.emplace_back();
    if (!r_.BeginArray()) return r_.status();
    while (r_.NextElement()) {
      SchedPhase p;
      if (!ReadSchedPhase(r_, &p)) return r_.status();
      base.See(p.start);
      base.See(p.end);
      ++data_.num_sched_phases;
      if (lane != nullptr) lane->push_back(p);
      if (options_.see_sched_phase) options_.see_sched_phase(t, p);
    }
  }
  return r_.status();
}

// The fast reader's pointer scans, then on after the value; the generic
// reader (SchedPhases) only when a phase is outside its subset.
Result<bool> FirstPass::FastSchedPhases() {
  BaseTracker fast_base = base;
  uint64_t phases = 0;
  const auto& see = options_.see_sched_phase;
  DFX_ASSIGN_OR_RETURN(FastSchedScan scan, FastScanSchedPhases(path_, data_.sched_phases_offset,
                                                               [&](size_t t, const SchedPhase& p) {
                                                                 fast_base.See(p.start);
                                                                 fast_base.See(p.end);
                                                                 ++phases;
                                                                 if (see) see(t, p);
                                                               }));
  if (!scan.whole || !r_.SkipTo(scan.end_offset)) return false;
  base = fast_base;
  data_.num_sched_threads = scan.lanes;
  data_.num_sched_phases = phases;
  data_.sched_phases_fast = true;
  return true;
}

Status FirstPass::OrchPhases(bool host) {
  // Device phases streamed: counted and checked here, re-read on demand.
  const bool stream = !host && options_.stream_orch_phases;
  auto& target = host ? host_orch : data_.orch_phases;
  if (stream) {
    r_.Peek();
    if (data_.orch_phases_offsets.empty()) data_.orch_phases_fast = true;
    data_.orch_phases_offsets.push_back(r_.bytes_read());
    data_.orch_phases_streamed = true;
    DFX_ASSIGN_OR_RETURN(bool fast, FastOrchPhases());
    if (fast) return Status::Ok();
    if (!r_.ok()) return r_.status();
    data_.orch_phases_fast = false;
  }
  if (!r_.BeginArray()) return r_.status();
  while (r_.NextElement()) {
    auto* lane = stream ? nullptr : &target.emplace_back();
    if (stream) ++data_.num_streamed_orch_pools;
    if (!r_.BeginArray()) return r_.status();
    while (r_.NextElement()) {
      OrchPhase p;
      if (!ReadOrchPhase(r_, host, &p)) return r_.status();
      if (!host) {
        base.See(p.start);
        base.See(p.end);
        if (p.task_id >= 0) {
          if (p.task_id < last_orch_task_) data_.orch_phases_sorted_by_task = false;
          last_orch_task_ = p.task_id;
        }
      }
      if (stream) {
        ++data_.num_streamed_orch_phases;
      } else {
        lane->push_back(p);
      }
    }
  }
  return r_.status();
}

// The fast reader, then on after the value, as for the scheduler phases;
// the generic reader (OrchPhases) only for a phase outside its subset.
Result<bool> FirstPass::FastOrchPhases() {
  BaseTracker fast_base = base;
  int64_t fast_last = last_orch_task_;
  bool fast_sorted = data_.orch_phases_sorted_by_task;
  uint64_t phases = 0;
  DFX_ASSIGN_OR_RETURN(
      FastSchedScan scan,
      FastScanOrchPhases(path_, data_.orch_phases_offsets.back(), [&](size_t, const OrchPhase& p) {
        fast_base.See(p.start);
        fast_base.See(p.end);
        if (p.task_id >= 0) {
          if (p.task_id < fast_last) fast_sorted = false;
          fast_last = p.task_id;
        }
        ++phases;
        return true;
      }));
  if (!scan.whole || !r_.SkipTo(scan.end_offset)) return false;
  base = fast_base;
  last_orch_task_ = fast_last;
  data_.orch_phases_sorted_by_task = fast_sorted;
  data_.num_streamed_orch_pools += scan.lanes;
  data_.num_streamed_orch_phases += phases;
  return true;
}

Status FirstPass::HostUploads() {
  Json uploads;
  if (!r_.ReadJson(&uploads)) return r_.status();
  if (uploads.is_array()) {
    for (const auto& u : uploads) {
      HostUpload h;
      h.phase = JsonStringOr(u, keys::kUploadPhase.c_str(), "upload");
      h.start_ns = JsonIntegerOr<uint64_t>(u, keys::kStartHostNs.c_str(), 0);
      h.end_ns = JsonIntegerOr<uint64_t>(u, keys::kEndHostNs.c_str(), 0);
      h.detail = JsonIntegerOr<int64_t>(u, keys::kDetail.c_str(), 0);
      data_.host_uploads.push_back(h);
    }
  }
  return Status::Ok();
}

// The clock and the cores from the metadata object.
Status ApplyMetadata(SwimlaneRecords& data) {
  const Json& md = data.metadata;
  const int64_t freq = JsonIntegerOr<int64_t>(md, keys::kClockFreqHz.c_str(), 0);
  if (freq <= 0) {
    return InvalidArgument(fmt::format("metadata missing/zero clock_freq_hz: {}", freq));
  }
  data.clock_freq_hz = static_cast<uint64_t>(freq);
  if (md.contains(keys::kCoreTypes.c_str()) && md[keys::kCoreTypes.c_str()].is_array()) {
    for (const auto& t : md[keys::kCoreTypes.c_str()])
      data.core_types.push_back(t.is_string() ? t.get<std::string>() : std::string(keys::kCoreAiv));
  }
  const int64_t num_cores = JsonIntegerOr<int64_t>(md, keys::kNumCores.c_str(), 0);
  if (num_cores > 0 && static_cast<size_t>(num_cores) > data.core_types.size()) {
    data.core_types.resize(static_cast<size_t>(num_cores), std::string(keys::kCoreAiv));
  }
  if (md.contains(keys::kCoreToThread.c_str()) && md[keys::kCoreToThread.c_str()].is_array()) {
    for (const auto& t : md[keys::kCoreToThread.c_str()])
      data.core_to_thread.push_back(JsonInteger<int>(t).value_or(-1));
  }
  return Status::Ok();
}

// Pass 2: the AICore rows, sorted by (core, reg), then the AICPU join; the
// joined rows go to data.tasks (not yet sorted by task) and the AICPU rows
// without an AICore row are counted per core in `unmatched`.
Status JoinTaskRows(const std::filesystem::path& path, const FirstPass& pass, JsonPullReader& r,
                    SwimlaneRecords& data, std::map<int, uint64_t>* unmatched) {
  std::vector<uint64_t> row;
  std::vector<TaskRow> aicore;
  if (pass.aicore_offset >= 0) {
    aicore.reserve(pass.aicore_rows);
    DFX_RETURN_IF_ERROR(r.OpenAt(path, static_cast<uint64_t>(pass.aicore_offset)));
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
  if (pass.aicpu_offset >= 0) {
    DFX_RETURN_IF_ERROR(r.OpenAt(path, static_cast<uint64_t>(pass.aicpu_offset)));
    if (!r.BeginArray()) return r.status();
    while (r.NextElement()) {
      if (!ReadRow(r, &row, false)) return r.status();
      TaskRow key_row;
      key_row.core_id = static_cast<uint16_t>(row[0]);
      key_row.slot = static_cast<uint32_t>(row[1]);
      auto it = std::lower_bound(aicore.begin(), aicore.end(), key_row, RowKeyLess);
      if (it == aicore.end() || it->core_id != key_row.core_id || it->slot != key_row.slot) {
        ++(*unmatched)[key_row.core_id];
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
  return Status::Ok();
}

// Sorts the joined rows by task and lists the unmatched AICPU rows by core,
// most first.
void SortTasks(SwimlaneRecords& data, const std::map<int, uint64_t>& unmatched) {
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
}

// The causal composite timeline of a host-orchestrated run (§2.6 step 6).
Status ApplyHostTimeline(SwimlaneRecords& data, std::vector<std::vector<OrchPhase>> host_orch) {
  const Json& md = data.metadata;
  bool host_records = false;
  for (const auto& lane : host_orch) host_records |= !lane.empty();
  const bool aicpu_records = data.HasOrchPhases();
  if (host_records && aicpu_records) {
    return InvalidArgument(
        "both AICPU and host orchestrator phases are present; clock-domain source is ambiguous");
  }
  if (!host_records && data.host_uploads.empty()) return Status::Ok();
  data.host_mode = host_records;
  uint64_t origin = JsonIntegerOr<uint64_t>(md, keys::kHostOrchestrationOriginNs.c_str(), 0);
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
  if (md.contains(keys::kHostCapture.c_str()) && md[keys::kHostCapture.c_str()].is_object()) {
    status = JsonStringOr(md[keys::kHostCapture.c_str()], keys::kHostCaptureStatus.c_str(),
                          "complete") == "complete"
                 ? "complete"
                 : "partial";
    tm["host_capture"] = md[keys::kHostCapture.c_str()];
  }
  tm["trace_status"] = status;
  tm["relation"] =
      JsonStringOr(md, keys::kTimelineRelation.c_str(), "host_orchestration_precedes_device");
  tm["clock_alignment"] = {{"calibrated", false}};
  tm["host_records_complete"] = status == "complete";
  tm["cross_domain_latency_available"] = false;
  tm["cross_domain_gap_unknown"] = true;
  tm["logical_seam_us"] = data.device_offset_us;
  data.timeline_metadata = std::move(tm);
  return Status::Ok();
}

}  // namespace

Result<SwimlaneRecords> ReadSwimlaneRecords(const std::filesystem::path& path,
                                            const SwimlaneReadOptions& options) {
  SwimlaneRecords data;
  data.path = path;
  JsonPullReader r;
  DFX_RETURN_IF_ERROR(r.Open(path));
  FirstPass pass(path, options, r, &data);
  DFX_RETURN_IF_ERROR(pass.Run());
  data.base_cycles = pass.base.base;
  data.epoch = pass.base.base == 0 ? 0 : pass.base.base - 1;
  DFX_RETURN_IF_ERROR(ApplyMetadata(data));
  std::map<int, uint64_t> unmatched;
  DFX_RETURN_IF_ERROR(JoinTaskRows(path, pass, r, data, &unmatched));
  SortTasks(data, unmatched);
  DFX_RETURN_IF_ERROR(ApplyHostTimeline(data, std::move(pass.host_orch)));
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
    const bool aicore = key == keys::kAicoreTasks;
    if (!aicore && key != keys::kAicpuTasks) {
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
