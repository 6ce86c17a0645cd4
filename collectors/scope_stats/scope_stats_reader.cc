#include "collectors/scope_stats/scope_stats_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "common/json.h"

namespace dfx::collectors {
namespace {

const char* const kResources[] = {"task_window", "heap", "dep_pool", "tensormap"};

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
        if (!j.contains("version")) {
          return JsonError(file, "line 1", "the metadata object with \"version\"", j);
        }
        have_metadata = true;
        out.metadata.fatal = j.value("fatal", false);
        out.metadata.dropped = j.value("dropped", uint64_t{0});
        for (const char* r : kResources) {
          out.metadata.capacity[r] = ToCapacity(j, std::string(r) + "_max");
        }
        continue;
      }
      ScopeStatsSample s;
      s.site = j.value("site", std::string("?"));
      const std::string phase = j.value("phase", std::string());
      s.depth = j.value("depth", 0);
      s.ring = std::clamp(j.value("ring", 0), 0, 3);
      s.task_window_start = j.value("task_window_start", 0.0);
      s.task_window_end = j.value("task_window_end", 0.0);
      s.heap_start = j.value("heap_start", 0.0);
      s.heap_end = j.value("heap_end", 0.0);
      s.dep_pool_start = j.value("dep_pool_start", 0.0);
      s.dep_pool_end = j.value("dep_pool_end", 0.0);
      s.tensormap = j.value("tensormap", 0.0);
      if (phase != "begin" && phase != "end") {
        return JsonError(file, fmt::format("line {}: $.phase", lineno), "\"begin\" or \"end\"",
                         j.value("phase", Json()));
      }
      s.begin = phase == "begin";
      out.samples.push_back(std::move(s));
    } catch (const nlohmann::json::exception& e) {
      return InvalidArgument(fmt::format("{}: {}", where, e.what()));
    }
  }
  if (!have_metadata) return InvalidArgument(file + ": empty file (expected a metadata line)");
  return out;
}

}  // namespace dfx::collectors
