#include "tools/perf_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "tools/json_stream.h"

namespace dfx::view {
namespace {

struct PhaseName_ {
  PhaseKind kind;
  const char* name;
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

struct AicpuRow {
  int32_t core;
  uint32_t reg;
  uint64_t dispatch, finish;
};

bool ReadU64Array(JsonPullReader& r, std::vector<uint64_t>* values) {
  values->clear();
  if (!r.BeginArray()) return false;
  JsonNumber n;
  while (r.NextElement()) {
    if (!r.ReadNumber(&n)) return false;
    values->push_back(n.negative ? static_cast<uint64_t>(n.AsInt64())
                                 : (n.is_integer ? n.magnitude : static_cast<uint64_t>(n.value)));
  }
  return r.ok();
}

bool ReadInt16Triple(JsonPullReader& r, int16_t out[3]) {
  std::vector<uint64_t> v;
  if (!ReadU64Array(r, &v)) return false;
  for (size_t i = 0; i < 3; ++i) {
    out[i] = i < v.size() ? static_cast<int16_t>(static_cast<int64_t>(v[i])) : 0;
  }
  return true;
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
    if (e.kind == kind) return e.name;
  }
  return "other";
}

PhaseKind ParsePhaseKind(const std::string& name) {
  if (name == "fanout") return PhaseKind::kResolve;
  if (name == "prestage") return PhaseKind::kEarlyDispatch;
  for (const auto& e : kPhaseNames) {
    if (name == e.name) return e.kind;
  }
  return PhaseKind::kOther;
}

std::string FormatTaskDisplay(uint64_t task_id) {
  int ring = RingOf(task_id);
  if (ring == 0) return fmt::format("t{}", LocalOf(task_id));
  return fmt::format("r{}t{}", ring, LocalOf(task_id));
}

Result<PerfData> ReadPerfData(const std::filesystem::path& path) {
  PerfData data;
  data.path = path;
  JsonPullReader r;
  DFX_RETURN_IF_ERROR(r.Open(path));
  BaseTracker base;
  std::vector<TaskRow> aicore;  // sorted by (core, reg) once complete
  // Reserve an upper bound of rows (a row takes at least 14 bytes of text):
  // untouched reserved pages are never resident, and the vector never
  // reallocates, so peak memory is the rows actually read, not 2-3x that.
  std::error_code size_ec;
  uint64_t file_size = std::filesystem::file_size(path, size_ec);
  if (!size_ec) aicore.reserve(static_cast<size_t>(file_size / 14 + 16));
  bool aicore_done = false;
  bool have_level = false;
  std::vector<AicpuRow> pending_aicpu;  // only if aicpu_tasks precede aicore_tasks
  std::vector<bool> matched;
  std::vector<TaskRow> extra;  // duplicate (core, reg) matches
  bool saw_aicpu_key = false;
  std::map<int, uint64_t> unmatched;
  std::vector<uint64_t> row;
  std::vector<std::vector<OrchPhase>> host_orch;

  auto sort_aicore = [&] {
    std::sort(aicore.begin(), aicore.end(), [](const TaskRow& a, const TaskRow& b) {
      return a.core_id != b.core_id ? a.core_id < b.core_id : a.reg_task_id < b.reg_task_id;
    });
    matched.assign(aicore.size(), false);
    aicore_done = true;
  };
  auto join = [&](const AicpuRow& c) {
    TaskRow key;
    key.core_id = c.core;
    key.reg_task_id = c.reg;
    auto it =
        std::lower_bound(aicore.begin(), aicore.end(), key, [](const TaskRow& a, const TaskRow& b) {
          return a.core_id != b.core_id ? a.core_id < b.core_id : a.reg_task_id < b.reg_task_id;
        });
    if (it == aicore.end() || it->core_id != c.core || it->reg_task_id != c.reg) {
      ++unmatched[c.core];
      return;
    }
    size_t i = static_cast<size_t>(it - aicore.begin());
    if (matched[i]) {
      TaskRow dup = *it;
      dup.dispatch = c.dispatch;
      dup.finish = c.finish;
      extra.push_back(dup);
      return;
    }
    matched[i] = true;
    it->dispatch = c.dispatch;
    it->finish = c.finish;
  };

  if (!r.BeginObject()) return r.status();
  std::string key;
  JsonNumber n;
  while (r.NextKey(&key)) {
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
      if (!r.BeginArray()) return r.status();
      while (r.NextElement()) {
        if (!ReadU64Array(r, &row)) return r.status();
        if (row.size() < 5) {
          r.Fail(
              fmt::format("aicore_tasks row has {} columns, expected 6 (or legacy 5)", row.size()));
          return r.status();
        }
        TaskRow t;
        t.core_id = static_cast<int32_t>(row[0]);
        t.task_id = row[1];
        t.reg_task_id = static_cast<uint32_t>(row[2]);
        t.start = row[3];
        t.end = row[4];
        t.receive_to_start = row.size() > 5 ? static_cast<uint32_t>(row[5]) : 0;
        if (t.receive_to_start > t.start) t.receive_to_start = 0;
        base.See(t.start - t.receive_to_start);
        base.See(t.end);
        aicore.push_back(t);
      }
      if (!r.ok()) return r.status();
      sort_aicore();
      for (const auto& c : pending_aicpu) join(c);
      pending_aicpu.clear();
      pending_aicpu.shrink_to_fit();
    } else if (key == "aicpu_tasks") {
      saw_aicpu_key = true;
      if (!r.BeginArray()) return r.status();
      while (r.NextElement()) {
        if (!ReadU64Array(r, &row)) return r.status();
        if (row.size() < 4) {
          r.Fail(fmt::format("aicpu_tasks row has {} columns, expected 4", row.size()));
          return r.status();
        }
        AicpuRow c{static_cast<int32_t>(row[0]), static_cast<uint32_t>(row[1]), row[2], row[3]};
        base.See(c.dispatch);
        base.See(c.finish);
        if (aicore_done)
          join(c);
        else
          pending_aicpu.push_back(c);
      }
      if (!r.ok()) return r.status();
    } else if (key == "aicpu_scheduler_phases") {
      data.has_sched_phases = true;
      if (!r.BeginArray()) return r.status();
      while (r.NextElement()) {
        auto& lane = data.sched_phases.emplace_back();
        if (!r.BeginArray()) return r.status();
        while (r.NextElement()) {
          SchedPhase p;
          if (!ReadSchedPhase(r, &p)) return r.status();
          base.See(p.start);
          base.See(p.end);
          lane.push_back(p);
        }
      }
      if (!r.ok()) return r.status();
    } else if (key == "aicpu_orchestrator_phases" || key == "host_orchestrator_phases") {
      bool host = key == "host_orchestrator_phases";
      auto& target = host ? host_orch : data.orch_phases;
      if (!r.BeginArray()) return r.status();
      while (r.NextElement()) {
        auto& lane = target.emplace_back();
        if (!r.BeginArray()) return r.status();
        while (r.NextElement()) {
          OrchPhase p;
          if (!ReadOrchPhase(r, host, &p)) return r.status();
          if (!host) {
            base.See(p.start);
            base.See(p.end);
          }
          lane.push_back(p);
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
  if (!aicore_done) sort_aicore();
  // Unmatched rows that were buffered never found an AICore row (no aicore_tasks key).
  for (const auto& c : pending_aicpu) ++unmatched[c.core];

  // Join result.
  if (data.level == 1) {
    data.tasks = std::move(aicore);
    for (auto& t : data.tasks) t.dispatch = t.finish = 0;
  } else {
    size_t w = 0;
    for (size_t i = 0; i < aicore.size(); ++i) {
      if (matched[i]) aicore[w++] = aicore[i];
    }
    aicore.resize(w);
    aicore.insert(aicore.end(), extra.begin(), extra.end());
    data.tasks = std::move(aicore);
    (void)saw_aicpu_key;
  }
  // Rows of one task keep core order (the file's row order); std::sort with a
  // full key avoids stable_sort's N/2-element temporary buffer.
  std::sort(data.tasks.begin(), data.tasks.end(), [](const TaskRow& a, const TaskRow& b) {
    if (a.task_id != b.task_id) return a.task_id < b.task_id;
    if (a.core_id != b.core_id) return a.core_id < b.core_id;
    return a.start < b.start;
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
  bool aicpu_records = false;
  for (const auto& lane : data.orch_phases) aicpu_records |= !lane.empty();
  if (host_records && aicpu_records) {
    return InvalidArgument(
        "both AICPU and host orchestrator phases are present; clock-domain source is ambiguous");
  }
  data.base_cycles = base.base;
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
    if (host_records) data.orch_phases = std::move(host_orch);
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

std::string UnmatchedWarning(const PerfData& data) {
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

}  // namespace dfx::view
