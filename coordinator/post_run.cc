#include "coordinator/post_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <system_error>
#include <thread>

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

bool ConvertSwimlanesEagerly(SwimlaneTraces mode, bool onboard) {
  return mode == SwimlaneTraces::kEager || (mode == SwimlaneTraces::kAuto && onboard);
}

std::string LazySwimlaneHint(const fs::path& dfx_dir, const std::vector<std::string>& files,
                             const std::string& view) {
  std::string first;  // the first dispatch's records, as an example
  for (const auto& f : files) {
    if (fs::path(f).filename() == collectors::kSwimlaneRecordsFile && (first.empty() || f < first))
      first = f;
  }
  if (first.empty()) return "";
  return fmt::format(
      "swimlane traces: written on demand, not after the run: the whole run in one trace: {} "
      "swimlane --run {}; one dispatch: {} swimlane {}; every dispatch's command: {} "
      "(--swimlane-traces eager converts them all after the run)\n",
      view, ShellQuote(dfx_dir.string()), view, ShellQuote((dfx_dir / first).string()),
      ShellQuote((dfx_dir / collectors::kArtifactsReadmeFile).string()));
}

unsigned ConvertJobs(unsigned requested, size_t conversions) {
  const unsigned jobs =
      requested > 0 ? requested : std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::min<size_t>(jobs, std::max<size_t>(conversions, 1)));
}

namespace {

// One dispatch directory's conversion: the command, then what came of it.
struct Conversion {
  std::string rel_dir;  // "" at L2
  fs::path records;
  std::vector<std::string> argv;
  std::string warning;  // empty once the trace is in place
  std::string output;   // the converter's console output, shown when it failed
};

void Convert(Conversion& c, const fs::path& trace, Timeouts::Duration timeout) {
  auto run = RunCaptured(c.argv, ToSeconds(timeout));
  std::string why;
  if (!run.ok()) {
    why = run.status().message();
  } else if (run->timed_out) {
    why = fmt::format("it did not finish within {:g} s", ToSeconds(timeout));
  } else if (run->exit_code != 0) {
    why = fmt::format("exit code {}", run->exit_code);
  }
  std::error_code ec;
  if (why.empty() && fs::exists(trace, ec)) return;
  if (why.empty()) why = "it wrote no trace";
  c.warning = fmt::format(
      "warning: the swimlane converter failed for {} ({}); the raw records are kept. Re-run: {}\n",
      ShellQuote(c.records.string()), why, ShellCommand(c.argv));
  if (run.ok()) c.output = run->output;
}

}  // namespace

std::vector<std::string> ConvertSwimlanes(std::FILE* out, const fs::path& dfx_dir,
                                          const std::vector<std::string>& files,
                                          Timeouts::Duration timeout, unsigned jobs) {
  std::vector<std::string> written;
  std::set<std::string> dirs;  // relative, "" at L2; sorted, so the results are in a fixed order
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
  std::vector<Conversion> conversions;
  for (const std::string& rel_dir : dirs) {
    const fs::path dir = rel_dir.empty() ? dfx_dir : dfx_dir / rel_dir;
    Conversion c{rel_dir, dir / collectors::kSwimlaneRecordsFile, {}, {}, {}};
    // --skip-verify: this coordinator verified every file as it stored it
    // (a second check would read the whole manifest once per dispatch).
    c.argv = {view->string(),        "swimlane",     c.records.string(), "-o",
              (dir / name).string(), "--skip-verify"};
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
      c.argv.push_back("--func-names");
      c.argv.push_back(name_map.string());
    }
    conversions.push_back(std::move(c));
  }
  // Each conversion is its own dfx-view process writing its own directory
  // (under a temporary name, renamed when complete), so they run side by
  // side, at most `jobs` at a time; the L3 post-run was one after another
  // with the other cores idle. Results are reported in directory order.
  const unsigned workers = ConvertJobs(jobs, conversions.size());
  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < conversions.size();) {
      // The live status line (a terminal only) covers the conversion too:
      // the one started last, as when they ran one after another.
      const std::string& rel_dir = conversions[i].rel_dir;
      log::SetStatusLine(fmt::format("converting swimlane records {}/{}{}", i + 1,
                                     conversions.size(),
                                     rel_dir.empty() ? "" : " (" + rel_dir + ")"));
      Convert(conversions[i], fs::path(conversions[i].argv[4]), timeout);
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < workers; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  log::SetStatusLine("");
  for (const Conversion& c : conversions) {
    if (c.warning.empty()) {
      written.push_back(c.rel_dir.empty() ? name : c.rel_dir + "/" + name);
      continue;
    }
    std::fprintf(out, "%s", c.warning.c_str());
    if (!c.output.empty()) std::fprintf(out, "%s", c.output.c_str());
  }
  DFX_LOG_INFO("converted {} of {} swimlane record file(s) in {:.2f} s, {} at a time",
               written.size(), conversions.size(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
               workers);
  return written;
}

std::string RunSummaryText(const fs::path& dfx_dir, bool full, const std::string& view,
                           const fs::path& report, double timeout_s) {
  auto binary = FindProjectBinary("dfx-view", "DFX_VIEW", {"../view"});
  if (!binary.ok()) return fmt::format("(no run summary: {})\n", binary.status().message());
  // --skip-verify: this coordinator verified every file as it stored it.
  std::vector<std::string> argv = {binary->string(), "summary", dfx_dir.string(),
                                   "--view-command", view,      "--skip-verify"};
  if (!full) argv.push_back("--brief");
  if (!report.empty()) {
    std::error_code ec;
    fs::remove(report, ec);  // never a stale report from an earlier run in this work dir
    argv.push_back("--report");
    argv.push_back(report.string());
  }
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
