#include "coordinator/session_record.h"

#include <charconv>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/json.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;

Status WriteSessionRecord(const fs::path& dir, const SessionRecord& r) {
  Json j;
  j["session"] = Hex64(r.session);
  j["spool"] = r.spool.string();
  j["endpoint"] = r.endpoint;
  j["launcher"] = r.launcher;
  j["ranks"] = r.ranks;
  j["coordinator_pid"] = r.coordinator_pid;
  Json spools = Json::array();
  for (const auto& s : r.agent_spools) spools.push_back(s.string());
  j["agent_spools"] = std::move(spools);
  return WriteJsonFileAtomic(dir / collectors::kSessionFile, j, 2);
}

Result<SessionRecord> ReadSessionRecord(const fs::path& dir) {
  const fs::path path = dir / collectors::kSessionFile;
  auto j = ReadJsonFile(path);
  if (!j.ok()) return j.status();
  const std::string origin = path.string();
  if (!j->is_object()) return JsonError(origin, "$", "the session record object", *j);
  SessionRecord r;
  if (!j->contains("session") || !(*j)["session"].is_string()) {
    return JsonError(origin, "$.session", "the session id as hex", *j);
  }
  const std::string hex = (*j)["session"].get<std::string>();
  if (hex.empty() || hex.size() > 16 ||
      std::from_chars(hex.data(), hex.data() + hex.size(), r.session, 16).ptr !=
          hex.data() + hex.size() ||
      r.session == 0) {
    return JsonError(origin, "$.session", "a non-zero hex id", (*j)["session"]);
  }
  if (j->contains("spool") && (*j)["spool"].is_string()) r.spool = (*j)["spool"].get<std::string>();
  if (j->contains("endpoint") && (*j)["endpoint"].is_string()) {
    r.endpoint = (*j)["endpoint"].get<std::string>();
  }
  if (j->contains("launcher") && (*j)["launcher"].is_string()) {
    r.launcher = (*j)["launcher"].get<std::string>();
  }
  if (j->contains("ranks")) {
    if (!(*j)["ranks"].is_number_integer() || (*j)["ranks"].get<int64_t>() < 1 ||
        (*j)["ranks"].get<int64_t>() > (1 << 20)) {
      return JsonError(origin, "$.ranks", "the run's rank count (>= 1)", (*j)["ranks"]);
    }
    r.ranks = (*j)["ranks"].get<int>();
  }
  if (j->contains("coordinator_pid") && (*j)["coordinator_pid"].is_number_integer()) {
    r.coordinator_pid = (*j)["coordinator_pid"].get<int64_t>();
  }
  if (j->contains("agent_spools") && (*j)["agent_spools"].is_array()) {
    for (const auto& s : (*j)["agent_spools"]) {
      if (s.is_string()) r.agent_spools.emplace_back(s.get<std::string>());
    }
  }
  return r;
}

}  // namespace dfx::coordinator
