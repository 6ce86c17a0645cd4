// The scheduler and orchestrator phases of a records file through the
// generic pull reader: in memory or streamed again from the file.
#include <string_view>
#include <utility>

#include "collectors/swimlane/sched_phase_scan.h"
#include "collectors/swimlane/swimlane_keys.h"
#include "collectors/swimlane/swimlane_phase_json.h"
#include "collectors/swimlane/swimlane_reader.h"
#include "common/enum_text.h"
#include "common/json_stream.h"

namespace dfx::collectors {
namespace {

namespace keys = swimlane_keys;

constexpr auto kPhaseKindText = MakeEnumTable<PhaseKind>(
    {
        {PhaseKind::kComplete, keys::kPhaseComplete.c_str()},
        {PhaseKind::kDispatch, keys::kPhaseDispatch.c_str()},
        {PhaseKind::kRelease, keys::kPhaseRelease.c_str()},
        {PhaseKind::kDummy, keys::kPhaseDummy.c_str()},
        {PhaseKind::kEarlyDispatch, keys::kPhaseEarlyDispatch.c_str()},
        {PhaseKind::kResolve, keys::kPhaseResolve.c_str()},
        {PhaseKind::kDummyTask, keys::kPhaseDummyTask.c_str()},
        {PhaseKind::kDrain, keys::kPhaseDrain.c_str()},
        {PhaseKind::kDrainPrepare, keys::kPhaseDrainPrepare.c_str()},
        {PhaseKind::kDrainPublish, keys::kPhaseDrainPublish.c_str()},
        {PhaseKind::kAsyncPoll, keys::kPhaseAsyncPoll.c_str()},
        {PhaseKind::kPredicatedSkip, keys::kPhasePredicatedSkip.c_str()},
        {PhaseKind::kGraphPrepare, keys::kPhaseGraphPrepare.c_str()},
        {PhaseKind::kScan, keys::kPhaseScan.c_str()},
        {PhaseKind::kPoll, keys::kPhasePoll.c_str()},
        {PhaseKind::kIdle, keys::kPhaseIdle.c_str()},
        {PhaseKind::kOther, keys::kPhaseOther.c_str()},
    },
    keys::kPhaseOther.c_str());

// Read in place (two per scheduler phase: no vector per call).
bool ReadInt16Triple(JsonPullReader& r, int16_t out[3]) {
  out[0] = out[1] = out[2] = 0;
  if (!r.BeginArray()) return false;
  JsonNumber n;
  for (size_t i = 0; r.NextElement(); ++i) {
    if (!r.ReadNumber(&n)) return false;
    const uint64_t v = n.AsRowUint64();
    if (i < 3) out[i] = static_cast<int16_t>(static_cast<int64_t>(v));
  }
  return r.ok();
}

}  // namespace

bool ReadSchedPhase(JsonPullReader& r, SchedPhase* p) {
  if (!r.BeginObject()) return false;
  std::string key, s;
  JsonNumber n;
  while (r.NextKey(&key)) {
    if (key == keys::kKind || key == keys::kLegacyKind) {
      if (!r.ReadString(&s)) return false;
      p->kind = ParsePhaseKind(s);
    } else if (key == keys::kSharedAtStart) {
      if (!ReadInt16Triple(r, p->shared_at_start)) return false;
      p->has_depths = true;
    } else if (key == keys::kSharedAtEnd) {
      if (!ReadInt16Triple(r, p->shared_at_end)) return false;
      p->has_depths = true;
    } else if (r.Peek() == JsonPullReader::Kind::kNumber) {
      if (!r.ReadNumber(&n)) return false;
      if (key == keys::kStartCycles)
        p->start = n.AsUint64();
      else if (key == keys::kEndCycles)
        p->end = n.AsUint64();
      else if (key == keys::kLoopIter)
        p->loop_iter = static_cast<uint32_t>(n.magnitude);
      else if (key == keys::kTasksProcessed)
        p->tasks_processed = static_cast<uint32_t>(n.magnitude);
      else if (key == keys::kPopHit)
        p->pop_hit = static_cast<uint32_t>(n.magnitude);
      else if (key == keys::kPopMiss)
        p->pop_miss = static_cast<uint32_t>(n.magnitude);
      else if (key == keys::kTaskId)
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
    if (key == keys::kSubmitIdx)
      p->submit_idx = n.AsInt64();
    else if (key == keys::kTaskId)
      p->task_id = n.negative ? -1 : static_cast<int64_t>(n.magnitude);
    else if (key == (host ? keys::kStartHostNs.view() : keys::kStartCycles.view()))
      p->start = n.AsUint64();
    else if (key == (host ? keys::kEndHostNs.view() : keys::kEndCycles.view()))
      p->end = n.AsUint64();
  }
  return r.ok();
}

const char* PhaseName(PhaseKind kind) { return kPhaseKindText.Name(kind); }

PhaseKind ParsePhaseKind(std::string_view name) {
  if (name == keys::kLegacyPhaseResolve) return PhaseKind::kResolve;
  if (name == keys::kLegacyPhaseEarlyDispatch) return PhaseKind::kEarlyDispatch;
  return kPhaseKindText.Parse(name).value_or(PhaseKind::kOther);
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

}  // namespace dfx::collectors
