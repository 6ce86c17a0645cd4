#include "coordinator/run_estimate.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <system_error>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/input_file.h"
#include "common/json.h"
#include "common/subprocess.h"
#include "config/pass_plan.h"
#include "coordinator/post_run.h"
#include "coordinator/program_check.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;

namespace {

using Bytes = collectors::DispatchBytes;

// The collectors' columns, in docs/formats.md §0.1 order.
constexpr std::pair<const char*, uint64_t Bytes::*> kColumns[] = {
    {"chip_swimlane", &Bytes::chip_swimlane}, {"deps", &Bytes::deps},
    {"args_dump", &Bytes::args_dump},         {"pmu", &Bytes::pmu},
    {"scope_stats", &Bytes::scope_stats},     {"name_map", &Bytes::name_map},
    {"merged_trace", &Bytes::merged_trace},
};

// The coordinator's own files, per record, measured on real runs
// (bench/estimate): the manifest's entry per dispatch and per artifact,
// README.txt's line per artifact, the run report's page (Chart.js inlined)
// and its rows per dispatch.
constexpr uint64_t kManifestBase = 1200, kManifestPerDispatch = 500, kManifestPerArtifact = 160;
constexpr uint64_t kReadmeBase = 500, kReadmePerArtifact = 150;
constexpr uint64_t kReportBase = 220000, kReportPerDispatch = 1000;
constexpr uint64_t kSessionRecordBase = 200, kSessionRecordPerRank = 100;

// Files a dispatch writes (args_dump is two).
uint64_t ArtifactCount(const Bytes& b) {
  uint64_t n = 0;
  for (const auto& [name, field] : kColumns) n += b.*field > 0 ? 1 : 0;
  return n + (b.args_dump > 0 ? 1 : 0);
}

// The union of what the run's passes arm: an onboard graph pass writes
// deps.json into the timing pass's directory; an L3 sim swimlane run
// co-enables dep_gen (config/pass_plan.h).
config::RunConfig EstimateConfig(const config::RunConfig& config, bool l3) {
  config::RunConfig out = config;
  for (const config::PassPlan& pass : config::PlanPasses(config, l3)) {
    out.enable_dep_gen = out.enable_dep_gen || pass.config.enable_dep_gen;
    out.enable_chip_swimlane = std::max(out.enable_chip_swimlane, pass.config.enable_chip_swimlane);
  }
  return out;
}

// The file system `dir` will be on: its nearest existing ancestor's.
struct FileSystem {
  std::optional<uint64_t> free_bytes;
  std::optional<dev_t> device;
};
FileSystem FileSystemOf(fs::path dir) {
  std::error_code ec;
  dir = fs::absolute(dir, ec);
  while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.parent_path()) dir = dir.parent_path();
  FileSystem out;
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) == 0) {
    out.free_bytes = static_cast<uint64_t>(vfs.f_bavail) * static_cast<uint64_t>(vfs.f_frsize);
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) out.device = st.st_dev;
  return out;
}

std::string Plural(size_t n, const char* one) {
  return fmt::format("{} {}{}", n, one, n == 1 ? "" : "s");
}

}  // namespace

uint64_t RunEstimate::Dispatch::Total() const {
  uint64_t n = fixed;
  for (const auto& [name, field] : kColumns) n += bytes.*field;
  return n;
}

std::vector<std::pair<std::string, uint64_t>> RunEstimate::ByCollector() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& [name, field] : kColumns) {
    uint64_t n = 0;
    for (const Dispatch& d : dispatches) n += d.bytes.*field;
    out.emplace_back(name, n);
  }
  uint64_t fixed = 0;
  for (const Dispatch& d : dispatches) fixed += d.fixed;
  out.emplace_back("dispatch_files", fixed);
  out.emplace_back("run_files", run_files);
  return out;
}

std::string EstimateBytesText(uint64_t bytes) {
  if (bytes >= (1ull << 30)) return fmt::format("{:.1f} GiB", bytes / 1073741824.0);
  if (bytes >= (1ull << 20)) return fmt::format("{:.1f} MiB", bytes / 1048576.0);
  if (bytes >= 1024) return fmt::format("{:.1f} KiB", bytes / 1024.0);
  return fmt::format("{} B", bytes);
}

Result<RunEstimate> EstimateRun(const Plan& plan, bool l3, const SessionOptions& options,
                                bool report, const fs::path& check_dir) {
  RunEstimate est;
  est.l3 = l3;
  est.ranks = l3 ? options.ranks : 1;
  est.file = plan.origin.string();
  const config::RunConfig config = EstimateConfig(options.config, l3);
  std::map<std::string, Bytes> per_program;
  SessionOptions check = options;
  if (!check_dir.empty()) check.work_dir = check_dir;
  DFX_RETURN_IF_ERROR(CheckPlanPrograms(plan, check, &per_program, &config));
  std::vector<PlannedDispatch> planned;
  if (l3) {
    DFX_ASSIGN_OR_RETURN(planned, ExpandPlan(plan, options.ranks));
    std::stable_sort(planned.begin(), planned.end(), [](const auto& a, const auto& b) {
      return a.rank != b.rank ? a.rank < b.rank : a.k < b.k;
    });
  } else if (!plan.programs.empty()) {
    planned.push_back({0, 0, plan.programs.begin()->first});
  }
  // L2 converts the records after every swimlane run; L3 as
  // --swimlane-traces says (post_run.h).
  const bool onboard = config.execution_mode == config::ExecutionMode::kOnboard;
  const bool merged = !l3 || ConvertSwimlanesEagerly(options.swimlane_traces, onboard);
  uint64_t artifacts = 0;
  for (const PlannedDispatch& p : planned) {
    RunEstimate::Dispatch d;
    d.rank = p.rank;
    d.k = p.k;
    d.program = p.program;
    d.bytes = per_program[p.program];
    if (!merged) d.bytes.merged_trace = 0;
    // dispatch_program.json: {"program":"<name>"} and a newline (§16.4).
    if (l3 && config.AnyDfx()) d.fixed = fmt::formatted_size("{{\"program\":\"{}\"}}\n", p.program);
    artifacts += ArtifactCount(d.bytes) + (d.fixed > 0 ? 1 : 0);
    est.total_bytes += d.Total();
    est.dispatches.push_back(std::move(d));
  }
  if (config.AnyDfx()) {
    est.run_files = kManifestBase + kManifestPerDispatch * planned.size() +
                    kManifestPerArtifact * artifacts + kReadmeBase + kReadmePerArtifact * artifacts;
    if (l3) est.run_files += kSessionRecordBase + kSessionRecordPerRank * est.ranks;
    if (l3 && report && config.enable_chip_swimlane > 0)
      est.run_files += kReportBase + kReportPerDispatch * planned.size();
  }
  est.total_bytes += est.run_files;

  const fs::path dfx_dir = collectors::DfxOutputsDir(options.work_dir);
  const FileSystem out_fs = FileSystemOf(dfx_dir);
  est.places.push_back({"dfx_outputs", dfx_dir, est.total_bytes, out_fs.free_bytes, false});
  if (l3 && options.launcher == Launcher::kLocal && config.AnyDfx()) {
    // A dispatch's files stay in its agent's spool until acknowledged; a
    // rank may hold one dispatch being streamed while the next one writes.
    std::map<int, std::vector<uint64_t>> per_rank;
    for (const auto& d : est.dispatches)
      per_rank[d.rank].push_back(d.Total() - d.bytes.merged_trace);
    uint64_t spooled = 0;
    for (auto& [rank, sizes] : per_rank) {
      std::sort(sizes.rbegin(), sizes.rend());
      spooled += sizes[0] + (sizes.size() > 1 ? sizes[1] : 0);
    }
    const fs::path spool = options.spool_root.empty() ? options.work_dir / collectors::kSpoolDirName
                                                      : options.spool_root;
    const FileSystem spool_fs = FileSystemOf(spool);
    est.places.push_back({"spools", spool, spooled, spool_fs.free_bytes,
                          spool_fs.device && out_fs.device && *spool_fs.device == *out_fs.device});
  }
  return est;
}

Result<RunEstimate> EstimateFile(const fs::path& file, std::optional<int> ranks,
                                 const std::string& launcher, bool attach, SessionOptions options,
                                 bool report) {
  DFX_ASSIGN_OR_RETURN(std::string text, ReadJsonText(file, kMaxProgramFileBytes));
  DFX_ASSIGN_OR_RETURN(Json json, ParseJson(text, file.string()));
  if (options.agent_binary.empty()) {
    DFX_ASSIGN_OR_RETURN(options.agent_binary,
                         FindProjectBinary("dfx-rank-agent", "DFX_RANK_AGENT", {"../rank_agent"}));
  }
  const bool is_plan = IsPlan(json);
  const bool l3 = is_plan || ranks || !launcher.empty() || attach;
  if (!l3 && !json.is_object()) return JsonError(file, "$", "a program object", json);
  Plan plan;
  if (is_plan) {
    DFX_ASSIGN_OR_RETURN(plan, ParsePlan(json, file));
  } else {
    DFX_ASSIGN_OR_RETURN(plan, PlanForProgram(file, std::move(text)));
  }
  options.ranks = ranks.value_or(1);
  if (attach) {
    options.launcher = Launcher::kAttach;
  } else if (!launcher.empty()) {
    options.launcher = ParseLauncher(launcher).value_or(Launcher::kLocal);
  } else {
    options.launcher = FindExecutable("mpirun") ? Launcher::kMpirun : Launcher::kLocal;
  }
  // The check's scratch directory goes under $TMPDIR: an estimate writes
  // nothing where the run would.
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  std::string scratch = ((ec ? fs::path("/tmp") : tmp) / "dfx-estimate.XXXXXX").string();
  if (::mkdtemp(scratch.data()) == nullptr) {
    return Internal(
        fmt::format("cannot make a scratch directory {}: {}", scratch, std::strerror(errno)));
  }
  auto estimate = EstimateRun(plan, l3, options, report, scratch);
  fs::remove_all(scratch, ec);
  return estimate;
}

std::string EstimateText(const RunEstimate& e) {
  std::string header = fmt::format("{:>5} {:>8} {:<16}", "rank", "dispatch", "program");
  for (const auto& [name, field] : kColumns) header += fmt::format(" {:>13}", name);
  header += fmt::format(" {:>10} {:>10}\n", "other", "total");
  std::string out = fmt::format(
      "estimate of {} ({}, {}, {} dispatch(es)): the bytes each will write, from the "
      "programs' tasks, blocks, args and scopes and per-record sizes (nothing ran)\n",
      e.file, e.l3 ? "L3" : "L2", Plural(static_cast<size_t>(e.ranks), "rank"),
      e.dispatches.size());
  out += header;
  for (const auto& d : e.dispatches) {
    out += fmt::format("{:>5} {:>8} {:<16}", d.rank, fmt::format("d{}", d.k), d.program);
    for (const auto& [name, field] : kColumns)
      out += fmt::format(" {:>13}", EstimateBytesText(d.bytes.*field));
    out +=
        fmt::format(" {:>10} {:>10}\n", EstimateBytesText(d.fixed), EstimateBytesText(d.Total()));
  }
  out += "per collector:";
  for (const auto& [name, bytes] : e.ByCollector())
    out += fmt::format(" {} {},", name, EstimateBytesText(bytes));
  out.back() = '\n';
  out += fmt::format("total: {} ({} bytes)\n", EstimateBytesText(e.total_bytes), e.total_bytes);
  for (const auto& p : e.places) {
    out += fmt::format("{}: {} in {}, {}{}\n", p.what, EstimateBytesText(p.bytes),
                       ShellQuote(p.path.string()),
                       p.free_bytes ? EstimateBytesText(*p.free_bytes) + " free there"
                                    : std::string("free space unknown"),
                       p.shares_with_previous ? " (the same file system as above)" : "");
  }
  return out;
}

std::string EstimateJson(const RunEstimate& e) {
  Json j = Json::object();
  j["file"] = e.file;
  j["level"] = e.l3 ? "L3" : "L2";
  j["ranks"] = e.ranks;
  j["total_bytes"] = e.total_bytes;
  Json by = Json::object();
  for (const auto& [name, bytes] : e.ByCollector()) by[name] = bytes;
  j["collectors"] = by;
  Json dispatches = Json::array();
  for (const auto& d : e.dispatches) {
    Json b = Json::object();
    for (const auto& [name, field] : kColumns) b[name] = d.bytes.*field;
    b["dispatch_files"] = d.fixed;
    dispatches.push_back({{"rank", d.rank},
                          {"dispatch", d.k},
                          {"program", d.program},
                          {"tasks", d.bytes.tasks},
                          {"blocks", d.bytes.blocks},
                          {"bytes", b},
                          {"total_bytes", d.Total()}});
  }
  j["dispatches"] = dispatches;
  Json places = Json::array();
  for (const auto& p : e.places) {
    Json one = {{"what", p.what}, {"path", p.path.string()}, {"bytes", p.bytes}};
    one["free_bytes"] = p.free_bytes ? Json(*p.free_bytes) : Json();
    one["same_file_system_as_previous"] = p.shares_with_previous;
    places.push_back(one);
  }
  j["lands_in"] = places;
  return j.dump(2) + "\n";
}

std::string EstimateLine(const RunEstimate& e) {
  std::string parts;
  for (const auto& [name, bytes] : e.ByCollector()) {
    if (bytes > 0)
      parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", name, EstimateBytesText(bytes));
  }
  std::string line = fmt::format("estimate: this run will write about {} ({} dispatch(es): {})",
                                 EstimateBytesText(e.total_bytes), e.dispatches.size(),
                                 parts.empty() ? "nothing" : parts);
  for (const auto& p : e.places) {
    line += fmt::format("; {} {} in {}{}", p.what, EstimateBytesText(p.bytes),
                        ShellQuote(p.path.string()),
                        p.free_bytes ? " (" + EstimateBytesText(*p.free_bytes) + " free)" : "");
  }
  return line;
}

Status CheckEstimate(const RunEstimate& e, uint64_t max_run_bytes) {
  if (max_run_bytes > 0 && e.total_bytes > max_run_bytes) {
    return FailedPrecondition(fmt::format(
        "the run would write an estimated {} ({} bytes), more than --max-run-bytes {} ({} "
        "bytes); nothing was started. Give a larger --max-run-bytes, capture less "
        "(--capture-ranks / --capture-dispatches, or fewer collectors or a lower level), or "
        "--force to start anyway (`dfx-coordinator estimate` shows what each collector writes)",
        EstimateBytesText(e.total_bytes), e.total_bytes, EstimateBytesText(max_run_bytes),
        max_run_bytes));
  }
  uint64_t needed = 0;
  for (const auto& p : e.places) {
    needed = p.shares_with_previous ? needed + p.bytes : p.bytes;
    if (!p.free_bytes || needed <= *p.free_bytes) continue;
    return FailedPrecondition(fmt::format(
        "the run would write an estimated {} ({} bytes) into {}{}, but its file system has "
        "only {} ({} bytes) free; nothing was started. Free space there, give another {}, "
        "capture less (fewer collectors or a lower level, --capture-ranks / "
        "--capture-dispatches), or --force to start anyway",
        EstimateBytesText(needed), needed, ShellQuote(p.path.string()),
        p.shares_with_previous ? " (with dfx_outputs/ on the same file system)" : "",
        EstimateBytesText(*p.free_bytes), *p.free_bytes,
        p.what == "spools" ? "--spool DIR" : "--work-dir"));
  }
  return Status::Ok();
}

}  // namespace dfx::coordinator
