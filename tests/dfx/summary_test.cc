// `dfx-view summary` and `dfx-view export` on real runs: a 4-rank plan in
// which rank 2 runs the same graph with 3x longer spin kernels (virtual clock,
// so the spans are exact), and the coordinator's end-of-run console.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "tests/dfx/dfx_test_util.h"

namespace dfx::e2e {
namespace {

const fs::path kPlan = Data("straggler/plan.json");
// Rows per dispatch: prep, spin x2 (SPMD block_num 2), finish.
constexpr int kRowsPerDispatch = 4;
constexpr int kDispatches = 12;  // 4 ranks x 3

// One straggler run shared by the tests of this file (virtual clock: exact).
const fs::path& StragglerRun() {
  static const fs::path work = [] {
    fs::path dir = TestDir("straggler");
    auto r = Coordinator(
        kPlan, dir / "w",
        {"--ranks", "4", "--launcher", "local", "--virtual-clock", "--enable-chip-swimlane", "4",
         "--enable-dep-gen", "--enable-pmu", "2", "--enable-scope-stats"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return dir / "w";
  }();
  return work;
}

CommandResult View(const std::vector<std::string>& args, const fs::path& cwd) {
  std::vector<std::string> argv = {"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", cwd.string(),
                                   Bin("dfx-view")};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, cwd.parent_path() / "logs", 120);
}

TEST(SummaryTest, NamesRankTwoAsTheStragglerInEveryFormat) {
  const fs::path out = StragglerRun() / "dfx_outputs";
  auto json = View({"summary", "--run", out.string(), "--format", "json"}, StragglerRun());
  ASSERT_EQ(json.exit_code, 0) << json.err;
  Json s = Json::parse(json.out);
  EXPECT_EQ(s["stragglers"], Json::array({2})) << json.out;
  ASSERT_EQ(s["steps"].size(), 3u);
  for (const auto& st : s["steps"]) {
    EXPECT_EQ(st["slowest_rank"], 2) << st.dump();
    EXPECT_EQ(st["slowest_program"], "slow");
    EXPECT_TRUE(st["straggler"].get<bool>());
    EXPECT_GT(st["skew_pct"].get<double>(), 50.0);  // 3x longer spins
    EXPECT_EQ(st["ranks"], 4);
  }
  ASSERT_EQ(s["ranks"].size(), 4u);
  ASSERT_EQ(s["dispatches"].size(), static_cast<size_t>(kDispatches));
  for (const auto& d : s["dispatches"]) {
    EXPECT_EQ(d["rows"], kRowsPerDispatch) << d.dump();
    // busy = prep 20 + 2 spins + finish 10 (virtual clock: exact durations).
    const double spin = d["program"] == "slow" ? 90 : 30;
    EXPECT_NEAR(d["busy_us"].get<double>(), 20 + 2 * spin + 10, 0.5) << d.dump();
    EXPECT_GE(d["span_us"].get<double>(), 20 + spin + 10) << d.dump();
    EXPECT_FALSE(d["pmu_totals"].empty()) << d.dump();
    EXPECT_TRUE(d["ring_peak_pct"].is_number()) << d.dump();
  }
  EXPECT_EQ(s["top_kernels"][0]["name"], "spin");
  // At L3 too, scope stats name the program file and line of the scope statement.
  EXPECT_NE(
      Slurp(out / "rank2/d1/scope_stats/scope_stats.jsonl").find(R"("site": "spin_slow.json:12")"),
      std::string::npos);
  EXPECT_NE(s["verdict"].get<std::string>().find("stragglers: rank 2"), std::string::npos);

  auto table = View({"summary", out.string()}, StragglerRun());
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("stragglers: rank 2"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("STRAGGLER"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("rank2/d1"), std::string::npos) << "per-dispatch rows\n" << table.out;

  auto csv = View({"summary", out.string(), "--format", "csv"}, StragglerRun());
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(Count(csv.out, "\n"), static_cast<size_t>(kDispatches + 1)) << csv.out;
  EXPECT_EQ(Count(csv.out, "\n2,"), 3u) << csv.out;
  EXPECT_EQ(Count(csv.out, ",1,1,"), 3u) << "rank 2 flagged in its 3 steps\n" << csv.out;
}

TEST(SummaryTest, ThresholdDecidesAndBadValuesAreNamed) {
  const fs::path out = StragglerRun() / "dfx_outputs";
  auto lax = View({"summary", out.string(), "--straggler-threshold", "1000%"}, StragglerRun());
  ASSERT_EQ(lax.exit_code, 0) << lax.err;
  EXPECT_NE(lax.out.find("stragglers: none"), std::string::npos) << lax.out;
  auto bad = View({"summary", out.string(), "--straggler-threshold", "fast"}, StragglerRun());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--straggler-threshold fast: expected a percentage"), std::string::npos)
      << bad.err;
  // From inside the work dir with no path: ./dfx_outputs is found.
  auto found = View({"summary", "--brief"}, StragglerRun());
  ASSERT_EQ(found.exit_code, 0) << found.err;
  EXPECT_NE(found.out.find("stragglers: rank 2"), std::string::npos) << found.out;
  // From inside dfx_outputs too.
  auto inside = View({"summary", "--brief"}, out);
  ASSERT_EQ(inside.exit_code, 0) << inside.err;
  EXPECT_NE(inside.out.find("stragglers: rank 2"), std::string::npos) << inside.out;
  // One dispatch directory: nothing to compare.
  auto one = View({"summary", (out / "rank2/d0").string()}, StragglerRun());
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("1 rank(s), 1 dispatch(es), 4 task row(s)"), std::string::npos) << one.out;
  auto none = View({"summary", (StragglerRun() / "nothing").string()}, StragglerRun());
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("not a directory (expected W/dfx_outputs"), std::string::npos)
      << none.err;
}

TEST(SummaryTest, AboveEightRanksTheTableIsAggregatesPlusOutliers) {
  fs::path dir = TestDir("summary_nine");
  auto r = Coordinator(
      Data("straggler/spin_fast.json"), dir / "w",
      {"--ranks", "9", "--launcher", "local", "--virtual-clock", "--enable-chip-swimlane", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // Run from the work dir, so View's logs go beside it (dir/logs), not to
  // the temp dir's own logs/.
  auto table = View({"summary", (dir / "w/dfx_outputs").string()}, dir / "w");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("\nall   9 ranks: span min "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find(" more rank(s): --format csv lists every one)"), std::string::npos);
  size_t rank_rows = 0;
  for (int k = 0; k < 9; ++k) rank_rows += Count(table.out, "\nr" + std::to_string(k) + " ");
  EXPECT_LE(rank_rows, 2u) << "only the slowest and the fastest\n" << table.out;
  auto csv = View({"summary", (dir / "w/dfx_outputs").string(), "--format", "csv"}, dir / "w");
  EXPECT_EQ(Count(csv.out, "\n"), 10u) << "every rank in the CSV\n" << csv.out;
  fs::remove_all(dir);
}

TEST(SummaryTest, ExportsEveryTaskRowToCsvAndSqlite) {
  const fs::path out = StragglerRun() / "dfx_outputs";
  const fs::path csv_path = StragglerRun() / "tasks.csv";
  auto csv = View({"export", "--run", out.string(), "-o", csv_path.string()}, StragglerRun());
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_NE(csv.out.find("48 task row(s) of 12 dispatch(es)"), std::string::npos) << csv.out;
  const std::string text = Slurp(csv_path);
  ASSERT_EQ(Count(text, "\n"), static_cast<size_t>(kRowsPerDispatch * kDispatches + 1));
  const std::string header = text.substr(0, text.find('\n'));
  EXPECT_EQ(header.rfind("rank,dispatch,program,task_id,task,func_id,kernel,core_id,core_type,"
                         "start_us,end_us,dispatch_us,finish_us,exec_us,pmu_total_cycles,",
                         0),
            0u)
      << header;
  EXPECT_EQ(Count(text, ",slow,"), static_cast<size_t>(3 * kRowsPerDispatch));
  EXPECT_EQ(Count(text, ",spin,"), static_cast<size_t>(2 * kDispatches));
  for (const std::string& p : Tree(StragglerRun())) {
    EXPECT_EQ(p.find(".tmp."), std::string::npos) << p;
  }

  const fs::path db_path = StragglerRun() / "tasks.sqlite";
  auto sql =
      View({"export", out.string(), "--format", "sqlite", "-o", db_path.string()}, StragglerRun());
  ASSERT_EQ(sql.exit_code, 0) << sql.err;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto count = [&](const char* query) {
    sqlite3_stmt* st = nullptr;
    int64_t n = -1;
    if (sqlite3_prepare_v2(db, query, -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      n = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return n;
  };
  EXPECT_EQ(count("SELECT COUNT(*) FROM tasks"), kRowsPerDispatch * kDispatches);
  EXPECT_EQ(count("SELECT COUNT(*) FROM dispatches"), kDispatches);
  EXPECT_EQ(count("SELECT SUM(rows) FROM dispatches"), kRowsPerDispatch * kDispatches);
  EXPECT_EQ(count("SELECT COUNT(*) FROM tasks WHERE pmu_total_cycles IS NULL"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM tasks WHERE dispatch_us IS NULL"), 0);
  // The question the export answers: rank 2's spin kernels are the long ones.
  EXPECT_EQ(count("SELECT rank FROM tasks WHERE kernel = 'spin' GROUP BY rank "
                  "ORDER BY SUM(exec_us) DESC LIMIT 1"),
            2);
  EXPECT_EQ(count("SELECT CAST(ROUND(SUM(exec_us)) AS INTEGER) FROM tasks WHERE rank = 2 AND "
                  "kernel = 'spin'"),
            3 * 2 * 90);
  sqlite3_close(db);
}

}  // namespace
}  // namespace dfx::e2e

namespace dfx::e2e {
namespace {

// The quickstart's command (scripts/quickstart.sh, README "Two commands"):
// 4 ranks x 3 dispatches, every collector on.
CommandResult Quickstart(const fs::path& work, const std::vector<std::string>& extra,
                         const std::vector<std::string>& env = {}) {
  std::vector<std::string> flags = {"--ranks",
                                    "4",
                                    "--launcher",
                                    "local",
                                    "--enable-chip-swimlane",
                                    "4",
                                    "--enable-dep-gen",
                                    "--dump-args",
                                    "1",
                                    "--enable-pmu",
                                    "2",
                                    "--enable-scope-stats"};
  flags.insert(flags.end(), extra.begin(), extra.end());
  return Coordinator(Source("examples/plans/l3_four_ranks.json"), work, flags, env, 300);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

TEST(ConsoleTest, QuickstartFitsOneScreenSummaryFirstVerdictLast) {
  fs::path dir = TestDir("console_quickstart");
  auto r = Quickstart(dir / "w", {});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto out = Lines(r.out), err = Lines(r.err);
  EXPECT_LT(out.size() + err.size(), 30u) << r.out << "---\n" << r.err;
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back().rfind("verdict: ok: 4 rank(s), 12 dispatch dir(s), ", 0), 0u) << r.out;
  // The summary comes first on stdout: its table, then its stragglers line.
  EXPECT_EQ(out.front().rfind("Summary of ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\nr3 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nstragglers: "), std::string::npos) << r.out;
  // The paths are in README.txt, each with its render command; none on the console.
  const std::string readme = Slurp(dir / "w/dfx_outputs/README.txt");
  EXPECT_NE(readme.find("dfx-view deps " + (dir / "w/dfx_outputs/rank3/d2/deps.json").string()),
            std::string::npos)
      << readme;
  EXPECT_EQ(r.out.find("rank3/d2/deps.json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("README.txt"), std::string::npos) << r.out;
  // Every log line, the agents' too, has one format: "[hh:mm:ss.mmm] [dfx-...] [level] ...".
  for (const std::string& line : err) {
    EXPECT_EQ(line.find("] [dfx-"), 13u) << line;
    EXPECT_NE(line.find("] [", 16), std::string::npos) << line;
  }
  EXPECT_EQ(Count(r.err, "] [dfx-coordinator] [info] session "), 1u) << r.err;
  fs::remove_all(dir);
}

TEST(ConsoleTest, QuietPrintsOnlyTheVerdictAndLogLevelGovernsEveryLine) {
  fs::path dir = TestDir("console_quiet");
  auto q = Quickstart(dir / "q", {"-q"});
  ASSERT_EQ(q.exit_code, 0) << q.out << q.err;
  ASSERT_EQ(Lines(q.out).size(), 1u) << q.out;
  EXPECT_EQ(q.out.rfind("verdict: ok: ", 0), 0u) << q.out;
  EXPECT_EQ(q.err, "");

  auto off = Quickstart(dir / "off", {"--log-level", "off"});
  ASSERT_EQ(off.exit_code, 0) << off.out << off.err;
  EXPECT_EQ(off.err, "");
  EXPECT_NE(off.out.find("verdict: ok"), std::string::npos);

  // $SPDLOG_LEVEL is honoured when no --log-level is given: debug shows one
  // line per dispatch; --log-level wins over it.
  auto debug = Quickstart(dir / "debug", {}, {"SPDLOG_LEVEL=debug"});
  ASSERT_EQ(debug.exit_code, 0) << debug.err;
  EXPECT_EQ(Count(debug.err, "[debug] rank "), 12u) << debug.err;
  auto beaten = Quickstart(dir / "beaten", {"--log-level", "error"}, {"SPDLOG_LEVEL=debug"});
  ASSERT_EQ(beaten.exit_code, 0) << beaten.err;
  EXPECT_EQ(beaten.err, "");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dfx::e2e
