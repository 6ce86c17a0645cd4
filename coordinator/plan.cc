#include "coordinator/plan.h"

#include <fmt/format.h>

#include <set>

#include "common/file_util.h"
#include "common/input_file.h"
#include "config/run_config.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;

namespace {

Result<PlanProgram> LoadProgramFile(const std::string& name, const fs::path& path,
                                    const std::string& plan_file, const std::string& json_path) {
  auto read = ReadInputFile(path, kMaxProgramFileBytes);
  if (!read.ok()) {
    // A program named by the plan: the error says where the plan names it.
    if (plan_file == path.string()) return read.status();
    return Status(read.status().code(), fmt::format("{}: at {}: program file {}", plan_file,
                                                    json_path, read.status().message()));
  }
  return ProgramFromText(name, path, std::move(*read));
}

}  // namespace

Result<PlanProgram> ProgramFromText(const std::string& name, const fs::path& path,
                                    std::string text) {
  // Checked without a JSON document when it is a well-formed object (a
  // 100k-task program: 11 MB of text, ~130 MB as a document); the document
  // is built only to say what is wrong.
  DFX_RETURN_IF_ERROR(CheckJsonDepth(text, path.string()));
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{' || !Json::accept(text)) {
    auto json = ParseJson(text, path.string());
    if (!json.ok()) return json.status();
    if (!json->is_object()) {
      return JsonError(path.string(), "$", "a program object", *json);
    }
  }
  return PlanProgram{name, path, std::move(text)};
}

bool IsPlan(const Json& json) { return json.is_object() && json.contains("steps"); }

Result<Plan> LoadPlan(const fs::path& path) {
  DFX_ASSIGN_OR_RETURN(Json json, ReadJsonFile(path, kMaxProgramFileBytes));
  return ParsePlan(json, path);
}

Result<Plan> ParsePlan(const Json& json, const fs::path& origin) {
  const std::string file = origin.string();
  if (!json.is_object()) return JsonError(file, "$", "a plan object", json);
  Plan plan;
  plan.origin = origin;
  for (auto it = json.begin(); it != json.end(); ++it) {
    if (it.key() != "name" && it.key() != "programs" && it.key() != "steps" &&
        it.key() != "description") {
      return InvalidArgument(fmt::format(
          "{}: at $.{}: unknown key; a plan has \"name\", \"programs\", \"steps\" (and an "
          "optional \"description\")",
          file, it.key()));
    }
  }
  if (json.contains("name")) {
    if (!json["name"].is_string()) return JsonError(file, "$.name", "a string", json["name"]);
    plan.name = json["name"].get<std::string>();
  } else {
    plan.name = origin.stem().string();
  }
  if (!json.contains("programs") || !json["programs"].is_object() || json["programs"].empty()) {
    return JsonError(file, "$.programs",
                     "an object mapping program names to program files, e.g. "
                     "{\"attn\": \"attention_decode.json\"}",
                     json.contains("programs") ? json["programs"] : Json());
  }
  const fs::path base = origin.parent_path();
  for (auto it = json["programs"].begin(); it != json["programs"].end(); ++it) {
    const std::string jp = "$.programs." + it.key();
    if (!it.value().is_string() || it.value().get<std::string>().empty()) {
      return JsonError(file, jp, "a program file path (relative to the plan)", it.value());
    }
    fs::path p = it.value().get<std::string>();
    if (p.is_relative()) p = base / p;
    DFX_ASSIGN_OR_RETURN(PlanProgram prog,
                         LoadProgramFile(it.key(), p.lexically_normal(), file, jp));
    plan.programs.emplace(it.key(), std::move(prog));
  }
  if (!json.contains("steps") || !json["steps"].is_array() || json["steps"].empty()) {
    return JsonError(file, "$.steps", "a non-empty array of steps",
                     json.contains("steps") ? json["steps"] : Json());
  }
  const Json& steps = json["steps"];
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string jp = fmt::format("$.steps[{}]", i);
    const Json& s = steps[i];
    if (!s.is_object()) return JsonError(file, jp, "a step object", s);
    PlanStep step;
    step.json_path = jp;
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (it.key() != "program" && it.key() != "rank" && it.key() != "ranks" &&
          it.key() != "run_config") {
        return InvalidArgument(fmt::format(
            "{}: at {}.{}: unknown key; a step has \"program\" and optionally \"rank\" or "
            "\"ranks\" and \"run_config\"",
            file, jp, it.key()));
      }
    }
    if (s.contains("run_config")) {
      // Checked as any run config is (the same keys, values and messages).
      const Json& rc = s["run_config"];
      if (!rc.is_object()) {
        return JsonError(file, jp + ".run_config",
                         "an object of run-config keys (docs/run-config.md §2.1), e.g. "
                         "{\"enable_pmu\": 2}",
                         rc);
      }
      DFX_RETURN_IF_ERROR(config::RunConfigFromJson(rc, file, jp + ".run_config").status());
      step.run_config = rc;
    }
    if (!s.contains("program") || !s["program"].is_string()) {
      return JsonError(file, jp + ".program", "the name of a program of $.programs",
                       s.contains("program") ? s["program"] : Json());
    }
    step.program = s["program"].get<std::string>();
    if (!plan.programs.count(step.program)) {
      std::string names;
      for (const auto& [n, _] : plan.programs) names += (names.empty() ? "" : ", ") + n;
      return JsonError(file, jp + ".program", "one of the programs (" + names + ")", s["program"]);
    }
    if (s.contains("rank") && s.contains("ranks")) {
      return InvalidArgument(
          fmt::format("{}: at {}: give \"rank\" or \"ranks\", not both", file, jp));
    }
    auto rank_value = [&](const Json& v, const std::string& p) -> Result<int> {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (1 << 20)) {
        return JsonError(file, p, "a rank number >= 0", v);
      }
      return static_cast<int>(v.get<int64_t>());
    };
    if (s.contains("rank")) {
      DFX_ASSIGN_OR_RETURN(int r, rank_value(s["rank"], jp + ".rank"));
      step.target = PlanStep::Target::kRank;
      step.ranks = {r};
    } else if (s.contains("ranks")) {
      const Json& rs = s["ranks"];
      if (rs.is_string() && rs.get<std::string>() == "all") {
        step.target = PlanStep::Target::kAll;
      } else if (rs.is_array() && !rs.empty()) {
        step.target = PlanStep::Target::kRanks;
        std::set<int> seen;
        for (size_t j = 0; j < rs.size(); ++j) {
          DFX_ASSIGN_OR_RETURN(int r, rank_value(rs[j], fmt::format("{}.ranks[{}]", jp, j)));
          if (!seen.insert(r).second) {
            return JsonError(file, fmt::format("{}.ranks[{}]", jp, j), "a rank not listed twice",
                             rs[j]);
          }
          step.ranks.push_back(r);
        }
      } else {
        return JsonError(file, jp + ".ranks", "a non-empty array of ranks or \"all\"", rs);
      }
    }
    plan.steps.push_back(std::move(step));
  }
  return plan;
}

Result<Plan> PlanForProgram(const fs::path& program_path) {
  DFX_ASSIGN_OR_RETURN(std::string text, ReadInputFile(program_path, kMaxProgramFileBytes));
  return PlanForProgram(program_path, std::move(text));
}

Result<Plan> PlanForProgram(const fs::path& program_path, std::string text) {
  Plan plan;
  plan.origin = program_path;
  plan.name = program_path.stem().string();
  DFX_ASSIGN_OR_RETURN(PlanProgram prog, ProgramFromText(plan.name, program_path, std::move(text)));
  plan.programs.emplace(plan.name, std::move(prog));
  // Built in place: assigning "$" to a member trips GCC 12's -Wrestrict
  // false positive (GCC PR 105329).
  plan.steps.push_back(PlanStep{plan.name, PlanStep::Target::kAll, {}, "$"});
  return plan;
}

Result<std::vector<PlannedDispatch>> ExpandPlan(const Plan& plan, int ranks) {
  std::vector<PlannedDispatch> out;
  std::vector<uint32_t> next_k(static_cast<size_t>(ranks), 0);
  int round_robin = 0;  // reset on every expansion, i.e. every run
  size_t step_index = 0;
  auto add = [&](int rank, const std::string& program) {
    out.push_back(PlannedDispatch{rank, next_k[static_cast<size_t>(rank)]++, program, step_index});
  };
  for (; step_index < plan.steps.size(); ++step_index) {
    const PlanStep& step = plan.steps[step_index];
    switch (step.target) {
      case PlanStep::Target::kRank:
      case PlanStep::Target::kRanks:
        for (int r : step.ranks) {
          if (r >= ranks) {
            return InvalidArgument(fmt::format(
                "{}: at {}: rank {} does not exist in a run of --ranks {} (ranks are 0..{})",
                plan.origin.string(), step.json_path, r, ranks, ranks - 1));
          }
          add(r, step.program);
        }
        break;
      case PlanStep::Target::kAll:
        for (int r = 0; r < ranks; ++r) add(r, step.program);
        break;
      case PlanStep::Target::kRoundRobin:
        add(round_robin, step.program);
        round_robin = (round_robin + 1) % ranks;
        break;
    }
  }
  return out;
}

}  // namespace dfx::coordinator
