// Hostile but ordinary inputs (issue 46, cases 2-5), end to end with the real
// dfx-coordinator and dfx-rank-agent on loopback: a typo after a good run
// leaves the good run's files; a stale directory that cannot be removed
// fails the run before it starts; a program larger than the machine is
// refused by its budget; FIFOs, devices and directories are refused by what
// they are; a pipe is read once.
#include <sys/stat.h>

#include <chrono>
#include <map>

#include "tests/dfx/dfx_test_util.h"

namespace dfx::e2e {
namespace {

const fs::path kVector = Source("examples/vector_pipeline.json");

std::vector<std::string> L3(int ranks) {
  return {"--ranks", std::to_string(ranks), "--launcher", "local"};
}

std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Every file under `dir` with its bytes.
std::map<std::string, std::string> Contents(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const std::string& f : Tree(dir)) out[f] = Slurp(dir / f);
  return out;
}

// The vector pipeline with its first tensor's dtype misspelt.
std::string TypoProgram() {
  std::string text = Slurp(kVector);
  const size_t at = text.find("\"FLOAT32\"");
  if (at != std::string::npos) text.replace(at, 9, "\"FLAOT32\"");
  return text;
}

// `n` FLOAT32 tensors of [16384, 16384] (1 GiB each), used by one copy.
std::string BigProgram(int n) {
  std::string tensors;
  for (int i = 0; i < n; ++i) {
    tensors += (i ? ", " : "") + std::string("{\"name\": \"t") + std::to_string(i) +
               "\", \"shape\": [16384, 16384], \"dtype\": \"FLOAT32\"}";
  }
  return R"({"name": "big",
  "kernels": [{"func_id": 0, "name": "copy", "core_type": "aiv", "op": "copy"}],
  "tensors": [)" +
         tensors + R"(],
  "orchestration": [{"submit": "copy", "args": [{"tensor": "t0", "type": "INPUT"},
                                                {"tensor": "t1", "type": "OUTPUT"}]}]})";
}

// MemAvailable in GiB (0 when unknown).
uint64_t AvailableGiB() {
  const std::string info = Slurp("/proc/meminfo");
  const size_t at = info.find("MemAvailable:");
  if (at == std::string::npos) return 0;
  return std::strtoull(info.c_str() + at + 13, nullptr, 10) >> 20;
}

// A typo after a good 4-rank run: refused before anything of the good run
// is touched, naming the file, the place and what is accepted.
TEST(InputsTest, TypoAfterAGoodRunLeavesTheGoodRunsFiles) {
  fs::path dir = TestDir("inputs_typo");
  const fs::path work = dir / "w";
  const std::vector<std::string> flags = With(L3(4), {"--enable-dep-gen"});
  auto good = Coordinator(kVector, work, flags);
  ASSERT_EQ(good.exit_code, 0) << good.err;
  const auto before = Contents(work / "dfx_outputs");
  ASSERT_TRUE(before.count("rank3/d0/deps.json")) << "the good run's files";
  ASSERT_TRUE(before.count("run_manifest.json"));

  ASSERT_TRUE(WriteFileAtomic(dir / "typo.json", TypoProgram()).ok());
  auto typo = Coordinator(dir / "typo.json", work, flags);
  EXPECT_EQ(typo.exit_code, 2) << typo.err;
  EXPECT_NE(typo.err.find("typo.json: at $.tensors[0].dtype"), std::string::npos) << typo.err;
  EXPECT_NE(typo.err.find("FLAOT32"), std::string::npos) << typo.err;
  EXPECT_NE(typo.err.find("FLOAT16"), std::string::npos) << "what is accepted: " << typo.err;
  EXPECT_NE(typo.err.find("nothing of an earlier run was touched"), std::string::npos) << typo.err;
  EXPECT_EQ(Contents(work / "dfx_outputs"), before) << "every file of the good run, unchanged";
  // An L2 run of the typo in the same work dir (an L2 run replaces an L3
  // run's records, l2_manifest.h) leaves them too.
  auto l2_over_l3 = Coordinator(dir / "typo.json", work, {"--enable-dep-gen"});
  EXPECT_NE(l2_over_l3.exit_code, 0);
  EXPECT_NE(l2_over_l3.err.find("typo.json: at $.tensors[0].dtype"), std::string::npos)
      << l2_over_l3.err;
  EXPECT_EQ(Contents(work / "dfx_outputs"), before) << "the L3 run's files, after an L2 typo";

  // L2 too: its outputs are flat in dfx_outputs/ and stay as they were.
  const fs::path l2 = dir / "l2";
  ASSERT_EQ(Coordinator(kVector, l2, {"--enable-dep-gen"}).exit_code, 0);
  const auto l2_before = Contents(l2 / "dfx_outputs");
  ASSERT_TRUE(l2_before.count("deps.json"));
  auto l2_typo = Coordinator(dir / "typo.json", l2, {"--enable-dep-gen"});
  EXPECT_NE(l2_typo.exit_code, 0);
  EXPECT_NE(l2_typo.err.find("typo.json: at $.tensors[0].dtype"), std::string::npos) << l2_typo.err;
  EXPECT_EQ(Contents(l2 / "dfx_outputs"), l2_before);
  fs::remove_all(dir);
}

// The two ways to make a stale directory that the coordinator cannot remove.
// As root (CI): a tmpfs mounted inside it, in a private mount namespace the
// test makes (`unshare -m`; the mount ends with the namespace), so removal
// fails with EBUSY for root too. Where that is not permitted (a container
// without CAP_SYS_ADMIN, where `chattr +i` fails as well): the coordinator
// runs as an unprivileged user (`setpriv` to uid 65534) that owns the work
// dir, and the stale directory is root's with mode 0755 (EACCES).
enum class Undeletable { kMountPoint, kOtherOwner };

struct StaleCase {
  std::vector<std::string> prefix;  // what runs the coordinator
  std::string reason;               // strerror of the removal
};

std::optional<StaleCase> MakeUndeletable(Undeletable how, const fs::path& work,
                                         const fs::path& stale, const fs::path& logs) {
  fs::create_directories(stale / "busy");
  if (!WriteFileAtomic(stale / "deps.json", "{}").ok()) return std::nullopt;
  if (how == Undeletable::kMountPoint) {
    if (RunCommand({"unshare", "-m", "true"}, logs, 30).exit_code != 0) return std::nullopt;
    return StaleCase{{"unshare", "-m", "sh", "-c", "mount -t tmpfs dfx-test \"$0\" && exec \"$@\"",
                      (stale / "busy").string()},
                     "Device or resource busy"};
  }
  const std::vector<std::string> as_nobody = {"setpriv", "--reuid=65534", "--regid=65534",
                                              "--clear-groups"};
  std::vector<std::string> probe = as_nobody;
  probe.push_back(Bin("dfx-coordinator"));
  probe.push_back("--version");
  if (RunCommand(probe, logs, 30).exit_code != 0) return std::nullopt;  // cannot reach the binary
  if (RunCommand({"chown", "-R", "65534:65534", work.string()}, logs, 30).exit_code != 0 ||
      RunCommand({"chown", "-R", "0:0", stale.string()}, logs, 30).exit_code != 0) {
    return std::nullopt;
  }
  fs::permissions(stale, fs::perms(0755));
  return StaleCase{as_nobody, "Permission denied"};
}

TEST(InputsTest, AStaleDirectoryThatCannotBeRemovedFailsTheRunBeforeItStarts) {
  int tried = 0;
  for (Undeletable how : {Undeletable::kMountPoint, Undeletable::kOtherOwner}) {
    fs::path dir = TestDir("inputs_stale");
    const fs::path work = dir / "w";
    const std::vector<std::string> flags = With(L3(2), {"--enable-dep-gen"});
    auto good = Coordinator(kVector, work, flags);
    ASSERT_EQ(good.exit_code, 0) << good.err;
    const auto before = Contents(work / "dfx_outputs");
    // An earlier run's rank0/d5 that cannot be removed.
    const fs::path stale = work / "dfx_outputs/rank0/d5";
    auto c = MakeUndeletable(how, work, stale, dir / "logs");
    if (!c) continue;
    ++tried;
    std::printf("stale directory made undeletable by %s: %s\n", c->prefix.front().c_str(),
                c->reason.c_str());
    std::vector<std::string> argv = c->prefix;
    for (const std::string& a : {Bin("dfx-coordinator"), std::string("run"), kVector.string(),
                                 std::string("--work-dir"), work.string()}) {
      argv.push_back(a);
    }
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto r = RunCommand(argv, dir / "logs", 240);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.err.find(stale.string() + ": the earlier run's dispatch directory cannot be " +
                         "removed (" + c->reason),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.out.find("verdict: FAILED"), std::string::npos) << r.out;
    // Nothing ran: no dispatch of this run reached an agent.
    Json m = LoadJson(work / "dfx_outputs/run_manifest.json");
    ASSERT_TRUE(m.is_object());
    EXPECT_EQ(m["status"], "failed") << m.dump();
    for (const auto& d : m["dispatches"]) EXPECT_NE(d["status"], "ok") << d.dump();
    // Checked before anything was removed: the earlier run's dispatch
    // directories are all still there, and none is reported as this run's.
    const auto after = Contents(work / "dfx_outputs");
    for (const auto& [file, bytes] : before) {
      if (file.rfind("rank", 0) != 0) continue;  // the manifest and listings are this run's
      EXPECT_EQ(after.count(file) ? after.at(file) : "<removed>", bytes) << file;
    }
    EXPECT_EQ(r.out.find("artifacts:"), std::string::npos) << r.out;
    fs::remove_all(dir);
  }
  if (tried == 0) GTEST_SKIP() << "neither unshare -m nor setpriv to uid 65534 works here";
}

// 30 GiB of tensors: refused by the budget at load, at L2 (the exec child)
// and at L3 (the coordinator's pre-check, before any agent starts), by a
// message naming the total, the limit and the largest tensors; quickly
// (the issue asks for under a second; bounded generously here, the
// measured time is printed).
TEST(InputsTest, ThirtyGiBOfTensorsAreRefusedByTheBudgetAtL2AndL3) {
  fs::path dir = TestDir("inputs_big");
  // On a host with 30 GiB free the chip model's 64 GiB refuses instead.
  const int n = AvailableGiB() < 29 ? 30 : 66;
  ASSERT_TRUE(WriteFileAtomic(dir / "big.json", BigProgram(n)).ok());
  for (const bool l3 : {false, true}) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = Coordinator(dir / "big.json", dir / (l3 ? "l3" : "l2"),
                         l3 ? L3(2) : std::vector<std::string>{});
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s: refused in %.3f s\n", l3 ? "L3" : "L2", s);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_TRUE(r.exit_code == 1 || r.exit_code == 2) << "an exit, not a signal: " << r.exit_code;
    EXPECT_NE(r.err.find(n == 30 ? "needs 30.2 GiB of host memory" : "of device memory"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("largest tensors: t0 [16384,16384] FLOAT32 1.0 GiB"), std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("signal"), std::string::npos) << r.err;
    EXPECT_LT(s, 5.0) << "refused before anything is allocated";
    if (l3) EXPECT_FALSE(fs::exists(dir / "l3/.dfx_spool")) << "no agent was started";
  }
  // Under mpirun the agents may run on other hosts: the pre-check leaves
  // their memory to them, and each refuses the dispatch by its budget before
  // allocating, by name, not by a signal.
  if (n == 30) {
    auto r = Coordinator(dir / "big.json", dir / "mpi",
                         {"--ranks", "2", "--launcher", "mpirun", "--enable-dep-gen"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("rank 1 d0 (big) failed: big: needs 30.2 GiB of host memory"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("signal"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("connection closed"), std::string::npos) << r.err;
  }
  fs::remove_all(dir);
}

TEST(InputsTest, FifosDevicesAndDirectoriesAreRefusedByWhatTheyAre) {
  fs::path dir = TestDir("inputs_special");
  ASSERT_EQ(::mkfifo((dir / "fifo.json").c_str(), 0600), 0);
  auto fifo = Coordinator(dir / "fifo.json", dir / "w", {}, {}, 20);
  EXPECT_FALSE(fifo.timed_out) << "a FIFO is refused at once, not waited on";
  EXPECT_EQ(fifo.exit_code, 2);
  EXPECT_NE(fifo.err.find("fifo.json is a FIFO (named pipe); give a regular file"),
            std::string::npos)
      << fifo.err;
  // A plan naming a FIFO as its program: refused where the plan names it.
  ASSERT_TRUE(WriteFileAtomic(dir / "plan.json",
                              R"({"programs": {"p": "fifo.json"}, "steps": [{"program": "p"}]})")
                  .ok());
  auto plan = Coordinator(dir / "plan.json", dir / "w", L3(1), {}, 20);
  EXPECT_FALSE(plan.timed_out);
  EXPECT_EQ(plan.exit_code, 2);
  EXPECT_NE(plan.err.find("plan.json: at $.programs.p: program file"), std::string::npos)
      << plan.err;
  EXPECT_NE(plan.err.find("is a FIFO"), std::string::npos) << plan.err;

  auto zero = Coordinator("/dev/zero", dir / "w", {}, {}, 20);
  EXPECT_FALSE(zero.timed_out) << "/dev/zero is not read";
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("/dev/zero is a character device; give a regular file"),
            std::string::npos)
      << zero.err;

  auto directory = Coordinator(dir, dir / "w", {}, {}, 20);
  EXPECT_EQ(directory.exit_code, 2);
  EXPECT_NE(directory.err.find(dir.string() + " is a directory; give a regular file"),
            std::string::npos)
      << directory.err;
  EXPECT_EQ(directory.err.find("does not exist"), std::string::npos) << directory.err;
  fs::remove_all(dir);
}

// One size limit for L2 and L3: what L3 can send in a Dispatch.
TEST(InputsTest, OneSizeLimitForL2AndL3) {
  fs::path dir = TestDir("inputs_size");
  std::string text = Slurp(kVector);
  text.append((33u << 20) - text.size(), ' ');  // 33 MiB: valid JSON, too large
  ASSERT_TRUE(WriteFileAtomic(dir / "padded.json", text).ok());
  for (const bool l3 : {false, true}) {
    auto r = Coordinator(dir / "padded.json", dir / "w", l3 ? L3(1) : std::vector<std::string>{},
                         {}, 60);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("34603008 bytes; an input file may hold at most 33554432 bytes"),
              std::string::npos)
        << r.err;
  }
  fs::remove_all(dir);
}

// `run <(cat program.json)`: the coordinator reads the pipe once.
TEST(InputsTest, AProcessSubstitutionWorksAtL2AndL3) {
  fs::path dir = TestDir("inputs_pipe");
  for (const bool l3 : {false, true}) {
    const fs::path work = dir / (l3 ? "l3" : "l2");
    const std::string script =
        std::string("exec \"$0\" run <(cat \"$1\") --work-dir \"$2\" --enable-dep-gen") +
        (l3 ? " --ranks 2 --launcher local" : "");
    auto r =
        RunCommand({"bash", "-c", script, Bin("dfx-coordinator"), kVector.string(), work.string()},
                   dir / "logs", 240);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("verdict: ok"), std::string::npos) << r.out;
    if (l3) {
      EXPECT_TRUE(fs::exists(work / "dfx_outputs/rank1/d0/deps.json"));
    } else {
      EXPECT_TRUE(fs::exists(work / "dfx_outputs/deps.json"));
      EXPECT_FALSE(fs::exists(work / ".dfx_program.json")) << "the copy of the pipe is removed";
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dfx::e2e
