// Streaming reader: nlohmann's parser callback sees every value as it closes;
// rows of the big arrays are converted and then discarded (callback returns
// false), so the tree never holds them.
#include "collectors/swimlane/swimlane_reader.h"

#include <algorithm>
#include <fstream>
#include <unordered_map>

namespace dfx::collectors {

Result<SwimlaneRecords> ReadSwimlaneRecords(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path.string() + ": cannot open swimlane records");
  SwimlaneRecords out;
  std::string section;   // current top-level key
  int inner_index = -1;  // index of the inner array (phases)
  std::string row_error;

  auto cb = [&](int depth, Json::parse_event_t event, Json& parsed) -> bool {
    using E = Json::parse_event_t;
    if (event == E::key && depth == 1) {
      section = parsed.get<std::string>();
      out.top_level_keys.push_back(section);
      inner_index = -1;
      return true;
    }
    const bool phases =
        section == "aicpu_scheduler_phases" || section == "aicpu_orchestrator_phases";
    if (phases && event == E::array_start && depth == 2) {
      ++inner_index;
      auto& v =
          section == "aicpu_scheduler_phases" ? out.scheduler_phases : out.orchestrator_phases;
      v.emplace_back();
      return true;
    }
    if (phases && event == E::object_end && depth == 3) {
      auto& v =
          section == "aicpu_scheduler_phases" ? out.scheduler_phases : out.orchestrator_phases;
      v.back().push_back(std::move(parsed));
      return false;
    }
    if (event == E::array_end && depth == 2 &&
        (section == "aicore_tasks" || section == "aicpu_tasks")) {
      if (!parsed.is_array()) return false;
      for (const auto& e : parsed) {
        if (!e.is_number_unsigned() && !e.is_number_integer()) {
          row_error = section + " row has a non-integer column: " + parsed.dump();
          return false;
        }
      }
      if (section == "aicore_tasks") {
        if (parsed.size() != 6 && parsed.size() != 5) {
          row_error = "aicore_tasks row must have 6 (or legacy 5) columns: " + parsed.dump();
          return false;
        }
        SwimlaneAicoreRow r;
        r.core_id = parsed[0].get<uint32_t>();
        r.task_token_raw = parsed[1].get<uint64_t>();
        r.reg_task_id = parsed[2].get<uint32_t>();
        r.start_cycles = parsed[3].get<uint64_t>();
        r.end_cycles = parsed[4].get<uint64_t>();
        if (parsed.size() == 6) r.receive_to_start_cycles = parsed[5].get<uint32_t>();
        out.aicore_tasks.push_back(r);
      } else {
        if (parsed.size() != 4) {
          row_error = "aicpu_tasks row must have 4 columns: " + parsed.dump();
          return false;
        }
        out.aicpu_tasks.push_back({parsed[0].get<uint32_t>(), parsed[1].get<uint32_t>(),
                                   parsed[2].get<uint64_t>(), parsed[3].get<uint64_t>()});
      }
      return false;
    }
    return true;
  };

  Json root;
  try {
    root = Json::parse(in, cb);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(path.string() + ": not valid JSON: " + e.what());
  }
  if (!row_error.empty()) return InvalidArgument(path.string() + ": " + row_error);
  if (!root.is_object()) return InvalidArgument(path.string() + ": top level is not an object");
  const Json& level = root.contains("chip_swimlane_level") ? root["chip_swimlane_level"] : Json();
  if (!level.is_number_integer() || level.get<int>() < 1 || level.get<int>() > 4) {
    return InvalidArgument(path.string() + ": Unsupported chip_swimlane_level: " + level.dump() +
                           " (expected 1, 2, 3, or 4)");
  }
  out.level = level.get<int>();
  out.metadata = root.value("metadata", Json::object());
  uint64_t freq = out.metadata.value("clock_freq_hz", uint64_t{0});
  if (freq == 0) {
    return InvalidArgument(path.string() +
                           ": metadata missing/zero clock_freq_hz: " + std::to_string(freq));
  }
  out.has_scheduler_phases = root.contains("aicpu_scheduler_phases");
  out.has_orchestrator_phases = root.contains("aicpu_orchestrator_phases");
  return out;
}

SwimlaneJoin JoinSwimlaneTasks(const SwimlaneRecords& records) {
  SwimlaneJoin join;
  if (records.level == 1) {
    for (const auto& a : records.aicore_tasks) {
      join.tasks.push_back({a.task_token_raw, a.core_id, a.reg_task_id, a.start_cycles,
                            a.end_cycles, 0, 0, a.receive_to_start_cycles});
    }
  } else {
    std::unordered_map<uint64_t, size_t> by_key;
    for (size_t i = 0; i < records.aicore_tasks.size(); ++i) {
      const auto& a = records.aicore_tasks[i];
      by_key[(uint64_t{a.core_id} << 32) | a.reg_task_id] = i;
    }
    for (const auto& p : records.aicpu_tasks) {
      auto it = by_key.find((uint64_t{p.core_id} << 32) | p.reg_task_id);
      if (it == by_key.end()) {
        ++join.unmatched_aicpu;
        continue;
      }
      const auto& a = records.aicore_tasks[it->second];
      join.tasks.push_back({a.task_token_raw, a.core_id, a.reg_task_id, a.start_cycles,
                            a.end_cycles, p.dispatch_cycles, p.finish_cycles,
                            a.receive_to_start_cycles});
    }
  }
  std::stable_sort(
      join.tasks.begin(), join.tasks.end(),
      [](const SwimlaneTask& x, const SwimlaneTask& y) { return x.task_id < y.task_id; });
  return join;
}

}  // namespace dfx::collectors
