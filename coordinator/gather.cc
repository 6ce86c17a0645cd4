#include "coordinator/gather.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <set>
#include <system_error>

#include "collectors/artifact_layout.h"
#include "collectors/run_manifest.h"
#include "common/file_util.h"
#include "common/log.h"
#include "common/metrics.h"
#include "coordinator/event_loop.h"
#include "coordinator/launcher.h"
#include "coordinator/session_record.h"
#include "coordinator/wire_record.h"
#include "protocol/endpoint.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;
using collectors::ArtifactEntry;
using collectors::ArtifactState;

namespace {

// One gather over one spool (or, attached, over the serve agents that connect).
class GatherCoordinator final : public PeerHandler {
 public:
  GatherCoordinator(const GatherOptions& options, const fs::path& dfx_dir, uint64_t session,
                    std::string gather_id)
      : options_(options),
        dfx_dir_(dfx_dir),
        session_(session),
        gather_id_(std::move(gather_id)),
        loop_(dfx_dir, Policy(), LoopOpts(), *options.clock, recovered_) {}

  // Recovery agents on `spool` (one per rank directory it holds).
  Result<GatherOutcome> FromSpool(const fs::path& spool);
  // Serve agents attaching to options.bind, until `ranks` ranks were offered.
  Result<GatherOutcome> Attached(int ranks);

  // --- PeerHandler ----------------------------------------------------------
  void OnAdmitted(AgentState& agent) override {
    // Before the credits: the agent knows where to stream before it may.
    if (loop_.bulk_bound() && agent.host == protocol::ThisHostName()) loop_.OfferBulk(agent);
    loop_.receiver().GrantCredits(agent);
    loop_.registry().Send(agent, agent.ranks.front(), protocol::GatherRequest{session_});
  }
  void OnMessage(AgentState& agent, protocol::Body& body) override {
    if (std::holds_alternative<protocol::Ready>(body)) {
      agent.ready = true;  // a serve agent in an attached gather: it has its credits
    } else if (auto* done = std::get_if<protocol::GatherDone>(&body)) {
      agent.gather_done = true;
      offered_ += done->files;
      DFX_LOG_INFO("{} offered {} spooled files", agent.identity, done->files);
    } else {
      DFX_LOG_WARN("unexpected {} from {} ignored", protocol::BodyName(body), agent.identity);
    }
  }
  Result<std::optional<size_t>> PlaceArtifact(AgentState&,
                                              const protocol::ArtifactBegin&) override {
    return std::optional<size_t>();  // the recovered list
  }
  void OnAgentDead(AgentState&, const std::string&) override {}
  void OnTick() override {
    for (const AgentLauncher::Exit& exit : launcher_.Reap()) {
      for (auto& [id, agent] : loop_.registry().agents()) {
        if (agent.pid == static_cast<uint32_t>(exit.pid) && !agent.dead && !agent.shutdown_sent) {
          loop_.DeclareDead(agent, fmt::format("the recovery agent exited ({})", exit.how), *this);
        }
      }
    }
  }

 private:
  AdmissionPolicy Policy() const {
    AdmissionPolicy p;
    p.session = session_;
    p.num_ranks = 0;  // recovery agents offer the ranks their spool holds
    if (options_.attach) {
      p.modes = {protocol::AgentMode::kServe, protocol::AgentMode::kRecover};
    } else {
      p.modes = {protocol::AgentMode::kRecover};
      p.ignored_modes = {protocol::AgentMode::kServe};  // not for this coordinator now
    }
    return p;
  }
  LoopOptions LoopOpts() const {
    LoopOptions o = MakeLoopOptions(options_.timeouts, options_.credit_window,
                                    options_.max_artifact_bytes, ArtifactState::kRecovered);
    o.context = options_.context;
    o.receiver.wire_compression = options_.wire_compression;
    o.receiver.max_run_bytes = options_.max_run_bytes;
    return o;
  }
  uint64_t Now() const { return options_.clock->NowNs(); }
  void TimeOut() {
    for (auto& [id, agent] : loop_.registry().agents()) {
      if (!agent.gather_done) loop_.DeclareDead(agent, "gather exceeded --timeout", *this);
    }
  }
  // The one tail of both forms: shut the agents down, report, record.
  GatherOutcome Conclude(std::vector<std::string> more_failures);
  void RecordInManifest(const GatherOutcome& out);

  GatherOptions options_;
  fs::path dfx_dir_;
  uint64_t session_;
  std::string gather_id_;
  ListLedger recovered_;  // what the streams recovered
  uint64_t offered_ = 0;
  AgentLauncher launcher_;
  EventLoop loop_;  // last: destroyed first
};

Result<GatherOutcome> GatherCoordinator::FromSpool(const fs::path& spool) {
  const std::string bind = "tcp://127.0.0.1:0";
  DFX_ASSIGN_OR_RETURN(Access access, ResolveAccess({}, bind, /*launching=*/true));
  DFX_RETURN_IF_ERROR(loop_.Bind(bind, access.server));
  if (options_.bulk_transport == "auto") {
    if (Status s = loop_.BindBulk(); !s.ok()) {
      DFX_LOG_WARN("{}; artifacts come over CURVE", s.message());
    }
  }
  AgentLaunch launch;
  launch.curve = access.launched_agents;
  launch.agent_binary = options_.agent_binary;
  launch.endpoint = loop_.endpoint();
  launch.session = session_;
  launch.spool_root = spool;
  launch.timeouts = options_.timeouts;
  launch.timeouts.connect = options_.timeouts.gather;
  // One recovery agent per rank directory, so ranks stream in parallel like
  // the agents of the run did.
  for (int32_t rank : collectors::ListRankDirs(spool / Hex64(session_))) {
    DFX_RETURN_IF_ERROR(launcher_.StartRecovery(launch, rank));
  }
  const uint64_t deadline = Now() + ToNs(options_.timeouts.gather);
  for (;;) {
    const size_t exited_silent = launcher_.exited();
    auto& agents = loop_.registry().agents();
    bool done = agents.size() + (agents.empty() ? exited_silent : 0) >= launcher_.size();
    for (auto& [id, agent] : agents) {
      done &= agent.dead || (agent.gather_done && loop_.receiver().open_streams() == 0);
    }
    if (done && loop_.receiver().WriterIdle()) break;
    if (agents.empty() && launcher_.size() > 0 && exited_silent == launcher_.size()) {
      return Unavailable("every recovery agent exited (" + launcher_.DescribeFirst() +
                         ") before it connected");
    }
    if (Now() > deadline) {
      TimeOut();
      break;
    }
    DFX_RETURN_IF_ERROR(loop_.Pump(20, *this));
  }
  return Conclude({});
}

Result<GatherOutcome> GatherCoordinator::Attached(int ranks) {
  DFX_ASSIGN_OR_RETURN(const std::string bind, protocol::ResolveBindEndpoint(options_.bind));
  DFX_ASSIGN_OR_RETURN(Access access, ResolveAccess(options_.access, bind, /*launching=*/false));
  DFX_RETURN_IF_ERROR(loop_.Bind(bind, access.server));
  DFX_ASSIGN_OR_RETURN(const std::string advertised,
                       protocol::AdvertisedEndpoint(loop_.endpoint(), options_.advertise));
  if (!access.server) DFX_LOG_WARN("{}", access.description);
  DFX_LOG_INFO(
      "gather of session {}: waiting for {} rank(s) on {}; start (or keep running) "
      "`dfx-rank-agent serve --coordinator {} --rank R`",
      Hex64(session_), ranks, loop_.endpoint(), advertised);
  const uint64_t deadline = Now() + ToNs(options_.timeouts.gather);
  std::set<int32_t> missing;
  for (;;) {
    missing.clear();
    for (int32_t r = 0; r < ranks; ++r) missing.insert(r);
    bool busy = false;
    for (auto& [id, agent] : loop_.registry().agents()) {
      if (agent.dead) continue;
      if (agent.gather_done) {
        for (int32_t r : agent.ranks) missing.erase(r);
      } else {
        busy = true;
      }
    }
    if (missing.empty() && !busy && loop_.receiver().Idle()) break;
    if (Now() > deadline) {
      TimeOut();
      break;
    }
    DFX_RETURN_IF_ERROR(loop_.Pump(20, *this));
  }
  std::vector<std::string> failures;
  if (!missing.empty()) {
    failures.push_back(fmt::format(
        "no serve agent offered rank(s) {} within --timeout {:g} s (are they running "
        "with --coordinator {}?)",
        fmt::join(missing, ","), ToSeconds(options_.timeouts.gather), loop_.endpoint()));
  }
  return Conclude(std::move(failures));
}

GatherOutcome GatherCoordinator::Conclude(std::vector<std::string> more_failures) {
  // Every received file is verified and acknowledged before the agents go.
  loop_.DrainWriter(Now() + ToNs(options_.timeouts.shutdown), *this);
  loop_.SendShutdown("gather complete");
  const uint64_t deadline = Now() + ToNs(options_.timeouts.shutdown);
  // A short poll: an agent's exit wakes nothing here, and the gather ends
  // as soon as the last one is gone.
  while (launcher_.AnyRunning() && Now() <= deadline) (void)loop_.Pump(2, *this);
  launcher_.TerminateAll(2000);

  GatherOutcome out;
  out.session_id = session_;
  for (const ArtifactEntry& a : recovered_.entries()) {
    if (a.status == ArtifactState::kRecovered) {
      out.recovered.push_back(a.path);
    } else {
      out.failed.push_back(a.path + ": " + a.error);
    }
  }
  out.success = out.failed.empty() && offered_ == recovered_.entries().size();
  for (auto& [id, agent] : loop_.registry().agents()) {
    if (!agent.dead) continue;
    out.success = false;
    out.failed.push_back(fmt::format(
        "{}: {}", options_.attach ? "agent " + agent.identity : "recovery agent", agent.error));
  }
  for (auto& f : more_failures) {
    out.success = false;
    out.failed.push_back(std::move(f));
  }
  RecordInManifest(out);
  LogWireAndBudget(loop_.receiver(), options_.wire_compression, options_.max_run_bytes,
                   options_.work_dir);
  DFX_LOG_INFO("artifact bytes received: {} over the local bulk path (ipc), {} over CURVE",
               loop_.bulk_bytes(), loop_.control_bytes());
  return out;
}

// A dispatch whose files its agent kept in the spool ("in_spool": the run
// was stopped by a signal, or its agent gave up on a paused coordinator) is
// "ok" once as many artifacts as its agent reported are in place; one that
// never finished is "interrupted" with what its spool held.
void SettleInSpool(collectors::DispatchEntry& d) {
  if (d.status != collectors::DispatchState::kInSpool) return;
  uint32_t in_place = 0;
  for (const ArtifactEntry& a : d.artifacts) {
    in_place += a.status == ArtifactState::kOk || a.status == ArtifactState::kRecovered ? 1 : 0;
  }
  if (!d.artifact_count) {
    // It never finished: what reached the spool is in place, the rest never existed.
    d.status = collectors::DispatchState::kInterrupted;
    d.error += fmt::format("; gather fetched the {} file(s) its spool held", in_place);
    return;
  }
  if (in_place < *d.artifact_count || in_place < d.artifacts.size()) return;
  d.status = collectors::DispatchState::kOk;
  d.error.clear();
}

void GatherCoordinator::RecordInManifest(const GatherOutcome& out) {
  const fs::path path = dfx_dir_ / collectors::kRunManifestFile;
  collectors::RunManifest m;
  if (auto existing = collectors::ReadRunManifest(path); existing.ok()) {
    m = std::move(*existing);
  } else if (existing.status().code() != Code::kNotFound) {
    DFX_LOG_WARN("{}; writing a new one", existing.status().message());
  }
  m.session = session_;
  // A run whose coordinator died never said how it ended: it, and whatever
  // it left waiting or running, was interrupted.
  // A run stopped by a second Ctrl-C may have said "interrupted" before it
  // could settle its entries.
  if (m.status == collectors::RunState::kStarting || m.status == collectors::RunState::kRunning ||
      m.status == collectors::RunState::kInterrupted) {
    m.status = collectors::RunState::kInterrupted;
    for (collectors::RankEntry& r : m.ranks) {
      if (r.status == collectors::RankState::kWaiting ||
          r.status == collectors::RankState::kReady) {
        r.status = collectors::RankState::kInterrupted;
        if (r.error.empty()) r.error = "the coordinator stopped before the run ended";
      }
    }
    for (collectors::DispatchEntry& d : m.dispatches) {
      using collectors::DispatchState;
      if (d.status == DispatchState::kPending || d.status == DispatchState::kSent ||
          d.status == DispatchState::kRunning) {
        d.status = DispatchState::kInterrupted;
        if (d.error.empty()) {
          d.error =
              "the coordinator stopped before this dispatch finished; its artifacts that "
              "reached a spool are listed as recovered";
        }
      }
    }
  }
  // Mark the dispatch entries whose artifacts came back through gather.
  for (collectors::DispatchEntry& d : m.dispatches) {
    const std::string dir = collectors::DispatchDirPath(d.rank, d.k) + "/";
    for (const ArtifactEntry& a : recovered_.entries()) {
      if (a.path.rfind(dir, 0) != 0 || a.status != ArtifactState::kRecovered) continue;
      bool found = false;
      for (ArtifactEntry& art : d.artifacts) {
        if (art.path == a.path) {
          art = a;
          found = true;
        }
      }
      if (!found) d.artifacts.push_back(a);
    }
    SettleInSpool(d);
  }
  SettleBudget(out.recovered, &m);
  // One gather may visit several spools: accumulate into one record.
  const bool same = m.gather && m.gather->gather_id == gather_id_;
  collectors::GatherEntry gather = same ? *m.gather : collectors::GatherEntry{};
  gather.gather_id = gather_id_;
  gather.ok = out.success && (!same || gather.ok);
  gather.recovered.insert(gather.recovered.end(), recovered_.entries().begin(),
                          recovered_.entries().end());
  gather.failed.insert(gather.failed.end(), out.failed.begin(), out.failed.end());
  m.gather = std::move(gather);
  if (Status s = collectors::WriteRunManifest(dfx_dir_, m); !s.ok()) {
    DFX_LOG_ERROR("cannot update the run manifest: {}", s.message());
  }
}

uint64_t RandomId() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace

Result<GatherOutcome> RunGather(const GatherOptions& options) {
  metrics::SessionsServed().Add();
  const fs::path dfx_dir = collectors::DfxOutputsDir(options.work_dir);
  const auto record_dir = collectors::FindRunRecordDir(options.work_dir);
  if (!record_dir) {
    return NotFound(fmt::format("{}: no session record; was a run started with --work-dir {}?",
                                (dfx_dir / collectors::kSessionFile).string(),
                                options.work_dir.string()));
  }
  // A live coordinator of this run holds the lock: gather must not touch
  // its temporary files or its manifest.
  auto lock = collectors::LockWorkDir(options.work_dir);
  if (!lock.ok()) {
    return Status(lock.status().code(), "gather: " + lock.status().message() +
                                            " (gather is for a run whose coordinator has stopped)");
  }
  if (!lock->warning().empty()) DFX_LOG_WARN("{}", lock->warning());
  DFX_ASSIGN_OR_RETURN(SessionRecord record, ReadSessionRecord(*record_dir));
  std::vector<fs::path> spools;
  if (!options.spool_root.empty()) {
    spools.push_back(options.spool_root);
  } else {
    // Node-local spools (mpirun / srun) leave $.spool empty: the agents'
    // own spools were recorded once they said HELLO.
    if (record.spool.empty() && record.agent_spools.empty() && !options.attach) {
      return InvalidArgument(
          fmt::format("{}: at $.spool: expected the spool directory (or pass "
                      "--spool)",
                      (*record_dir / collectors::kSessionFile).string()));
    }
    if (!record.spool.empty()) spools.push_back(record.spool);
    spools.insert(spools.end(), record.agent_spools.begin(), record.agent_spools.end());
  }
  // A coordinator killed mid-stream leaves its temporary files behind: they
  // were never renamed into place, so they are garbage. Links are not followed.
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dfx_dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec) && !it->is_symlink(ec) &&
        IsTemporaryPath(it->path().filename().string())) {
      fs::remove(it->path(), ec);
    }
  }
  const std::string gather_id = fmt::format("{}-{}", ::getpid(), Hex64(RandomId()));
  if (options.attach) {
    if (record.ranks < 1) {
      return InvalidArgument(fmt::format("{}: at $.ranks: expected the run's rank count (>= 1)",
                                         (*record_dir / collectors::kSessionFile).string()));
    }
    GatherCoordinator gather(options, dfx_dir, record.session, gather_id);
    return gather.Attached(record.ranks);
  }
  GatherOutcome total;
  total.session_id = record.session;
  total.success = true;
  for (const fs::path& spool : spools) {
    if (!fs::is_directory(spool / Hex64(record.session), ec)) {
      DFX_LOG_INFO("nothing to gather: {} holds no spool of session {}", spool.string(),
                   Hex64(record.session));
      continue;
    }
    GatherCoordinator gather(options, dfx_dir, record.session, gather_id);
    DFX_ASSIGN_OR_RETURN(GatherOutcome out, gather.FromSpool(fs::absolute(spool)));
    total.success &= out.success;
    total.recovered.insert(total.recovered.end(), out.recovered.begin(), out.recovered.end());
    total.failed.insert(total.failed.end(), out.failed.begin(), out.failed.end());
  }
  return total;
}

}  // namespace dfx::coordinator
