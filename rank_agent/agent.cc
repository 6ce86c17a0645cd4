#include "rank_agent/agent.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <system_error>
#include <thread>
#include <variant>
#include <vector>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/heap.h"
#include "common/log.h"
#include "protocol/codec.h"
#include "protocol/endpoint.h"
#include "rank_agent/launch_guard.h"
#include "rank_agent/program_cache.h"
#include "rank_agent/run_dispatch.h"
#include "rank_agent/spool_sum.h"

namespace dfx::rank_agent {

namespace fs = std::filesystem;
using protocol::AgentMode;

namespace {

// Removes `dir` and then its parents up to (not including) `stop` while they
// are empty, stopping at any directory in `keep`.
void RemoveEmptyDirs(fs::path dir, const fs::path& stop, const std::set<fs::path>& keep) {
  std::error_code ec;
  while (!dir.empty() && dir != stop && !keep.count(dir) && fs::is_directory(dir, ec) &&
         fs::is_empty(dir, ec)) {
    fs::remove(dir, ec);
    dir = dir.parent_path();
  }
}

// Everything that matters (DispatchDone, Ends) is sent long before exit; a
// short linger keeps an agent whose coordinator is gone from hanging on close.
protocol::SocketOptions AgentSocketOptions(const std::optional<protocol::CurveClient>& curve) {
  protocol::SocketOptions options;
  options.linger_ms = 500;
  options.curve_client = curve;
  // A coordinator sends at most one Dispatch per chip at a time plus small
  // control messages: a short inbound queue bounds what a peer can park here.
  options.receive_high_water = 64;
  return options;
}

// Reads up to `size` bytes at `offset` (a short count only at end of file).
Result<size_t> ReadAt(int fd, char* dst, size_t size, uint64_t offset) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, dst + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Internal(fmt::format("read failed: {}", std::strerror(errno)));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

std::string Truncate(std::string s, size_t limit) {
  if (s.size() > limit) {
    s.resize(limit - 16);
    s += " ...[truncated]";
  }
  return s;
}

}  // namespace

struct RankAgent::Impl {
  // --- chip workers -------------------------------------------------------
  struct Completion {
    protocol::Dispatch dispatch;
    protocol::DispatchStatus status = protocol::DispatchStatus::kOk;
    std::string error;
    uint64_t tasks = 0;
    uint64_t wall_ns = 0;
    uint64_t makespan_ns = 0;
    fs::path dir;
    std::vector<std::string> files;
  };

  // A dispatch waiting for its chip, with the program the agent kept for it
  // when it came without one (ProgramCache).
  struct QueuedDispatch {
    protocol::Dispatch dispatch;
    std::shared_ptr<const device::Program> program;
  };

  struct ChipWorker {
    int32_t rank = 0;
    std::unique_ptr<device::Chip> chip;
    std::shared_ptr<device::ChipProgress> progress;  // kept up to date by the chip
    std::optional<uint32_t> running_k;               // the dispatch on the chip (under mu)
    std::pair<uint32_t, uint64_t> last_reported{0, UINT64_MAX};  // (k, done); event loop only
    std::thread thread;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<QueuedDispatch> queue;
    bool reset_pending = false;  // the session ended: clear the chip before the next dispatch
    bool stop = false;
  };

  // --- outgoing streams ---------------------------------------------------
  struct OutTransfer {
    uint64_t id = 0;
    int32_t rank = 0;
    uint32_t k = 0;
    std::string rel;  // relative to rank<N>/d<K>/
    fs::path file;
    fs::path dispatch_dir;
    uint64_t size = 0;
    uint64_t offset = 0;
    bool begun = false;
    int fd = -1;
    std::unique_ptr<Checksum64> sum;   // hashed while sending: only when none was kept
    std::optional<uint64_t> kept_sum;  // the checksum kept at write (SumPath)
    ~OutTransfer() {
      if (fd >= 0) ::close(fd);
    }
  };
  struct DoneMarker {
    protocol::DispatchDone done;
    // When the dispatch's held DispatchAccepted is folded into this
    // message: when the agent accepted it.
    std::optional<uint64_t> accepted_ns;
  };
  struct GatherDoneMarker {
    uint32_t files = 0;
  };
  using SendItem = std::variant<std::unique_ptr<OutTransfer>, DoneMarker, GatherDoneMarker>;

  struct Unacked {
    fs::path file;
    fs::path dispatch_dir;
    fs::path sum_file;  // its kept checksum (may not exist)
  };

  Impl(protocol::Context& context, AgentOptions opts)
      : context_(context),
        options_(std::move(opts)),
        programs_(options_.faults.forget_programs ? 0 : ProgramCache::kDefaultMaxEntries) {}

  protocol::Context& context_;
  AgentOptions options_;
  std::atomic<bool> stop_{false};
  protocol::WakePipe wake_;
  protocol::DealerChannel channel_;
  // The local bulk path (design.md §7), once the coordinator offered it:
  // the send queue's messages (artifact streams and the DispatchDone /
  // GatherDone that follow them) go there, in order; the rest stays on channel_.
  protocol::DealerChannel bulk_;
  bool bulk_on_ = false;
  // Offer taken, handshake not yet completed: the send queue waits (at most
  // kBulkHandshakeNs), so no stream is split between two sockets and nothing
  // is handed to a socket the coordinator may refuse (e.g. its pid check).
  bool bulk_pending_ = false;
  bool bulk_failed_ = false;  // refused once: this session stays on CURVE
  uint64_t bulk_offered_ns_ = 0;
  std::string bulk_endpoint_;
  std::string identity_;

  std::vector<std::unique_ptr<ChipWorker>> workers_;
  std::mutex spool_mu_;              // dispatch-dir creation (workers) vs empty-dir removal (loop)
  std::set<fs::path> running_dirs_;  // dispatch dirs a chip is writing into (under spool_mu_)
  std::mutex done_mu_;
  std::deque<Completion> done_;
  ProgramCache programs_;  // parsed programs by hash, so a dispatch can come without its program

  uint64_t session_ = 0;        // current session (0 = none yet)
  std::vector<int32_t> ranks_;  // ranks owned (recover: found in the spool)
  uint64_t sequence_ = 0;
  bool attached_ = false;  // a coordinator answered in this session
  bool ready_sent_ = false;
  bool gather_requested_ = false;
  uint64_t started_ns_ = 0;
  uint64_t last_rx_ns_ = 0;
  uint64_t last_hb_ns_ = 0;
  uint64_t last_tx_ns_ = 0;  // the last message this agent sent (any kind)
  uint64_t last_refusals_ns_ = 0;
  uint64_t last_hello_ns_ = 0;
  uint64_t wait_started_ns_ = 0;  // serve: when the current wait for a coordinator began
  uint64_t wait_logged_ns_ = 0;
  uint64_t next_hello_ns_ = 0;     // serve: no HELLO before this (backoff after a refusal)
  uint64_t hello_backoff_ns_ = 0;  // the current backoff; 0 = none
  uint64_t handshake_failures_ = 0;
  std::string last_handshake_failure_;
  uint64_t last_handshake_log_ns_ = 0;
  uint64_t last_progress_ns_ = 0;
  uint64_t last_reported_bytes_ = 0;
  uint32_t credits_ = 0;
  uint64_t next_transfer_id_ = 1;
  std::deque<SendItem> send_queue_;
  // DispatchAccepted held back (kAcceptedHoldNs). A dispatch that finishes
  // in time without artifacts sends none: its DispatchDone carries the
  // acceptance (one message each way per dispatch, like a bare echo). One
  // with artifacts sends it right before them; a longer one once the hold
  // is over.
  struct HeldAccept {
    int32_t rank = 0;
    uint32_t k = 0;
    uint64_t accepted_ns = 0;
  };
  std::vector<HeldAccept> held_accepts_;
  // Dispatches waiting for their dispatch dir to have no file in flight
  // (see OnDispatch), in arrival order.
  std::deque<protocol::Dispatch> held_dispatches_;
  std::map<uint64_t, Unacked> unacked_;
  std::map<std::pair<int32_t, uint32_t>, uint64_t> bytes_sent_;

  uint64_t Now() const { return options_.clock->NowNs(); }
  fs::path SessionDir() const { return collectors::SessionSpoolDir(options_.spool_root, session_); }

  // --- sending --------------------------------------------------------------
  protocol::Header MakeHeader(int32_t rank) {
    return protocol::Header{protocol::kProtocolVersion, session_, rank, ++sequence_};
  }

  // Returns false when the message could not be queued (would block); the
  // caller retries. `stream`: a message of the send queue (the bulk path's, when on).
  bool Send(int32_t rank, protocol::Body body, bool stream = false) {
    protocol::Message m{MakeHeader(rank), std::move(body)};
    auto r = (stream && bulk_on_ ? bulk_ : channel_).Send(m);
    if (!r.ok()) {
      DFX_LOG_WARN("sending {} failed: {}", protocol::BodyName(m.body), r.status().ToString());
      return false;
    }
    if (*r == protocol::SendResult::kWouldBlock) {
      --sequence_;
      return false;
    }
    last_tx_ns_ = Now();
    return true;
  }

  void SendHello() {
    protocol::Hello hello;
    hello.ranks = ranks_;
    hello.chips = static_cast<uint32_t>(ranks_.size());
    hello.session_id = session_;
    hello.host = protocol::ThisHostName("unknown");
    hello.pid = static_cast<uint32_t>(::getpid());
    hello.agent_clock_ns = Now();
    hello.mode = options_.mode;
    hello.spool_dir = fs::absolute(options_.spool_root).string();
    Send(ranks_.front(), std::move(hello));
    last_hello_ns_ = Now();
  }

  // --- chip workers ---------------------------------------------------------
  Status StartChips() {
    for (int i = 0; i < options_.chips; ++i) {
      auto worker = std::make_unique<ChipWorker>();
      worker->rank = options_.first_rank + i;
      worker->progress = std::make_shared<device::ChipProgress>();
      device::ChipOptions chip_options = options_.chip;
      chip_options.progress = worker->progress;
      worker->chip = device::MakeEmulatedChip(chip_options);
      if (worker->chip == nullptr) {
        return Internal(
            fmt::format("rank {}: the emulated chip could not be created", worker->rank));
      }
      ChipWorker* w = worker.get();
      worker->thread = std::thread([this, w] { WorkerLoop(w); });
      workers_.push_back(std::move(worker));
    }
    return Status::Ok();
  }

  void StopChips() {
    for (auto& w : workers_) {
      {
        std::lock_guard<std::mutex> lock(w->mu);
        w->stop = true;
      }
      w->cv.notify_all();
    }
    for (auto& w : workers_) {
      if (w->thread.joinable()) w->thread.join();
    }
    workers_.clear();
  }

  ChipWorker* WorkerFor(int32_t rank) {
    for (auto& w : workers_) {
      if (w->rank == rank) return w.get();
    }
    return nullptr;
  }

  void WorkerLoop(ChipWorker* w) {
    for (;;) {
      QueuedDispatch d;
      {
        std::unique_lock<std::mutex> lock(w->mu);
        w->cv.wait(lock, [w] { return w->stop || w->reset_pending || !w->queue.empty(); });
        if (w->stop) return;
        if (w->reset_pending) {
          // Here, between dispatches, nothing runs on the chip: the device
          // memory of the session that ended goes with it.
          w->reset_pending = false;
          const size_t tensors = w->chip->resident_state().size();
          w->chip->resident_state().clear();
          w->chip->ReleaseShared();  // the kept lowering, with the session's programs
          // What the session allocated goes back to the kernel (with the
          // heap's reserve on huge pages, glibc would keep up to 256 MiB of
          // a freed top).
          ReleaseFreeHeap();
          if (tensors > 0) {
            DFX_LOG_INFO("rank {}: session ended; cleared {} device-resident tensor(s)", w->rank,
                         tensors);
          }
          continue;
        }
        d = std::move(w->queue.front());
        w->queue.pop_front();
        BeginRunLocked(*w, d.dispatch.k);
      }
      EndRun(*w, RunOne(*w, std::move(d)));
      wake_.Notify();
    }
  }

  // The chip starts running dispatch k (under w.mu).
  static void BeginRunLocked(ChipWorker& w, uint32_t k) {
    w.running_k = k;
    w.progress->tasks_done.store(0, std::memory_order_relaxed);
    w.progress->tasks_total.store(0, std::memory_order_relaxed);
  }
  // The chip is done with a dispatch: the event loop sends what it did.
  void EndRun(ChipWorker& w, Completion c) {
    {
      std::lock_guard<std::mutex> lock(w.mu);
      w.running_k.reset();
    }
    std::lock_guard<std::mutex> lock(done_mu_);
    done_.push_back(std::move(c));
  }

  // Runs `queued` on the event loop's thread when it is small (RunsInline)
  // and its chip is idle: its worker thread then waits for work and the
  // chip is the event loop's until the run ends (w.mu orders the two). A
  // worker that has work queued or running keeps this one behind it.
  // Returns false (nothing done) otherwise.
  bool TryRunInline(ChipWorker& w, QueuedDispatch& queued) {
    if (!queued.program || !RunsInline(*queued.program, queued.dispatch.config)) return false;
    {
      std::lock_guard<std::mutex> lock(w.mu);
      if (w.stop || w.reset_pending || w.running_k || !w.queue.empty()) return false;
      BeginRunLocked(w, queued.dispatch.k);
    }
    EndRun(w, RunOne(w, std::move(queued)));
    return true;
  }

  // How errors name a dispatch's program: its plan name.
  static std::string ProgramOrigin(const protocol::Dispatch& d) {
    return d.program_name.empty() ? "<program>" : d.program_name;
  }

  Completion RunOne(ChipWorker& w, QueuedDispatch queued) {
    protocol::Dispatch& d = queued.dispatch;
    Completion c;
    // Hashed here, not taken from the coordinator: what is kept is what ran.
    const uint64_t json_bytes = d.program_json.size();
    const ProgramKey key{queued.program ? 0 : protocol::ProgramHash(d.program_json), d.program_name,
                         d.program_file};
    c.dir = collectors::SessionSpoolDir(options_.spool_root, d.session_id) /
            collectors::DispatchDirPath(d.rank, d.k);
    DispatchRequest request;
    request.program_json = std::move(d.program_json);
    request.program = std::move(queued.program);
    request.program_kept = true;
    request.program_origin = ProgramOrigin(d);
    request.program_file = d.program_file;
    request.config = d.config;
    request.pass = d.pass;
    request.output_dir = c.dir;
    request.name_map_file = collectors::kDispatchNameMapFile;
    request.faults = options_.faults;
    request.on_accepted = [&] {
      // Serialised with the event loop's removal of emptied spool dirs, and
      // the directory is kept from it until the run is over, so it cannot
      // vanish while the chip writes into it.
      std::lock_guard<std::mutex> lock(spool_mu_);
      // The k numbering restarts every run: a stale directory of an earlier
      // pass on this agent must not leak into this one.
      std::error_code ec;
      fs::remove_all(c.dir, ec);
      running_dirs_.insert(c.dir);
      DFX_LOG_INFO("rank {} d{}: running program {} ({} pass{})", d.rank, d.k, d.program_name,
                   protocol::PassKindName(d.pass),
                   request.program_json.empty() ? ", kept: sent by hash" : "");
      return d.config.AnyDfx() ? MakeDirs(c.dir) : Status::Ok();
    };
    DispatchOutcome r = RunDispatch(*w.chip, request);
    if (r.program && !request.program) programs_.Put(key, r.program, json_bytes);
    {
      std::lock_guard<std::mutex> lock(spool_mu_);
      running_dirs_.erase(c.dir);
    }
    c.tasks = r.tasks_executed;
    c.wall_ns = r.wall_ns;
    c.makespan_ns = r.makespan_ns;
    if (!r.status.ok()) {
      c.status = r.failure == DispatchFailure::kRefused ? protocol::DispatchStatus::kRejected
                                                        : protocol::DispatchStatus::kFailed;
      // The coordinator's record names the dispatch: the reason alone.
      c.error = Truncate(r.status.message(), protocol::kMaxErrorBytes);
    }
    // Whatever the chip managed to write is streamed back, even on failure
    // (the reference exports what it has when a run fails).
    c.files = std::move(r.artifacts);
    for (const std::string& rel : c.files) {
      // Here, on the chip's thread, not while streaming (hash once, at write).
      if (Status s = WriteSum(c.dir, rel); !s.ok()) {
        DFX_LOG_WARN("cannot keep the checksum of {}: {}; it is hashed while sent",
                     (c.dir / rel).string(), s.message());
      }
    }
    c.dispatch = std::move(d);
    return c;
  }

  // --- held DispatchAccepted ------------------------------------------------
  // How long a DispatchAccepted may wait for its DispatchDone. Short next
  // to the coordinator's liveness and progress display (heartbeats every
  // 0.2 s), long next to a small dispatch's run (well under a millisecond
  // of chip time, a few ms on a loaded host).
  static constexpr uint64_t kAcceptedHoldNs = 20000000;

  void SendAccepted(const HeldAccept& a, uint64_t now) {
    Send(a.rank, protocol::DispatchAccepted{a.rank, a.k, now - a.accepted_ns});
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

  // --- the event loop -------------------------------------------------------
  void HandleCompletions() {
    std::deque<Completion> done;
    {
      std::lock_guard<std::mutex> lock(done_mu_);
      done.swap(done_);
    }
    for (Completion& c : done) {
      if (c.dispatch.session_id != session_) {
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
      for (const std::string& rel : c.files) QueueFile(c.dispatch.rank, c.dispatch.k, c.dir, rel);
      protocol::DispatchDone done_msg;
      done_msg.rank = c.dispatch.rank;
      done_msg.k = c.dispatch.k;
      done_msg.status = c.status;
      done_msg.error = c.error;
      done_msg.tasks_executed = c.tasks;
      done_msg.artifact_count = static_cast<uint32_t>(c.files.size());
      done_msg.wall_ns = c.wall_ns;
      done_msg.makespan_ns = c.makespan_ns;
      if (c.status != protocol::DispatchStatus::kOk) {
        DFX_LOG_WARN("rank {} d{}: {}", c.dispatch.rank, c.dispatch.k, c.error);
      } else {
        DFX_LOG_INFO("rank {} d{}: done, {} task(s), {} artifact(s)", c.dispatch.rank, c.dispatch.k,
                     c.tasks, c.files.size());
      }
      send_queue_.emplace_back(DoneMarker{std::move(done_msg), folded_accept});
    }
  }

  // A chip runs or has queued work: the event loop then wakes on the
  // progress schedule.
  bool AnyChipBusy() const {
    for (const auto& w : workers_) {
      std::lock_guard<std::mutex> lock(w->mu);
      if (w->running_k || !w->queue.empty()) return true;
    }
    return false;
  }

  // How long the event loop may sleep with nothing to do. Attached, idle
  // and with nothing waiting to be sent: until its own heartbeat is due
  // (anything it receives, a completion or Stop() wakes it before). Else
  // every 50 ms at most: progress reports of a running dispatch, a send
  // that would have blocked, HELLO retries and deadlines before a
  // coordinator answered. An idle agent used to wake every 50 ms whatever
  // it had to do: at 64 agents on 2 cores, about 1300 wake-ups a second.
  int IdleWaitMs(uint64_t now) const {
    const int interval_ms = ToPollMs(options_.timeouts.heartbeat_interval);
    const int poll_ms = std::max(1, std::min(interval_ms, 50));
    if (!attached_ || !send_queue_.empty() || AnyChipBusy()) return poll_ms;
    const uint64_t due =
        std::max(last_hb_ns_, last_tx_ns_) + static_cast<uint64_t>(interval_ms) * 1000000;
    if (due <= now) return 1;
    const uint64_t ms = (due - now + 999999) / 1000000;
    return static_cast<int>(std::clamp<uint64_t>(ms, 1, std::max(1, interval_ms)));
  }

  // Progress on a schedule (every kProgressIntervalNs at most, and only what
  // changed), never per task: tasks done / total of each running dispatch,
  // bytes streamed of the one being streamed.
  static constexpr uint64_t kProgressIntervalNs = 250000000;
  void SendProgress() {
    const uint64_t now = Now();
    if (now - last_progress_ns_ < kProgressIntervalNs) return;
    last_progress_ns_ = now;
    for (auto& w : workers_) {
      std::optional<uint32_t> k;
      {
        std::lock_guard<std::mutex> lock(w->mu);
        k = w->running_k;
      }
      if (!k) continue;
      const uint64_t total = w->progress->tasks_total.load(std::memory_order_relaxed);
      const uint64_t done = w->progress->tasks_done.load(std::memory_order_relaxed);
      if (total == 0 || std::make_pair(*k, done) == w->last_reported) continue;
      w->last_reported = {*k, done};
      Send(w->rank, protocol::Progress{w->rank, *k, "running", 0, done, total});
    }
    if (!send_queue_.empty()) {
      if (auto* t = std::get_if<std::unique_ptr<OutTransfer>>(&send_queue_.front())) {
        const OutTransfer& out = **t;
        const uint64_t sent = bytes_sent_[{out.rank, out.k}];
        if (out.begun && sent != last_reported_bytes_) {
          last_reported_bytes_ = sent;
          Send(out.rank, protocol::Progress{out.rank, out.k, "streaming", sent, 0, 0});
        }
      }
    }
  }

  void QueueFile(int32_t rank, uint32_t k, const fs::path& dispatch_dir, const std::string& rel) {
    auto t = std::make_unique<OutTransfer>();
    t->id = next_transfer_id_++;
    t->rank = rank;
    t->k = k;
    t->rel = rel;
    t->file = dispatch_dir / rel;
    t->dispatch_dir = dispatch_dir;
    send_queue_.emplace_back(std::move(t));
  }

  // Sends as much as credits allow, a bounded amount per call so receiving
  // (credits, acks, heartbeats) is never starved. Returns true if more is
  // ready to send right away.
  bool PumpSends() {
    if (bulk_pending_) return false;  // CheckBulk decides where the queue goes
    int budget = 16;
    while (!send_queue_.empty() && budget-- > 0) {
      SendItem& item = send_queue_.front();
      if (auto* marker = std::get_if<DoneMarker>(&item)) {
        if (marker->accepted_ns) {
          marker->done.carries_acceptance = true;
          marker->done.accepted_held_ns = Now() - *marker->accepted_ns;
        }
        if (!Send(marker->done.rank, marker->done, /*stream=*/true)) return false;
        send_queue_.pop_front();
        continue;
      }
      if (auto* marker = std::get_if<GatherDoneMarker>(&item)) {
        if (!Send(ranks_.front(), protocol::GatherDone{marker->files}, /*stream=*/true)) {
          return false;
        }
        send_queue_.pop_front();
        continue;
      }
      OutTransfer& t = *std::get<std::unique_ptr<OutTransfer>>(item);
      if (!t.begun) {
        std::error_code ec;
        t.size = fs::file_size(t.file, ec);
        if (ec || (t.fd = ::open(t.file.c_str(), O_RDONLY | O_CLOEXEC)) < 0) {
          DFX_LOG_WARN("cannot read spooled artifact {}: {}", t.file.string(),
                       ec ? ec.message() : std::strerror(errno));
          send_queue_.pop_front();
          continue;
        }
        (void)::posix_fadvise(t.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        t.kept_sum = ReadSum(t.dispatch_dir, t.rel);
        if (!t.kept_sum) t.sum = std::make_unique<Checksum64>();
        if (!Send(t.rank, protocol::ArtifactBegin{t.id, t.rank, t.k, t.rel, t.size},
                  /*stream=*/true)) {
          return false;
        }
        t.begun = true;
      }
      if (t.offset < t.size) {
        if (credits_ == 0) return false;
        // The file is read straight into the encoded frame, checksummed while
        // hot, and handed to ZeroMQ without a copy. A short read (the file
        // shrank under us) sends what exists; the coordinator's size check
        // fails the stream and the file stays in the spool.
        const size_t want = std::min<uint64_t>(options_.chunk_bytes, t.size - t.offset);
        const uint64_t at = t.offset;
        std::string_view filled;
        auto frame = protocol::EncodeChunk(
            MakeHeader(t.rank), t.id, at, want,
            [&t, at](char* dst, size_t size) { return ReadAt(t.fd, dst, size, at); }, &filled);
        if (!frame.ok() || filled.empty()) {
          --sequence_;
          if (!frame.ok()) {
            DFX_LOG_WARN("{}: {}", t.file.string(), frame.status().message());
          }
          t.offset = t.size;  // give up on the rest; End reports the checksum of what was read
        } else {
          const size_t n = filled.size();
          if (t.sum) t.sum->Update(filled.data(), n);  // before sending: ZeroMQ owns it after
          auto sent = (bulk_on_ ? bulk_ : channel_).SendEncoded(std::move(*frame));
          if (!sent.ok() || *sent != protocol::SendResult::kSent) {
            // Rare (the queue holds far more than the credit window): the
            // frame is gone, so rebuild the checksum of what the peer has.
            --sequence_;
            if (!sent.ok()) DFX_LOG_WARN("sending a chunk failed: {}", sent.status().ToString());
            if (t.sum) t.sum = ChecksumPrefix(t.fd, t.offset);
            return false;
          }
          // A recovery reads a spool written long before (clean pages),
          // once: drop what was sent from the page cache. Its pages go back
          // to the free lists while still warm, and a coordinator on this
          // host writes the gathered copy into them (on a VM whose balloon
          // hands pages free for ~2 s back to the host, a cold page costs a
          // trap to the host on first touch: bench/README.md, "Cold
          // pages"). Not in a live run: its spool is freshly written
          // (dirty), and dropping it would first write it back to disk.
          // The range is everything sent so far (to the end of the file
          // with the last chunk): the kernel drops only whole folios, and
          // a large folio can straddle a chunk's bounds.
          if (gather_requested_) {  // a recovery (recover mode, or a serve agent's spool)
            const uint64_t done = at + n;
            (void)::posix_fadvise(t.fd, 0, done >= t.size ? 0 : static_cast<off_t>(done),
                                  POSIX_FADV_DONTNEED);
          }
          t.offset += n;
          --credits_;
          bytes_sent_[{t.rank, t.k}] += n;
          continue;
        }
      }
      const uint64_t sum = t.kept_sum ? *t.kept_sum : t.sum->Digest();
      if (!Send(t.rank, protocol::ArtifactEnd{t.id, sum}, /*stream=*/true)) {
        return false;
      }
      unacked_[t.id] = Unacked{t.file, t.dispatch_dir, SumPath(t.dispatch_dir, t.rel)};
      send_queue_.pop_front();
    }
    if (send_queue_.empty()) return false;
    const SendItem& front = send_queue_.front();
    if (auto* t = std::get_if<std::unique_ptr<OutTransfer>>(&front)) {
      return !(*t)->begun || (*t)->offset >= (*t)->size || credits_ > 0;
    }
    return true;
  }

  static std::unique_ptr<Checksum64> ChecksumPrefix(int fd, uint64_t bytes) {
    auto sum = std::make_unique<Checksum64>();
    std::string buf(1 << 20, '\0');
    for (uint64_t at = 0; at < bytes;) {
      auto n = ReadAt(fd, buf.data(), std::min<uint64_t>(buf.size(), bytes - at), at);
      if (!n.ok() || *n == 0) break;
      sum->Update(buf.data(), *n);
      at += *n;
    }
    return sum;
  }

  void OnAck(const protocol::ArtifactAck& ack) {
    auto it = unacked_.find(ack.transfer_id);
    if (it == unacked_.end()) {
      DFX_LOG_WARN("ack for unknown transfer {} ignored", ack.transfer_id);
      return;
    }
    if (ack.ok) {
      std::error_code ec;
      fs::remove(it->second.file, ec);
      fs::remove(it->second.sum_file, ec);
      std::lock_guard<std::mutex> lock(spool_mu_);
      RemoveEmptyDirs(it->second.sum_file.parent_path(), it->second.dispatch_dir, running_dirs_);
      // Other agents of the session share <spool>/<session>/: only this
      // agent's rank<N>/ subtree is removed while the run goes on.
      RemoveEmptyDirs(it->second.file.parent_path(),
                      options_.mode == AgentMode::kRecover ? options_.spool_root : SessionDir(),
                      running_dirs_);
    } else {
      DFX_LOG_WARN("coordinator rejected {}: {}; the file stays in the spool",
                   it->second.file.string(), ack.error);
    }
    unacked_.erase(it);
  }

  // Whether a file of dispatch dir `dir` is queued to be sent, or sent and
  // not yet acknowledged.
  bool DirInFlight(const fs::path& dir) const {
    for (const auto& [id, u] : unacked_) {
      if (u.dispatch_dir == dir) return true;
    }
    for (const SendItem& item : send_queue_) {
      const auto* t = std::get_if<std::unique_ptr<OutTransfer>>(&item);
      if (t != nullptr && (*t)->dispatch_dir == dir) return true;
    }
    return false;
  }

  // Held dispatches whose dispatch dir is free now go on, in order (one
  // held again keeps those of its rank behind it).
  void ResumeHeldDispatches() {
    std::deque<protocol::Dispatch> held;
    held.swap(held_dispatches_);
    for (const protocol::Dispatch& d : held) OnDispatch(d);  // held again if still busy
  }

  // The largest program text OnDispatch parses on the event loop's thread
  // (a few hundred microseconds at most); larger ones are read by the chip's
  // worker thread.
  static constexpr size_t kInlineParseMaxBytes = 16 << 10;

  // `d`'s program, read and kept (ProgramCache) as RunOne keeps what its
  // chip read; nullptr if it does not parse.
  std::shared_ptr<const device::Program> ParseSmallProgram(const protocol::Dispatch& d) {
    const std::string origin = ProgramOrigin(d);
    auto program = ParseDispatchProgram(d.program_json, origin, d.program_file);
    if (!program.ok()) return nullptr;
    programs_.Put(ProgramKey{protocol::ProgramHash(d.program_json), d.program_name, d.program_file},
                  *program, d.program_json.size());
    return *program;
  }

  void OnDispatch(const protocol::Dispatch& d) {
    ChipWorker* w = WorkerFor(d.rank);
    if (w == nullptr || options_.mode == AgentMode::kRecover) {
      protocol::DispatchDone done{d.rank, d.k, protocol::DispatchStatus::kRejected,
                                  fmt::format("rank {} is not a chip of this agent", d.rank)};
      Send(ranks_.front(), done);
      return;
    }
    // A later pass of a dispatch (the timing pass after the graph pass)
    // writes into the same dispatch dir, and starting it empties the dir:
    // it waits until the earlier pass's files there are sent and
    // acknowledged. Else it removed files still to be sent, and the
    // acknowledgement of an earlier name_map.json removed the new one.
    // Later dispatches to the rank wait behind it: a chip runs its
    // dispatches in the order they came (device memory carries over).
    const bool rank_held =
        std::any_of(held_dispatches_.begin(), held_dispatches_.end(),
                    [&d](const protocol::Dispatch& h) { return h.rank == d.rank; });
    if (rank_held || DirInFlight(SessionDir() / collectors::DispatchDirPath(d.rank, d.k))) {
      DFX_LOG_DEBUG("rank {} d{}: held until the files of its dispatch dir are confirmed", d.rank,
                    d.k);
      held_dispatches_.push_back(d);
      return;
    }
    QueuedDispatch queued{d, nullptr};
    if (d.program_json.empty() && d.program_hash != 0) {
      // Sent by hash: run the program kept from an earlier dispatch, or
      // ask for it (a new or restarted agent, or one that evicted it).
      queued.program = programs_.Find(ProgramKey{d.program_hash, d.program_name, d.program_file});
      if (!queued.program) {
        DFX_LOG_INFO("rank {} d{}: program {} ({}) is not kept here; asking for it", d.rank, d.k,
                     d.program_name, Hex64(d.program_hash));
        Send(d.rank, protocol::DispatchDone{d.rank, d.k, protocol::DispatchStatus::kProgramUnknown,
                                            "program " + Truncate(d.program_name, 256) +
                                                " is not kept by this agent"});
        return;
      }
    } else if (d.program_json.size() <= kInlineParseMaxBytes) {
      // A small program is read here, so that its first dispatch may run
      // inline like the later ones that come by hash: handed to the chip's
      // worker thread, it cost two thread wake-ups and that thread's cold
      // start (1 agent: ~1.1 ms against ~0.2 ms for the next dispatches).
      // One that does not parse goes the usual way, which says why.
      queued.program = ParseSmallProgram(d);
    }
    queued.dispatch.session_id = session_;  // the session owns the spool directory
    if (bulk_on_) {
      // Its Done would go over the bulk path, in no fixed order with this
      // socket: the acceptance goes now, as it always did.
      Send(d.rank, protocol::DispatchAccepted{d.rank, d.k, 0});
    } else {
      held_accepts_.push_back(HeldAccept{d.rank, d.k, Now()});
    }
    // Its DispatchAccepted and DispatchDone go at the next turn of the loop.
    if (TryRunInline(*w, queued)) return;
    {
      std::lock_guard<std::mutex> lock(w->mu);
      w->queue.push_back(std::move(queued));
    }
    w->cv.notify_one();
  }

  void OnCancel(const protocol::Cancel& cancel) {
    ChipWorker* w = WorkerFor(cancel.rank);
    if (w == nullptr) return;
    const auto cancelled = [&] {
      send_queue_.emplace_back(DoneMarker{
          protocol::DispatchDone{cancel.rank, cancel.k, protocol::DispatchStatus::kCancelled,
                                 "cancelled before it started: " + cancel.reason}});
    };
    for (auto it = held_dispatches_.begin(); it != held_dispatches_.end(); ++it) {
      if (it->rank == cancel.rank && it->k == cancel.k) {
        held_dispatches_.erase(it);  // not accepted yet: nothing to release
        cancelled();
        return;
      }
    }
    std::lock_guard<std::mutex> lock(w->mu);
    for (auto it = w->queue.begin(); it != w->queue.end(); ++it) {
      if (it->dispatch.k == cancel.k) {
        w->queue.erase(it);
        ReleaseAccepted(cancel.rank, cancel.k);
        cancelled();
        return;
      }
    }
    DFX_LOG_WARN("rank {} d{}: cancel ignored (already running or done): {}", cancel.rank, cancel.k,
                 cancel.reason);
  }

  // Recover mode: offer every file of the session's spool.
  void QueueRecovery() {
    uint32_t files = 0;
    const fs::path session_dir = SessionDir();
    const std::set<int32_t> mine(ranks_.begin(), ranks_.end());
    for (const collectors::DispatchDir& d : collectors::ListDispatchDirs(session_dir)) {
      if (!mine.count(d.rank)) continue;
      const fs::path dir = session_dir / collectors::DispatchDirPath(d);
      for (const std::string& rel : collectors::ListArtifactFiles(dir)) {
        if (IsSumFile(rel)) continue;
        QueueFile(d.rank, d.k, dir, rel);
        ++files;
      }
    }
    DFX_LOG_INFO("recover: offering {} spooled files of session {}", files, Hex64(session_));
    send_queue_.emplace_back(GatherDoneMarker{files});
  }

  std::vector<int32_t> RanksInSpool() { return collectors::ListRankDirs(SessionDir()); }

  // Ends the current session for a serve agent: forget queued work, clear
  // the chips' device memory once nothing runs on them, keep the spool.
  void ResetSession() {
    // First, so that the programs are gone when the workers release what
    // remains of the session and give the heap back (WorkerLoop).
    programs_.Clear();  // a program is sent again to each session
    for (auto& w : workers_) {
      {
        std::lock_guard<std::mutex> lock(w->mu);
        w->queue.clear();
        w->reset_pending = true;
      }
      w->cv.notify_one();
    }
    send_queue_.clear();
    held_accepts_.clear();
    held_dispatches_.clear();
    unacked_.clear();
    credits_ = 0;
    bulk_ = protocol::DealerChannel();
    bulk_on_ = false;
    bulk_pending_ = false;
    bulk_failed_ = false;
    attached_ = false;
    ready_sent_ = false;
    gather_requested_ = false;
    if (options_.session_id == 0) session_ = 0;
    last_hello_ns_ = 0;
    BeginServeWait();
  }

  // Serve: a wait for a coordinator starts (at start, after each session).
  void BeginServeWait() {
    wait_started_ns_ = Now();
    wait_logged_ns_ = wait_started_ns_;
    std::fprintf(stderr, "dfx-rank-agent rank %d: waiting for a coordinator at %s (%s)\n",
                 options_.first_rank, options_.coordinator.c_str(),
                 options_.timeouts.serve_connect.count() > 0
                     ? fmt::format("giving up after --connect-timeout {:g} s",
                                   ToSeconds(options_.timeouts.serve_connect))
                           .c_str()
                     : "no time limit; --connect-timeout S sets one");
  }

  // Serve, not attached: logs the wait now and then; an error once it
  // passed --connect-timeout.
  Status CheckServeWait(uint64_t now) {
    const uint64_t waited = now - wait_started_ns_;
    if (options_.timeouts.serve_connect.count() > 0 &&
        waited > ToNs(options_.timeouts.serve_connect)) {
      return DeadlineExceeded(fmt::format(
          "no coordinator answered at {} within --connect-timeout {:g} s{}", options_.coordinator,
          ToSeconds(options_.timeouts.serve_connect),
          handshake_failures_ == 0
              ? std::string("; is it running, and is the endpoint one this host can reach?")
              : fmt::format("; the CURVE handshake failed {} time(s): {}; check --key and "
                            "--coordinator-key",
                            handshake_failures_, last_handshake_failure_)));
    }
    if (now - wait_logged_ns_ > static_cast<uint64_t>(options_.serve_wait_log_ms) * 1000000) {
      wait_logged_ns_ = now;
      std::fprintf(stderr,
                   "dfx-rank-agent rank %d: still waiting for a coordinator at %s (%.0f s so "
                   "far%s)\n",
                   options_.first_rank, options_.coordinator.c_str(), waited / 1e9,
                   handshake_failures_ == 0
                       ? ""
                       : fmt::format("; {} CURVE handshake(s) failed: {}", handshake_failures_,
                                     last_handshake_failure_)
                             .c_str());
    }
    return Status::Ok();
  }

  // What a refusal code means for this agent (the coordinator's message is
  // a bare reason: it tells a refused peer nothing about the run).
  std::string Advice(protocol::ErrorCode code) const {
    switch (code) {
      case protocol::ErrorCode::kVersionMismatch:
        return fmt::format(
            " (this agent speaks protocol version {}: run the same dfx build on both sides)",
            protocol::kProtocolVersion);
      case protocol::ErrorCode::kSessionMismatch:
        return fmt::format(
            " (this agent was started for session {}, which is not the run at that endpoint: "
            "start it with the session the coordinator printed, or use `dfx-rank-agent serve`)",
            Hex64(session_));
      case protocol::ErrorCode::kUnknownRank:
        return fmt::format(
            " (rank(s) {} of this agent are not part of that run: check --rank, --chips and the "
            "run's --ranks)",
            fmt::join(ranks_, ","));
      case protocol::ErrorCode::kDuplicateRank:
        return fmt::format(
            " (rank(s) {} are already served by another agent in that run, or failed earlier in "
            "it: two agents must not claim one rank)",
            fmt::join(ranks_, ","));
      default:
        return "";
    }
  }

  // The coordinator offers the local bulk path (over this CURVE
  // connection). Taken only between streams (a stream never spans two
  // sockets) and only when the socket is where the offer says: in a
  // directory of this uid that nobody else may enter, on this host.
  void AcceptBulk(const protocol::Credit& offer) {
    if (bulk_on_ || bulk_pending_ || bulk_failed_) return;
    if (!send_queue_.empty()) {
      if (auto* t = std::get_if<std::unique_ptr<OutTransfer>>(&send_queue_.front());
          t && (*t)->begun) {
        return;
      }
    }
    const std::string prefix = "ipc://";
    if (offer.bulk_endpoint.rfind(prefix, 0) != 0) {
      DFX_LOG_WARN("ignored a bulk path offer of {}: not ipc://", offer.bulk_endpoint);
      return;
    }
    const fs::path socket_path = offer.bulk_endpoint.substr(prefix.size());
    struct stat dir {};
    struct stat sock {};
    if (::stat(socket_path.parent_path().c_str(), &dir) != 0 ||
        ::stat(socket_path.c_str(), &sock) != 0 || !S_ISDIR(dir.st_mode) ||
        dir.st_uid != ::geteuid() || (dir.st_mode & 077) != 0 || !S_ISSOCK(sock.st_mode)) {
      DFX_LOG_INFO(
          "the coordinator's bulk path {} is not a socket in a private directory of "
          "this user here; artifacts go over CURVE",
          offer.bulk_endpoint);
      return;
    }
    protocol::SocketOptions o = AgentSocketOptions(std::nullopt);
    std::string token = offer.bulk_token;
    if (options_.faults.wrong_bulk_token) {
      for (char& c : token) c = c == 'x' ? 'y' : 'x';  // the coordinator's ZAP handler refuses it
    }
    o.plain_client = std::make_pair(identity_, token);
    auto bulk = protocol::DealerChannel::Connect(context_, offer.bulk_endpoint, identity_, o);
    if (!bulk.ok()) {
      DFX_LOG_WARN("{}; artifacts go over CURVE", bulk.status().message());
      return;
    }
    bulk_ = std::move(*bulk);
    bulk_pending_ = true;
    bulk_offered_ns_ = Now();
    bulk_endpoint_ = offer.bulk_endpoint;
  }

  // How long the send queue waits for the bulk path's handshake (local: it
  // takes about a millisecond) before it goes over CURVE instead.
  static constexpr uint64_t kBulkHandshakeNs = 2000000000;

  // The bulk path's handshake: once it completed, the send queue goes
  // there; if the coordinator refused it (its ZAP handler checks uid, token
  // and pid) or it did not complete in time, the socket is closed and
  // everything stays on CURVE: nothing was sent on it yet.
  void CheckBulk(uint64_t now) {
    if (!bulk_pending_) return;
    protocol::HandshakeRefusals refused = bulk_.TakeRefusals();
    std::string why;
    if (refused.count > 0) {
      why = "refused this agent: " + refused.last;
    } else if (bulk_.Handshaken()) {
      bulk_pending_ = false;
      bulk_on_ = true;
      DFX_LOG_INFO("artifact streams go over the local bulk path {}", bulk_endpoint_);
      return;
    } else if (now - bulk_offered_ns_ > kBulkHandshakeNs) {
      why = fmt::format("did not complete its handshake within {} s", kBulkHandshakeNs / 1e9);
    } else {
      return;
    }
    DFX_LOG_WARN("the local bulk path {} {}; artifacts go over CURVE instead", bulk_endpoint_, why);
    bulk_ = protocol::DealerChannel();
    bulk_pending_ = false;
    bulk_failed_ = true;
  }

  // Failed CURVE handshakes (a coordinator that does not admit this key,
  // or a peer that is not the coordinator whose key is pinned): logged at
  // most every 5 s, never silently retried forever.
  void NoteHandshakeFailures(uint64_t now) {
    if (bulk_on_) {
      protocol::HandshakeRefusals b = bulk_.TakeRefusals();
      if (b.count > 0) {
        DFX_LOG_WARN("the local bulk path {} refused this agent: {}", options_.coordinator, b.last);
      }
    }
    protocol::HandshakeRefusals r = channel_.TakeRefusals();
    if (r.count > 0) {
      handshake_failures_ += r.count;
      last_handshake_failure_ = r.last;
    }
    if (handshake_failures_ > 0 && now - last_handshake_log_ns_ > 5000000000ull && r.count > 0) {
      last_handshake_log_ns_ = now;
      DFX_LOG_WARN(
          "the handshake with {} failed ({} so far): {}; no message was exchanged with that peer",
          options_.coordinator, handshake_failures_, last_handshake_failure_);
    }
  }

  // Returns a non-OK status to end Run() with; OK to continue; sets *finished for a clean end.
  Status OnMessage(const protocol::Frame& frame, bool* finished) {
    auto decoded = protocol::Decode(frame.bytes);
    if (!decoded.ok()) {
      DFX_LOG_WARN("rejected a message from the coordinator: {}", decoded.status().message());
      return Status::Ok();
    }
    protocol::Message& m = *decoded;
    if (auto* error = std::get_if<protocol::Error>(&m.body)) {
      const bool fatal = error->code == protocol::ErrorCode::kVersionMismatch ||
                         error->code == protocol::ErrorCode::kSessionMismatch ||
                         error->code == protocol::ErrorCode::kUnknownRank ||
                         error->code == protocol::ErrorCode::kDuplicateRank;
      // A refusal carries a reason code only (a refused peer learns nothing
      // of the run); what it means for this agent is said here.
      std::string text =
          fmt::format("the coordinator at {} rejected this agent ({}): {}{}", options_.coordinator,
                      protocol::ErrorCodeName(error->code), error->message, Advice(error->code));
      if (fatal && options_.mode != AgentMode::kServe) return FailedPrecondition(text);
      if (!fatal) {
        DFX_LOG_ERROR("{}", text);
        return Status::Ok();
      }
      // Serve: the session (if any) is over for this agent; say HELLO again
      // only after a backoff that doubles, so two agents claiming one rank
      // do not flood the coordinator (or the logs) with HELLO and refusal.
      ResetSession();
      const uint64_t min_ns = static_cast<uint64_t>(options_.refused_backoff_min_ms) * 1000000;
      const uint64_t max_ns = static_cast<uint64_t>(options_.refused_backoff_max_ms) * 1000000;
      hello_backoff_ns_ = std::min(max_ns, std::max(min_ns, 2 * hello_backoff_ns_));
      next_hello_ns_ = Now() + hello_backoff_ns_;
      DFX_LOG_ERROR("{}; saying HELLO again in {:.0f} s", text, hello_backoff_ns_ / 1e9);
      return Status::Ok();
    }
    protocol::Expectations expect;
    expect.session_id = session_;
    const bool adopting = session_ == 0 && options_.mode == AgentMode::kServe;
    if (adopting) {
      if (m.header.session_id == 0) {
        DFX_LOG_WARN("coordinator message without a session ignored");
        return Status::Ok();
      }
      expect.session_id = m.header.session_id;
    }
    if (auto s = protocol::Validate(m, expect); !s.ok()) {
      DFX_LOG_WARN("rejected {} from the coordinator: {}", protocol::BodyName(m.body), s.message());
      return Status::Ok();
    }
    hello_backoff_ns_ = 0;  // a coordinator answered: no refusal to back off from
    if (adopting) {
      session_ = m.header.session_id;
      DFX_LOG_INFO("attached to session {} of the coordinator at {}", Hex64(session_),
                   options_.coordinator);
    }
    last_rx_ns_ = Now();
    if (!attached_) {
      attached_ = true;
      NoteHelloSent();  // admitted: from now on the coordinator notices if this process ends
      if (!ready_sent_ && options_.mode != AgentMode::kRecover) {
        std::vector<std::string> descriptions;
        for (auto& w : workers_) descriptions.push_back(w->chip->Describe());
        Send(ranks_.front(), protocol::Ready{descriptions});
        ready_sent_ = true;
      }
    }
    return std::visit(
        [&](auto& body) -> Status {
          using T = std::decay_t<decltype(body)>;
          if constexpr (std::is_same_v<T, protocol::Heartbeat>) {
            if (body.want_reply) {
              Send(ranks_.front(), protocol::Heartbeat{Now(), body.sender_clock_ns, false});
            }
          } else if constexpr (std::is_same_v<T, protocol::Dispatch>) {
            OnDispatch(body);
          } else if constexpr (std::is_same_v<T, protocol::Credit>) {
            credits_ += body.chunks;
            if (!body.bulk_endpoint.empty()) AcceptBulk(body);
          } else if constexpr (std::is_same_v<T, protocol::ArtifactAck>) {
            OnAck(body);
          } else if constexpr (std::is_same_v<T, protocol::Cancel>) {
            OnCancel(body);
          } else if constexpr (std::is_same_v<T, protocol::GatherRequest>) {
            // A recovery agent, or a serve agent whose spool the gathering
            // coordinator cannot read (`dfx-coordinator gather --attach`).
            if (options_.mode != AgentMode::kOneShot && !gather_requested_) {
              gather_requested_ = true;
              QueueRecovery();
            }
          } else if constexpr (std::is_same_v<T, protocol::Shutdown>) {
            DFX_LOG_INFO("coordinator ended session {}: {}", Hex64(session_), body.reason);
            if (!unacked_.empty() || !send_queue_.empty()) {
              DFX_LOG_WARN("{} artifact(s) were not confirmed; they stay in {}",
                           unacked_.size() + send_queue_.size(), SessionDir().string());
            } else {
              std::lock_guard<std::mutex> lock(spool_mu_);
              for (int32_t r : ranks_) {
                RemoveEmptyDirs(SessionDir() / collectors::RankDirName(r), SessionDir(),
                                running_dirs_);
              }
              std::error_code ec;
              fs::remove(SessionDir(), ec);  // only succeeds once every agent has emptied it
            }
            if (options_.mode == AgentMode::kServe) {
              ResetSession();
            } else {
              *finished = true;
            }
          } else {
            DFX_LOG_WARN("unexpected {} from the coordinator ignored", protocol::BodyName(m.body));
          }
          return Status::Ok();
        },
        m.body);
  }

  Status Run() {
    started_ns_ = Now();
    if (options_.mode == AgentMode::kServe) BeginServeWait();
    session_ = options_.session_id;
    if (options_.mode == AgentMode::kRecover) {
      ranks_ = RanksInSpool();
      if (ranks_.empty() || options_.recover_only_first_rank) ranks_ = {options_.first_rank};
    } else {
      for (int i = 0; i < options_.chips; ++i) ranks_.push_back(options_.first_rank + i);
    }
    const uint32_t nonce = std::random_device{}();
    const std::string identity = options_.mode == AgentMode::kRecover
                                     ? fmt::format("recover-{}", ::getpid())
                                     : protocol::AgentIdentity(options_.first_rank, nonce);
    identity_ = identity;
    DFX_ASSIGN_OR_RETURN(channel_,
                         protocol::DealerChannel::Connect(context_, options_.coordinator, identity,
                                                          AgentSocketOptions(options_.curve)));
    SendHello();
    // HELLO first, then the chips (READY follows once they exist and the coordinator answered).
    if (options_.mode != AgentMode::kRecover) DFX_RETURN_IF_ERROR(StartChips());

    Status result = Status::Ok();
    bool finished = false;
    while (!stop_.load() && !finished) {
      const uint64_t now = Now();
      const uint64_t hb_interval =
          static_cast<uint64_t>(ToPollMs(options_.timeouts.heartbeat_interval)) * 1000000;
      // The monitor's events are read on every receive anyway; collecting
      // them for the log does not need every turn of the loop.
      if (now - last_refusals_ns_ >= 100000000) {
        NoteHandshakeFailures(now);
        last_refusals_ns_ = now;
      }
      if (!attached_) {
        if (options_.mode == AgentMode::kServe) {
          if (Status s = CheckServeWait(now); !s.ok()) {
            result = s;
            break;
          }
          if (now >= next_hello_ns_ && now - last_hello_ns_ > 2 * hb_interval + 500000000ull) {
            SendHello();
          }
        } else if (now - started_ns_ > ToNs(options_.timeouts.connect)) {
          result = DeadlineExceeded(fmt::format(
              "could not reach the coordinator at {} within {} ms (--connect-timeout); is it "
              "running and is the endpoint right?{}",
              options_.coordinator, ToPollMs(options_.timeouts.connect),
              handshake_failures_ == 0
                  ? std::string()
                  : fmt::format(" The CURVE handshake failed {} time(s): {}; check --key and "
                                "--coordinator-key (or the keys the launcher gave)",
                                handshake_failures_, last_handshake_failure_)));
          break;
        }
      } else {
        // Any message tells the coordinator this agent is alive (it
        // resets its silence deadline on each): a heartbeat of its own only
        // after an interval with nothing else sent (replies to the
        // coordinator's pings count), not beside a stream of dispatches.
        if (now - std::max(last_hb_ns_, last_tx_ns_) >= hb_interval) {
          Send(ranks_.front(), protocol::Heartbeat{now, 0, false});
          last_hb_ns_ = now;
        }
        if (now - last_rx_ns_ > ToNs(options_.timeouts.heartbeat_timeout)) {
          std::string text = fmt::format(
              "the coordinator at {} has been silent for {} ms (--heartbeat-timeout); session {} "
              "abandoned, unconfirmed artifacts kept in {}",
              options_.coordinator, ToPollMs(options_.timeouts.heartbeat_timeout), Hex64(session_),
              SessionDir().string());
          if (options_.mode == AgentMode::kServe) {
            DFX_LOG_WARN("{}", text);
            ResetSession();
          } else {
            result = Unavailable(text);
            break;
          }
        }
      }
      HandleCompletions();
      const int accepted_due_ms = ReleaseExpiredAccepted(Now());
      if (attached_ && options_.mode != AgentMode::kRecover) SendProgress();
      CheckBulk(now);
      bool more = attached_ && PumpSends();
      // The one place held dispatches go on: after the acknowledgements this
      // turn received and the transfers it gave up (an unreadable file).
      if (!held_dispatches_.empty()) ResumeHeldDispatches();
      // While the bulk path's handshake is pending, look again soon.
      int timeout_ms = more ? 0 : (bulk_pending_ ? 1 : IdleWaitMs(Now()));
      if (accepted_due_ms >= 0) timeout_ms = std::min(timeout_ms, accepted_due_ms);
      auto polled = channel_.Receive(timeout_ms, wake_.read_fd());
      if (!polled.ok()) {
        result = polled.status();
        break;
      }
      if (polled->woken) wake_.Drain();
      if (polled->frame) {
        Status s = OnMessage(*polled->frame, &finished);
        if (!s.ok()) {
          result = s;
          break;
        }
        // Drain whatever else is queued without waiting.
        for (int i = 0; i < 64 && !finished; ++i) {
          auto more_frames = channel_.Receive(0);
          if (!more_frames.ok() || !more_frames->frame) break;
          s = OnMessage(*more_frames->frame, &finished);
          if (!s.ok()) break;
        }
        if (!s.ok()) {
          result = s;
          break;
        }
      }
    }
    StopChips();
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
