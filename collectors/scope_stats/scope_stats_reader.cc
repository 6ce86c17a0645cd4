#include "collectors/scope_stats/scope_stats_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "collectors/scope_stats/scope_stats_keys.h"
#include "common/json.h"

namespace dfx::collectors {
namespace {

namespace keys = scope_stats_keys;

const char* const kResources[] = {keys::kTaskWindow.c_str(), keys::kHeap.c_str(),
                                  keys::kDepPool.c_str(), keys::kTensormap.c_str()};

ScopeCapacity ToCapacity(const Json& meta, const std::string& key) {
  ScopeCapacity c;
  if (!meta.contains(key)) return c;
  const Json& v = meta[key];
  if (v.is_array()) {
    c.per_ring_form = true;
    for (const Json& e : v) c.per_ring.push_back(e.is_number() ? e.get<double>() : 0);
  } else if (v.is_number()) {
    c.all_rings = v.get<double>();
  }
  return c;
}

}  // namespace

Result<ScopeStatsFile> ReadScopeStats(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return NotFound("scope stats file not found: " + path.string());
  const std::string file = path.string();
  ScopeStatsFile out;
  std::string line;
  bool have_metadata = false;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("{}:{}", file, lineno);
    DFX_ASSIGN_OR_RETURN(Json j, ParseJson(line, where));
    if (!j.is_object()) return JsonError(file, fmt::format("line {}", lineno), "an object", j);
    try {
      if (!have_metadata) {
        if (!j.contains(keys::kVersion.c_str())) {
          return JsonError(
              file, "line 1",
              std::string(JoinedText<"the metadata object with \"", keys::kVersion, "\"">), j);
        }
        have_metadata = true;
        out.metadata.fatal = j.value(keys::kFatal.c_str(), false);
        out.metadata.dropped = j.value(keys::kDropped.c_str(), uint64_t{0});
        for (const char* r : kResources) {
          out.metadata.capacity[r] = ToCapacity(j, std::string(r) + keys::kMaxSuffix.c_str());
        }
        continue;
      }
      ScopeStatsSample s;
      s.site = j.value(keys::kSite.c_str(), std::string("?"));
      const std::string phase = j.value(keys::kPhase.c_str(), std::string());
      s.depth = j.value(keys::kDepth.c_str(), 0);
      s.ring = std::clamp(j.value(keys::kRing.c_str(), 0), 0, 3);
      s.task_window_start = j.value(JoinedKey<keys::kTaskWindow, keys::kStartSuffix>.c_str(), 0.0);
      s.task_window_end = j.value(JoinedKey<keys::kTaskWindow, keys::kEndSuffix>.c_str(), 0.0);
      s.heap_start = j.value(JoinedKey<keys::kHeap, keys::kStartSuffix>.c_str(), 0.0);
      s.heap_end = j.value(JoinedKey<keys::kHeap, keys::kEndSuffix>.c_str(), 0.0);
      s.dep_pool_start = j.value(JoinedKey<keys::kDepPool, keys::kStartSuffix>.c_str(), 0.0);
      s.dep_pool_end = j.value(JoinedKey<keys::kDepPool, keys::kEndSuffix>.c_str(), 0.0);
      s.tensormap = j.value(keys::kTensormap.c_str(), 0.0);
      if (phase != keys::kPhaseBegin && phase != keys::kPhaseEnd) {
        return JsonError(
            file, fmt::format("line {}: $.{}", lineno, keys::kPhase.view()),
            std::string(JoinedText<"\"", keys::kPhaseBegin, "\" or \"", keys::kPhaseEnd, "\"">),
            j.value(keys::kPhase.c_str(), Json()));
      }
      s.begin = phase == keys::kPhaseBegin;
      out.samples.push_back(std::move(s));
    } catch (const nlohmann::json::exception& e) {
      return InvalidArgument(fmt::format("{}: {}", where, e.what()));
    }
  }
  if (!have_metadata) return InvalidArgument(file + ": empty file (expected a metadata line)");
  return out;
}

}  // namespace dfx::collectors
