// The run report (`dfx-view report`, and the coordinator's report.html after
// an L3 run) opened in a real browser: headless Chromium loads the page from
// file://, the page writes its status (marks drawn per chart, errors caught
// by its onerror / console.error hooks, resources fetched) into
// #dfx-status, and --dump-dom hands the DOM back. Inputs: a real 4-rank run,
// a real skewed run (one rank's kernels about five times longer) and a
// synthetic 1,000-rank x 100-dispatch run written as real files here.
// Screenshots are kept under <build>/test-artifacts/ (paths printed).
#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>
#include <fstream>
#include <iostream>
#include <regex>
#include <string>
#include <vector>

#include "collectors/run_manifest.h"
#include "common/json.h"
#include "tests/l3/e2e_util.h"

namespace dfx::e2e {
namespace {

bool HaveChromium() { return std::system("command -v chromium > /dev/null 2>&1") == 0; }

fs::path ArtifactPath(const std::string& name) {
  const fs::path dir = fs::path(DFX_BINARY_DIR) / "test-artifacts";
  fs::create_directories(dir);
  return dir / name;
}

// Runs chromium headless with `args` on `page`, bounded (virtual time for
// the page, a wall timeout for the browser), then makes sure that nothing
// of it is left: its whole process group is gone.
CommandResult Chromium(const std::vector<std::string>& args, const fs::path& page,
                       const fs::path& work) {
  std::vector<std::string> argv = {"chromium",
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--no-first-run",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--disable-quic",
                                   "--hide-scrollbars",
                                   "--virtual-time-budget=10000",
                                   "--user-data-dir=" + (work / "chrome-profile").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("file://" + page.string());
  Process p(argv, work / "chrome-log");
  CommandResult r;
  r.timed_out = !p.Wait(90);
  ::killpg(p.pid(), SIGKILL);  // whatever of the browser is still there
  p.Wait(30);
  r.exit_code = p.exit_code();
  r.out = p.out();
  r.err = p.err();
  const bool gone = WaitFor([&] { return ::killpg(p.pid(), 0) != 0 && errno == ESRCH; }, 30);
  EXPECT_TRUE(gone) << "chromium left processes behind (group " << p.pid() << ")";
  return r;
}

struct PageCheck {
  Json status;  // what the page wrote into #dfx-status
  Json data;    // the page's own data block
  std::string html;
};

// Opens `page`: the DOM after load (the status element) and a screenshot.
PageCheck OpenReport(const fs::path& page, const fs::path& work, const std::string& shot) {
  PageCheck c;
  c.html = Slurp(page);
  const std::string begin = "<script type=\"application/json\" id=\"dfx-data\">";
  const size_t at = c.html.find(begin);
  EXPECT_NE(at, std::string::npos);
  if (at != std::string::npos) {
    const size_t from = at + begin.size();
    c.data =
        Json::parse(c.html.substr(from, c.html.find("</script>", from) - from), nullptr, false);
  }
  CommandResult dom = Chromium({"--dump-dom"}, page, work);
  EXPECT_FALSE(dom.timed_out);
  std::smatch m;
  static const std::regex status_re("<pre id=\"dfx-status\">([^<]*)</pre>");
  if (std::regex_search(dom.out, m, status_re)) {
    std::string text = m[1];
    for (auto [from, to] : {std::pair<std::string, std::string>{"&quot;", "\""},
                            {"&gt;", ">"},
                            {"&lt;", "<"},
                            {"&amp;", "&"}}) {
      for (size_t i = text.find(from); i != std::string::npos; i = text.find(from, i + 1))
        text.replace(i, from.size(), to);
    }
    c.status = Json::parse(text, nullptr, false);
  }
  EXPECT_TRUE(c.status.is_object())
      << "the page wrote no status; DOM: " << dom.out.substr(0, 2000) << "\nstderr: " << dom.err;
  const fs::path png = ArtifactPath(shot);
  fs::remove(png);
  CommandResult s =
      Chromium({"--window-size=1300,2400", "--screenshot=" + png.string()}, page, work);
  EXPECT_TRUE(fs::exists(png)) << s.err;
  EXPECT_GT(fs::exists(png) ? fs::file_size(png) : 0, 10000u);
  std::cout << "screenshot of " << page.string() << ": " << png.string() << "\n";
  return c;
}

// No error, nothing fetched, and every chart drew marks (or, for `may_be_empty`, said why not).
void ExpectDrawn(const PageCheck& c, const std::vector<std::string>& charts) {
  ASSERT_TRUE(c.status.is_object());
  EXPECT_EQ(c.status["errors"], Json::array()) << c.status.dump();
  EXPECT_EQ(c.status["resources"], 0) << "the page fetched something";
  EXPECT_EQ(c.status["empty"], Json::object()) << c.status.dump();
  for (const std::string& chart : charts) {
    EXPECT_GT(c.status["charts"].value(chart, 0), 0) << chart << ": " << c.status.dump();
  }
  // The CSP forbids every fetch; the library is inline.
  EXPECT_NE(c.html.find("connect-src 'none'"), std::string::npos);
  EXPECT_EQ(c.html.find("<script src"), std::string::npos);
  EXPECT_EQ(c.html.find("https://cdn"), std::string::npos);
}

const std::vector<std::string> kAllCharts = {"heat-span", "heat-skew", "rank-time", "rank-kernels",
                                             "pmu",       "ring",      "host",      "clock"};

TEST(ReportBrowserTest, RealFourRankRunWritesAReportThatDrawsOffline) {
  if (!HaveChromium()) GTEST_SKIP() << "chromium not installed (scripts/setup.sh installs it)";
  const fs::path dir = TestDir("report_l3");
  auto r = RunCommand(
      {Bin("dfx-coordinator"), "run", Source("examples/plans/l3_four_ranks.json"), "--ranks", "4",
       "--launcher", "local", "--work-dir", (dir / "run").string(), "--chip-swimlane-level", "4",
       "--enable-dep-gen", "--enable-pmu", "--enable-scope-stats"},
      dir / "run_log", 300);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const fs::path report = dir / "run" / "dfx_outputs" / "report.html";
  ASSERT_TRUE(fs::is_regular_file(report)) << r.out;
  EXPECT_NE(r.out.find("open the run report in a browser: " + report.string() + " ("),
            std::string::npos)
      << r.out;
  EXPECT_NE(Slurp(dir / "run" / "dfx_outputs" / "README.txt")
                .find("The run report, to open in a browser: " + report.string()),
            std::string::npos);
  PageCheck c = OpenReport(report, dir, "report_l3_four_ranks.png");
  ExpectDrawn(c, kAllCharts);
  EXPECT_EQ(c.status["rows"], 4);
  // 4 ranks x the steps each ran: every dispatch is a heatmap cell.
  EXPECT_EQ(c.status["charts"]["heat-span"], c.data["dispatches_total"]);
  EXPECT_EQ(c.data["clock"]["ranks"].size(), 4u);
  EXPECT_EQ(c.data["capture"]["run_status"], "ok");
  // The filter box, as a user fills it in ("2, matmul, d1"): rank 2's cells and bars only, the
  // matmul kernels' PMU bars, the host lane's d1 row.
  std::string html = c.html;
  const std::string input = "<input id=\"filter\" size=\"18\"";
  ASSERT_NE(html.find(input), std::string::npos);
  html.insert(html.find(input) + input.size(), " value=\"2, matmul, d1\"");
  const fs::path filtered = dir / "filtered.html";
  std::ofstream(filtered) << html;
  PageCheck f = OpenReport(filtered, dir, "report_l3_filtered.png");
  ASSERT_TRUE(f.status.is_object());
  EXPECT_EQ(f.status["errors"], Json::array());
  EXPECT_EQ(f.status["charts"]["heat-span"], 3) << "rank 2 ran d0, d1 and d2";
  EXPECT_EQ(f.status["charts"]["rank-time"], 3) << "busy, idle, sched of rank 2";
  EXPECT_EQ(f.status["charts"]["clock"], 1);
  EXPECT_EQ(f.status["charts"]["pmu"], 2) << "qk_matmul and pv_matmul";
  EXPECT_GT(f.status["charts"]["host"], 0);
  EXPECT_LT(f.status["charts"]["host"], c.status["charts"]["host"]);
}

TEST(ReportBrowserTest, NoReportWritesNone) {
  const fs::path dir = TestDir("report_off");
  auto r = RunCommand({Bin("dfx-coordinator"), "run", Source("examples/vector_pipeline.json"),
                       "--ranks", "2", "--launcher", "local", "--work-dir", (dir / "run").string(),
                       "--chip-swimlane-level", "1", "--no-report"},
                      dir / "run_log", 300);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_FALSE(fs::exists(dir / "run" / "dfx_outputs" / "report.html"));
  EXPECT_EQ(r.out.find("run report"), std::string::npos) << r.out;
}

TEST(ReportBrowserTest, SkewedRunNamesTheSlowRank) {
  if (!HaveChromium()) GTEST_SKIP() << "chromium not installed (scripts/setup.sh installs it)";
  const fs::path dir = TestDir("report_skew");
  // The same graph; rank 2's tensors are 7x larger, so its kernels run about five times longer.
  for (auto [name, rows] : {std::pair<std::string, std::string>{"fast", "32"}, {"slow", "224"}}) {
    auto g = RunCommand({DFX_BINARY_DIR "/device/dfx-gen-program", "layered", "--tasks", "40",
                         "--width", "4", "--seed", "7", "--rows", rows, "--cols", "32", "--name",
                         name, "-o", (dir / (name + ".json")).string()},
                        dir / "gen_log");
    ASSERT_EQ(g.exit_code, 0) << g.err;
  }
  std::ofstream(dir / "skew.json") << R"({"name": "skew",
    "programs": {"fast": "fast.json", "slow": "slow.json"},
    "steps": [{"program": "fast", "ranks": [0, 1, 3]}, {"program": "slow", "rank": 2},
              {"program": "fast", "ranks": [0, 1, 3]}, {"program": "slow", "rank": 2}]})";
  auto r = RunCommand({Bin("dfx-coordinator"), "run", (dir / "skew.json").string(), "--ranks", "4",
                       "--launcher", "local", "--work-dir", (dir / "run").string(),
                       "--chip-swimlane-level", "2", "--virtual-clock", "-q"},
                      dir / "run_log", 300);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const fs::path report = dir / "run" / "dfx_outputs" / "report.html";
  ASSERT_TRUE(fs::is_regular_file(report)) << "-q still writes the report";
  PageCheck c = OpenReport(report, dir, "report_skewed_run.png");
  ASSERT_TRUE(c.status.is_object());
  EXPECT_EQ(c.status["errors"], Json::array());
  EXPECT_EQ(c.status["stragglers"], Json::array({2})) << c.status.dump();
  // The straggler marks sit on rank 2's cells, in both steps, and nowhere else.
  for (const Json& row : c.data["rows"]) {
    EXPECT_EQ(row["marks"].size(), row["rank"] == 2 ? 2u : 0u) << row.dump();
    if (row["rank"] == 0) {
      const double busy0 = row["busy"];
      for (const Json& other : c.data["rows"]) {
        if (other["rank"] != 2) continue;
        const double ratio = other["busy"].get<double>() / busy0;
        EXPECT_GT(ratio, 4.0);
        EXPECT_LT(ratio, 6.5);
      }
    }
  }
  // The page says it in words at the top, and the verdict names the rule.
  EXPECT_NE(c.data["verdict"].get<std::string>().find("stragglers: rank 2"), std::string::npos);
}

// A run of `ranks` x `steps` dispatches as real files, as the coordinator
// lays them out: per dispatch chip_swimlane_records.json (level 2, two cores,
// two tasks), a run manifest with every rank's clock offset and every
// dispatch's host timings, and on rank 0's dispatches the scope-stats and PMU
// fixtures. Every span is about 100 µs; rank `slow` takes three times as long.
void WriteSyntheticRun(const fs::path& out, int ranks, int steps, int slow) {
  collectors::RunManifest m;
  m.status = collectors::RunState::kOk;
  m.plan = "synthetic";
  m.launcher = "local";
  m.launch_ns = 1'000'000;
  for (int r = 0; r < ranks; ++r) {
    collectors::RankEntry e;
    e.rank = r;
    e.host = "node" + std::to_string(r / 8);
    e.status = collectors::RankState::kOk;
    e.clock_offset_ns = (r % 17) * 1000 - 8000;
    e.clock_offset_rtt_ns = 2000 + (r % 23) * 500;
    e.hello_ns = 2'000'000 + r * 1000;
    e.ready_ns = 3'000'000 + r * 1000;
    e.dispatches = steps;
    m.ranks.push_back(e);
  }
  uint64_t t = 5'000'000;
  for (int k = 0; k < steps; ++k, t += 1'000'000) {
    for (int r = 0; r < ranks; ++r) {
      const fs::path dir = out / ("rank" + std::to_string(r)) / ("d" + std::to_string(k));
      fs::create_directories(dir);
      const uint64_t span = (100'000 + ((r * 7 + k * 13) % 5) * 1000) * (r == slow ? 3 : 1);
      const uint64_t mid = 1000 + span / 2, end = 1000 + span;
      std::ofstream(dir / "chip_swimlane_records.json")
          << "{\"chip_swimlane_level\": 2, \"metadata\": {\"clock_freq_hz\": 1000000000, "
             "\"num_cores\": 2, \"core_types\": [\"aic\", \"aiv\"]}, \"aicore_tasks\": [[0, 10, 1, "
             "1000, "
          << mid << ", 20], [1, 11, 1, " << mid + 50 << ", " << end
          << ", 0]], \"aicpu_tasks\": [[0, 1, 950, " << mid + 20 << "], [1, 1, " << mid + 40 << ", "
          << end + 30 << "]]}";
      if (r == 0) {
        fs::create_directories(dir / "scope_stats");
        fs::copy_file(Source("tests/view/fixtures/scope_stats/scope_stats.jsonl"),
                      dir / "scope_stats" / "scope_stats.jsonl");
        fs::copy_file(Source("tests/view/fixtures/pmu/pmu.csv"), dir / "pmu.csv");
      }
      collectors::DispatchEntry d;
      d.rank = r;
      d.k = static_cast<uint32_t>(k);
      d.program = "synthetic";
      d.status = collectors::DispatchState::kOk;
      d.start_ns = t + r * 100;
      d.accepted_ns = d.start_ns + 20'000;
      d.stream_ns = d.start_ns + 20'000 + span;
      d.end_ns = *d.stream_ns + 50'000;
      d.verified_ns = d.end_ns + 10'000;
      m.dispatches.push_back(std::move(d));
    }
  }
  ASSERT_TRUE(collectors::WriteRunManifest(out, m).ok());
}

// 1,000 ranks x 10 dispatches of real files: the summary reads 10,000
// dispatch directories (the page size at 100 dispatches is checked on an
// in-memory summary in view/run_report_test.cc; reading 100,000 directories
// under ASan takes minutes).
TEST(ReportBrowserTest, ThousandRanksStaysSmallAndReadable) {
  if (!HaveChromium()) GTEST_SKIP() << "chromium not installed (scripts/setup.sh installs it)";
  const fs::path dir = TestDir("report_1000");
  const fs::path run = dir / "dfx_outputs";
  WriteSyntheticRun(run, 1000, 10, 777);
  ASSERT_FALSE(HasFailure());
  const fs::path report = dir / "report.html";
  auto r = RunCommand({Bin("dfx-view"), "report", run.string(), "-o", report.string()},
                      dir / "view_log", 600);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_TRUE(fs::is_regular_file(report));
  const auto size = fs::file_size(report);
  std::cout << "1,000 ranks x 10 dispatches: report " << size << " bytes\n";
  EXPECT_LT(size, 5u << 20);
  PageCheck c = OpenReport(report, dir, "report_1000_ranks.png");
  ExpectDrawn(c, kAllCharts);
  // Aggregates plus outliers, not 1,000 rows; the slow rank is among them, marked in every step.
  EXPECT_TRUE(c.data["aggregated"].get<bool>());
  EXPECT_LT(c.status["rows"].get<int>(), 100);
  EXPECT_EQ(c.status["stragglers"], Json::array({777}));
  bool slow_row = false;
  for (const Json& row : c.data["rows"]) {
    if (row["rank"] == 777) {
      slow_row = true;
      EXPECT_EQ(row["marks"].size(), 10u);
    }
  }
  EXPECT_TRUE(slow_row);
  EXPECT_EQ(c.data["clock"]["measured"], 1000);
  EXPECT_EQ(c.data["host"]["rows"].size(), 11u);  // start-up and d0..d9
}

}  // namespace
}  // namespace dfx::e2e
