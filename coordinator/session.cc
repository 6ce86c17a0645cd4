// size: one run's whole life (start, fan-out, the end by completion, a stop
// signal or a pause) is the state of one class; split, it would be shared.
#include "coordinator/session.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <system_error>
#include <thread>

#include "collectors/artifact_layout.h"
#include "collectors/run_manifest.h"
#include "common/file_util.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/subprocess.h"
#include "config/pass_plan.h"
#include "coordinator/dispatch_scheduler.h"
#include "coordinator/event_loop.h"
#include "coordinator/idle_collectors.h"
#include "coordinator/manifest_writer.h"
#include "coordinator/post_run.h"
#include "coordinator/report.h"
#include "coordinator/session_capture.h"
#include "coordinator/session_outcome.h"
#include "coordinator/session_record.h"
#include "coordinator/stale_dirs.h"
#include "coordinator/stop_signals.h"
#include "coordinator/wire_record.h"
#include "protocol/endpoint.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;
using collectors::ArtifactState;
using collectors::DispatchState;
using collectors::RankState;

uint64_t RandomSessionId() {
  std::random_device rd;
  uint64_t id = 0;
  while (id == 0) id = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return id;
}

namespace {

constexpr uint64_t kMs = 1000000;

// One run: the PeerHandler of the event loop, the scheduler, the launcher.
class RunCoordinator final : public PeerHandler, public ArtifactLedger {
 public:
  RunCoordinator(const Plan& plan, const SessionOptions& options)
      : plan_(plan),
        options_(options),
        session_(RandomSessionId()),
        may_capture_(PlanMayCapture(plan, options.config)),
        dfx_dir_(collectors::RunRecordDir(options.work_dir, may_capture_)),
        manifest_writer_(dfx_dir_),
        loop_(collectors::DfxOutputsDir(options.work_dir), Policy(), LoopOpts(), *options.clock,
              *this) {}

  Result<SessionOutcome> Run();

  // --- PeerHandler ----------------------------------------------------------
  void OnAdmitted(AgentState&) override {}
  void OnMessage(AgentState& agent, protocol::Body& body) override;
  Result<std::optional<size_t>> PlaceArtifact(AgentState& agent,
                                              const protocol::ArtifactBegin& b) override;
  void OnAgentDead(AgentState& agent, const std::string& why) override;
  void OnTick() override;
  void OnLaunchFailure(const protocol::Hello& hello) override;
  void OnPaused(uint64_t gap_ns) override { paused_ns_ += gap_ns; }
  std::vector<protocol::DispatchRef> AwaitedDispatches(AgentState& agent) override;
  void OnReconnected(AgentState&, uint64_t) override { manifest_dirty_ = true; }

  // --- ArtifactLedger: a run's streams always belong to a dispatch record ---
  size_t BeginArtifact(const std::optional<size_t>& d, collectors::ArtifactEntry e) override {
    return scheduler_->BeginArtifact(*d, std::move(e));
  }
  void RefuseArtifact(const std::optional<size_t>& d, collectors::ArtifactEntry e) override {
    scheduler_->RefuseArtifact(*d, std::move(e));
  }
  void SettleArtifact(const std::optional<size_t>& d, size_t i, ArtifactSettlement s) override {
    scheduler_->SettleArtifact(*d, i, std::move(s));
  }
  const collectors::ArtifactEntry& Artifact(const std::optional<size_t>& d,
                                            size_t i) const override {
    return scheduler_->dispatch(*d).artifacts[i];
  }

 private:
  AdmissionPolicy Policy() const {
    AdmissionPolicy p;
    p.session = session_;
    p.num_ranks = options_.ranks;
    p.modes = {protocol::AgentMode::kOneShot, protocol::AgentMode::kServe};
    return p;
  }
  LoopOptions LoopOpts() const {
    LoopOptions o = MakeLoopOptions(options_.timeouts, options_.credit_window,
                                    options_.max_artifact_bytes, ArtifactState::kOk);
    o.receiver.fault_kill_after_chunks = options_.fault_kill_after_chunks;
    o.receiver.wire_compression = options_.wire_compression;
    o.receiver.max_run_bytes = options_.max_run_bytes;
    o.receiver.fault_write_delay_ms = options_.fault_write_delay_ms;
    o.context = options_.context;
    o.receiver.on_verified = [this](size_t dispatch) { scheduler_->OnArtifactVerified(dispatch); };
    return o;
  }
  uint64_t Now() const { return options_.clock->NowNs(); }
  // One turn; a stop signal (stop_signals.h) ends the run's waits with an error.
  Status Pump() {
    DFX_RETURN_IF_ERROR(loop_.Pump(20, *this));
    if (stop_signal_ == 0 && !finishing_ && StopSignal() != 0) {
      stop_signal_ = StopSignal();
      return Unavailable("stopped by " + StopSignalName(stop_signal_));
    }
    return Status::Ok();
  }
  // Whether an agent's spool (this run's, or one an agent named in HELLO)
  // holds files of a dispatch.
  DispatchScheduler::SpoolCheck InSpool();
  // The run after a stop signal: see stop_signals.h.
  Result<SessionOutcome> Interrupted();
  // Binds, locks the work dir and writes the session record.
  Status Start();
  Status Launch();
  // Waits for every rank's READY under the startup deadline.
  Status AwaitReady();
  void RecordAgentSpools();
  // Runs the passes one after the other until nothing is queued or in flight.
  Status FanOut();
  void WriteFinalManifest(collectors::RunState state);
  void ReapChildren();
  // What mpirun / srun said about ranks' processes that ended (launcher_report.h).
  void OnRankExits();
  Status SendDispatch(size_t index, const config::PassPlan& pass);
  // How far the run is, for `dfx-coordinator capture --status`.
  Json CaptureProgress() const;
  // The agent did not keep the program its in-flight dispatch named by
  // hash: the dispatch goes again with the program (or fails).
  void ResendWithProgram(AgentState& agent, const protocol::DispatchDone& done);
  void ResendMissing(AgentState& agent, const protocol::Resumed& resumed);
  void OnDispatchFinished(size_t index, const std::string& error);
  void Finish();
  void DrawProgress(bool final);
  collectors::RunManifest Manifest(collectors::RunState state);
  // Returns whether it was written; logs a failure when `log_failure`.
  bool WriteManifest(collectors::RunState state, bool log_failure = true);

  const Plan& plan_;
  std::map<std::string, uint64_t> program_hashes_;  // protocol::ProgramHash by plan program
  SessionOptions options_;
  const uint64_t session_;
  const bool may_capture_;                 // some dispatch may capture: the run keeps dfx_outputs/
  std::optional<SessionCapture> capture_;  // what each dispatch captures
  std::optional<protocol::CurveClient> launched_curve_;  // what launched agents get
  bool authenticated_ = false;                           // the ROUTER speaks CURVE
  std::string advertised_;                               // what agents dial
  const fs::path dfx_dir_;                               // where the manifest and session record go
  ManifestWriter manifest_writer_;  // the manifest while the run goes on, off this thread
  fs::path spool_;
  SessionRecord record_;
  DirectoryLock lock_;  // the work dir's, held for the whole run
  std::unique_ptr<DispatchScheduler> scheduler_;
  AgentLauncher launcher_;
  bool finishing_ = false;
  int stop_signal_ = 0;     // the signal that stopped the run (0: none)
  uint64_t paused_ns_ = 0;  // how long this process was stopped (EventLoop: OnPaused)
  collectors::RunState live_state_ = collectors::RunState::kRunning;  // what OnTick writes
  bool manifest_dirty_ = false;
  uint64_t last_manifest_ns_ = 0;
  uint64_t last_draw_ns_ = 0;
  uint64_t launch_ns_ = 0;  // when Launch began
  std::vector<std::string> merged_;
  EventLoop loop_;  // last: destroyed first (its writer thread names the records above)
};

void RunCoordinator::OnMessage(AgentState& agent, protocol::Body& body) {
  if (auto* ready = std::get_if<protocol::Ready>(&body)) {
    if (agent.ready) return;
    agent.ready = true;
    agent.ready_ns = Now();
    for (int32_t r : agent.ranks) scheduler_->MarkReady(r);
    DFX_LOG_DEBUG("{} READY: {}", agent.identity, fmt::join(ready->chip_descriptions, "; "));
    loop_.receiver().GrantCredits(agent);
  } else if (auto* accepted = std::get_if<protocol::DispatchAccepted>(&body)) {
    scheduler_->OnAccepted(accepted->rank, accepted->k, accepted->held_ns);
    manifest_dirty_ = true;
  } else if (auto* progress = std::get_if<protocol::Progress>(&body)) {
    scheduler_->OnProgress(*progress);  // drives the live progress line
  } else if (auto* done = std::get_if<protocol::DispatchDone>(&body)) {
    if (done->status == protocol::DispatchStatus::kProgramUnknown) {
      ResendWithProgram(agent, *done);
      return;
    }
    if (auto index = scheduler_->InFlight(done->rank, done->k);
        index && (done->status == protocol::DispatchStatus::kOk ||
                  done->status == protocol::DispatchStatus::kFailed)) {
      agent.programs_kept.insert(scheduler_->dispatch(*index).program);
    }
    // A short dispatch without artifacts: no DispatchAccepted came, this says it.
    if (done->carries_acceptance) {
      scheduler_->OnAccepted(done->rank, done->k, done->accepted_held_ns);
    }
    if (!scheduler_->OnDone(*done)) {
      DFX_LOG_WARN("{}: DispatchDone for rank {} d{}, which is not in flight; ignored",
                   agent.identity, done->rank, done->k);
    }
  } else if (auto* resumed = std::get_if<protocol::Resumed>(&body)) {
    ResendMissing(agent, *resumed);
  } else {
    DFX_LOG_WARN("unexpected {} from {} ignored", protocol::BodyName(body), agent.identity);
  }
}

std::vector<protocol::DispatchRef> RunCoordinator::AwaitedDispatches(AgentState& agent) {
  std::vector<protocol::DispatchRef> refs;
  for (int32_t r : agent.ranks) {
    if (auto index = scheduler_->InFlightOf(r)) {
      const collectors::DispatchEntry& d = scheduler_->dispatch(*index);
      refs.push_back(protocol::DispatchRef{d.rank, d.k, d.pass});
    }
  }
  return refs;
}

// A dispatch sent while the agent's connection was down never arrived: it
// goes again (the agent said it does not have it: nothing runs twice).
void RunCoordinator::ResendMissing(AgentState& agent, const protocol::Resumed& resumed) {
  for (const protocol::DispatchRef& ref : resumed.missing) {
    auto index = scheduler_->InFlight(ref.rank, ref.k);
    if (!index || scheduler_->dispatch(*index).pass != ref.pass) continue;
    DFX_LOG_INFO("rank {} d{}: never reached {}; sending it again", ref.rank, ref.k,
                 agent.Describe());
    const config::PassPlan* pass = nullptr;
    for (const config::PassPlan& p : scheduler_->passes())
      if (p.kind == ref.pass) pass = &p;
    agent.programs_kept.erase(scheduler_->dispatch(*index).program);
    Status sent = pass ? SendDispatch(*index, *pass) : Internal("no pass for the dispatch");
    if (!sent.ok()) {
      scheduler_->OnDone(protocol::DispatchDone{ref.rank, ref.k, protocol::DispatchStatus::kFailed,
                                                sent.message()});
    }
  }
}

Result<std::optional<size_t>> RunCoordinator::PlaceArtifact(AgentState&,
                                                            const protocol::ArtifactBegin& b) {
  auto index = scheduler_->InFlight(b.rank, b.k);
  if (!index) {
    return InvalidArgument(fmt::format("rank {} has no dispatch d{} in flight", b.rank, b.k));
  }
  scheduler_->OnStreamBegun(*index);
  return std::optional<size_t>(*index);
}

void RunCoordinator::OnAgentDead(AgentState& agent, const std::string& why) {
  // After a pause of this process the agent gave up on us, not the other
  // way round: what it finished is in its spool.
  const std::string paused =
      paused_ns_ == 0 ? std::string()
                      : fmt::format(" (it gave up while this coordinator was paused for {:.1f} s)",
                                    paused_ns_ / 1e9);
  for (int32_t r : agent.ranks) {
    scheduler_->FailRank(r, fmt::format("its agent {} died: {}{}", agent.identity, why, paused),
                         paused_ns_ == 0 ? DispatchScheduler::SpoolCheck() : InSpool());
  }
  manifest_dirty_ = true;
}

void RunCoordinator::OnLaunchFailure(const protocol::Hello& hello) {
  for (int32_t r : hello.ranks) {
    if (r < 0 || r >= options_.ranks || loop_.registry().OwnerOf(r) != nullptr) continue;
    const std::string why =
        fmt::format("its agent process (pid {} on {}) ended before it said HELLO: {}", hello.pid,
                    hello.host, hello.launch_failure);
    if (scheduler_->rank_status(r) == RankState::kFailed) continue;
    DFX_LOG_ERROR("rank {}: {}", r, why);
    scheduler_->FailRank(r, why);
  }
  manifest_dirty_ = true;
}

void RunCoordinator::OnDispatchFinished(size_t index, const std::string& error) {
  const collectors::DispatchEntry& d = scheduler_->dispatch(index);
  // Streams of this dispatch still open can no longer complete.
  loop_.receiver().AbortDispatch(index,
                                 "stream incomplete when the dispatch ended: " +
                                     (error.empty() ? std::string("no ArtifactEnd") : error));
  // One line per dispatch only when asked (-v): the run's answer is the
  // summary at the end; a failure is always reported.
  if (d.status == DispatchState::kOk) {
    DFX_LOG_DEBUG("rank {} d{} ({}, {} pass): {}", d.rank, d.k, d.program,
                  config::PassKindName(d.pass), collectors::DispatchStateName(d.status));
  } else {
    DFX_LOG_WARN("rank {} d{} ({}, {} pass): {}{}{}", d.rank, d.k, d.program,
                 config::PassKindName(d.pass), collectors::DispatchStateName(d.status),
                 d.error.empty() ? "" : ": ", d.error);
  }
  manifest_dirty_ = true;
}

void RunCoordinator::OnTick() {
  // `dfx-coordinator capture` requests, while dispatches are still to send.
  if (capture_ && capture_->Poll(*options_.clock, [this] { return CaptureProgress(); })) {
    manifest_dirty_ = true;
  }
  const uint64_t budget = ToNs(options_.timeouts.dispatch);
  for (auto [rank, k] :
       scheduler_->ExpireInFlight(budget, fmt::format("exceeded --dispatch-timeout {:g} s",
                                                      ToSeconds(options_.timeouts.dispatch)))) {
    if (AgentState* agent = loop_.registry().OwnerOf(rank)) {
      loop_.registry().Send(*agent, rank, protocol::Cancel{rank, k, "dispatch timeout"});
    }
  }
  OnRankExits();
  ReapChildren();
  if (options_.live_progress) DrawProgress(false);
  // At most every 0.5 s (less often when a rewrite takes more than 1/18 s:
  // NextManifestAfterNs), and never two at once: the snapshot is taken here,
  // the writing is the writer thread's (manifest_writer.h).
  if (manifest_dirty_ &&
      Now() - last_manifest_ns_ >
          NextManifestAfterNs(500 * kMs, manifest_writer_.last_write_ns()) &&
      !manifest_writer_.busy()) {
    last_manifest_ns_ = Now();
    manifest_dirty_ = false;
    manifest_writer_.Post(Manifest(live_state_));
  }
}

void RunCoordinator::ReapChildren() {
  const std::vector<AgentLauncher::Exit> exits = launcher_.Reap();
  if (!exits.empty()) loop_.CheckPaused(*this);  // an agent that gave up while this was stopped
  for (const AgentLauncher::Exit& exit : exits) {
    if (options_.launcher == Launcher::kMpirun || options_.launcher == Launcher::kSrun) {
      const char* name = LauncherName(options_.launcher);
      for (auto& [id, agent] : loop_.registry().agents()) {
        if (!agent.dead && !agent.shutdown_sent) {
          loop_.DeclareDead(agent, fmt::format("{} exited ({})", name, exit.how), *this);
        }
      }
      for (int32_t r = 0; r < options_.ranks; ++r) {
        if (loop_.registry().OwnerOf(r) == nullptr && !finishing_) {
          scheduler_->FailRank(
              r, fmt::format("{} exited ({}) before this rank said HELLO", name, exit.how));
        }
      }
      continue;
    }
    // Local launcher: child i runs the agent of ranks i*chips ...
    const int first = static_cast<int>(exit.index) * options_.chips_per_agent;
    bool matched = false;
    for (auto& [id, agent] : loop_.registry().agents()) {
      if (!agent.ranks.empty() && agent.ranks.front() == first) {
        matched = true;
        if (!agent.dead && !agent.shutdown_sent) {
          loop_.DeclareDead(
              agent, fmt::format("its process (pid {}) exited: {}", exit.pid, exit.how), *this);
        }
      }
    }
    if (!matched && !finishing_) {
      for (int c = 0; c < options_.chips_per_agent; ++c) {
        const int32_t rank = first + c;
        if (rank >= options_.ranks || loop_.registry().OwnerOf(rank) != nullptr) continue;
        // Said HELLO and was turned away, or never got that far.
        const std::string* refused = loop_.registry().RefusalOf(rank);
        scheduler_->FailRank(
            rank, refused != nullptr
                      ? fmt::format("its agent process (pid {}) was refused ({}) and exited: {}",
                                    exit.pid, *refused, exit.how)
                      : fmt::format("its agent process (pid {}) exited before HELLO: {}", exit.pid,
                                    exit.how));
      }
    }
  }
}

void RunCoordinator::OnRankExits() {
  const char* name = LauncherName(options_.launcher);
  for (const RankExitReport& exit : launcher_.TakeRankExits()) {
    // Launcher rank i runs the agent of ranks i*chips ...
    const int first = exit.launcher_rank * options_.chips_per_agent;
    const std::string process = fmt::format("{} reports its process (launcher rank {} on {}) ended",
                                            name, exit.launcher_rank, exit.host);
    for (int c = 0; c < options_.chips_per_agent && first + c < options_.ranks; ++c) {
      const int32_t rank = first + c;
      if (AgentState* agent = loop_.registry().OwnerOf(rank)) {
        // After HELLO: a clean end is the end of the run; any other is a death.
        if (!agent->dead && !agent->shutdown_sent && !exit.clean) {
          loop_.DeclareDead(*agent, fmt::format("{}: {}", process, exit.how), *this);
        }
        continue;
      }
      if (finishing_ || scheduler_->rank_status(rank) == RankState::kFailed) continue;
      const std::string why = fmt::format("{} before it said HELLO: {}", process, exit.how);
      DFX_LOG_ERROR("rank {}: {}", rank, why);
      scheduler_->FailRank(rank, why);
      manifest_dirty_ = true;
    }
  }
}

Status RunCoordinator::SendDispatch(size_t index, const config::PassPlan& pass) {
  const collectors::DispatchEntry& d = scheduler_->dispatch(index);
  AgentState* agent = loop_.registry().OwnerOf(d.rank);
  if (agent == nullptr || agent->dead) return Unavailable("rank has no live agent");
  // Away (its connection dropped): in flight all the same; its Resume
  // lists it and the agent asks for it again (docs/design.md §9).
  if (agent->away_since_ns != 0 && !agent->away_silent) return Status::Ok();
  const PlanProgram& program = plan_.programs.at(d.program);
  // What this dispatch captures (capture_policy.h): a dispatch not
  // captured by request runs with every collector off and gets no directory.
  const CapturePolicy::Decision& capture = capture_->Decide(index, d, pass.kind);
  if (capture.armed.AnyDfx()) {
    // The dispatch's directory is made here, never through a link: a
    // rank<N> or d<K> that is one fails the dispatch before it runs (its
    // artifacts would be refused, and the link's target is not ours).
    const std::string dir = collectors::DispatchDirPath(d.rank, d.k);
    DFX_RETURN_IF_ERROR(MakeDirsNoLinks(dfx_dir_, dir));
    Json label;
    label["program"] = d.program;
    Status s = WriteJsonFileAtomic(dfx_dir_ / dir / collectors::kDispatchProgramFile, label, -1);
    if (!s.ok()) DFX_LOG_WARN("{}: {}", collectors::kDispatchProgramFile, s.message());
  }
  protocol::Dispatch msg;
  msg.session_id = session_;
  msg.rank = d.rank;
  msg.k = d.k;
  msg.program_name = d.program;
  auto hash = program_hashes_.find(d.program);
  if (hash == program_hashes_.end())
    hash = program_hashes_.emplace(d.program, protocol::ProgramHash(program.json_text)).first;
  msg.program_hash = hash->second;
  // The text only to an agent that has not run it yet.
  if (!agent->programs_kept.count(d.program)) msg.program_json = program.json_text;
  msg.program_file = program.path.filename().string();
  msg.config = capture.armed;
  msg.pass = pass.kind;
  msg.wire_compression = options_.wire_compression;
  if (!loop_.registry().Send(*agent, d.rank, std::move(msg))) {
    if (agent->disconnected && options_.timeouts.ReconnectWindow() > Timeouts::Duration::zero()) {
      return Status::Ok();  // as above, once it is back
    }
    return Unavailable("could not send the dispatch to " + agent->identity);
  }
  return Status::Ok();
}

Json RunCoordinator::CaptureProgress() const {
  size_t sent = 0, finished = 0;
  for (const collectors::DispatchEntry& d : scheduler_->dispatches()) {
    sent += d.status != DispatchState::kPending;
    finished += d.end_ns != 0;
  }
  return Json{
      {"dispatches", scheduler_->dispatches().size()}, {"sent", sent}, {"finished", finished}};
}

void RunCoordinator::ResendWithProgram(AgentState& agent, const protocol::DispatchDone& done) {
  auto index = scheduler_->InFlight(done.rank, done.k);
  if (!index) {
    DFX_LOG_WARN("{}: {} for rank {} d{}, which is not in flight; ignored", agent.identity,
                 protocol::DispatchStatusName(done.status), done.rank, done.k);
    return;
  }
  const collectors::DispatchEntry& d = scheduler_->dispatch(*index);
  protocol::DispatchDone failed{done.rank, done.k, protocol::DispatchStatus::kFailed, "", 0, 0, 0};
  if (agent.programs_kept.erase(d.program) == 0) {
    // The dispatch carried the program: asking for it again is a broken agent.
    failed.error = fmt::format("{} asked for program {}, which its dispatch carried",
                               agent.identity, d.program);
    scheduler_->OnDone(failed);
    return;
  }
  DFX_LOG_DEBUG("rank {} d{}: {} no longer keeps program {}; sending it again", d.rank, d.k,
                agent.identity, d.program);
  const config::PassPlan* pass = nullptr;
  for (const config::PassPlan& p : scheduler_->passes())
    if (p.kind == d.pass) pass = &p;
  Status sent = pass ? SendDispatch(*index, *pass) : Internal("no pass for the dispatch");
  if (!sent.ok()) {
    failed.error = sent.message();
    scheduler_->OnDone(failed);
  }
}

Status RunCoordinator::Launch() {
  launch_ns_ = Now();
  if (options_.launcher == Launcher::kAttach) {
    DFX_LOG_INFO(
        "waiting for {} rank(s) to attach: start them with `dfx-rank-agent serve --coordinator "
        "{} --rank R{}`",
        options_.ranks, advertised_,
        authenticated_ ? " --key KEYS/agents/NAME.key --coordinator-key KEYS/coordinator.pub" : "");
    return Status::Ok();
  }
  AgentLaunch launch;
  launch.agent_binary = options_.agent_binary;
  launch.launcher_binary = options_.launcher_binary;
  launch.launcher_args = options_.launcher_args;
  launch.agent_command = options_.agent_command;
  launch.root = ::geteuid() == 0;
  launch.cores = std::max(1u, std::thread::hardware_concurrency());
  if (options_.launcher == Launcher::kMpirun) {
    const std::string mpirun =
        options_.launcher_binary.empty() ? std::string("mpirun") : options_.launcher_binary;
    launch.mpi_flavour = DetectMpiFlavour(mpirun);
    DFX_LOG_INFO("{} is {}", mpirun, MpiFlavourName(launch.mpi_flavour));
    if (launch.mpi_flavour == MpiFlavour::kUnknown) {
      DFX_LOG_WARN(
          "`{} --version` names neither Open MPI nor MPICH nor Intel MPI; starting it with plain "
          "-np N (pass what else it needs with --launcher-args)",
          mpirun);
    }
  }
  launch.endpoint = advertised_;
  launch.session = session_;
  launch.chips_per_agent = options_.chips_per_agent;
  launch.spool_root = spool_;
  launch.timeouts = options_.timeouts;
  launch.timeouts.connect = options_.timeouts.startup;
  launch.log_level = options_.agent_log_level;
  launch.virtual_clock = options_.virtual_clock;
  launch.total_ranks = options_.ranks;
  launch.curve = launched_curve_;
  return launcher_.StartRun(options_.launcher, options_.ranks, launch);
}

void RunCoordinator::Finish() {
  finishing_ = true;
  capture_->CloseControl();  // every dispatch is sent: nothing left to change
  // Every received file is verified and acknowledged before the agents are
  // told to go: an agent keeps an unacknowledged file in its spool.
  loop_.DrainWriter(Now() + ToNs(options_.timeouts.shutdown), *this);
  loop_.SendShutdown("run complete");
  const uint64_t deadline = Now() + ToNs(options_.timeouts.shutdown);
  // Once no agent is connected any more, mpirun / srun has nothing left to
  // wait for but ranks that never came (dead before HELLO, or stuck):
  // they get a short grace, not the whole --shutdown-timeout.
  const bool one_launcher =
      options_.launcher == Launcher::kMpirun || options_.launcher == Launcher::kSrun;
  uint64_t all_gone_ns = 0;
  while (launcher_.AnyRunning() && Now() <= deadline) {
    (void)Pump();
    if (!one_launcher || loop_.AnyConnected()) continue;
    if (all_gone_ns == 0) all_gone_ns = Now();
    if (Now() - all_gone_ns > 2000 * kMs) {
      DFX_LOG_INFO("every agent left; stopping {} (still running 2 s later)",
                   LauncherName(options_.launcher));
      break;
    }
  }
  launcher_.TerminateAll(2000);
  if (options_.live_progress) DrawProgress(true);
  LogWireAndBudget(loop_.receiver(), options_.wire_compression, options_.max_run_bytes,
                   options_.work_dir);
}

void RunCoordinator::DrawProgress(bool final) {
  const uint64_t now = Now();
  if (!final && now - last_draw_ns_ < 100 * kMs) return;
  last_draw_ns_ = now;
  const std::string line = ProgressLine(*scheduler_, loop_.receiver().bytes_received());
  log::SetStatusLine(final ? std::string() : line);
}

collectors::RunManifest RunCoordinator::Manifest(collectors::RunState state) {
  collectors::RunManifest m;
  m.session = session_;
  m.status = state;
  m.plan = plan_.name;
  m.work_dir = fs::absolute(options_.work_dir).string();
  m.launcher = LauncherName(options_.launcher);
  m.endpoint = advertised_;
  m.bind = loop_.endpoint();
  if (launch_ns_ != 0) m.launch_ns = launch_ns_;
  m.run_config = options_.config;
  scheduler_->Snapshot(m);
  AgentRegistry& registry = loop_.registry();
  for (collectors::RankEntry& r : m.ranks) {
    if (const AgentState* agent = registry.OwnerOf(r.rank)) {
      r.host = agent->host;
      if (!agent->address.empty()) r.address = agent->address;
      r.pid = agent->pid;
      if (agent->hello_ns != 0) r.hello_ns = agent->hello_ns;
      if (agent->ready_ns != 0) r.ready_ns = agent->ready_ns;
      r.clock_offset_ns = agent->clock_offset_ns;
      if (agent->best_rtt_ns != UINT64_MAX) r.clock_offset_rtt_ns = agent->best_rtt_ns;
      for (const Reconnect& back : agent->reconnects) {
        r.reconnects.push_back(collectors::ReconnectEntry{back.at_ns, back.gap_ns});
      }
    }
  }
  m.bytes_gathered = loop_.receiver().bytes_received();
  RecordWireAndBudget(loop_.receiver(), options_.wire_compression, options_.max_run_bytes,
                      options_.work_dir, &m);
  m.merged_swimlane = merged_;
  if (capture_) capture_->Fill(m);
  return m;
}

bool RunCoordinator::WriteManifest(collectors::RunState state, bool log_failure) {
  last_manifest_ns_ = Now();
  manifest_dirty_ = false;
  if (Status s = manifest_writer_.WriteNow(Manifest(state)); !s.ok()) {
    if (log_failure) DFX_LOG_ERROR("cannot write the run manifest: {}", s.message());
    return false;
  }
  return true;
}

Status RunCoordinator::Start() {
  // A --bind that cannot work is refused before anything is written.
  DFX_ASSIGN_OR_RETURN(const std::string bind, protocol::ResolveBindEndpoint(options_.bind));
  // One coordinator per work dir: a second run or a gather waits its turn.
  DFX_RETURN_IF_ERROR(MakeDirs(options_.work_dir));
  DFX_ASSIGN_OR_RETURN(lock_, collectors::LockWorkDir(options_.work_dir));
  if (!lock_.warning().empty()) DFX_LOG_WARN("{}", lock_.warning());
  DFX_RETURN_IF_ERROR(CheckNoLinks(options_.work_dir, collectors::kDfxOutputsDirName));
  DFX_RETURN_IF_ERROR(MakeDirs(dfx_dir_));
  const bool launching = options_.launcher != Launcher::kAttach;
  DFX_ASSIGN_OR_RETURN(Access access, ResolveAccess(options_.access, bind, launching));
  launched_curve_ = access.launched_agents;
  authenticated_ = access.server.has_value();
  DFX_RETURN_IF_ERROR(loop_.Bind(bind, access.server));
  DFX_ASSIGN_OR_RETURN(advertised_,
                       protocol::AdvertisedEndpoint(loop_.endpoint(), options_.advertise));
  // Authenticated access is the normal case (a debug line); anything less warns.
  if (access.server) {
    DFX_LOG_DEBUG("access: {}", access.description);
  } else {
    DFX_LOG_WARN("{}", access.description);
  }
  // mpirun / srun agents may run on other hosts: by default each spools
  // node-locally (its own default, under $TMPDIR) and says where in HELLO.
  const bool node_local = options_.spool_root.empty() && (options_.launcher == Launcher::kMpirun ||
                                                          options_.launcher == Launcher::kSrun);
  if (!node_local) {
    spool_ = options_.spool_root.empty() ? options_.work_dir / collectors::kSpoolDirName
                                         : options_.spool_root;
    spool_ = fs::absolute(spool_).lexically_normal();
  }
  record_.session = session_;
  record_.spool = spool_;
  record_.endpoint = advertised_;
  record_.launcher = LauncherName(options_.launcher);
  record_.ranks = options_.ranks;
  record_.coordinator_pid = ::getpid();
  DFX_RETURN_IF_ERROR(WriteSessionRecord(dfx_dir_, record_));
  capture_->OpenControl(options_.work_dir);
  DFX_LOG_INFO("session {}: {} rank(s), {} launcher, listening on {}{}", Hex64(session_),
               options_.ranks, LauncherName(options_.launcher), loop_.endpoint(),
               advertised_ == loop_.endpoint() ? "" : fmt::format(", agents dial {}", advertised_));
  return Status::Ok();
}

Status RunCoordinator::AwaitReady() {
  const uint64_t startup_deadline = Now() + ToNs(options_.timeouts.startup);
  while (scheduler_->AnyWaiting()) {
    if (Now() > startup_deadline) {
      for (int32_t r = 0; r < options_.ranks; ++r) {
        if (scheduler_->rank_status(r) != RankState::kWaiting) continue;
        const AgentState* owner = loop_.registry().OwnerOf(r);
        scheduler_->FailRank(
            r,
            owner == nullptr
                ? fmt::format("no agent said HELLO for rank {} within --startup-timeout {:g} s", r,
                              ToSeconds(options_.timeouts.startup))
                : fmt::format("agent {} said HELLO but not READY within --startup-timeout {:g} s",
                              owner->identity, ToSeconds(options_.timeouts.startup)));
      }
      break;
    }
    DFX_RETURN_IF_ERROR(Pump());
  }
  // The run has really started once a rank is READY: only now are an
  // earlier run's dispatch directories cleared (a run that never got this
  // far leaves the previous run's artifacts as they were).
  if (may_capture_) {
    bool any_ready = false;
    for (const collectors::RankEntry& r : scheduler_->ranks()) {
      any_ready |= r.status == RankState::kReady;
    }
    if (any_ready) {
      if (Status s = ClearStaleDispatchDirs(dfx_dir_); !s.ok()) {
        // Nothing is dispatched: every rank fails with the reason, and
        // the agents are shut down as after any run.
        DFX_LOG_ERROR("{}", s.message());
        for (int32_t r = 0; r < options_.ranks; ++r) {
          scheduler_->FailRank(r, "the run did not start: " + s.message());
        }
      }
    }
  }
  return Status::Ok();
}

void RunCoordinator::RecordAgentSpools() {
  std::set<fs::path> seen;
  if (!spool_.empty()) seen.insert(spool_);
  for (const auto& [id, agent] : loop_.registry().agents()) {
    if (!agent.spool.empty() && seen.insert(agent.spool).second) {
      record_.agent_spools.push_back(agent.spool);
    }
  }
  (void)WriteSessionRecord(dfx_dir_, record_);
}

Status RunCoordinator::FanOut() {
  const auto& passes = scheduler_->passes();
  for (size_t p = 0; p < passes.size(); ++p) {
    if (passes.size() > 1) {
      DFX_LOG_INFO("l3_swimlane_pass={} event=begin", config::PassKindName(passes[p].kind));
    }
    scheduler_->BeginPass(p);
    for (;;) {
      scheduler_->SendReady(
          [this](size_t index, const config::PassPlan& pass) { return SendDispatch(index, pass); });
      if (!scheduler_->Busy()) break;
      DFX_RETURN_IF_ERROR(Pump());
    }
    if (passes.size() > 1) {
      DFX_LOG_INFO("l3_swimlane_pass={} event=end", config::PassKindName(passes[p].kind));
    }
  }
  scheduler_->CompleteRanks();
  return Status::Ok();
}

void RunCoordinator::WriteFinalManifest(collectors::RunState final_state) {
  // The last word on the run: a write that fails for want of descriptors
  // (half-open connections of a flood that libzmq tears down only after the
  // listener closed) is retried for a while, or the manifest on disk would
  // stay at an earlier state.
  for (int attempt = 0; !WriteManifest(final_state, /*log_failure=*/attempt == 40); ++attempt) {
    if (attempt == 40) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

DispatchScheduler::SpoolCheck RunCoordinator::InSpool() {
  std::vector<fs::path> roots;
  if (!spool_.empty()) roots.push_back(spool_);
  for (const auto& [id, agent] : loop_.registry().agents()) {
    if (!agent.spool.empty()) roots.emplace_back(agent.spool);
  }
  return [roots, session = session_](int32_t rank, uint32_t k) {
    return SpoolHoldsDispatch(roots, session, rank, k);
  };
}

Result<SessionOutcome> RunCoordinator::Interrupted() {
  const std::string name = StopSignalName(stop_signal_);
  const std::string why = "the coordinator was stopped by " + name;
  finishing_ = true;
  capture_->CloseControl();
  live_state_ = collectors::RunState::kInterrupted;
  if (options_.live_progress) DrawProgress(true);
  const uint64_t grace = std::min<uint64_t>(ToNs(options_.timeouts.shutdown), 2000 * kMs);
  DFX_LOG_WARN(
      "{}: stopping the run: nothing more is dispatched, what is in flight gets {:g} s to land, "
      "then the agents are told to stop (their spools are kept); {} again exits at once",
      name, grace / 1e9, stop_signal_ == SIGINT ? "Ctrl-C" : name);
  // From here on a second signal may end the process at any moment: the
  // manifest on disk says "interrupted" first.
  WriteManifest(collectors::RunState::kInterrupted);
  const uint64_t land_by = Now() + grace;
  while (Now() < land_by && (scheduler_->AnyInFlight() || !loop_.receiver().WriterIdle())) {
    (void)loop_.Pump(20, *this);
  }
  loop_.SendShutdown(why + "; keep the spool");
  const uint64_t gone_by = Now() + 1500 * kMs;
  while (Now() < gone_by && launcher_.AnyRunning()) (void)loop_.Pump(20, *this);
  launcher_.TerminateAll(500, "1.5 s after it was told to stop");
  loop_.CloseListener();
  // Streams still open end here: their files stay in the agents' spools.
  for (const auto& [id, agent] : loop_.registry().agents()) {
    loop_.receiver().AbortAgent(id, why + " while it streamed; the file is in the agent's spool");
  }
  loop_.DrainWriter(Now() + 1000 * kMs, *this);  // the write under way settles them
  const DispatchScheduler::SpoolCheck in_spool = InSpool();
  scheduler_->Interrupt(why, in_spool);
  scheduler_->ReconcileArtifacts(in_spool);
  SessionOutcome out = SummarizeSession(*scheduler_, collectors::DfxOutputsDir(options_.work_dir),
                                        dfx_dir_, may_capture_, stdout);
  out.success = false;
  out.stop_signal = stop_signal_;
  out.session_id = session_;
  out.manifest_path = dfx_dir_ / collectors::kRunManifestFile;
  PrintGatherHint(*scheduler_, options_.work_dir, stdout, /*always=*/true);
  WriteFinalManifest(collectors::RunState::kInterrupted);
  return out;
}

Result<SessionOutcome> RunCoordinator::Run() {
  // SIGINT / SIGTERM / SIGHUP end the run cleanly (stop_signals.h).
  StopSignalGuard stop_signals;
  DFX_ASSIGN_OR_RETURN(std::vector<PlannedDispatch> planned, ExpandPlan(plan_, options_.ranks));
  scheduler_ = std::make_unique<DispatchScheduler>(
      options_.ranks, config::PlanPasses(options_.config, /*l3=*/true), planned, *options_.clock);
  DFX_ASSIGN_OR_RETURN(
      SessionCapture capture,
      SessionCapture::Make(plan_, options_.config, options_.capture, options_.ranks, planned));
  capture_.emplace(std::move(capture));
  scheduler_->set_on_finished(
      [this](size_t index, const std::string& error) { OnDispatchFinished(index, error); });
  DFX_RETURN_IF_ERROR(Start());
  DFX_RETURN_IF_ERROR(Launch());
  WriteManifest(collectors::RunState::kStarting);

  // 1. Readiness barrier under one startup deadline.
  Status ready = AwaitReady();
  if (stop_signal_ != 0) return Interrupted();
  DFX_RETURN_IF_ERROR(ready);
  // Agents attached from elsewhere spool where they were told to: record
  // every spool so `dfx-coordinator gather` finds them after a crash.
  RecordAgentSpools();
  // 2. Fan-out, pass by pass: ordered per rank, ranks in parallel.
  Status fanned = FanOut();
  if (stop_signal_ != 0) return Interrupted();
  DFX_RETURN_IF_ERROR(fanned);

  // 3. Shut the agents down; wait for them under the shutdown deadline.
  Finish();
  // The port is not needed any more: closing it frees the descriptors of
  // every connection left (a flood of half-open ones could otherwise starve
  // the conversion and the final manifest of descriptors).
  loop_.CloseListener();
  // Every stream has ended: a dispatch is ok only with all its artifacts.
  scheduler_->ReconcileArtifacts(paused_ns_ == 0 ? DispatchScheduler::SpoolCheck() : InSpool());

  SessionOutcome out = SummarizeSession(*scheduler_, collectors::DfxOutputsDir(options_.work_dir),
                                        dfx_dir_, may_capture_, stdout);
  out.session_id = session_;
  out.manifest_path = dfx_dir_ / collectors::kRunManifestFile;
  out.idle_collectors = IdleCollectorLines(capture_->WithRunConfig(scheduler_->dispatches()),
                                           options_.config, /*l3=*/true);
  // 4. Post-run: one merged trace per rank<N>/d<K>/ when eager (onboard, as
  // the reference); a lazy run leaves the records, and main prints how to
  // convert them on demand.
  const bool onboard = options_.config.execution_mode == config::ExecutionMode::kOnboard;
  if (options_.config.enable_chip_swimlane > 0 &&
      ConvertSwimlanesEagerly(options_.swimlane_traces, onboard)) {
    merged_ = ConvertSwimlanes(stdout, dfx_dir_, out.artifacts, options_.timeouts.convert,
                               options_.convert_jobs);
    out.artifacts.insert(out.artifacts.end(), merged_.begin(), merged_.end());
  }
  PrintGatherHint(*scheduler_, options_.work_dir, stdout);
  WriteFinalManifest(out.success ? collectors::RunState::kOk : collectors::RunState::kFailed);
  std::error_code ec;
  if (!spool_.empty()) fs::remove(spool_, ec);  // only when every agent emptied it
  return out;
}

}  // namespace

Result<SessionOutcome> RunSession(const Plan& plan, const SessionOptions& options) {
  if (options.ranks < 1) return InvalidArgument("--ranks must be >= 1");
  if (options.chips_per_agent < 1) return InvalidArgument("--chips-per-agent must be >= 1");
  if (options.work_dir.empty()) return InvalidArgument("--work-dir DIR is required");
  RunCoordinator coordinator(plan, options);
  metrics::SessionsServed().Add();
  return coordinator.Run();
}

}  // namespace dfx::coordinator
