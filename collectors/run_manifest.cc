#include "collectors/run_manifest.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <system_error>

#include "collectors/artifact_layout.h"
#include "collectors/run_manifest_keys.h"
#include "common/enum_text.h"
#include "common/file_util.h"

namespace dfx::collectors {

namespace fs = std::filesystem;
namespace keys = run_manifest_keys;

namespace {

constexpr auto kRunLevelText = MakeEnumTable<RunLevel>({
    {RunLevel::kL2, keys::kLevelL2.c_str()},
    {RunLevel::kL3, keys::kLevelL3.c_str()},
});
constexpr auto kRunStateText = MakeEnumTable<RunState>({
    {RunState::kStarting, keys::kStarting.c_str()},
    {RunState::kRunning, keys::kRunning.c_str()},
    {RunState::kOk, keys::kOk.c_str()},
    {RunState::kFailed, keys::kFailed.c_str()},
    {RunState::kInterrupted, keys::kInterrupted.c_str()},
});
constexpr auto kRankStateText = MakeEnumTable<RankState>({
    {RankState::kWaiting, keys::kWaiting.c_str()},
    {RankState::kReady, keys::kReady.c_str()},
    {RankState::kOk, keys::kOk.c_str()},
    {RankState::kFailed, keys::kFailed.c_str()},
    {RankState::kInterrupted, keys::kInterrupted.c_str()},
});
constexpr auto kDispatchStateText = MakeEnumTable<DispatchState>({
    {DispatchState::kPending, keys::kPending.c_str()},
    {DispatchState::kSent, keys::kSent.c_str()},
    {DispatchState::kRunning, keys::kRunning.c_str()},
    {DispatchState::kOk, keys::kOk.c_str()},
    {DispatchState::kFailed, keys::kFailed.c_str()},
    {DispatchState::kNotRun, keys::kNotRun.c_str()},
    {DispatchState::kInterrupted, keys::kInterrupted.c_str()},
    {DispatchState::kInSpool, keys::kInSpool.c_str()},
});
constexpr auto kArtifactStateText = MakeEnumTable<ArtifactState>({
    {ArtifactState::kStreaming, keys::kStreaming.c_str()},
    {ArtifactState::kOk, keys::kOk.c_str()},
    {ArtifactState::kFailed, keys::kFailed.c_str()},
    {ArtifactState::kRecovered, keys::kRecovered.c_str()},
    {ArtifactState::kInSpool, keys::kInSpool.c_str()},
});

// `one of "a", "b", ...` of a table's names, for an error message.
template <typename Table>
std::string OneOf(const Table& table) {
  return "one of \"" + table.Choices("\", \"") + "\"";
}

Json NullOr(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }
template <typename T>
Json NullOr(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json ArtifactToJson(const ArtifactEntry& a) {
  Json j;
  j[keys::kPath.c_str()] = a.path;
  j[keys::kSize.c_str()] = a.size;
  j[keys::kChecksum.c_str()] =
      a.checksum ? Json(keys::kChecksumPrefix.c_str() + Hex64(*a.checksum)) : Json(nullptr);
  j[keys::kStatus.c_str()] = ArtifactStateName(a.status);
  j[keys::kError.c_str()] = NullOr(a.error);
  j[keys::kWireBytes.c_str()] = NullOr(a.wire_bytes);
  return j;
}

// A reader over one JSON object that names the file and path in its errors.
class Fields {
 public:
  Fields(const Json& j, const std::string& origin, std::string path)
      : j_(j), origin_(origin), path_(std::move(path)) {}

  Status CheckObject() const {
    return j_.is_object() ? Status::Ok() : JsonError(origin_, path_, "an object", j_);
  }
  const Json* Find(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  std::string PathOf(const char* key) const { return path_ + "." + key; }

  template <typename T>
  Status Int(const char* key, T* out, bool required = true) const {
    const Json* v = Find(key);
    if (v == nullptr || v->is_null()) {
      return required ? Missing(key, "an integer") : Status::Ok();
    }
    if (!v->is_number_integer()) return JsonError(origin_, PathOf(key), "an integer", *v);
    if constexpr (std::is_unsigned_v<T>) {
      if (v->is_number_unsigned() || v->get<int64_t>() >= 0) {
        *out = static_cast<T>(v->get<uint64_t>());
        return Status::Ok();
      }
      return JsonError(origin_, PathOf(key), "a non-negative integer", *v);
    } else {
      *out = static_cast<T>(v->get<int64_t>());
      return Status::Ok();
    }
  }
  template <typename T>
  Status OptionalInt(const char* key, std::optional<T>* out) const {
    const Json* v = Find(key);
    if (v == nullptr || v->is_null()) return Status::Ok();
    T value{};
    DFX_RETURN_IF_ERROR(Int(key, &value));
    *out = value;
    return Status::Ok();
  }
  Status String(const char* key, std::string* out, bool required = true) const {
    const Json* v = Find(key);
    if (v == nullptr || v->is_null()) return required ? Missing(key, "a string") : Status::Ok();
    if (!v->is_string()) return JsonError(origin_, PathOf(key), "a string", *v);
    *out = v->get<std::string>();
    return Status::Ok();
  }
  Status OptionalString(const char* key, std::optional<std::string>* out) const {
    const Json* v = Find(key);
    if (v == nullptr || v->is_null()) return Status::Ok();
    std::string s;
    DFX_RETURN_IF_ERROR(String(key, &s));
    *out = std::move(s);
    return Status::Ok();
  }
  template <typename E>
  Status Enum(const char* key, E* out, std::optional<E> (*parse)(std::string_view),
              const char* allowed) const {
    const Json* v = Find(key);
    if (v == nullptr) return Missing(key, allowed);
    if (!v->is_string()) return JsonError(origin_, PathOf(key), allowed, *v);
    auto e = parse(v->get<std::string>());
    if (!e) return JsonError(origin_, PathOf(key), allowed, *v);
    *out = *e;
    return Status::Ok();
  }
  // Calls fn(element, "<path>.key[i]") for each element of an optional array.
  template <typename Fn>
  Status Array(const char* key, Fn&& fn) const {
    const Json* v = Find(key);
    if (v == nullptr || v->is_null()) return Status::Ok();
    if (!v->is_array()) return JsonError(origin_, PathOf(key), "an array", *v);
    for (size_t i = 0; i < v->size(); ++i) {
      DFX_RETURN_IF_ERROR(fn((*v)[i], fmt::format("{}[{}]", PathOf(key), i)));
    }
    return Status::Ok();
  }

 private:
  Status Missing(const char* key, const char* expected) const {
    return InvalidArgument(
        fmt::format("{}: at {}: missing key \"{}\" ({})", origin_, path_, key, expected));
  }
  const Json& j_;
  const std::string& origin_;
  std::string path_;
};

Result<ArtifactEntry> ArtifactFromJson(const Json& j, const std::string& origin,
                                       const std::string& path) {
  Fields f(j, origin, path);
  DFX_RETURN_IF_ERROR(f.CheckObject());
  ArtifactEntry a;
  DFX_RETURN_IF_ERROR(f.String(keys::kPath.c_str(), &a.path));
  DFX_RETURN_IF_ERROR(f.Int(keys::kSize.c_str(), &a.size, /*required=*/false));
  DFX_RETURN_IF_ERROR(f.Enum(keys::kStatus.c_str(), &a.status, ParseArtifactState,
                             OneOf(kArtifactStateText).c_str()));
  DFX_RETURN_IF_ERROR(f.String(keys::kError.c_str(), &a.error, /*required=*/false));
  DFX_RETURN_IF_ERROR(f.OptionalInt(keys::kWireBytes.c_str(), &a.wire_bytes));
  if (const Json* c = f.Find(keys::kChecksum.c_str()); c != nullptr && !c->is_null()) {
    const std::string expected =
        std::string(JoinedText<"\"", keys::kChecksumPrefix, "\" and 16 hex digits">);
    if (!c->is_string()) return JsonError(origin, f.PathOf(keys::kChecksum.c_str()), expected, *c);
    const std::string s = c->get<std::string>();
    uint64_t v = 0;
    constexpr size_t kPrefix = keys::kChecksumPrefix.size();
    if (s.size() != kPrefix + 16 || s.rfind(keys::kChecksumPrefix.c_str(), 0) != 0 ||
        std::from_chars(s.data() + kPrefix, s.data() + s.size(), v, 16).ptr !=
            s.data() + s.size()) {
      return JsonError(origin, f.PathOf(keys::kChecksum.c_str()), expected, *c);
    }
    a.checksum = v;
  }
  return a;
}

}  // namespace

const char* RunLevelName(RunLevel l) { return kRunLevelText.Name(l); }
std::optional<RunLevel> ParseRunLevel(std::string_view n) { return kRunLevelText.Parse(n); }
const char* RunStateName(RunState s) { return kRunStateText.Name(s); }
const char* RankStateName(RankState s) { return kRankStateText.Name(s); }
const char* DispatchStateName(DispatchState s) { return kDispatchStateText.Name(s); }
const char* ArtifactStateName(ArtifactState s) { return kArtifactStateText.Name(s); }

std::optional<RunState> ParseRunState(std::string_view n) { return kRunStateText.Parse(n); }
std::optional<RankState> ParseRankState(std::string_view n) { return kRankStateText.Parse(n); }
std::optional<DispatchState> ParseDispatchState(std::string_view n) {
  return kDispatchStateText.Parse(n);
}
std::optional<ArtifactState> ParseArtifactState(std::string_view n) {
  return kArtifactStateText.Parse(n);
}

namespace {

Json DispatchToJson(const DispatchEntry& d, RunLevel level) {
  Json e;
  e[keys::kRank.c_str()] = d.rank;
  e[keys::kK.c_str()] = d.k;
  e[keys::kDir.c_str()] = level == RunLevel::kL2 ? std::string(keys::kL2DispatchDir.c_str())
                                                 : DispatchDirPath(d.rank, d.k);
  e[keys::kProgram.c_str()] = d.program;
  e[keys::kPass.c_str()] = config::PassKindName(d.pass);
  e[keys::kStatus.c_str()] = DispatchStateName(d.status);
  e[keys::kError.c_str()] = NullOr(d.error);
  e[keys::kStartNs.c_str()] = d.start_ns;
  e[keys::kEndNs.c_str()] = d.end_ns;
  e[keys::kAcceptedNs.c_str()] = NullOr(d.accepted_ns);
  e[keys::kStreamNs.c_str()] = NullOr(d.stream_ns);
  e[keys::kVerifiedNs.c_str()] = NullOr(d.verified_ns);
  e[keys::kTasksExecuted.c_str()] = d.tasks_executed;
  e[keys::kMakespanNs.c_str()] = NullOr(d.makespan_ns);
  e[keys::kAgentWallNs.c_str()] = NullOr(d.agent_wall_ns);
  e[keys::kArtifactCount.c_str()] = NullOr(d.artifact_count);
  Json arts = Json::array();
  for (const ArtifactEntry& a : d.artifacts) arts.push_back(ArtifactToJson(a));
  e[keys::kArtifacts.c_str()] = std::move(arts);
  e[keys::kCapture.c_str()] = d.capture ? DispatchCaptureToJson(*d.capture) : Json(nullptr);
  return e;
}

// Everything but the dispatches' rows (an empty array in their place).
Json RunManifestHead(const RunManifest& m);

}  // namespace

Json RunManifestToJson(const RunManifest& m) {
  Json j = RunManifestHead(m);
  Json& dispatches = j[keys::kDispatches.c_str()];
  for (const DispatchEntry& d : m.dispatches) dispatches.push_back(DispatchToJson(d, m.level));
  return j;
}

std::string RunManifestText(const RunManifest& m) {
  const std::string head = RunManifestHead(m).dump(2);
  if (m.dispatches.empty()) return head + "\n";
  // The rows as dump(2) writes them two levels into the document, made one
  // at a time, not the whole document as one Json: at 64k dispatches one
  // Json takes 389 MB of the coordinator's peak memory where this takes
  // 114 MB, and three times the CPU (a large tree built, then freed).
  constexpr std::string_view kEmpty = "\n  \"dispatches\": []";
  const size_t at = head.find(kEmpty);
  DFX_CHECK(at != std::string::npos);
  std::string text;
  text.reserve(head.size() + m.dispatches.size() * 512);
  text.append(head, 0, at);
  text += "\n  \"dispatches\": [";
  for (size_t i = 0; i < m.dispatches.size(); ++i) {
    const std::string row = DispatchToJson(m.dispatches[i], m.level).dump(2);
    text += i == 0 ? "\n    " : ",\n    ";
    for (char c : row) {
      text.push_back(c);
      if (c == '\n') text += "    ";  // a raw newline is structure: strings escape theirs
    }
  }
  text += "\n  ]";
  text.append(head, at + kEmpty.size());
  text.push_back('\n');
  return text;
}

namespace {

Json RunManifestHead(const RunManifest& m) {
  Json j;
  j[keys::kSession.c_str()] = Hex64(m.session);
  j[keys::kStatus.c_str()] = RunStateName(m.status);
  j[keys::kLevel.c_str()] = RunLevelName(m.level);
  j[keys::kPlan.c_str()] = m.plan;
  j[keys::kWorkDir.c_str()] = m.work_dir;
  j[keys::kLauncher.c_str()] = m.launcher;
  j[keys::kEndpoint.c_str()] = m.endpoint;
  j[keys::kBind.c_str()] = m.bind;
  j[keys::kLaunchNs.c_str()] = NullOr(m.launch_ns);
  j[keys::kRunConfig.c_str()] = config::RunConfigToJson(m.run_config);
  Json passes = Json::array();
  for (config::PassKind p : m.passes) passes.push_back(config::PassKindName(p));
  j[keys::kPasses.c_str()] = std::move(passes);
  Json ranks = Json::array();
  for (const RankEntry& r : m.ranks) {
    Json e;
    e[keys::kRank.c_str()] = r.rank;
    e[keys::kHost.c_str()] = NullOr(r.host);
    e[keys::kAddress.c_str()] = NullOr(r.address);
    e[keys::kPid.c_str()] = NullOr(r.pid);
    e[keys::kStatus.c_str()] = RankStateName(r.status);
    e[keys::kError.c_str()] = NullOr(r.error);
    e[keys::kClockOffsetNs.c_str()] = NullOr(r.clock_offset_ns);
    e[keys::kClockOffsetRttNs.c_str()] = NullOr(r.clock_offset_rtt_ns);
    e[keys::kDispatches.c_str()] = r.dispatches;
    e[keys::kHelloNs.c_str()] = NullOr(r.hello_ns);
    e[keys::kReadyNs.c_str()] = NullOr(r.ready_ns);
    if (!r.reconnects.empty()) {
      Json back = Json::array();
      for (const ReconnectEntry& c : r.reconnects) {
        Json one;
        one[keys::kAtNs.c_str()] = c.at_ns;
        one[keys::kGapNs.c_str()] = c.gap_ns;
        back.push_back(std::move(one));
      }
      e[keys::kReconnects.c_str()] = std::move(back);
    }
    ranks.push_back(std::move(e));
  }
  j[keys::kRanks.c_str()] = std::move(ranks);
  j[keys::kDispatches.c_str()] = Json::array();
  j[keys::kBytesGathered.c_str()] = m.bytes_gathered;
  j[keys::kMergedSwimlane.c_str()] = m.merged_swimlane;
  if (m.gather) {
    Json g;
    g[keys::kGatherId.c_str()] = m.gather->gather_id;
    g[keys::kStatus.c_str()] = m.gather->ok ? keys::kOk.c_str() : keys::kFailed.c_str();
    Json recovered = Json::array();
    for (const ArtifactEntry& a : m.gather->recovered) recovered.push_back(ArtifactToJson(a));
    g[keys::kRecovered.c_str()] = std::move(recovered);
    g[keys::kFailed.c_str()] = m.gather->failed;
    j[keys::kGather.c_str()] = std::move(g);
  }
  if (m.wire) {
    Json w;
    w[keys::kCompression.c_str()] = m.wire->compression;
    w[keys::kChosen.c_str()] = m.wire->chosen;
    w[keys::kArtifactBytes.c_str()] = m.wire->artifact_bytes;
    w[keys::kWireBytes.c_str()] = m.wire->wire_bytes;
    j[keys::kWire.c_str()] = std::move(w);
  }
  if (m.budget) {
    Json b;
    b[keys::kMaxRunBytes.c_str()] = m.budget->max_run_bytes;
    b[keys::kOverBudget.c_str()] = m.budget->over_budget;
    b[keys::kNote.c_str()] = NullOr(m.budget->note);
    j[keys::kBudget.c_str()] = std::move(b);
  }
  if (!m.capture_changes.empty()) {
    j[keys::kCaptureChanges.c_str()] = CaptureChangesToJson(m.capture_changes);
  }
  return j;
}

}  // namespace

namespace {

constexpr char kPassChoices[] = "one of \"single\", \"graph\", \"timing\"";

Result<RankEntry> RankFromJson(const Json& e, const std::string& origin, const std::string& path) {
  Fields r(e, origin, path);
  DFX_RETURN_IF_ERROR(r.CheckObject());
  RankEntry rank;
  DFX_RETURN_IF_ERROR(r.Int(keys::kRank.c_str(), &rank.rank));
  DFX_RETURN_IF_ERROR(r.OptionalString(keys::kHost.c_str(), &rank.host));
  DFX_RETURN_IF_ERROR(r.OptionalString(keys::kAddress.c_str(), &rank.address));
  DFX_RETURN_IF_ERROR(r.OptionalInt(keys::kPid.c_str(), &rank.pid));
  DFX_RETURN_IF_ERROR(
      r.Enum(keys::kStatus.c_str(), &rank.status, ParseRankState, OneOf(kRankStateText).c_str()));
  DFX_RETURN_IF_ERROR(r.String(keys::kError.c_str(), &rank.error, false));
  DFX_RETURN_IF_ERROR(r.OptionalInt(keys::kClockOffsetNs.c_str(), &rank.clock_offset_ns));
  DFX_RETURN_IF_ERROR(r.OptionalInt(keys::kClockOffsetRttNs.c_str(), &rank.clock_offset_rtt_ns));
  DFX_RETURN_IF_ERROR(r.Int(keys::kDispatches.c_str(), &rank.dispatches, false));
  DFX_RETURN_IF_ERROR(r.OptionalInt(keys::kHelloNs.c_str(), &rank.hello_ns));
  DFX_RETURN_IF_ERROR(r.OptionalInt(keys::kReadyNs.c_str(), &rank.ready_ns));
  DFX_RETURN_IF_ERROR(
      r.Array(keys::kReconnects.c_str(), [&](const Json& c, const std::string& p) -> Status {
        Fields f(c, origin, p);
        DFX_RETURN_IF_ERROR(f.CheckObject());
        ReconnectEntry entry;
        DFX_RETURN_IF_ERROR(f.Int(keys::kAtNs.c_str(), &entry.at_ns));
        DFX_RETURN_IF_ERROR(f.Int(keys::kGapNs.c_str(), &entry.gap_ns));
        rank.reconnects.push_back(entry);
        return Status::Ok();
      }));
  return rank;
}

Result<DispatchEntry> DispatchFromJson(const Json& e, const std::string& origin,
                                       const std::string& path) {
  Fields d(e, origin, path);
  DFX_RETURN_IF_ERROR(d.CheckObject());
  DispatchEntry entry;
  DFX_RETURN_IF_ERROR(d.Int(keys::kRank.c_str(), &entry.rank));
  DFX_RETURN_IF_ERROR(d.Int(keys::kK.c_str(), &entry.k));
  DFX_RETURN_IF_ERROR(d.String(keys::kProgram.c_str(), &entry.program, false));
  DFX_RETURN_IF_ERROR(
      d.Enum(keys::kPass.c_str(), &entry.pass, config::ParsePassKind, kPassChoices));
  DFX_RETURN_IF_ERROR(d.Enum(keys::kStatus.c_str(), &entry.status, ParseDispatchState,
                             OneOf(kDispatchStateText).c_str()));
  DFX_RETURN_IF_ERROR(d.String(keys::kError.c_str(), &entry.error, false));
  DFX_RETURN_IF_ERROR(d.Int(keys::kStartNs.c_str(), &entry.start_ns, false));
  DFX_RETURN_IF_ERROR(d.Int(keys::kEndNs.c_str(), &entry.end_ns, false));
  DFX_RETURN_IF_ERROR(d.OptionalInt(keys::kAcceptedNs.c_str(), &entry.accepted_ns));
  DFX_RETURN_IF_ERROR(d.OptionalInt(keys::kStreamNs.c_str(), &entry.stream_ns));
  DFX_RETURN_IF_ERROR(d.OptionalInt(keys::kVerifiedNs.c_str(), &entry.verified_ns));
  DFX_RETURN_IF_ERROR(d.Int(keys::kTasksExecuted.c_str(), &entry.tasks_executed, false));
  DFX_RETURN_IF_ERROR(d.OptionalInt(keys::kMakespanNs.c_str(), &entry.makespan_ns));
  DFX_RETURN_IF_ERROR(d.OptionalInt(keys::kAgentWallNs.c_str(), &entry.agent_wall_ns));
  DFX_RETURN_IF_ERROR(d.OptionalInt(keys::kArtifactCount.c_str(), &entry.artifact_count));
  DFX_RETURN_IF_ERROR(
      d.Array(keys::kArtifacts.c_str(), [&](const Json& a, const std::string& p) -> Status {
        DFX_ASSIGN_OR_RETURN(ArtifactEntry art, ArtifactFromJson(a, origin, p));
        entry.artifacts.push_back(std::move(art));
        return Status::Ok();
      }));
  if (const Json* c = d.Find(keys::kCapture.c_str()); c != nullptr && !c->is_null()) {
    DFX_ASSIGN_OR_RETURN(entry.capture,
                         DispatchCaptureFromJson(*c, origin, d.PathOf(keys::kCapture.c_str())));
  }
  return entry;
}

// "wire" and "budget": optional objects (absent in older manifests).
Status WireAndBudgetFromJson(const Fields& f, const std::string& origin, RunManifest* m) {
  if (const Json* w = f.Find(keys::kWire.c_str()); w != nullptr && !w->is_null()) {
    Fields wf(*w, origin, std::string(JoinedText<"$.", keys::kWire>));
    DFX_RETURN_IF_ERROR(wf.CheckObject());
    WireEntry wire;
    DFX_RETURN_IF_ERROR(wf.String(keys::kCompression.c_str(), &wire.compression));
    DFX_RETURN_IF_ERROR(wf.String(keys::kChosen.c_str(), &wire.chosen, false));
    DFX_RETURN_IF_ERROR(wf.Int(keys::kArtifactBytes.c_str(), &wire.artifact_bytes, false));
    DFX_RETURN_IF_ERROR(wf.Int(keys::kWireBytes.c_str(), &wire.wire_bytes, false));
    m->wire = std::move(wire);
  }
  if (const Json* b = f.Find(keys::kBudget.c_str()); b != nullptr && !b->is_null()) {
    Fields bf(*b, origin, std::string(JoinedText<"$.", keys::kBudget>));
    DFX_RETURN_IF_ERROR(bf.CheckObject());
    BudgetEntry budget;
    DFX_RETURN_IF_ERROR(bf.Int(keys::kMaxRunBytes.c_str(), &budget.max_run_bytes));
    DFX_RETURN_IF_ERROR(bf.String(keys::kNote.c_str(), &budget.note, false));
    DFX_RETURN_IF_ERROR(
        bf.Array(keys::kOverBudget.c_str(), [&](const Json& e, const std::string& p) -> Status {
          if (!e.is_string()) return JsonError(origin, p, "an artifact path", e);
          budget.over_budget.push_back(e.get<std::string>());
          return Status::Ok();
        }));
    m->budget = std::move(budget);
  }
  return Status::Ok();
}

Result<GatherEntry> GatherFromJson(const Json& g, const std::string& origin) {
  const std::string path = std::string(JoinedText<"$.", keys::kGather>);
  Fields gf(g, origin, path);
  DFX_RETURN_IF_ERROR(gf.CheckObject());
  GatherEntry gather;
  DFX_RETURN_IF_ERROR(gf.String(keys::kGatherId.c_str(), &gather.gather_id, false));
  std::string status;
  DFX_RETURN_IF_ERROR(gf.String(keys::kStatus.c_str(), &status));
  if (status != keys::kOk && status != keys::kFailed) {
    return JsonError(origin, gf.PathOf(keys::kStatus.c_str()),
                     std::string(JoinedText<"\"", keys::kOk, "\" or \"", keys::kFailed, "\"">),
                     g[keys::kStatus.c_str()]);
  }
  gather.ok = status == keys::kOk;
  DFX_RETURN_IF_ERROR(
      gf.Array(keys::kRecovered.c_str(), [&](const Json& a, const std::string& p) -> Status {
        DFX_ASSIGN_OR_RETURN(ArtifactEntry art, ArtifactFromJson(a, origin, p));
        gather.recovered.push_back(std::move(art));
        return Status::Ok();
      }));
  DFX_RETURN_IF_ERROR(
      gf.Array(keys::kFailed.c_str(), [&](const Json& e, const std::string& p) -> Status {
        if (!e.is_string()) return JsonError(origin, p, "a string", e);
        gather.failed.push_back(e.get<std::string>());
        return Status::Ok();
      }));
  return gather;
}

// The session id: 1 to 16 hex digits.
Status SessionFromJson(const Fields& f, const Json& j, const std::string& origin, uint64_t* out) {
  std::string session;
  DFX_RETURN_IF_ERROR(f.String(keys::kSession.c_str(), &session));
  if (session.empty() || session.size() > 16 ||
      std::from_chars(session.data(), session.data() + session.size(), *out, 16).ptr !=
          session.data() + session.size()) {
    return JsonError(origin, f.PathOf(keys::kSession.c_str()), "the session id as hex digits",
                     j[keys::kSession.c_str()]);
  }
  return Status::Ok();
}

}  // namespace

Result<RunManifest> RunManifestFromJson(const Json& j, const std::string& origin) {
  Fields f(j, origin, "$");
  DFX_RETURN_IF_ERROR(f.CheckObject());
  RunManifest m;
  DFX_RETURN_IF_ERROR(SessionFromJson(f, j, origin, &m.session));
  DFX_RETURN_IF_ERROR(
      f.Enum(keys::kStatus.c_str(), &m.status, ParseRunState, OneOf(kRunStateText).c_str()));
  if (const Json* level = f.Find(keys::kLevel.c_str()); level != nullptr && !level->is_null()) {
    DFX_RETURN_IF_ERROR(
        f.Enum(keys::kLevel.c_str(), &m.level, ParseRunLevel, OneOf(kRunLevelText).c_str()));
  }
  DFX_RETURN_IF_ERROR(f.String(keys::kPlan.c_str(), &m.plan, false));
  DFX_RETURN_IF_ERROR(f.String(keys::kWorkDir.c_str(), &m.work_dir, false));
  DFX_RETURN_IF_ERROR(f.String(keys::kLauncher.c_str(), &m.launcher, false));
  DFX_RETURN_IF_ERROR(f.String(keys::kEndpoint.c_str(), &m.endpoint, false));
  DFX_RETURN_IF_ERROR(f.String(keys::kBind.c_str(), &m.bind, false));
  DFX_RETURN_IF_ERROR(f.OptionalInt(keys::kLaunchNs.c_str(), &m.launch_ns));
  if (const Json* rc = f.Find(keys::kRunConfig.c_str()); rc != nullptr && !rc->is_null()) {
    DFX_ASSIGN_OR_RETURN(
        config::ParsedRunConfig parsed,
        config::RunConfigFromJson(*rc, origin, f.PathOf(keys::kRunConfig.c_str())));
    m.run_config = parsed.config;
  }
  DFX_RETURN_IF_ERROR(
      f.Array(keys::kPasses.c_str(), [&](const Json& p, const std::string& path) -> Status {
        auto kind = p.is_string() ? config::ParsePassKind(p.get<std::string>()) : std::nullopt;
        if (!kind) return JsonError(origin, path, kPassChoices, p);
        m.passes.push_back(*kind);
        return Status::Ok();
      }));
  DFX_RETURN_IF_ERROR(
      f.Array(keys::kRanks.c_str(), [&](const Json& e, const std::string& path) -> Status {
        DFX_ASSIGN_OR_RETURN(RankEntry rank, RankFromJson(e, origin, path));
        m.ranks.push_back(std::move(rank));
        return Status::Ok();
      }));
  DFX_RETURN_IF_ERROR(
      f.Array(keys::kDispatches.c_str(), [&](const Json& e, const std::string& path) -> Status {
        DFX_ASSIGN_OR_RETURN(DispatchEntry entry, DispatchFromJson(e, origin, path));
        m.dispatches.push_back(std::move(entry));
        return Status::Ok();
      }));
  DFX_RETURN_IF_ERROR(f.Int(keys::kBytesGathered.c_str(), &m.bytes_gathered, false));
  DFX_RETURN_IF_ERROR(
      f.Array(keys::kMergedSwimlane.c_str(), [&](const Json& e, const std::string& path) -> Status {
        if (!e.is_string()) return JsonError(origin, path, "a path string", e);
        m.merged_swimlane.push_back(e.get<std::string>());
        return Status::Ok();
      }));
  if (const Json* g = f.Find(keys::kGather.c_str()); g != nullptr && !g->is_null()) {
    DFX_ASSIGN_OR_RETURN(GatherEntry gather, GatherFromJson(*g, origin));
    m.gather = std::move(gather);
  }
  DFX_RETURN_IF_ERROR(WireAndBudgetFromJson(f, origin, &m));
  if (const Json* c = f.Find(keys::kCaptureChanges.c_str()); c != nullptr && !c->is_null()) {
    DFX_ASSIGN_OR_RETURN(
        m.capture_changes,
        CaptureChangesFromJson(*c, origin, f.PathOf(keys::kCaptureChanges.c_str())));
  }
  return m;
}

Status WriteRunManifest(const fs::path& dir, const RunManifest& manifest) {
  return WriteFileAtomic(dir / kRunManifestFile, RunManifestText(manifest));
}

Result<RunManifest> ReadRunManifest(const fs::path& path) {
  std::error_code ec;
  const auto status = fs::symlink_status(path, ec);
  if (ec || !fs::exists(status)) return NotFound(path.string() + ": no run manifest");
  if (fs::is_symlink(status)) {
    return InvalidArgument(path.string() +
                           ": is a symbolic link; a run manifest is never followed "
                           "through a link");
  }
  const uint64_t size = fs::file_size(path, ec);
  if (!ec && size > kMaxRunManifestBytes) {
    return InvalidArgument(fmt::format("{}: {} bytes; a run manifest is at most {} bytes",
                                       path.string(), size, kMaxRunManifestBytes));
  }
  DFX_ASSIGN_OR_RETURN(Json j, ReadJsonFile(path, kMaxRunManifestBytes));
  return RunManifestFromJson(j, path.string());
}

}  // namespace dfx::collectors
