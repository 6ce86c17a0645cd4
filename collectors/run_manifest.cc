#include "collectors/run_manifest.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <system_error>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"

namespace dfx::collectors {

namespace fs = std::filesystem;

namespace {

template <typename E, size_t N>
std::optional<E> ParseName(std::string_view name, const std::array<E, N>& all,
                           const char* (*to_name)(E)) {
  for (E e : all) {
    if (name == to_name(e)) return e;
  }
  return std::nullopt;
}

constexpr std::array kRunStates = {RunState::kStarting, RunState::kRunning, RunState::kOk,
                                   RunState::kFailed, RunState::kInterrupted};
constexpr std::array kRankStates = {RankState::kWaiting, RankState::kReady, RankState::kOk,
                                    RankState::kFailed, RankState::kInterrupted};
constexpr std::array kDispatchStates = {
    DispatchState::kPending, DispatchState::kSent,   DispatchState::kRunning,    DispatchState::kOk,
    DispatchState::kFailed,  DispatchState::kNotRun, DispatchState::kInterrupted};
constexpr std::array kArtifactStates = {ArtifactState::kStreaming, ArtifactState::kOk,
                                        ArtifactState::kFailed, ArtifactState::kRecovered};

Json NullOr(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }
template <typename T>
Json NullOr(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json ArtifactToJson(const ArtifactEntry& a) {
  Json j;
  j["path"] = a.path;
  j["size"] = a.size;
  j["checksum"] = a.checksum ? Json("xxh64:" + Hex64(*a.checksum)) : Json(nullptr);
  j["status"] = ArtifactStateName(a.status);
  j["error"] = NullOr(a.error);
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
  DFX_RETURN_IF_ERROR(f.String("path", &a.path));
  DFX_RETURN_IF_ERROR(f.Int("size", &a.size, /*required=*/false));
  DFX_RETURN_IF_ERROR(f.Enum("status", &a.status, ParseArtifactState,
                             "one of \"streaming\", \"ok\", \"failed\", \"recovered\""));
  DFX_RETURN_IF_ERROR(f.String("error", &a.error, /*required=*/false));
  if (const Json* c = f.Find("checksum"); c != nullptr && !c->is_null()) {
    const std::string expected = "\"xxh64:\" and 16 hex digits";
    if (!c->is_string()) return JsonError(origin, f.PathOf("checksum"), expected, *c);
    const std::string s = c->get<std::string>();
    uint64_t v = 0;
    if (s.size() != 22 || s.rfind("xxh64:", 0) != 0 ||
        std::from_chars(s.data() + 6, s.data() + s.size(), v, 16).ptr != s.data() + s.size()) {
      return JsonError(origin, f.PathOf("checksum"), expected, *c);
    }
    a.checksum = v;
  }
  return a;
}

}  // namespace

const char* RunStateName(RunState s) {
  switch (s) {
    case RunState::kStarting:
      return "starting";
    case RunState::kRunning:
      return "running";
    case RunState::kOk:
      return "ok";
    case RunState::kFailed:
      return "failed";
    case RunState::kInterrupted:
      return "interrupted";
  }
  return "?";
}

const char* RankStateName(RankState s) {
  switch (s) {
    case RankState::kWaiting:
      return "waiting";
    case RankState::kReady:
      return "ready";
    case RankState::kOk:
      return "ok";
    case RankState::kFailed:
      return "failed";
    case RankState::kInterrupted:
      return "interrupted";
  }
  return "?";
}

const char* DispatchStateName(DispatchState s) {
  switch (s) {
    case DispatchState::kPending:
      return "pending";
    case DispatchState::kSent:
      return "sent";
    case DispatchState::kRunning:
      return "running";
    case DispatchState::kOk:
      return "ok";
    case DispatchState::kFailed:
      return "failed";
    case DispatchState::kNotRun:
      return "not_run";
    case DispatchState::kInterrupted:
      return "interrupted";
  }
  return "?";
}

const char* ArtifactStateName(ArtifactState s) {
  switch (s) {
    case ArtifactState::kStreaming:
      return "streaming";
    case ArtifactState::kOk:
      return "ok";
    case ArtifactState::kFailed:
      return "failed";
    case ArtifactState::kRecovered:
      return "recovered";
  }
  return "?";
}

std::optional<RunState> ParseRunState(std::string_view n) {
  return ParseName(n, kRunStates, RunStateName);
}
std::optional<RankState> ParseRankState(std::string_view n) {
  return ParseName(n, kRankStates, RankStateName);
}
std::optional<DispatchState> ParseDispatchState(std::string_view n) {
  return ParseName(n, kDispatchStates, DispatchStateName);
}
std::optional<ArtifactState> ParseArtifactState(std::string_view n) {
  return ParseName(n, kArtifactStates, ArtifactStateName);
}

namespace {

Json DispatchToJson(const DispatchEntry& d) {
  Json e;
  e["rank"] = d.rank;
  e["k"] = d.k;
  e["dir"] = DispatchDirPath(d.rank, d.k);
  e["program"] = d.program;
  e["pass"] = config::PassKindName(d.pass);
  e["status"] = DispatchStateName(d.status);
  e["error"] = NullOr(d.error);
  e["start_ns"] = d.start_ns;
  e["end_ns"] = d.end_ns;
  e["accepted_ns"] = NullOr(d.accepted_ns);
  e["stream_ns"] = NullOr(d.stream_ns);
  e["verified_ns"] = NullOr(d.verified_ns);
  e["tasks_executed"] = d.tasks_executed;
  e["makespan_ns"] = NullOr(d.makespan_ns);
  e["agent_wall_ns"] = NullOr(d.agent_wall_ns);
  e["artifact_count"] = NullOr(d.artifact_count);
  Json arts = Json::array();
  for (const ArtifactEntry& a : d.artifacts) arts.push_back(ArtifactToJson(a));
  e["artifacts"] = std::move(arts);
  return e;
}

// Everything but the dispatches' rows (an empty array in their place).
Json RunManifestHead(const RunManifest& m);

}  // namespace

Json RunManifestToJson(const RunManifest& m) {
  Json j = RunManifestHead(m);
  Json& dispatches = j["dispatches"];
  for (const DispatchEntry& d : m.dispatches) dispatches.push_back(DispatchToJson(d));
  return j;
}

std::string RunManifestText(const RunManifest& m) {
  const std::string head = RunManifestHead(m).dump(2);
  if (m.dispatches.empty()) return head + "\n";
  // The rows as dump(2) writes them two levels into the document, made one
  // at a time, not the whole document as one Json: at 64k dispatches that
  // was most of the coordinator's peak memory (389 MB, now 114 MB) and took
  // three times the CPU (a large tree built, then freed).
  constexpr std::string_view kEmpty = "\n  \"dispatches\": []";
  const size_t at = head.find(kEmpty);
  DFX_CHECK(at != std::string::npos);
  std::string text;
  text.reserve(head.size() + m.dispatches.size() * 512);
  text.append(head, 0, at);
  text += "\n  \"dispatches\": [";
  for (size_t i = 0; i < m.dispatches.size(); ++i) {
    const std::string row = DispatchToJson(m.dispatches[i]).dump(2);
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
  j["session"] = Hex64(m.session);
  j["status"] = RunStateName(m.status);
  j["plan"] = m.plan;
  j["work_dir"] = m.work_dir;
  j["launcher"] = m.launcher;
  j["endpoint"] = m.endpoint;
  j["bind"] = m.bind;
  j["launch_ns"] = NullOr(m.launch_ns);
  j["run_config"] = config::RunConfigToJson(m.run_config);
  Json passes = Json::array();
  for (config::PassKind p : m.passes) passes.push_back(config::PassKindName(p));
  j["passes"] = std::move(passes);
  Json ranks = Json::array();
  for (const RankEntry& r : m.ranks) {
    Json e;
    e["rank"] = r.rank;
    e["host"] = NullOr(r.host);
    e["address"] = NullOr(r.address);
    e["pid"] = NullOr(r.pid);
    e["status"] = RankStateName(r.status);
    e["error"] = NullOr(r.error);
    e["clock_offset_ns"] = NullOr(r.clock_offset_ns);
    e["clock_offset_rtt_ns"] = NullOr(r.clock_offset_rtt_ns);
    e["dispatches"] = r.dispatches;
    e["hello_ns"] = NullOr(r.hello_ns);
    e["ready_ns"] = NullOr(r.ready_ns);
    ranks.push_back(std::move(e));
  }
  j["ranks"] = std::move(ranks);
  j["dispatches"] = Json::array();
  j["bytes_gathered"] = m.bytes_gathered;
  j["merged_swimlane"] = m.merged_swimlane;
  if (m.gather) {
    Json g;
    g["gather_id"] = m.gather->gather_id;
    g["status"] = m.gather->ok ? "ok" : "failed";
    Json recovered = Json::array();
    for (const ArtifactEntry& a : m.gather->recovered) recovered.push_back(ArtifactToJson(a));
    g["recovered"] = std::move(recovered);
    g["failed"] = m.gather->failed;
    j["gather"] = std::move(g);
  }
  return j;
}

}  // namespace

Result<RunManifest> RunManifestFromJson(const Json& j, const std::string& origin) {
  Fields f(j, origin, "$");
  DFX_RETURN_IF_ERROR(f.CheckObject());
  RunManifest m;
  std::string session;
  DFX_RETURN_IF_ERROR(f.String("session", &session));
  if (session.empty() || session.size() > 16 ||
      std::from_chars(session.data(), session.data() + session.size(), m.session, 16).ptr !=
          session.data() + session.size()) {
    return JsonError(origin, "$.session", "the session id as hex digits", j["session"]);
  }
  DFX_RETURN_IF_ERROR(f.Enum("status", &m.status, ParseRunState,
                             "one of \"starting\", \"running\", \"ok\", \"failed\", "
                             "\"interrupted\""));
  DFX_RETURN_IF_ERROR(f.String("plan", &m.plan, false));
  DFX_RETURN_IF_ERROR(f.String("work_dir", &m.work_dir, false));
  DFX_RETURN_IF_ERROR(f.String("launcher", &m.launcher, false));
  DFX_RETURN_IF_ERROR(f.String("endpoint", &m.endpoint, false));
  DFX_RETURN_IF_ERROR(f.String("bind", &m.bind, false));
  DFX_RETURN_IF_ERROR(f.OptionalInt("launch_ns", &m.launch_ns));
  if (const Json* rc = f.Find("run_config"); rc != nullptr && !rc->is_null()) {
    DFX_ASSIGN_OR_RETURN(config::ParsedRunConfig parsed,
                         config::RunConfigFromJson(*rc, origin, "$.run_config"));
    m.run_config = parsed.config;
  }
  DFX_RETURN_IF_ERROR(f.Array("passes", [&](const Json& p, const std::string& path) -> Status {
    auto kind = p.is_string() ? config::ParsePassKind(p.get<std::string>()) : std::nullopt;
    if (!kind) return JsonError(origin, path, "one of \"single\", \"graph\", \"timing\"", p);
    m.passes.push_back(*kind);
    return Status::Ok();
  }));
  DFX_RETURN_IF_ERROR(f.Array("ranks", [&](const Json& e, const std::string& path) -> Status {
    Fields r(e, origin, path);
    DFX_RETURN_IF_ERROR(r.CheckObject());
    RankEntry rank;
    DFX_RETURN_IF_ERROR(r.Int("rank", &rank.rank));
    DFX_RETURN_IF_ERROR(r.OptionalString("host", &rank.host));
    DFX_RETURN_IF_ERROR(r.OptionalString("address", &rank.address));
    DFX_RETURN_IF_ERROR(r.OptionalInt("pid", &rank.pid));
    DFX_RETURN_IF_ERROR(r.Enum("status", &rank.status, ParseRankState,
                               "one of \"waiting\", \"ready\", \"ok\", \"failed\", "
                               "\"interrupted\""));
    DFX_RETURN_IF_ERROR(r.String("error", &rank.error, false));
    DFX_RETURN_IF_ERROR(r.OptionalInt("clock_offset_ns", &rank.clock_offset_ns));
    DFX_RETURN_IF_ERROR(r.OptionalInt("clock_offset_rtt_ns", &rank.clock_offset_rtt_ns));
    DFX_RETURN_IF_ERROR(r.Int("dispatches", &rank.dispatches, false));
    DFX_RETURN_IF_ERROR(r.OptionalInt("hello_ns", &rank.hello_ns));
    DFX_RETURN_IF_ERROR(r.OptionalInt("ready_ns", &rank.ready_ns));
    m.ranks.push_back(std::move(rank));
    return Status::Ok();
  }));
  DFX_RETURN_IF_ERROR(f.Array("dispatches", [&](const Json& e, const std::string& path) -> Status {
    Fields d(e, origin, path);
    DFX_RETURN_IF_ERROR(d.CheckObject());
    DispatchEntry entry;
    DFX_RETURN_IF_ERROR(d.Int("rank", &entry.rank));
    DFX_RETURN_IF_ERROR(d.Int("k", &entry.k));
    DFX_RETURN_IF_ERROR(d.String("program", &entry.program, false));
    DFX_RETURN_IF_ERROR(d.Enum("pass", &entry.pass, config::ParsePassKind,
                               "one of \"single\", \"graph\", \"timing\""));
    DFX_RETURN_IF_ERROR(d.Enum("status", &entry.status, ParseDispatchState,
                               "one of \"pending\", \"sent\", \"running\", \"ok\", \"failed\", "
                               "\"not_run\", \"interrupted\""));
    DFX_RETURN_IF_ERROR(d.String("error", &entry.error, false));
    DFX_RETURN_IF_ERROR(d.Int("start_ns", &entry.start_ns, false));
    DFX_RETURN_IF_ERROR(d.Int("end_ns", &entry.end_ns, false));
    DFX_RETURN_IF_ERROR(d.OptionalInt("accepted_ns", &entry.accepted_ns));
    DFX_RETURN_IF_ERROR(d.OptionalInt("stream_ns", &entry.stream_ns));
    DFX_RETURN_IF_ERROR(d.OptionalInt("verified_ns", &entry.verified_ns));
    DFX_RETURN_IF_ERROR(d.Int("tasks_executed", &entry.tasks_executed, false));
    DFX_RETURN_IF_ERROR(d.OptionalInt("makespan_ns", &entry.makespan_ns));
    DFX_RETURN_IF_ERROR(d.OptionalInt("agent_wall_ns", &entry.agent_wall_ns));
    DFX_RETURN_IF_ERROR(d.OptionalInt("artifact_count", &entry.artifact_count));
    DFX_RETURN_IF_ERROR(d.Array("artifacts", [&](const Json& a, const std::string& p) -> Status {
      DFX_ASSIGN_OR_RETURN(ArtifactEntry art, ArtifactFromJson(a, origin, p));
      entry.artifacts.push_back(std::move(art));
      return Status::Ok();
    }));
    m.dispatches.push_back(std::move(entry));
    return Status::Ok();
  }));
  DFX_RETURN_IF_ERROR(f.Int("bytes_gathered", &m.bytes_gathered, false));
  DFX_RETURN_IF_ERROR(
      f.Array("merged_swimlane", [&](const Json& e, const std::string& path) -> Status {
        if (!e.is_string()) return JsonError(origin, path, "a path string", e);
        m.merged_swimlane.push_back(e.get<std::string>());
        return Status::Ok();
      }));
  if (const Json* g = f.Find("gather"); g != nullptr && !g->is_null()) {
    Fields gf(*g, origin, "$.gather");
    DFX_RETURN_IF_ERROR(gf.CheckObject());
    GatherEntry gather;
    DFX_RETURN_IF_ERROR(gf.String("gather_id", &gather.gather_id, false));
    std::string status;
    DFX_RETURN_IF_ERROR(gf.String("status", &status));
    if (status != "ok" && status != "failed") {
      return JsonError(origin, "$.gather.status", "\"ok\" or \"failed\"", (*g)["status"]);
    }
    gather.ok = status == "ok";
    DFX_RETURN_IF_ERROR(gf.Array("recovered", [&](const Json& a, const std::string& p) -> Status {
      DFX_ASSIGN_OR_RETURN(ArtifactEntry art, ArtifactFromJson(a, origin, p));
      gather.recovered.push_back(std::move(art));
      return Status::Ok();
    }));
    DFX_RETURN_IF_ERROR(gf.Array("failed", [&](const Json& e, const std::string& p) -> Status {
      if (!e.is_string()) return JsonError(origin, p, "a string", e);
      gather.failed.push_back(e.get<std::string>());
      return Status::Ok();
    }));
    m.gather = std::move(gather);
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
