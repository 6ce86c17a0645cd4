#include "coordinator/post_run.h"

#include <fmt/format.h>

#include <set>
#include <system_error>

#include "collectors/artifact_layout.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/subprocess.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;

std::string GraphPassWarning(const std::string& what, const std::string& error,
                             const fs::path& deps_json) {
  return fmt::format(
      "warning: graph pass (dep_gen capture) failed for {}: {}; the swimlane will have no arrows "
      "or kernel names, its lanes fall back to anonymous task(rXtY) (deps.json expected at {}); "
      "diagnose it from this error -- --enable-dep-gen reruns nothing, that pass already runs on "
      "its own",
      what, error, ShellQuote(deps_json.string()));
}

std::vector<std::string> ConvertSwimlanes(std::FILE* out, const fs::path& dfx_dir,
                                          const std::vector<std::string>& files, double timeout_s) {
  std::vector<std::string> written;
  std::set<std::string> dirs;  // relative, "" at L2
  for (const auto& f : files) {
    const fs::path p(f);
    if (p.filename() == collectors::kSwimlaneRecordsFile) {
      dirs.insert(p.parent_path().generic_string());
    }
  }
  if (dirs.empty()) return written;
  auto view = FindProjectBinary("dfx-view", "DFX_VIEW", {"../view"});
  if (!view.ok()) {
    std::fprintf(out, "warning: no merged swimlane trace: %s; the raw records are kept\n",
                 view.status().message().c_str());
    return written;
  }
  const std::string name = collectors::MergedSwimlaneFileName(WallTimestamp());
  size_t converted = 0;
  for (const std::string& rel_dir : dirs) {
    // The live status line (a terminal only) covers the conversion too.
    log::SetStatusLine(fmt::format("converting swimlane records {}/{}{}", ++converted, dirs.size(),
                                   rel_dir.empty() ? "" : " (" + rel_dir + ")"));
    const fs::path dir = rel_dir.empty() ? dfx_dir : dfx_dir / rel_dir;
    const fs::path records = dir / collectors::kSwimlaneRecordsFile;
    std::vector<std::string> argv = {view->string(), "swimlane", records.string(), "-o",
                                     (dir / name).string()};
    // The name map beside the records (name_map.json per dispatch at L3,
    // name_map_<case>.json at L2).
    std::error_code ec;
    fs::path name_map;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (collectors::IsNameMapFileName(e.path().filename().string()) && !e.is_symlink(ec)) {
        name_map = e.path();
      }
    }
    if (!name_map.empty()) {
      argv.push_back("--func-names");
      argv.push_back(name_map.string());
    }
    auto run = RunCaptured(argv, timeout_s);
    std::string why;
    if (!run.ok()) {
      why = run.status().message();
    } else if (run->timed_out) {
      why = fmt::format("it did not finish within {:g} s", timeout_s);
    } else if (run->exit_code != 0) {
      why = fmt::format("exit code {}", run->exit_code);
    }
    if (why.empty() && fs::exists(dir / name, ec)) {
      written.push_back(rel_dir.empty() ? name : rel_dir + "/" + name);
      continue;
    }
    if (why.empty()) why = "it wrote no trace";
    log::SetStatusLine("");
    std::fprintf(out,
                 "warning: the swimlane converter failed for %s (%s); the raw records are kept. "
                 "Re-run: %s\n",
                 ShellQuote(records.string()).c_str(), why.c_str(), ShellCommand(argv).c_str());
    if (run.ok() && !run->output.empty()) std::fprintf(out, "%s", run->output.c_str());
  }
  log::SetStatusLine("");
  return written;
}

std::string RunSummaryText(const fs::path& dfx_dir, bool full, const std::string& view,
                           double timeout_s) {
  auto binary = FindProjectBinary("dfx-view", "DFX_VIEW", {"../view"});
  if (!binary.ok()) return fmt::format("(no run summary: {})\n", binary.status().message());
  std::vector<std::string> argv = {binary->string(), "summary", dfx_dir.string(), "--view-command",
                                   view};
  if (!full) argv.push_back("--brief");
  auto run = RunCaptured(argv, timeout_s);
  if (!run.ok()) return fmt::format("(no run summary: {})\n", run.status().message());
  if (run->timed_out || run->exit_code != 0) {
    return fmt::format(
        "(no run summary: {} {}; re-run: {})\n{}",
        run->timed_out ? "it did not finish within" : "exit code",
        run->timed_out ? fmt::format("{:g} s", timeout_s) : std::to_string(run->exit_code),
        ShellCommand(argv), run->output);
  }
  return run->output;
}

}  // namespace dfx::coordinator
