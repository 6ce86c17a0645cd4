#include "config/run_config.h"

#include <gtest/gtest.h>

namespace dfx::config {
namespace {

Result<ParsedRunConfig> Parse(std::vector<std::string> args,
                              std::vector<std::string>* rest = nullptr) {
  auto r = ParseRunConfigFlags(args);
  if (rest != nullptr) *rest = args;
  return r;
}

bool Contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

TEST(RunConfigFlags, SwimlaneLevelOutOfRangeNamesTheRange) {
  auto r = Parse({"--chip-swimlane-level", "7"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Contains(r.status().message(), "--chip-swimlane-level")) << r.status().message();
  EXPECT_TRUE(Contains(r.status().message(), "7"));
  EXPECT_TRUE(Contains(r.status().message(), "0–4"));
  EXPECT_TRUE(Contains(r.status().message(), "[0, 4]"));
}

TEST(RunConfigFlags, SwimlaneLevelNotAnInteger) {
  auto r = Parse({"--chip-swimlane-level=x"});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "not an integer"));
}

TEST(RunConfigFlags, PlatformIsDeprecatedButAccepted) {
  auto r = Parse({"--platform", "a2a3sim"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->config.backend_type, BackendType::kA2A3);
  EXPECT_EQ(r->config.execution_mode, ExecutionMode::kSim);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_EQ(r->warnings[0],
            "--platform a2a3sim is deprecated; use --backend-type a2a3 --execution-mode sim");
}

TEST(RunConfigFlags, PlatformMapsAllFour) {
  struct Case {
    const char* platform;
    BackendType b;
    ExecutionMode m;
  } cases[] = {{"a2a3sim", BackendType::kA2A3, ExecutionMode::kSim},
               {"a2a3", BackendType::kA2A3, ExecutionMode::kOnboard},
               {"a5sim", BackendType::kA5, ExecutionMode::kSim},
               {"a5", BackendType::kA5, ExecutionMode::kOnboard}};
  for (const auto& c : cases) {
    auto r = Parse({"--platform=" + std::string(c.platform)});
    ASSERT_TRUE(r.ok()) << c.platform;
    EXPECT_EQ(r->config.backend_type, c.b);
    EXPECT_EQ(r->config.execution_mode, c.m);
    EXPECT_EQ(PlatformName(c.b, c.m), c.platform);
  }
}

TEST(RunConfigFlags, PlatformInconsistentWithBackendIsAnError) {
  auto r = Parse({"--platform", "a5sim", "--backend-type", "a2a3"});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "a5sim"));
  EXPECT_TRUE(Contains(r.status().message(), "--backend-type a2a3"));
  auto r2 = Parse({"--platform", "a5sim", "--execution-mode", "onboard"});
  ASSERT_FALSE(r2.ok());
  // Consistent spelling is allowed but still warns.
  auto ok = Parse({"--platform", "a5", "--backend-type", "a5", "--execution-mode", "onboard"});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->warnings.size(), 1u);
}

TEST(RunConfigFlags, UnknownPlatformListsAllowed) {
  auto r = Parse({"--platform", "a3"});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "a2a3sim, a2a3, a5sim, a5"));
  auto b = Parse({"--backend-type", "a9"});
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(Contains(b.status().message(), "a2a3, a5"));
}

TEST(RunConfigFlags, BareFlagsAndOptionalValues) {
  std::vector<std::string> rest;
  auto r = Parse({"--enable-chip-swimlane", "tests/", "--dump-args", "--enable-pmu",
                  "--enable-dep-gen", "--enable-scope-stats", "prog.json"},
                 &rest);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->config.enable_chip_swimlane, 4);
  EXPECT_EQ(r->config.enable_dump_args, 1);
  EXPECT_EQ(r->config.enable_pmu, 2);
  EXPECT_TRUE(r->config.enable_dep_gen);
  EXPECT_TRUE(r->config.enable_scope_stats);
  EXPECT_TRUE(r->config.save_kernels) << "any DFX flag forces save_kernels";
  EXPECT_EQ(rest, (std::vector<std::string>{"tests/", "prog.json"}));
}

// What users type: a word after a flag whose value is optional is its value
// unless it is the program / plan file; a bad value names what is allowed.
TEST(RunConfigFlags, AWordAfterAnOptionalValueFlagIsItsValueUnlessItIsTheFile) {
  auto pmu = Parse({"--enable-pmu", "abc", "plan.json"});
  ASSERT_FALSE(pmu.ok());
  EXPECT_TRUE(Contains(pmu.status().message(),
                       "--enable-pmu abc: not an integer; allowed: 0 (off) "
                       "or a PMU event type: 1, 2, 4, 5, 6, 7, 8"))
      << pmu.status().message();
  for (const char* flag : {"--dump-args", "--enable-chip-swimlane"}) {
    auto r = Parse({flag, "full"});
    ASSERT_FALSE(r.ok()) << flag;
    EXPECT_TRUE(Contains(r.status().message(), std::string(flag) + " full: not an integer"));
  }
  std::vector<std::string> rest;
  auto file = Parse({"--enable-pmu", "plan.json", "--ranks", "2"}, &rest);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->config.enable_pmu, 2);
  EXPECT_EQ(rest, (std::vector<std::string>{"plan.json", "--ranks", "2"}));
}

TEST(RunConfigFlags, EnableChipSwimlaneTakesAnOptionalLevel) {
  // The issue's acceptance command: `--enable-chip-swimlane 4 --enable-dep-gen ...`.
  std::vector<std::string> rest;
  auto r = Parse({"--enable-chip-swimlane", "2", "prog.json", "--enable-dep-gen"}, &rest);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->config.enable_chip_swimlane, 2);
  EXPECT_EQ(rest, (std::vector<std::string>{"prog.json"}));
  auto bad = Parse({"--enable-chip-swimlane", "7"});
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(Contains(bad.status().message(), "0–4")) << bad.status().message();
}

TEST(RunConfigFlags, OptionalValuesTakeNextIntegerOnly) {
  std::vector<std::string> rest;
  auto r = Parse({"--dump-args", "3", "--enable-pmu", "4", "x"}, &rest);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->config.enable_dump_args, 3);
  EXPECT_EQ(r->config.enable_pmu, 4);
  EXPECT_EQ(rest, std::vector<std::string>{"x"});
  auto eq = Parse({"--dump-args=2", "--enable-pmu=8"});
  ASSERT_TRUE(eq.ok());
  EXPECT_EQ(eq->config.enable_dump_args, 2);
  EXPECT_EQ(eq->config.enable_pmu, 8);
}

TEST(RunConfigFlags, PmuTypeThreeIsRefusedWithTheValidList) {
  for (const char* bad : {"3", "9"}) {
    auto r = Parse({"--enable-pmu", bad});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(Contains(r.status().message(), "--enable-pmu " + std::string(bad)));
    EXPECT_TRUE(Contains(r.status().message(), "1, 2, 4, 5, 6, 7, 8")) << r.status().message();
  }
}

TEST(RunConfigFlags, DumpLevelOutOfRange) {
  auto r = Parse({"--dump-args", "4"});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "--dump-args 4"));
  EXPECT_TRUE(Contains(r.status().message(), "3 (hybrid)"));
}

TEST(RunConfigFlags, SwimlanePrecedence) {
  auto r = Parse({"--enable-l2-swimlane", "--enable-chip-swimlane", "--chip-swimlane-level", "2"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->config.enable_chip_swimlane, 2);
  auto r2 = Parse({"--chip-swimlane-level", "1", "--enable-chip-swimlane"});
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->config.enable_chip_swimlane, 1);
  auto l2 = Parse({"--enable-l2-swimlane"});
  ASSERT_TRUE(l2.ok());
  EXPECT_EQ(l2->config.enable_chip_swimlane, 4);
  ASSERT_EQ(l2->warnings.size(), 1u);
  EXPECT_TRUE(Contains(l2->warnings[0], "--enable-chip-swimlane"));
}

TEST(RunConfigFlags, RingSizing) {
  auto r = Parse(
      {"--ring-task-window", "64", "--ring-heap", "1048576,0,4096,4096", "--ring-dep-pool=8"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->config.rings.task_window, (std::array<uint64_t, 4>{64, 64, 64, 64}));
  EXPECT_EQ(r->config.rings.heap, (std::array<uint64_t, 4>{1048576, 0, 4096, 4096}));
  EXPECT_EQ(r->config.rings.dep_pool, (std::array<uint64_t, 4>{8, 8, 8, 8}));

  auto heap = Parse({"--ring-heap", "1000"});
  ASSERT_FALSE(heap.ok());
  EXPECT_TRUE(
      Contains(heap.status().message(), "ring_heap must be a power of 2 >= 1024 (bytes per ring)"));
  EXPECT_EQ(heap.status().message(),
            "--ring-heap: ring_heap must be a power of 2 >= 1024 (bytes per ring), got 1000");
  auto per_ring = Parse({"--ring-heap", "1024,0,1000,1024"});
  ASSERT_FALSE(per_ring.ok());
  EXPECT_TRUE(Contains(per_ring.status().message(), "got 1000 (ring 2)"))
      << per_ring.status().message();
  EXPECT_FALSE(Parse({"--ring-task-window", "6"}).ok());
  EXPECT_FALSE(Parse({"--ring-task-window", "2"}).ok());
  EXPECT_FALSE(Parse({"--ring-dep-pool", "3"}).ok());
  EXPECT_FALSE(Parse({"--ring-dep-pool", "2147483648"}).ok());
  EXPECT_TRUE(Parse({"--ring-dep-pool", "2147483647"}).ok());
  auto zero = Parse({"--ring-heap", "0"});
  ASSERT_FALSE(zero.ok());
  EXPECT_TRUE(Contains(zero.status().message(), "must not be 0"));
  auto three = Parse({"--ring-heap", "1024,1024,1024"});
  ASSERT_FALSE(three.ok());
  EXPECT_TRUE(Contains(three.status().message(), "exactly 4"));
}

TEST(RunConfigFlags, WorkDirThreadsAndSaveKernels) {
  // --work-dir is the binary's flag (where the session writes), not a
  // RunConfig field: the parser leaves it, with its value, for the caller.
  std::vector<std::string> rest;
  auto r = Parse({"--work-dir", "/tmp/w", "--aicpu-thread-num", "3", "--save-kernels"}, &rest);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(rest, (std::vector<std::string>{"--work-dir", "/tmp/w"}));
  EXPECT_EQ(r->config.aicpu_thread_num, 3);
  EXPECT_TRUE(r->config.save_kernels);
  auto missing = Parse({"--aicpu-thread-num"});
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status().message(), "--aicpu-thread-num: missing value"));
}

TEST(RunConfigValidate, NamesFieldAndRange) {
  RunConfig c;
  c.enable_chip_swimlane = 5;
  EXPECT_TRUE(Contains(c.Validate().message(), "enable_chip_swimlane"));
  c.enable_chip_swimlane = 0;
  c.enable_pmu = 3;
  EXPECT_TRUE(Contains(c.Validate().message(), "1, 2, 4, 5, 6, 7, 8"));
  c.enable_pmu = 0;
  c.rings.heap[2] = 1000;
  EXPECT_TRUE(Contains(c.Validate().message(), "ring_heap"));
  c.rings.heap[2] = 0;
  EXPECT_TRUE(c.Validate().ok());
  EXPECT_FALSE(c.AnyDfx());
  c.Normalize();
  EXPECT_FALSE(c.save_kernels);
}

TEST(RunConfigJson, RoundTrip) {
  RunConfig c;
  c.backend_type = BackendType::kA5;
  c.execution_mode = ExecutionMode::kOnboard;
  c.enable_chip_swimlane = 3;
  c.enable_dep_gen = true;
  c.enable_dump_args = 3;
  c.enable_pmu = 7;
  c.enable_scope_stats = true;
  c.save_kernels = true;
  c.aicpu_thread_num = 4;
  c.rings.task_window = {16, 0, 8, 8};
  c.rings.heap = {1 << 20, 1 << 20, 0, 1024};
  c.rings.dep_pool = {4, 5, 6, 7};
  Json j = RunConfigToJson(c);
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "backend_type", "execution_mode", "enable_chip_swimlane", "enable_dep_gen",
                      "enable_dump_args", "enable_pmu", "enable_scope_stats", "save_kernels",
                      "aicpu_thread_num", "ring_task_window", "ring_heap", "ring_dep_pool"}));
  auto back = RunConfigFromJson(j, "plan.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->warnings.empty());
  EXPECT_EQ(RunConfigToJson(back->config), j);
}

TEST(RunConfigJson, TrueMeansFourAndFloatIsATypeError) {
  auto r = RunConfigFromJson(Json::parse(R"({"enable_chip_swimlane": true})"), "p.json");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->config.enable_chip_swimlane, 4);
  EXPECT_TRUE(r->config.save_kernels);
  auto f = RunConfigFromJson(Json::parse(R"({"enable_chip_swimlane": 2.0})"), "p.json", "$.config");
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(Contains(f.status().message(), "p.json")) << f.status().message();
  EXPECT_TRUE(Contains(f.status().message(), "$.config.enable_chip_swimlane"));
  EXPECT_TRUE(Contains(f.status().message(), "type error"));
  auto s = RunConfigFromJson(Json::parse(R"({"enable_chip_swimlane": "x"})"), "p.json");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.status().message(), "type error"));
  auto big = RunConfigFromJson(Json::parse(R"({"enable_chip_swimlane": 5})"), "p.json");
  ASSERT_FALSE(big.ok());
  EXPECT_TRUE(Contains(big.status().message(), "[0, 4]"));
}

TEST(RunConfigJson, LegacyKeys) {
  auto r =
      RunConfigFromJson(Json::parse(R"({"platform": "a5sim", "enable_l2_swimlane": 2})"), "p.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->config.backend_type, BackendType::kA5);
  EXPECT_EQ(r->config.execution_mode, ExecutionMode::kSim);
  EXPECT_EQ(r->config.enable_chip_swimlane, 2);
  ASSERT_EQ(r->warnings.size(), 2u);
  EXPECT_TRUE(Contains(r->warnings[0], "use --backend-type a5 --execution-mode sim"));
  EXPECT_TRUE(Contains(r->warnings[1], "enable_chip_swimlane"));

  auto both = RunConfigFromJson(
      Json::parse(R"({"enable_l2_swimlane": true, "enable_chip_swimlane": 4})"), "p.json");
  ASSERT_FALSE(both.ok());
  EXPECT_TRUE(Contains(both.status().message(), "enable_l2_swimlane"));

  auto clash =
      RunConfigFromJson(Json::parse(R"({"platform": "a2a3", "execution_mode": "sim"})"), "p.json");
  ASSERT_FALSE(clash.ok());
  EXPECT_TRUE(Contains(clash.status().message(), "contradicts"));
}

TEST(RunConfigJson, UnknownKeyAndBadRing) {
  auto r = RunConfigFromJson(Json::parse(R"({"enable_swimlane": 1})"), "plan.json", "$.steps[0]");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.status().message(), "plan.json"));
  EXPECT_TRUE(Contains(r.status().message(), "\"enable_swimlane\""));
  EXPECT_TRUE(Contains(r.status().message(), "$.steps[0].enable_swimlane"));

  auto heap = RunConfigFromJson(Json::parse(R"({"ring_heap": 1000})"), "p.json");
  ASSERT_FALSE(heap.ok());
  EXPECT_TRUE(
      Contains(heap.status().message(), "ring_heap must be a power of 2 >= 1024 (bytes per ring)"));
  EXPECT_FALSE(RunConfigFromJson(Json::parse(R"({"ring_heap": true})"), "p").ok());
  EXPECT_FALSE(RunConfigFromJson(Json::parse(R"({"ring_heap": [1024, 1024]})"), "p").ok());
  EXPECT_FALSE(RunConfigFromJson(Json::parse(R"({"ring_task_window": 0})"), "p").ok());
  auto list = RunConfigFromJson(Json::parse(R"({"ring_task_window": [0, 8, 0, 4]})"), "p");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->config.rings.task_window, (std::array<uint64_t, 4>{0, 8, 0, 4}));
  auto pmu = RunConfigFromJson(Json::parse(R"({"enable_pmu": 3})"), "p");
  ASSERT_FALSE(pmu.ok());
  EXPECT_TRUE(Contains(pmu.status().message(), "1, 2, 4, 5, 6, 7, 8"));
}

}  // namespace
}  // namespace dfx::config
