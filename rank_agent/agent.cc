#include "rank_agent/agent.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <random>
#include <set>
#include <system_error>
#include <tuple>
#include <variant>
#include <vector>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/log.h"
#include "common/metrics.h"
#include "protocol/endpoint.h"
#include "rank_agent/artifact_sender.h"
#include "rank_agent/chip_pool.h"
#include "rank_agent/coordinator_link.h"
#include "rank_agent/program_cache.h"
#include "rank_agent/run_dispatch.h"
#include "rank_agent/spool_dirs.h"

namespace dfx::rank_agent {

namespace fs = std::filesystem;
using protocol::AgentMode;

namespace {

// How long a DispatchAccepted may wait for its DispatchDone. Short next to
// the coordinator's liveness and progress display (heartbeats every 0.2 s),
// long next to a small dispatch's run (well under a millisecond of chip
// time, a few ms on a loaded host).
constexpr uint64_t kAcceptedHoldNs = 20000000;

// Progress goes on a schedule (every kProgressIntervalNs at most, and only
// what changed), never per task.
constexpr uint64_t kProgressIntervalNs = 250000000;

// The largest program text OnDispatch parses on the event loop's thread (a
// few hundred microseconds at most); larger ones are read by the chip's
// worker thread.
constexpr size_t kInlineParseMaxBytes = 16 << 10;

ChipPoolOptions PoolOptions(const AgentOptions& options) {
  ChipPoolOptions pool;
  pool.first_rank = options.first_rank;
  pool.chips = options.chips;
  pool.spool_root = options.spool_root;
  pool.chip = options.chip;
  pool.make_chip = options.make_chip;
  pool.faults = options.faults;
  return pool;
}

}  // namespace

// The event loop: what comes from the coordinator goes to the link (its
// admission), the chips (dispatches, cancels) or the sender (credits,
// acks); what the chips did goes back through the sender.
struct RankAgent::Impl {
  // A DispatchAccepted held back (kAcceptedHoldNs). A dispatch that
  // finishes in time without artifacts sends none: its DispatchDone
  // carries the acceptance (one message each way per dispatch, like a bare
  // echo). One with artifacts sends it right before them; a longer one
  // once the hold is over.
  struct HeldAccept {
    int32_t rank = 0;
    uint32_t k = 0;
    uint64_t accepted_ns = 0;
  };

  Impl(protocol::Context& context, AgentOptions opts)
      : options_(std::move(opts)),
        programs_(options_.faults.forget_programs ? 0 : ProgramCache::kDefaultMaxEntries),
        link_(context, options_),
        sender_(context, link_, options_, spool_),
        pool_(PoolOptions(options_), programs_, spool_, [this] { wake_.Notify(); }) {}

  AgentOptions options_;
  std::atomic<bool> stop_{false};
  protocol::WakePipe wake_;
  ProgramCache programs_;  // parsed programs by hash, so a dispatch can come without its program
  SpoolDirs spool_;
  CoordinatorLink link_;
  ArtifactSender sender_;
  ChipPool pool_;
  std::vector<HeldAccept> held_accepts_;
  // Dispatches waiting for their dispatch dir to have no file in flight
  // (see OnDispatch), in arrival order.
  std::deque<protocol::Dispatch> held_dispatches_;
  uint64_t last_progress_ns_ = 0;
  uint64_t last_refusals_ns_ = 0;
  // Every dispatch received in this session, so that after a reconnect
  // nothing runs twice (docs/design.md §9): only those not here are asked for again.
  std::set<std::tuple<int32_t, uint32_t, protocol::PassKind>> received_;

  uint64_t Now() const { return options_.clock->NowNs(); }
  int32_t FirstRank() const { return link_.ranks().front(); }

  // --- held DispatchAccepted ------------------------------------------------
  void SendAccepted(const HeldAccept& a, uint64_t now) {
    link_.Send(a.rank, protocol::DispatchAccepted{a.rank, a.k, now - a.accepted_ns});
  }
  // Takes the held DispatchAccepted of (rank, k), if any, off the hold:
  // its acceptance time.
  std::optional<uint64_t> TakeHeldAccepted(int32_t rank, uint32_t k) {
    for (auto it = held_accepts_.begin(); it != held_accepts_.end(); ++it) {
      if (it->rank == rank && it->k == k) {
        const uint64_t accepted_ns = it->accepted_ns;
        held_accepts_.erase(it);
        return accepted_ns;
      }
    }
    return std::nullopt;
  }
  // Sends the held DispatchAccepted of (rank, k), if any (before its Done).
  void ReleaseAccepted(int32_t rank, uint32_t k) {
    if (const auto accepted_ns = TakeHeldAccepted(rank, k)) {
      SendAccepted(HeldAccept{rank, k, *accepted_ns}, Now());
    }
  }
  // Sends those held for kAcceptedHoldNs; returns the ms until the next one is due (-1: none).
  int ReleaseExpiredAccepted(uint64_t now) {
    int next_ms = -1;
    for (auto it = held_accepts_.begin(); it != held_accepts_.end();) {
      if (now - it->accepted_ns >= kAcceptedHoldNs) {
        SendAccepted(*it, now);
        it = held_accepts_.erase(it);
        continue;
      }
      const int ms = static_cast<int>((it->accepted_ns + kAcceptedHoldNs - now) / 1000000) + 1;
      next_ms = next_ms < 0 ? ms : std::min(next_ms, ms);
      ++it;
    }
    return next_ms;
  }

  // --- what the chips did ---------------------------------------------------
  void HandleCompletions() {
    for (Completion& c : pool_.TakeCompletions()) {
      if (c.dispatch.session_id != link_.session()) {
        DFX_LOG_WARN("rank {} d{}: finished after its session {} ended; its spool is kept at {}",
                     c.dispatch.rank, c.dispatch.k, Hex64(c.dispatch.session_id), c.dir.string());
        continue;
      }
      // Nothing to stream: the Done carries the acceptance; else it goes
      // before the files.
      std::optional<uint64_t> folded_accept;
      if (c.files.empty()) {
        folded_accept = TakeHeldAccepted(c.dispatch.rank, c.dispatch.k);
      } else {
        ReleaseAccepted(c.dispatch.rank, c.dispatch.k);
      }
      for (const std::string& rel : c.files) {
        sender_.QueueFile(c.dispatch.rank, c.dispatch.k, c.dir, rel);
      }
      protocol::DispatchDone done_msg;
      done_msg.rank = c.dispatch.rank;
      done_msg.k = c.dispatch.k;
      done_msg.status = c.status;
      done_msg.error = c.error;
      done_msg.tasks_executed = c.tasks;
      done_msg.artifact_count = static_cast<uint32_t>(c.files.size());
      done_msg.wall_ns = c.wall_ns;
      done_msg.makespan_ns = c.makespan_ns;
      CountDispatch(c.status, c.dir, c.files);
      if (c.status != protocol::DispatchStatus::kOk) {
        DFX_LOG_WARN("rank {} d{}: {}", c.dispatch.rank, c.dispatch.k, c.error);
      } else {
        DFX_LOG_INFO("rank {} d{}: done, {} task(s), {} artifact(s)", c.dispatch.rank, c.dispatch.k,
                     c.tasks, c.files.size());
      }
      sender_.QueueDone(std::move(done_msg), folded_accept);
    }
  }

  // The --metrics counters of a dispatch that ended (common/metrics.h).
  static void CountDispatch(protocol::DispatchStatus status, const fs::path& dir = {},
                            const std::vector<std::string>& files = {}) {
    metrics::Dispatches(protocol::DispatchStatusName(status)).Add();
    std::error_code ec;
    for (const std::string& rel : files) {
      const auto size = fs::file_size(dir / rel, ec);
      if (!ec) metrics::BytesSpooled().Add(size);
    }
  }

  // Tasks done / total of each running dispatch, bytes streamed of the one
  // being streamed.
  void SendProgress() {
    const uint64_t now = Now();
    if (now - last_progress_ns_ < kProgressIntervalNs) return;
    last_progress_ns_ = now;
    for (const ChipProgressReport& p : pool_.ProgressChanges()) {
      link_.Send(p.rank, protocol::Progress{p.rank, p.k, "running", 0, p.done, p.total});
    }
    if (const auto s = sender_.ProgressChange()) {
      link_.Send(s->rank, protocol::Progress{s->rank, s->k, "streaming", s->sent, 0, 0});
    }
  }

  // --- dispatches -----------------------------------------------------------
  // Held dispatches whose dispatch dir is free now go on, in order (one
  // held again keeps those of its rank behind it).
  void ResumeHeldDispatches() {
    std::deque<protocol::Dispatch> held;
    held.swap(held_dispatches_);
    for (const protocol::Dispatch& d : held) OnDispatch(d);  // held again if still busy
  }

  // `d`'s program, read and kept (ProgramCache) as the chip keeps what it
  // read; nullptr if it does not parse.
  std::shared_ptr<const device::Program> ParseSmallProgram(const protocol::Dispatch& d) {
    auto program = ParseDispatchProgram(d.program_json, ProgramOrigin(d), d.program_file);
    if (!program.ok()) return nullptr;
    programs_.Put(ProgramKey{protocol::ProgramHash(d.program_json), d.program_name, d.program_file},
                  *program, d.program_json.size());
    return *program;
  }

  // A later pass of a dispatch (the timing pass after the graph pass)
  // writes into the same dispatch dir, and starting it empties the dir: it
  // waits until the earlier pass's files there are sent and acknowledged.
  // Else it removed files still to be sent, and the acknowledgement of an
  // earlier name_map.json removed the new one. Later dispatches to the rank
  // wait behind it: a chip runs its dispatches in the order they came
  // (device memory carries over).
  bool HoldDispatch(const protocol::Dispatch& d) {
    const bool rank_held =
        std::any_of(held_dispatches_.begin(), held_dispatches_.end(),
                    [&d](const protocol::Dispatch& h) { return h.rank == d.rank; });
    if (!rank_held &&
        !sender_.DirInFlight(link_.SessionDir() / collectors::DispatchDirPath(d.rank, d.k))) {
      return false;
    }
    DFX_LOG_DEBUG("rank {} d{}: held until the files of its dispatch dir are confirmed", d.rank,
                  d.k);
    held_dispatches_.push_back(d);
    return true;
  }

  void OnDispatch(const protocol::Dispatch& d) {
    sender_.SetWireCompression(d.wire_compression);
    if (received_.insert({d.rank, d.k, d.pass}).second) sender_.ForgetDone(d.rank);
    if (!pool_.Has(d.rank) || options_.mode == AgentMode::kRecover) {
      protocol::DispatchDone done{d.rank, d.k, protocol::DispatchStatus::kRejected,
                                  fmt::format("rank {} is not a chip of this agent", d.rank)};
      CountDispatch(done.status);
      link_.Send(FirstRank(), done);
      sender_.NoteSentDone(done);
      return;
    }
    if (HoldDispatch(d)) return;
    QueuedDispatch queued{d, nullptr};
    if (d.program_json.empty() && d.program_hash != 0) {
      // Sent by hash: run the program kept from an earlier dispatch, or
      // ask for it (a new or restarted agent, or one that evicted it).
      queued.program = programs_.Find(ProgramKey{d.program_hash, d.program_name, d.program_file});
      if (!queued.program) {
        DFX_LOG_INFO("rank {} d{}: program {} ({}) is not kept here; asking for it", d.rank, d.k,
                     d.program_name, Hex64(d.program_hash));
        received_.erase({d.rank, d.k, d.pass});  // lost on the way: asked for again
        link_.Send(d.rank,
                   protocol::DispatchDone{
                       d.rank, d.k, protocol::DispatchStatus::kProgramUnknown,
                       "program " + Truncate(d.program_name, 256) + " is not kept by this agent"});
        return;
      }
    } else if (d.program_json.size() <= kInlineParseMaxBytes) {
      // A small program is read here, so that its first dispatch may run
      // inline like the later ones that come by hash (handed to the chip's
      // worker thread, it costs two thread wake-ups and that thread's cold
      // start). One that does not parse goes the usual way, which says why.
      queued.program = ParseSmallProgram(d);
    }
    queued.dispatch.session_id = link_.session();  // the session owns the spool directory
    if (sender_.bulk_on()) {
      // Its Done would go over the bulk path, in no fixed order with the
      // link's socket: the acceptance goes now.
      link_.Send(d.rank, protocol::DispatchAccepted{d.rank, d.k, 0});
    } else {
      held_accepts_.push_back(HeldAccept{d.rank, d.k, Now()});
    }
    // Its DispatchAccepted and DispatchDone go at the next turn of the loop.
    pool_.Submit(std::move(queued));
  }

  void OnCancel(const protocol::Cancel& cancel) {
    if (!pool_.Has(cancel.rank)) return;
    const auto cancelled = [&] {
      CountDispatch(protocol::DispatchStatus::kCancelled);
      sender_.QueueDone(protocol::DispatchDone{cancel.rank, cancel.k,
                                               protocol::DispatchStatus::kCancelled,
                                               "cancelled before it started: " + cancel.reason});
    };
    for (auto it = held_dispatches_.begin(); it != held_dispatches_.end(); ++it) {
      if (it->rank == cancel.rank && it->k == cancel.k) {
        held_dispatches_.erase(it);  // not accepted yet: nothing to release
        cancelled();
        return;
      }
    }
    if (pool_.CancelQueued(cancel.rank, cancel.k)) {
      ReleaseAccepted(cancel.rank, cancel.k);
      cancelled();
      return;
    }
    DFX_LOG_WARN("rank {} d{}: cancel ignored (already running or done): {}", cancel.rank, cancel.k,
                 cancel.reason);
  }

  // --- sessions -------------------------------------------------------------
  // Ends the current session for a serve agent: forget queued work, clear
  // the chips' device memory once nothing runs on them, keep the spool.
  void ResetSession() {
    // First, so that the programs are gone when the workers release what
    // remains of the session and give the heap back.
    programs_.Clear();  // a program is sent again to each session
    pool_.EndSession();
    sender_.Reset();
    held_accepts_.clear();
    held_dispatches_.clear();
    received_.clear();
    link_.EndSession();
  }

  // The coordinator ended the session: the spool dirs this agent emptied go.
  void OnShutdown(const protocol::Shutdown& shutdown, bool* finished) {
    const fs::path session_dir = link_.SessionDir();
    DFX_LOG_INFO("coordinator ended session {}: {}", Hex64(link_.session()), shutdown.reason);
    if (sender_.unconfirmed() > 0) {
      DFX_LOG_WARN("{} artifact(s) were not confirmed; they stay in {}", sender_.unconfirmed(),
                   session_dir.string());
    } else {
      for (int32_t r : link_.ranks()) {
        spool_.PruneEmpty(session_dir / collectors::RankDirName(r), session_dir);
      }
      std::error_code ec;
      fs::remove(session_dir, ec);  // only succeeds once every agent has emptied it
    }
    if (options_.mode == AgentMode::kServe) {
      ResetSession();
    } else {
      *finished = true;
    }
  }

  // --- a dropped connection (docs/design.md §9) ------------------------------
  // The coordinator's Resume: the streams go on where it holds them, the
  // dispatches it awaits and this agent never received are asked for again,
  // and a DispatchDone that may have been lost goes again (behind the files).
  void OnResume(const protocol::Resume& resume) {
    const bool answer = resume.reconnected && link_.reconnecting();
    link_.OnResume(resume);
    if (!answer) return;
    sender_.OnResume(resume);
    // READY may have been lost with the connection (a coordinator that has
    // it ignores it again).
    if (options_.mode != AgentMode::kRecover) {
      link_.Send(FirstRank(), protocol::Ready{pool_.Describe()});
    }
    protocol::Resumed resumed;
    for (const protocol::DispatchRef& ref : resume.dispatches) {
      if (!received_.count({ref.rank, ref.k, ref.pass})) {
        resumed.missing.push_back(ref);
      } else if (auto done = sender_.SentDone(ref.rank, ref.k)) {
        sender_.QueueDone(*done);
      }
    }
    DFX_LOG_INFO("resumed: {} dispatch(es) awaited, {} never received", resume.dispatches.size(),
                 resumed.missing.size());
    link_.Send(FirstRank(), std::move(resumed));
  }

  // --- the event loop -------------------------------------------------------
  // Returns a non-OK status to end Run() with; OK to continue; sets *finished for a clean end.
  Status OnMessage(const protocol::Frame& frame, bool* finished) {
    DFX_ASSIGN_OR_RETURN(Admission admission, link_.Admit(frame));
    if (admission.refused) {
      // Serve: the session (if any) is over for this agent.
      ResetSession();
      link_.BackOff(admission.refusal);
      return Status::Ok();
    }
    if (!admission.message) return Status::Ok();
    if (admission.attached_now) metrics::SessionsServed().Add();
    if (admission.attached_now && options_.mode != AgentMode::kRecover) {
      link_.Send(FirstRank(), protocol::Ready{pool_.Describe()});
    }
    std::visit([&](auto& body) { OnBody(body, finished); }, admission.message->body);
    return Status::Ok();
  }

  void OnBody(const protocol::Heartbeat& body, bool*) { link_.OnHeartbeat(body); }
  void OnBody(const protocol::Dispatch& body, bool*) { OnDispatch(body); }
  void OnBody(const protocol::Credit& body, bool*) { sender_.OnCredit(body); }
  void OnBody(const protocol::ArtifactAck& body, bool*) { sender_.OnAck(body); }
  void OnBody(const protocol::Cancel& body, bool*) { OnCancel(body); }
  void OnBody(const protocol::Resume& body, bool*) { OnResume(body); }
  void OnBody(const protocol::Shutdown& body, bool* finished) { OnShutdown(body, finished); }
  void OnBody(const protocol::GatherRequest&, bool*) {
    // A recovery agent, or a serve agent whose spool the gathering
    // coordinator cannot read (`dfx-coordinator gather --attach`).
    if (options_.mode != AgentMode::kOneShot && !sender_.recovering()) {
      const std::vector<int32_t>& ranks = link_.ranks();
      sender_.QueueRecovery(std::set<int32_t>(ranks.begin(), ranks.end()));
    }
  }
  template <typename T>
  void OnBody(const T& body, bool*) {
    DFX_LOG_WARN("unexpected {} from the coordinator ignored",
                 protocol::BodyName(protocol::Body(body)));
  }

  // Receives for up to `timeout_ms`, then drains whatever else is queued
  // without waiting.
  Status Receive(int timeout_ms, bool* finished) {
    DFX_ASSIGN_OR_RETURN(protocol::Polled polled, link_.Receive(timeout_ms, wake_.read_fd()));
    if (polled.woken) wake_.Drain();
    if (!polled.frame) return Status::Ok();
    DFX_RETURN_IF_ERROR(OnMessage(*polled.frame, finished));
    for (int i = 0; i < 64 && !*finished; ++i) {
      auto more_frames = link_.Receive(0);
      if (!more_frames.ok() || !more_frames->frame) break;
      DFX_RETURN_IF_ERROR(OnMessage(*more_frames->frame, finished));
    }
    return Status::Ok();
  }

  // One turn of the event loop.
  Status Turn(bool* finished) {
    const uint64_t now = Now();
    // The monitor's events are read on every receive anyway; collecting
    // them for the log does not need every turn of the loop.
    if (now - last_refusals_ns_ >= 100000000) {
      sender_.NoteBulkRefusals();
      link_.NoteHandshakeFailures(now);
      last_refusals_ns_ = now;
    }
    if (link_.LostConnection()) DFX_RETURN_IF_ERROR(link_.Reconnect(sender_.OpenTransfers()));
    bool lost = false;
    DFX_RETURN_IF_ERROR(link_.Tick(now, &lost));
    if (lost) ResetSession();
    HandleCompletions();
    const int accepted_due_ms = ReleaseExpiredAccepted(Now());
    if (link_.attached() && options_.mode != AgentMode::kRecover) SendProgress();
    sender_.CheckBulk(now);
    const bool more = link_.attached() && !link_.reconnecting() && sender_.Pump();
    // The one place held dispatches go on: after the acknowledgements this
    // turn received and the transfers it gave up (an unreadable file).
    if (!held_dispatches_.empty()) ResumeHeldDispatches();
    // While the bulk path's handshake is pending, look again soon.
    int timeout_ms = more ? 0 : sender_.bulk_pending() ? 1 : link_.IdleWaitMs(Now(), Busy());
    if (accepted_due_ms >= 0) timeout_ms = std::min(timeout_ms, accepted_due_ms);
    return Receive(timeout_ms, finished);
  }

  bool Busy() const { return !sender_.idle() || pool_.AnyBusy(); }

  // The ranks this agent speaks for: its chips', or (recover) those found
  // in the spool.
  std::vector<int32_t> Ranks() const {
    std::vector<int32_t> ranks;
    if (options_.mode == AgentMode::kRecover) {
      ranks = collectors::ListRankDirs(link_.SessionDir());
      if (ranks.empty() || options_.recover_only_first_rank) ranks = {options_.first_rank};
    } else {
      for (int i = 0; i < options_.chips; ++i) ranks.push_back(options_.first_rank + i);
    }
    return ranks;
  }

  Status Run() {
    const uint32_t nonce = std::random_device{}();
    const std::string identity = options_.mode == AgentMode::kRecover
                                     ? fmt::format("recover-{}", ::getpid())
                                     : protocol::AgentIdentity(options_.first_rank, nonce);
    DFX_RETURN_IF_ERROR(link_.Connect(identity, Ranks()));
    link_.SendHello();
    // HELLO first, then the chips (READY follows once they exist and the coordinator answered).
    if (options_.mode != AgentMode::kRecover) DFX_RETURN_IF_ERROR(pool_.Start());
    Status result = Status::Ok();
    bool finished = false;
    while (!stop_.load() && !finished && result.ok()) result = Turn(&finished);
    pool_.Stop();
    return result;
  }
};

RankAgent::RankAgent(protocol::Context& context, AgentOptions options)
    : impl_(std::make_unique<Impl>(context, std::move(options))) {}
RankAgent::~RankAgent() = default;
Status RankAgent::Run() { return impl_->Run(); }
void RankAgent::Stop() {
  impl_->stop_.store(true);
  impl_->wake_.Notify();
}

}  // namespace dfx::rank_agent
