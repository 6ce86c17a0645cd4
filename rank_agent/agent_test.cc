#include "rank_agent/agent.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/testing/page_cache.h"
#include "common/testing/temp_dirs.h"
#include "protocol/codec.h"
#include "rank_agent/exec.h"
#include "rank_agent/run_dispatch.h"

namespace dfx::rank_agent {
namespace {

namespace fs = std::filesystem;
using namespace dfx::protocol;

fs::path TempDir(const std::string& name) {
  return FreshTestDir("agent_test_" + std::to_string(::getpid()) + "_" + name);
}

std::string ProgramText() {
  auto text = ReadFile(fs::path(DFX_SOURCE_DIR) / "examples/vector_pipeline.json");
  return text.ok() ? *text : "";
}

// The coordinator's side of one agent, played by the test on a real
// ROUTER: what the agent sends, one message at a time (bounded wait), and
// messages to it in the given session.
class FakeCoordinator {
 public:
  FakeCoordinator(Context& context, uint64_t session)
      : router_(RouterChannel::Bind(context, "tcp://127.0.0.1:0")), session_(session) {}
  bool ok() const { return router_.ok(); }
  std::string endpoint() const { return router_->endpoint(); }
  // The next message from the agent (its routing identity is remembered).
  std::optional<Message> Next() {
    for (int i = 0; i < 600; ++i) {
      auto r = router_->Receive(50);
      if (r.ok() && r->frame) {
        auto m = Decode(r->frame->bytes);
        id_ = r->frame->identity;
        if (m.ok()) return *m;
      }
    }
    return std::nullopt;
  }
  // The next message if one arrives within `timeout_ms`.
  std::optional<Message> NextWithin(int timeout_ms) {
    auto r = router_->Receive(timeout_ms);
    if (!r.ok() || !r->frame) return std::nullopt;
    auto m = Decode(r->frame->bytes);
    if (!m.ok()) return std::nullopt;
    id_ = r->frame->identity;
    return *m;
  }
  // Options of a rank-0 agent of this coordinator's session.
  AgentOptions AgentFor(const fs::path& spool) const {
    AgentOptions options;
    options.coordinator = endpoint();
    options.session_id = session_;
    options.first_rank = 0;
    options.spool_root = spool;
    return options;
  }
  bool Send(Body body) {
    return router_->Send(id_, Message{Header{kProtocolVersion, session_, 0, ++seq_}, body}).ok();
  }

 private:
  Result<RouterChannel> router_;
  uint64_t session_;
  std::string id_;
  uint64_t seq_ = 0;
};

// A real agent of the fake coordinator's session, running on its own thread
// and past its HELLO (answered with a Heartbeat, which READY follows).
// Stop() shuts it down as the coordinator would; a test that ends early
// stops it on destruction.
class StartedAgent {
 public:
  StartedAgent(Context& context, FakeCoordinator& coordinator, const AgentOptions& options)
      : agent_(context, options),
        coordinator_(coordinator),
        thread_([this] { result_ = agent_.Run(); }) {
    said_hello_ = coordinator_.Next().has_value();
    if (said_hello_) coordinator_.Send(Heartbeat{1, 0, true});
  }
  ~StartedAgent() {
    if (thread_.joinable()) {
      agent_.Stop();
      thread_.join();
    }
  }
  bool said_hello() const { return said_hello_; }
  // Sends Shutdown; returns how the agent's Run() ended.
  Status Stop() {
    coordinator_.Send(Shutdown{"done"});
    thread_.join();
    return result_;
  }

 private:
  RankAgent agent_;
  FakeCoordinator& coordinator_;
  Status result_ = Status::Ok();
  bool said_hello_ = false;
  std::thread thread_;  // last: it runs agent_ and writes result_
};

// The bench of most tests here: a FakeCoordinator in session `session` and
// the options of an agent spooling under a fresh TempDir(name), removed at
// the end. Adjust options() (and prepare the spool), then Start() the
// agent; Stop() shuts it down as the coordinator would, and an agent not
// stopped is stopped on destruction.
class AgentBench {
 public:
  AgentBench(const std::string& name, uint64_t session)
      : dir_{TempDir(name)}, coordinator_(context_, session) {
    options_ = coordinator_.AgentFor(dir_.path / "spool");
  }
  AgentOptions& options() { return options_; }
  FakeCoordinator& coordinator() { return coordinator_; }
  // Starts the agent: true once it said HELLO.
  bool Start() {
    if (!coordinator_.ok()) return false;
    agent_.emplace(context_, coordinator_, options_);
    return agent_->said_hello();
  }
  // How the agent's Run() ended.
  Status Stop() { return agent_->Stop(); }

  // What came back for one dispatch (Run).
  struct Outcome {
    std::vector<std::string> bodies;  // in order; Ready, Heartbeat and Progress left out
    DispatchDone done;
    std::map<std::string, std::string> files;  // each artifact's bytes by name
    uint64_t round_trip_ns = 0;                // the send to the DispatchDone
    bool Has(const std::string& body) const {
      return std::find(bodies.begin(), bodies.end(), body) != bodies.end();
    }
  };
  // Sends `d` and reads until its DispatchDone and every artifact it
  // announces have come, crediting each chunk and acknowledging each file.
  Outcome Run(const Dispatch& d) {
    Outcome out;
    const auto sent = std::chrono::steady_clock::now();
    EXPECT_TRUE(coordinator_.Send(d));
    std::map<uint64_t, std::string> names, data;
    for (;;) {
      auto m = coordinator_.Next();
      if (!m) {
        ADD_FAILURE() << "no DispatchDone for d" << d.k;
        return out;
      }
      const Body& b = m->body;
      if (std::holds_alternative<Ready>(b) || std::holds_alternative<Heartbeat>(b) ||
          std::holds_alternative<Progress>(b)) {
        continue;
      }
      out.bodies.push_back(BodyName(b));
      if (auto* begin = std::get_if<ArtifactBegin>(&b)) names[begin->transfer_id] = begin->path;
      if (auto* chunk = std::get_if<ArtifactChunk>(&b)) {
        data[chunk->transfer_id] += chunk->data;
        EXPECT_TRUE(coordinator_.Send(Credit{1}));
      }
      if (auto* end = std::get_if<ArtifactEnd>(&b)) {
        out.files[names[end->transfer_id]] = data[end->transfer_id];
        EXPECT_TRUE(coordinator_.Send(ArtifactAck{end->transfer_id, true, ""}));
      }
      if (auto* done = std::get_if<DispatchDone>(&b)) {
        out.done = *done;
        out.round_trip_ns =
            static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::steady_clock::now() - sent)
                                      .count());
      }
      if (out.Has("dispatchDone") &&
          (out.done.status != DispatchStatus::kOk || out.files.size() == out.done.artifact_count)) {
        return out;
      }
    }
  }

 private:
  struct RemovedDir {
    fs::path path;
    ~RemovedDir() { fs::remove_all(path); }
  } dir_;  // first: removed once the agent is gone
  Context context_;
  FakeCoordinator coordinator_;
  AgentOptions options_;
  std::optional<StartedAgent> agent_;
};

// A real agent (real emulated chip) against a coordinator played by the test
// on a real ROUTER: HELLO, READY, a dispatch, streamed artifacts, acks, spool
// cleanup, Shutdown.
TEST(RankAgentTest, RunsADispatchAndStreamsItsArtifactsBack) {
  fs::path dir = TempDir("stream");
  Context context;
  auto router = RouterChannel::Bind(context, "tcp://127.0.0.1:0");
  ASSERT_TRUE(router.ok());
  AgentOptions options;
  options.coordinator = router->endpoint();
  options.session_id = 0x77;
  options.first_rank = 3;
  options.spool_root = dir / "spool";
  options.chunk_bytes = 64;  // many chunks: exercises credits
  RankAgent agent(context, options);
  Status result = Status::Ok();
  std::thread t([&] { result = agent.Run(); });

  auto next = [&]() -> std::optional<std::pair<std::string, Message>> {
    for (int i = 0; i < 600; ++i) {
      auto r = router->Receive(50);
      if (r.ok() && r->frame) {
        auto m = Decode(r->frame->bytes);
        if (m.ok()) return std::make_pair(r->frame->identity, *m);
      }
    }
    return std::nullopt;
  };
  auto hello = next();
  ASSERT_TRUE(hello.has_value());
  // "rank-3.<nonce>": derived from the first rank, unique per agent process.
  EXPECT_EQ(hello->first.rfind("rank-3.", 0), 0u) << hello->first;
  const std::string id = hello->first;
  ASSERT_TRUE(std::holds_alternative<Hello>(hello->second.body));
  EXPECT_EQ(std::get<Hello>(hello->second.body).ranks, std::vector<int32_t>{3});
  uint64_t seq = 0;
  auto send = [&](Body body) {
    ASSERT_TRUE(router->Send(id, Message{Header{kProtocolVersion, 0x77, 3, ++seq}, body}).ok());
  };
  send(Heartbeat{1, 0, true});
  bool ready = false, echoed = false;
  while (!(ready && echoed)) {
    auto m = next();
    ASSERT_TRUE(m.has_value());
    if (std::holds_alternative<Ready>(m->second.body)) ready = true;
    if (auto* hb = std::get_if<Heartbeat>(&m->second.body)) echoed |= hb->echo_clock_ns == 1;
  }
  send(Credit{2});
  config::RunConfig run_config;
  run_config.enable_dep_gen = true;
  run_config.enable_chip_swimlane = 2;
  run_config.save_kernels = true;
  send(Dispatch{0x77, 3, 0, "vec", ProgramText(), run_config, PassKind::kSingle});
  std::map<uint64_t, std::string> names, data;
  std::optional<DispatchDone> done;
  while (!done) {
    auto m = next();
    ASSERT_TRUE(m.has_value());
    Body& b = m->second.body;
    if (auto* begin = std::get_if<ArtifactBegin>(&b)) names[begin->transfer_id] = begin->path;
    if (auto* chunk = std::get_if<ArtifactChunk>(&b)) {
      EXPECT_EQ(chunk->offset, data[chunk->transfer_id].size());
      data[chunk->transfer_id] += chunk->data;
      send(Credit{1});
    }
    if (auto* end = std::get_if<ArtifactEnd>(&b)) {
      Checksum64 sum;
      sum.Update(data[end->transfer_id].data(), data[end->transfer_id].size());
      EXPECT_EQ(sum.Digest(), end->checksum) << names[end->transfer_id];
      send(ArtifactAck{end->transfer_id, true, ""});
    }
    if (auto* d = std::get_if<DispatchDone>(&b)) done = *d;
  }
  EXPECT_EQ(done->status, DispatchStatus::kOk) << done->error;
  EXPECT_EQ(done->artifact_count, names.size());
  std::set<std::string> got;
  for (auto& [transfer, n] : names) got.insert(n);
  EXPECT_EQ(got,
            (std::set<std::string>{"chip_swimlane_records.json", "deps.json", "name_map.json"}));
  send(Shutdown{"done"});
  t.join();
  EXPECT_TRUE(result.ok()) << result.ToString();
  // Acknowledged files are gone from the spool.
  EXPECT_FALSE(fs::exists(collectors::SessionSpoolDir(options.spool_root, 0x77) /
                          collectors::DispatchDirPath(3, 0) / collectors::kDepsFile));
  fs::remove_all(dir);
}

// A long dispatch reports tasks done / total while it runs, on a schedule
// (not once per task), so the coordinator can show live progress.
TEST(RankAgentTest, ItsChipsComeFromTheMakerItIsGiven) {
  AgentBench bench("chip_maker", 0x70);
  bench.options().make_chip =
      [](const device::ChipOptions&) -> Result<std::unique_ptr<device::Chip>> {
    return Internal("no device on this host");
  };
  ASSERT_TRUE(bench.Start()) << "HELLO goes before the chips are made";
  Status s = bench.Stop();
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "rank 0: no device on this host");
}

TEST(RankAgentTest, ReportsProgressWhileADispatchRuns) {
  AgentBench bench("progress", 0x78);
  FakeCoordinator& coordinator = bench.coordinator();
  ASSERT_TRUE(bench.Start());
  auto next = [&] { return coordinator.Next(); };
  auto send = [&](Body body) { ASSERT_TRUE(coordinator.Send(std::move(body))); };
  // busy.json: 4 dependent tasks of 0.5 s each.
  auto busy = ReadFile(fs::path(DFX_SOURCE_DIR) / "tests/l3/testdata/busy.json");
  ASSERT_TRUE(busy.ok());
  send(Dispatch{0x78, 0, 5, "busy", *busy, {}, PassKind::kSingle});
  std::vector<Progress> progress;
  std::optional<DispatchDone> done;
  std::optional<DispatchAccepted> accepted;
  size_t progress_after_accepted = 0;
  while (!done) {
    auto m = next();
    ASSERT_TRUE(m.has_value());
    if (auto* a = std::get_if<DispatchAccepted>(&m->body)) accepted = *a;
    if (auto* p = std::get_if<Progress>(&m->body)) {
      progress.push_back(*p);
      if (accepted) ++progress_after_accepted;
    }
    if (auto* d = std::get_if<DispatchDone>(&m->body)) done = *d;
  }
  EXPECT_EQ(done->status, DispatchStatus::kOk) << done->error;
  EXPECT_EQ(done->tasks_executed, 4u);
  // A DispatchAccepted is held back only briefly (20 ms), not for a long
  // dispatch's whole run, and says how long it was held.
  ASSERT_TRUE(accepted.has_value()) << "no DispatchAccepted";
  EXPECT_EQ(accepted->k, 5u);
  EXPECT_GE(accepted->held_ns, 20000000u);
  EXPECT_GT(progress_after_accepted, 0u) << "DispatchAccepted held until the dispatch ended";
  ASSERT_FALSE(progress.empty()) << "no Progress during a 2 s dispatch";
  EXPECT_LE(progress.size(), 5u) << "at most one Progress per value of tasks done (0..4)";
  uint64_t last = 0;
  for (const Progress& p : progress) {
    EXPECT_EQ(p.rank, 0);
    EXPECT_EQ(p.k, 5u);
    EXPECT_EQ(p.stage, "running");
    EXPECT_EQ(p.tasks_total, 4u);
    EXPECT_LE(p.tasks_done, 4u);
    EXPECT_GE(p.tasks_done, last) << "tasks done never goes back";
    last = p.tasks_done;
  }
  Status result = bench.Stop();
  EXPECT_TRUE(result.ok()) << result.ToString();
}

// A program is sent once: a later Dispatch of it carries only its hash and
// runs the agent's parsed copy, with the same artifacts (virtual clock:
// byte-identical); a hash the agent does not keep is answered
// program_unknown (nothing runs) and the dispatch sent again with its
// program runs.
TEST(RankAgentTest, ASecondDispatchOfAProgramTravelsWithoutItAndAMissAsksForIt) {
  AgentBench bench("by_hash", 0x79);
  FakeCoordinator& coordinator = bench.coordinator();
  AgentOptions& options = bench.options();
  options.chip.virtual_clock = true;
  ASSERT_TRUE(bench.Start());
  ASSERT_TRUE(coordinator.Send(Credit{1000}));
  using Outcome = AgentBench::Outcome;
  auto run = [&](const Dispatch& d) { return bench.Run(d); };
  config::RunConfig run_config;
  run_config.enable_dep_gen = true;
  run_config.enable_chip_swimlane = 4;
  run_config.save_kernels = true;
  const std::string text = ProgramText();
  Dispatch with_program{
      0x79, 0, 0, "vec", text, run_config, PassKind::kSingle, "vec.json", ProgramHash(text)};
  Outcome first = run(with_program);
  ASSERT_EQ(first.done.status, DispatchStatus::kOk) << first.done.error;

  Dispatch by_hash = with_program;
  by_hash.k = 1;
  by_hash.program_json.clear();
  Outcome second = run(by_hash);
  ASSERT_EQ(second.done.status, DispatchStatus::kOk) << second.done.error;
  EXPECT_EQ(second.done.tasks_executed, first.done.tasks_executed);
  ASSERT_EQ(second.files.size(), 3u);
  EXPECT_EQ(second.files, first.files) << "the kept program ran differently";

  // Another name is another key: unknown, nothing accepted, nothing run.
  Dispatch unknown = by_hash;
  unknown.k = 2;
  unknown.program_name = "other";
  Outcome miss = run(unknown);
  EXPECT_EQ(miss.done.status, DispatchStatus::kProgramUnknown);
  EXPECT_FALSE(miss.Has("dispatchAccepted"));
  EXPECT_TRUE(miss.files.empty());
  EXPECT_FALSE(fs::exists(collectors::SessionSpoolDir(options.spool_root, 0x79) /
                          collectors::DispatchDirPath(0, 2)));
  // Sent again with its program, it runs.
  unknown.program_json = text;
  Outcome resent = run(unknown);
  EXPECT_EQ(resent.done.status, DispatchStatus::kOk) << resent.done.error;
  EXPECT_TRUE(resent.Has("dispatchAccepted"));

  Status result = bench.Stop();
  EXPECT_TRUE(result.ok()) << result.ToString();
}

// One task on small tensors: small enough to run on the agent's event loop
// (rank_agent::RunsInline).
constexpr const char* kOneTaskProgram = R"({"name": "tiny",
  "kernels": [{"func_id": 0, "name": "add", "core_type": "aiv", "op": "add"}],
  "tensors": [{"name": "a", "shape": [16], "dtype": "FLOAT32", "init": {"range": [0.0, 1.0]}},
              {"name": "b", "shape": [16], "dtype": "FLOAT32"}],
  "orchestration": [{"submit": "add", "args": [{"tensor": "a", "type": "INPUT"},
                     {"tensor": "a", "type": "INPUT"}, {"tensor": "b", "type": "OUTPUT"}]}]})";

// A short dispatch with nothing to stream answers with one message: its
// DispatchDone says it was accepted, and how long before (no
// DispatchAccepted crosses the wire). A small program runs on the event
// loop from its first dispatch on (it is read there), so this holds however
// slow the machine. One with artifacts still says DispatchAccepted before
// its first ArtifactBegin.
TEST(RankAgentTest, AShortDispatchWithoutArtifactsAnswersWithItsDoneAlone) {
  AgentBench bench("folded_accept", 0x7a);
  ASSERT_TRUE(bench.Start());
  ASSERT_TRUE(bench.coordinator().Send(Credit{1000}));
  auto run = [&](uint32_t k, const std::string& text, const config::RunConfig& run_config) {
    return bench.Run(Dispatch{0x7a, 0, k, "prog", text, run_config, PassKind::kSingle, "prog.json",
                              ProgramHash(text)});
  };
  const AgentBench::Outcome plain = run(0, kOneTaskProgram, config::RunConfig{});
  EXPECT_EQ(plain.bodies, std::vector<std::string>{"dispatchDone"});
  EXPECT_EQ(plain.done.status, DispatchStatus::kOk) << plain.done.error;
  EXPECT_EQ(plain.done.tasks_executed, 1u);
  EXPECT_TRUE(plain.done.carries_acceptance);
  EXPECT_LE(plain.done.accepted_held_ns, plain.round_trip_ns) << "accepted before it was sent";

  config::RunConfig swimlane;
  swimlane.enable_chip_swimlane = 1;
  const AgentBench::Outcome streamed = run(1, ProgramText(), swimlane);
  const std::vector<std::string>& got = streamed.bodies;
  ASSERT_GE(got.size(), 3u);
  EXPECT_EQ(got.front(), "dispatchAccepted");
  EXPECT_EQ(got[1], "artifactBegin");
  EXPECT_EQ(got.back(), "dispatchDone");
  EXPECT_EQ(streamed.done.status, DispatchStatus::kOk) << streamed.done.error;
  EXPECT_FALSE(streamed.done.carries_acceptance);
  Status result = bench.Stop();
  EXPECT_TRUE(result.ok()) << result.ToString();
}

// A small program is read on the agent's event loop (its first dispatch
// may then run there); what it cannot read still fails that dispatch with
// the reader's word, in the order a user fixes them (the JSON, the run
// config, the program), and a good program sent after it runs.
TEST(RankAgentTest, ASmallProgramItCannotReadIsRejectedWithTheReadersError) {
  AgentBench bench("unreadable", 0x7b);
  ASSERT_TRUE(bench.Start());
  auto done_of = [&](uint32_t k, const std::string& text, const config::RunConfig& run_config) {
    return bench
        .Run(Dispatch{0x7b, 0, k, "vec", text, run_config, PassKind::kSingle, "vec.json",
                      ProgramHash(text)})
        .done;
  };
  config::RunConfig bad_config;
  bad_config.enable_dump_args = 7;
  const std::string good = ProgramText();

  DispatchDone syntax = done_of(0, R"({"name": "vec", "kernels": [)", bad_config);
  EXPECT_EQ(syntax.status, DispatchStatus::kRejected);
  EXPECT_NE(syntax.error.find("vec"), std::string::npos) << syntax.error;
  EXPECT_EQ(syntax.error.find("enable_dump_args"), std::string::npos)
      << "the JSON is fixed first: " << syntax.error;

  DispatchDone config_first = done_of(1, good, bad_config);
  EXPECT_EQ(config_first.status, DispatchStatus::kRejected);
  EXPECT_NE(config_first.error.find("enable_dump_args must be in [0, 3]"), std::string::npos)
      << config_first.error;

  DispatchDone structure = done_of(2, R"({"name": "vec", "kernels": 3})", config::RunConfig{});
  EXPECT_EQ(structure.status, DispatchStatus::kRejected);
  EXPECT_NE(structure.error.find("kernels"), std::string::npos) << structure.error;

  DispatchDone ran = done_of(3, good, config::RunConfig{});
  EXPECT_EQ(ran.status, DispatchStatus::kOk) << ran.error;
  EXPECT_EQ(ran.tasks_executed, 5u);
  Status result = bench.Stop();
  EXPECT_TRUE(result.ok()) << result.ToString();
}

// The timing pass of a dispatch writes into the graph pass's dispatch dir
// (the same rank and k), and starting it empties that dir: it waits until
// the graph pass's files there are acknowledged. Run at once, it removed
// files still to be acknowledged, and the late acknowledgement of the graph
// pass's name_map.json removed the timing pass's new one before it was sent
// (an L3 onboard run then failed with "3 of the 4 artifact(s) arrived").
TEST(RankAgentTest, ALaterPassOfADispatchWaitsUntilTheEarlierOnesFilesAreAcknowledged) {
  AgentBench bench("passes", 0x7A);
  FakeCoordinator& coordinator = bench.coordinator();
  AgentOptions& options = bench.options();
  ASSERT_TRUE(bench.Start());
  auto send = [&](Body body) { ASSERT_TRUE(coordinator.Send(std::move(body))); };
  send(Credit{1000});
  // Reads until a DispatchDone (nullopt: none within `timeout_ms`), keeping
  // each ended transfer's name and bytes; acknowledges them if `ack`.
  std::map<uint64_t, std::string> names, data;
  std::vector<uint64_t> ended;
  auto until_done = [&](bool ack, int timeout_ms) -> std::optional<DispatchDone> {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      auto m = coordinator.NextWithin(20);
      if (!m) continue;
      Body& b = m->body;
      if (auto* begin = std::get_if<ArtifactBegin>(&b)) names[begin->transfer_id] = begin->path;
      if (auto* chunk = std::get_if<ArtifactChunk>(&b)) data[chunk->transfer_id] += chunk->data;
      if (auto* end = std::get_if<ArtifactEnd>(&b)) {
        Checksum64 sum;
        sum.Update(data[end->transfer_id].data(), data[end->transfer_id].size());
        EXPECT_EQ(sum.Digest(), end->checksum) << names[end->transfer_id];
        ended.push_back(end->transfer_id);
        if (ack) send(ArtifactAck{end->transfer_id, true, ""});
      }
      if (auto* done = std::get_if<DispatchDone>(&b)) return *done;
    }
    return std::nullopt;
  };
  const std::string text = ProgramText();
  config::RunConfig graph_config;
  graph_config.enable_dep_gen = true;
  send(Dispatch{0x7A, 0, 0, "vec", text, graph_config, PassKind::kGraph});
  std::optional<DispatchDone> graph_done = until_done(/*ack=*/false, 30000);
  ASSERT_TRUE(graph_done.has_value());
  ASSERT_EQ(graph_done->status, DispatchStatus::kOk) << graph_done->error;
  // Its files are sent (or on their way) and not acknowledged: the timing
  // pass is held, whatever arrives meanwhile.
  config::RunConfig timing_config;
  timing_config.enable_chip_swimlane = 2;
  send(Dispatch{0x7A, 0, 0, "vec", text, timing_config, PassKind::kTiming});
  // The rank's next dispatch (another dir, nothing in flight) waits behind it.
  send(Dispatch{0x7A, 0, 1, "vec", text, timing_config, PassKind::kTiming});
  EXPECT_FALSE(until_done(/*ack=*/false, 500).has_value())
      << "the timing pass ran before the graph pass's files were acknowledged";
  const fs::path d0 =
      collectors::SessionSpoolDir(options.spool_root, 0x7A) / collectors::DispatchDirPath(0, 0);
  EXPECT_TRUE(fs::exists(d0 / collectors::kDepsFile));
  const size_t graph_files = ended.size();
  EXPECT_EQ(graph_files, graph_done->artifact_count);
  for (uint64_t id : ended) send(ArtifactAck{id, true, ""});
  // Now it runs, and every file it names arrives whole.
  auto timing_done = until_done(/*ack=*/true, 30000);
  ASSERT_TRUE(timing_done.has_value());
  EXPECT_EQ(timing_done->k, 0u);
  EXPECT_EQ(timing_done->status, DispatchStatus::kOk) << timing_done->error;
  // Its files were queued before its Done, so they ended before it.
  EXPECT_EQ(ended.size(), graph_files + timing_done->artifact_count);
  std::multiset<std::string> got;
  for (uint64_t id : ended) got.insert(names[id]);
  EXPECT_EQ(got.count(collectors::kDispatchNameMapFile), 2u);
  EXPECT_EQ(got.count(collectors::kSwimlaneRecordsFile), 1u);
  auto next_done = until_done(/*ack=*/true, 30000);
  ASSERT_TRUE(next_done.has_value());
  EXPECT_EQ(next_done->k, 1u);
  EXPECT_EQ(next_done->status, DispatchStatus::kOk) << next_done->error;
  Status result = bench.Stop();
  EXPECT_TRUE(result.ok()) << result.ToString();
}

// A recovery reads a spool written long before, once: what it has sent
// leaves the page cache as it goes (so a coordinator on the host writes
// the gathered copy into those pages, not beside them), and the file
// itself stays until it is acknowledged.
TEST(RankAgentTest, ARecoveryDropsWhatItSentFromThePageCache) {
  AgentBench bench("dropbehind", 0x7B);
  FakeCoordinator& coordinator = bench.coordinator();
  AgentOptions& options = bench.options();
  options.mode = AgentMode::kRecover;
  const fs::path d0 =
      collectors::SessionSpoolDir(options.spool_root, 0x7B) / collectors::DispatchDirPath(0, 0);
  const fs::path file = d0 / "args_dump/args.bin";
  fs::create_directories(file.parent_path());
  const std::string bytes(8 << 20, 'a');
  ASSERT_TRUE(WriteFileAtomic(file, bytes).ok());
  {  // written back and read once: clean pages in the cache, as a spool from a past run
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::fdatasync(fd), 0);
    ::close(fd);
    ASSERT_TRUE(ReadFile(file).ok());
  }
  const size_t pages = bytes.size() / static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  if (InMemoryFileSystem(file)) {
    GTEST_SKIP() << file << " is in memory (tmpfs/ramfs): its pages cannot be dropped";
  }
  if (ResidentPages(file) < pages / 2) {
    GTEST_SKIP() << "this file system keeps no page cache for " << file << " to drop";
  }
  ASSERT_TRUE(bench.Start());
  ASSERT_TRUE(coordinator.Send(Credit{1000}));
  ASSERT_TRUE(coordinator.Send(GatherRequest{0x7B}));
  std::string got;
  std::optional<ArtifactEnd> end;
  for (int i = 0; i < 600 && !end; ++i) {
    auto m = coordinator.NextWithin(50);
    if (!m) continue;
    if (auto* chunk = std::get_if<ArtifactChunk>(&m->body)) got += chunk->data;
    if (auto* e = std::get_if<ArtifactEnd>(&m->body)) end = *e;
  }
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(got.size(), bytes.size());
  EXPECT_TRUE(got == bytes);
  // Every chunk sent, none acknowledged: the spool keeps the file, not its pages.
  EXPECT_TRUE(fs::exists(file));
  EXPECT_LT(ResidentPages(file), pages / 8) << "of " << pages << " pages";
  Status result = bench.Stop();
  EXPECT_TRUE(result.ok()) << result.ToString();
}

// An agent says it is alive with a Heartbeat of its own only when it sent
// nothing else for an interval: while it answers the coordinator's pings
// (or sends anything else) it adds none, and once the coordinator falls
// silent its own heartbeats come back on their interval.
TEST(RankAgentTest, HeartbeatsOfItsOwnOnlyWhenNothingElseWasSent) {
  AgentBench bench("heartbeats", 0x7a);
  FakeCoordinator& coordinator = bench.coordinator();
  AgentOptions& options = bench.options();
  // Far above the pings' 20 ms, so a loaded machine's scheduling delays do
  // not pass for silence.
  options.timeouts.heartbeat_interval = std::chrono::milliseconds(400);
  ASSERT_TRUE(bench.Start());
  // The coordinator pings every 20 ms for 1 s: the agent answers each
  // (echo_clock_ns set), and sends no unprompted heartbeat.
  int replies = 0, own = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  uint64_t ping = 100;
  while (std::chrono::steady_clock::now() < end) {
    ASSERT_TRUE(coordinator.Send(Heartbeat{++ping, 0, true}));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    while (auto m = coordinator.NextWithin(0)) {
      if (auto* hb = std::get_if<Heartbeat>(&m->body)) ++(hb->echo_clock_ns != 0 ? replies : own);
    }
  }
  EXPECT_GT(replies, 10);
  EXPECT_EQ(own, 0) << "unprompted heartbeats beside " << replies << " replies";
  // Silence from the coordinator: the agent's own heartbeats resume.
  own = 0;
  for (int i = 0; i < 100 && own < 3; ++i) {
    auto m = coordinator.NextWithin(50);
    if (!m) continue;
    if (auto* hb = std::get_if<Heartbeat>(&m->body); hb && hb->echo_clock_ns == 0) ++own;
  }
  EXPECT_EQ(own, 3) << "no heartbeats of its own while the coordinator is silent";
  EXPECT_TRUE(bench.Stop().ok());
}

TEST(RankAgentTest, ConnectDeadlineIsAClearError) {
  fs::path dir = TempDir("deadline");
  Context context;
  AgentOptions options;
  options.coordinator = "tcp://127.0.0.1:1";
  options.session_id = 1;
  options.spool_root = dir;
  options.timeouts.connect = std::chrono::milliseconds(200);
  RankAgent agent(context, options);
  Status s = agent.Run();
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded);
  EXPECT_NE(s.message().find("tcp://127.0.0.1:1"), std::string::npos);
  fs::remove_all(dir);
}

TEST(ExecTest, NameMapListsKernelsByFuncId) {
  device::Program p;
  p.name = "prog";
  p.kernels.push_back(device::Kernel{4, "qk"});
  p.kernels.push_back(device::Kernel{7, "softmax"});
  collectors::NameMap m = NameMapFor(p);
  EXPECT_EQ(m.level, 2);
  EXPECT_EQ(m.orchestrator_name, "prog");
  ASSERT_EQ(m.callable_id_to_name.size(), 2u);
  EXPECT_EQ(m.callable_id_to_name[1], (std::pair<int, std::string>{7, "softmax"}));
}

// The graph-pass fault is an explicit option: only what main() sets counts,
// never the environment of the process the library runs in.
TEST(ExecTest, AnInjectedGraphPassFaultFailsOnlyTheGraphPass) {
  fs::path dir = TempDir("fault");
  ExecOptions options;
  options.program_path = fs::path(DFX_SOURCE_DIR) / "examples/vector_pipeline.json";
  options.output_dir = dir / "w/dfx_outputs";
  options.config.enable_dep_gen = true;
  options.config.Normalize();
  options.pass = config::PassKind::kGraph;
  options.faults.graph_pass_error = "injected: no graph pass today";
  auto failed = RunExec(options);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), "injected: no graph pass today");
  EXPECT_FALSE(fs::exists(options.output_dir / "deps.json"));

  options.pass = config::PassKind::kTiming;
  auto timing = RunExec(options);
  ASSERT_TRUE(timing.ok()) << timing.status().ToString();
  EXPECT_TRUE(fs::exists(options.output_dir / "deps.json"));

  ::setenv("DFX_FAULT_GRAPH_PASS", "1", 1);
  options.pass = config::PassKind::kGraph;
  options.faults = {};
  auto graph = RunExec(options);
  ::unsetenv("DFX_FAULT_GRAPH_PASS");
  EXPECT_TRUE(graph.ok()) << "the library must not read the environment: "
                          << graph.status().ToString();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dfx::rank_agent
