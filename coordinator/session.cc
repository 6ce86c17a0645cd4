#include "coordinator/session.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <system_error>
#include <thread>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/log.h"
#include "common/subprocess.h"
#include "config/pass_plan.h"
#include "coordinator/report.h"
#include "protocol/channel.h"
#include "protocol/codec.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;
using protocol::AgentMode;

const char* LauncherName(Launcher launcher) {
  switch (launcher) {
    case Launcher::kLocal:
      return "local";
    case Launcher::kMpirun:
      return "mpirun";
    case Launcher::kAttach:
      return "attach";
  }
  return "?";
}

namespace {

constexpr uint64_t kMs = 1000000;

uint64_t SecondsToNs(double s) { return static_cast<uint64_t>(s * 1e9); }

uint64_t RandomSessionId() {
  std::random_device rd;
  uint64_t id = 0;
  while (id == 0) id = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return id;
}

Json NullOr(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

std::string FormatBytes(uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", b / double(1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.1f} MiB", b / double(1ull << 20));
  if (b >= 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

// Removes stale rank*/d<digits> directories of an earlier run (spec §2.7): the
// d<K> numbering restarts every run.
void ClearStaleDispatchDirs(const fs::path& dfx_dir) {
  static const std::regex kRank(R"(rank\d+)");
  static const std::regex kDispatch(R"(d\d+)");
  std::error_code ec;
  for (auto& rank_entry : fs::directory_iterator(dfx_dir, ec)) {
    const std::string rank_name = rank_entry.path().filename().string();
    if (!rank_entry.is_directory(ec) || !std::regex_match(rank_name, kRank)) continue;
    for (auto& d_entry : fs::directory_iterator(rank_entry.path(), ec)) {
      if (std::regex_match(d_entry.path().filename().string(), kDispatch)) {
        fs::remove_all(d_entry.path(), ec);
      }
    }
    if (fs::is_empty(rank_entry.path(), ec)) fs::remove(rank_entry.path(), ec);
  }
}

// True if any existing component of `path` below `root` is a symlink (an
// artifact must never be written through a link).
bool CrossesSymlink(const fs::path& root, const fs::path& rel) {
  fs::path p = root;
  std::error_code ec;
  for (const auto& part : rel) {
    p /= part;
    auto st = fs::symlink_status(p, ec);
    if (ec) return false;  // does not exist yet: fine
    if (fs::is_symlink(st)) return true;
  }
  return false;
}

struct ArtifactRecord {
  std::string path;  // relative to dfx_outputs
  uint64_t size = 0;
  uint64_t checksum = 0;
  std::string status = "streaming";  // streaming | ok | failed | recovered
  std::string error;
  uint64_t stream = 0;  // the coordinator-wide number of the stream that last wrote it
};

// The coordinator's disk writer (the gather's I/O half): one thread that
// opens, writes, commits or aborts artifact files in the order the event loop
// queued the jobs, so receiving overlaps with writing. Chunk data is written
// straight from the received ZeroMQ frame (the job holds its FrameBytes) and
// checksummed in the same pass, while it is hot: nothing is copied. Memory
// stays bounded because the event loop returns an agent's credit for a chunk
// only once the chunk is written (at most credit_window chunks per agent).
// No fsync: artifacts are renamed into place once complete (atomic against
// readers and against a coordinator crash, not against a power loss).
//
// Threads: Push / TakeResults / Idle from the event loop only; one worker
// thread runs the jobs and wakes the loop through wake_fd().
class ArtifactWriter {
 public:
  // One artifact file. Touched only by the worker thread once queued.
  struct Sink {
    AtomicFileWriter file;
    Checksum64 sum;
    std::string error;  // the first failure; later writes are skipped
  };
  enum class Kind { kOpen, kWrite, kCommit, kAbort };
  struct Job {
    Kind kind = Kind::kWrite;
    std::shared_ptr<Sink> sink;
    fs::path path;               // kOpen
    protocol::FrameBytes frame;  // kWrite: keeps `data` alive
    std::string_view data;       // kWrite
    uint64_t checksum = 0;       // kCommit: what the agent says the file hashes to
    // Who asked, echoed in the result.
    std::string agent;
    uint64_t transfer_id = 0;
    int rank = 0;
    uint64_t stream = 0;
    std::optional<size_t> dispatch;
    size_t artifact = 0;
  };
  struct Done {  // results of kWrite (credit back) and kCommit (ack)
    Kind kind = Kind::kWrite;
    std::string agent;
    uint64_t transfer_id = 0;
    int rank = 0;
    uint64_t stream = 0;
    std::optional<size_t> dispatch;
    size_t artifact = 0;
    std::string error;  // kCommit: empty = verified and renamed into place
  };

  ArtifactWriter() : thread_([this] { Loop(); }) {}
  ~ArtifactWriter() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();  // queued jobs are dropped: their sinks abort their temporary files
  }
  ArtifactWriter(const ArtifactWriter&) = delete;
  ArtifactWriter& operator=(const ArtifactWriter&) = delete;

  int wake_fd() const { return wake_.read_fd(); }

  void Push(Job job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(std::move(job));
      ++outstanding_;
    }
    cv_.notify_one();
  }

  std::deque<Done> TakeResults() {
    wake_.Drain();
    std::deque<Done> out;
    std::lock_guard<std::mutex> lock(mu_);
    out.swap(results_);
    outstanding_ -= taken_;
    taken_ = 0;
    return out;
  }

  // Every queued job ran and its result was taken.
  bool Idle() {
    std::lock_guard<std::mutex> lock(mu_);
    return outstanding_ == 0;
  }

 private:
  void Loop() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
        if (stop_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      std::optional<Done> done = Run(job);
      job = Job{};  // release the frame before reporting (bounded memory)
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++taken_;  // counted as finished when the loop takes the results
        if (done) results_.push_back(std::move(*done));
      }
      if (done) wake_.Notify();
    }
  }

  static std::optional<Done> Run(Job& job) {
    Sink& sink = *job.sink;
    auto result = [&job](std::string error) {
      return Done{job.kind,   job.agent,    job.transfer_id, job.rank,
                  job.stream, job.dispatch, job.artifact,    std::move(error)};
    };
    switch (job.kind) {
      case Kind::kOpen:
        if (Status s = sink.file.Open(job.path); !s.ok()) sink.error = s.message();
        return std::nullopt;
      case Kind::kWrite:
        if (sink.error.empty()) {
          sink.sum.Update(job.data.data(), job.data.size());
          if (Status s = sink.file.Write(job.data); !s.ok()) {
            sink.error = s.message();
            sink.file.Abort();
          }
        }
        return result("");
      case Kind::kCommit: {
        std::string error = sink.error;
        if (error.empty() && sink.sum.Digest() != job.checksum) {
          error = fmt::format("checksum mismatch: received data hashes to {}, agent says {}",
                              Hex64(sink.sum.Digest()), Hex64(job.checksum));
        }
        if (error.empty()) {
          if (Status s = sink.file.Commit(); !s.ok()) error = s.message();
        }
        if (!error.empty()) sink.file.Abort();
        return result(error);
      }
      case Kind::kAbort:
        sink.file.Abort();
        return std::nullopt;
    }
    return std::nullopt;
  }

  protocol::WakePipe wake_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::deque<Done> results_;
  size_t outstanding_ = 0;  // pushed and not yet taken back by the loop
  size_t taken_ = 0;        // finished by the worker since the last TakeResults
  bool stop_ = false;
  std::thread thread_;  // last: starts after everything above exists
};

struct DispatchRecord {
  int rank = 0;
  uint32_t k = 0;
  std::string program;
  config::PassKind pass = config::PassKind::kSingle;
  std::string status = "pending";  // pending | running | ok | failed | not_run
  std::string error;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint64_t tasks = 0;
  uint64_t agent_wall_ns = 0;
  std::vector<ArtifactRecord> artifacts;
};

struct AgentState {
  std::string identity;
  std::vector<int32_t> ranks;
  std::string host;
  uint32_t pid = 0;
  AgentMode mode = AgentMode::kOneShot;
  std::string spool;
  bool ready = false;
  bool dead = false;
  bool shutdown_sent = false;
  std::string error;
  uint64_t last_rx_ns = 0;
  uint64_t last_ping_ns = 0;
  int64_t clock_offset_ns = 0;
  uint64_t best_rtt_ns = UINT64_MAX;
  uint64_t sequence = 0;
  bool gather_done = false;
};

struct RankState {
  std::string agent;               // identity, once HELLO arrived
  std::string status = "waiting";  // waiting | ready | ok | failed
  std::string error;
  std::deque<size_t> queue;  // dispatch record indices, in order
  std::optional<size_t> inflight;
  uint32_t done = 0;
  uint32_t total = 0;
  // Last Progress of the in-flight dispatch (reset when it finishes).
  std::string stage;
  uint64_t tasks_done = 0;
  uint64_t tasks_total = 0;
};

struct Transfer {
  std::string agent;
  uint64_t id = 0;
  int rank = 0;
  uint32_t k = 0;
  std::string rel;  // relative to dfx_outputs
  uint64_t size = 0;
  uint64_t received = 0;
  uint64_t stream = 0;  // coordinator-wide stream number (ArtifactRecord::stream)
  bool failed = false;  // rejected on the loop side; the writer was told to abort
  std::shared_ptr<ArtifactWriter::Sink> sink;  // owned by the writer thread's jobs
  std::optional<size_t> dispatch;              // record index (none in gather mode)
  size_t artifact = 0;                         // index into the record's artifacts / recovered list
};

class Coordinator {
 public:
  enum class Mode { kRun, kGather };

  Coordinator(Mode mode, const SessionOptions& options) : mode_(mode), options_(options) {
    // No DFX flag, no dfx_outputs/ (the seed page's first Edge Cases row): a
    // plain run keeps its manifest and session record in the work dir itself.
    const bool plain_run = mode == Mode::kRun && !options_.config.AnyDfx();
    dfx_dir_ = plain_run ? options_.work_dir : options_.work_dir / "dfx_outputs";
  }

  // ---------------------------------------------------------------- setup --
  Status Bind() {
    DFX_ASSIGN_OR_RETURN(router_, protocol::RouterChannel::Bind(context_, options_.bind));
    return Status::Ok();
  }
  const std::string& endpoint() const { return router_.endpoint(); }
  uint64_t session() const { return session_; }
  void set_session(uint64_t s) { session_ = s; }
  const fs::path& dfx_dir() const { return dfx_dir_; }

  // ------------------------------------------------------------- messages --
  bool SendTo(AgentState& agent, int32_t rank, protocol::Body body) {
    protocol::Message m{
        protocol::Header{protocol::kProtocolVersion, session_, rank, ++agent.sequence},
        std::move(body)};
    auto r = router_.Send(agent.identity, m);
    if (!r.ok()) {
      DFX_LOG_WARN("sending {} to {} failed: {}", protocol::BodyName(m.body), agent.identity,
                   r.status().message());
      return false;
    }
    if (*r != protocol::SendResult::kSent) {
      DFX_LOG_WARN("sending {} to {}: {}", protocol::BodyName(m.body), agent.identity,
                   *r == protocol::SendResult::kUnroutable ? "peer not connected" : "queue full");
      return false;
    }
    return true;
  }

  // Answers a peer that is not (or not yet) a registered agent.
  void Reject(const std::string& identity, protocol::ErrorCode code, const std::string& text) {
    DFX_LOG_WARN("turned away {}: {}", identity, text);
    protocol::Message m{protocol::Header{protocol::kProtocolVersion, session_, 0, 0},
                        protocol::Error{code, text}};
    (void)router_.Send(identity, m);
  }

  void OnFrame(const protocol::Frame& frame) {
    if (frame.had_extra_parts) {
      DFX_LOG_WARN("rejected a multipart message from {}: every message is one frame",
                   Printable(frame.identity));
      return;
    }
    // Artifact data takes the zero-copy path: the chunk is decoded in place
    // and its bytes go to the writer thread inside the received frame.
    std::optional<protocol::ChunkView> chunk;
    Result<protocol::Message> decoded = protocol::Message{};
    auto peeked = protocol::DecodeChunkView(frame.bytes);
    if (!peeked.ok()) {
      decoded = peeked.status();
    } else if (peeked->has_value()) {
      chunk = **peeked;
      decoded = protocol::Message{chunk->header,
                                  protocol::ArtifactChunk{chunk->transfer_id, chunk->offset, {}}};
    } else {
      decoded = protocol::Decode(frame.bytes);
    }
    if (!decoded.ok()) {
      DFX_LOG_WARN("rejected a message from {}: {}", Printable(frame.identity),
                   decoded.status().message());
      auto it = agents_.find(frame.identity);
      if (it != agents_.end() && !it->second.dead) {
        SendTo(it->second, it->second.ranks.front(),
               protocol::Error{protocol::ErrorCode::kBadMessage, decoded.status().message()});
      }
      return;
    }
    protocol::Message& m = *decoded;
    const uint64_t now = Now();
    if (auto* hello = std::get_if<protocol::Hello>(&m.body)) {
      OnHello(frame.identity, m.header, *hello);
      return;
    }
    auto it = agents_.find(frame.identity);
    if (it == agents_.end()) {
      if (auto* error = std::get_if<protocol::Error>(&m.body)) {
        DFX_LOG_WARN("error from unregistered peer {}: {}", Printable(frame.identity),
                     error->message);
        return;
      }
      Reject(frame.identity, protocol::ErrorCode::kUnknownRank,
             fmt::format("{} from a peer that never said HELLO (rank {}); say HELLO first",
                         protocol::BodyName(m.body), m.header.rank));
      return;
    }
    AgentState& agent = it->second;
    if (agent.dead) return;  // a dead rank stays dead for the run (no re-admission)
    protocol::Expectations expect;
    expect.session_id = session_;
    expect.ranks.insert(agent.ranks.begin(), agent.ranks.end());
    if (Status s = protocol::Validate(m, expect); !s.ok()) {
      const bool fatal = s.code() == Code::kFailedPrecondition;
      DFX_LOG_WARN("rejected {} from {}: {}", protocol::BodyName(m.body), agent.identity,
                   s.message());
      SendTo(agent, agent.ranks.front(),
             protocol::Error{
                 fatal ? protocol::ErrorCode::kSessionMismatch : protocol::ErrorCode::kBadMessage,
                 s.message()});
      ReleaseCreditIfChunk(agent, m.body);
      return;
    }
    agent.last_rx_ns = now;
    if (chunk) {
      OnChunk(agent, chunk->transfer_id, chunk->offset, chunk->data, frame.bytes);
      return;
    }
    std::visit([&](auto& body) { Handle(agent, m.header, body); }, m.body);
  }

  static std::string Printable(const std::string& identity) {
    std::string out;
    for (unsigned char c : identity) {
      if (c >= 0x20 && c < 0x7f) {
        out += static_cast<char>(c);
      } else {
        out += fmt::format("\\x{:02x}", c);
      }
    }
    return out.empty() ? "<anonymous>" : out;
  }

  void OnHello(const std::string& identity, const protocol::Header& header,
               const protocol::Hello& hello) {
    const std::string who = fmt::format("{} (pid {} on {})", Printable(identity), hello.pid,
                                        hello.host.empty() ? "?" : hello.host);
    if (header.protocol_version != protocol::kProtocolVersion ||
        hello.protocol_version != protocol::kProtocolVersion) {
      Reject(identity, protocol::ErrorCode::kVersionMismatch,
             fmt::format("agent {} speaks protocol version {}, this coordinator speaks version {}; "
                         "run the same build on both sides",
                         who, header.protocol_version, protocol::kProtocolVersion));
      return;
    }
    protocol::Expectations expect;  // version + structure only
    if (Status s = protocol::Validate(protocol::Message{header, hello}, expect); !s.ok()) {
      Reject(identity, protocol::ErrorCode::kBadMessage,
             "bad HELLO from " + who + ": " + s.message());
      return;
    }
    if (hello.session_id != 0 && hello.session_id != session_) {
      Reject(identity, protocol::ErrorCode::kSessionMismatch,
             fmt::format("agent {} was started for session {}, this run is session {}; restart it "
                         "with --session {} (or use `dfx-rank-agent serve`)",
                         who, Hex64(hello.session_id), Hex64(session_), Hex64(session_)));
      return;
    }
    // A gather with --attach takes serve agents: they stream their spool
    // exactly like recovery agents once they get the GatherRequest.
    const bool serve_gather =
        mode_ == Mode::kGather && gather_attach_ && hello.mode == AgentMode::kServe;
    const bool recover = hello.mode == AgentMode::kRecover || serve_gather;
    if (!serve_gather && (mode_ == Mode::kGather) != (hello.mode == AgentMode::kRecover)) {
      if (hello.mode == AgentMode::kServe && mode_ == Mode::kGather) return;  // not now
      Reject(identity, protocol::ErrorCode::kBadMessage,
             fmt::format("agent {} in {} mode does not fit a {} coordinator", who,
                         protocol::AgentModeName(hello.mode),
                         mode_ == Mode::kGather ? "gather" : "run"));
      return;
    }
    if (auto it = agents_.find(identity); it != agents_.end()) {
      AgentState& known = it->second;
      if (known.pid == hello.pid && !known.dead) return;  // a repeated HELLO: already registered
      if (!known.dead && mode_ == Mode::kRun) {
        Reject(identity, protocol::ErrorCode::kDuplicateRank,
               fmt::format("agent {} claims ranks already owned by pid {} on {}", who, known.pid,
                           known.host));
        return;
      }
      if (known.dead) {
        Reject(identity, protocol::ErrorCode::kDuplicateRank,
               fmt::format("agent {}: its ranks failed earlier in this run ({}); a failed rank is "
                           "not re-admitted",
                           who, known.error));
        return;
      }
    }
    if (mode_ == Mode::kRun) {
      for (int32_t r : hello.ranks) {
        if (r >= options_.ranks) {
          Reject(identity, protocol::ErrorCode::kUnknownRank,
                 fmt::format("agent {} owns rank {}, but this run has --ranks {} (0..{})", who, r,
                             options_.ranks, options_.ranks - 1));
          return;
        }
        if (!ranks_[r].agent.empty()) {
          Reject(
              identity, protocol::ErrorCode::kDuplicateRank,
              fmt::format("agent {} claims rank {}, already owned by {}", who, r, ranks_[r].agent));
          return;
        }
      }
    }
    AgentState agent;
    agent.identity = identity;
    agent.ranks = hello.ranks;
    agent.host = hello.host;
    agent.pid = hello.pid;
    agent.mode = hello.mode;
    agent.spool = hello.spool_dir;
    agent.last_rx_ns = Now();
    agent.clock_offset_ns = static_cast<int64_t>(hello.agent_clock_ns - Now());
    auto& stored = agents_[identity] = std::move(agent);
    if (mode_ == Mode::kRun) {
      for (int32_t r : hello.ranks) ranks_[r].agent = identity;
    }
    DFX_LOG_INFO("HELLO from {}: ranks [{}], {} mode", who, fmt::join(hello.ranks, ","),
                 protocol::AgentModeName(hello.mode));
    // The first answer carries the session (a serve agent adopts it) and
    // starts the clock-offset measurement.
    SendTo(stored, stored.ranks.front(), protocol::Heartbeat{Now(), 0, true});
    stored.last_ping_ns = Now();
    if (recover) {
      SendTo(stored, stored.ranks.front(), protocol::Credit{options_.credit_window});
      SendTo(stored, stored.ranks.front(), protocol::GatherRequest{session_});
    }
  }

  template <typename T>
  void Handle(AgentState& agent, const protocol::Header& header, T& body) {
    using protocol::BodyName;
    if constexpr (std::is_same_v<T, protocol::Ready>) {
      if (agent.ready) return;
      agent.ready = true;
      if (mode_ == Mode::kGather) return;  // a serve agent in a gather: it has its credits
      for (int32_t r : agent.ranks) {
        if (ranks_[r].status == "waiting") ranks_[r].status = "ready";
      }
      DFX_LOG_INFO("{} READY: {}", agent.identity, fmt::join(body.chip_descriptions, "; "));
      SendTo(agent, agent.ranks.front(), protocol::Credit{options_.credit_window});
    } else if constexpr (std::is_same_v<T, protocol::Heartbeat>) {
      if (body.echo_clock_ns != 0) {
        const uint64_t now = Now();
        if (body.echo_clock_ns <= now) {
          const uint64_t rtt = now - body.echo_clock_ns;
          if (rtt <= agent.best_rtt_ns) {
            agent.best_rtt_ns = rtt;
            // agent clock - coordinator clock, at the midpoint of the round trip.
            agent.clock_offset_ns = static_cast<int64_t>(body.sender_clock_ns) -
                                    static_cast<int64_t>(body.echo_clock_ns + rtt / 2);
          }
        }
      }
    } else if constexpr (std::is_same_v<T, protocol::DispatchAccepted>) {
      if (auto* d = InflightRecord(body.rank, body.k)) d->status = "running";
    } else if constexpr (std::is_same_v<T, protocol::Progress>) {
      // Informational: drives the live progress line.
      if (body.rank >= 0 && body.rank < static_cast<int>(ranks_.size()) &&
          InflightRecord(body.rank, body.k) != nullptr) {
        RankState& rs = ranks_[body.rank];
        rs.stage = body.stage;
        rs.tasks_done = body.tasks_done;
        rs.tasks_total = body.tasks_total;
      }
    } else if constexpr (std::is_same_v<T, protocol::ArtifactBegin>) {
      OnBegin(agent, body);
    } else if constexpr (std::is_same_v<T, protocol::ArtifactChunk>) {
      // Only a frame that could not be parsed in place (misaligned) lands here.
      protocol::FrameBytes owned(std::move(body.data));
      OnChunk(agent, body.transfer_id, body.offset, owned.view(), owned);
    } else if constexpr (std::is_same_v<T, protocol::ArtifactEnd>) {
      OnEnd(agent, body);
    } else if constexpr (std::is_same_v<T, protocol::DispatchDone>) {
      OnDone(agent, body);
    } else if constexpr (std::is_same_v<T, protocol::GatherDone>) {
      agent.gather_done = true;
      gather_offered_ += body.files;
      DFX_LOG_INFO("{} offered {} spooled files", agent.identity, body.files);
    } else if constexpr (std::is_same_v<T, protocol::Error>) {
      DFX_LOG_WARN("{} reported an error ({}): {}", agent.identity,
                   protocol::ErrorCodeName(body.code), body.message);
    } else {
      DFX_LOG_WARN("unexpected {} from {} ignored", BodyName(protocol::Body(body)), agent.identity);
    }
    (void)header;
  }

  void ReleaseCreditIfChunk(AgentState& agent, const protocol::Body& body) {
    if (std::holds_alternative<protocol::ArtifactChunk>(body)) ++credits_owed_[agent.identity];
  }

  // Returns the credits of handled chunks, one Credit message per agent.
  void FlushCredits() {
    for (auto& [identity, n] : credits_owed_) {
      if (n == 0) continue;
      auto it = agents_.find(identity);
      if (it != agents_.end() && !it->second.dead) {
        SendTo(it->second, it->second.ranks.front(), protocol::Credit{n});
      }
      n = 0;
    }
  }

  // Takes what the writer thread finished: written chunks give their credit
  // back, committed (or refused) files are acknowledged.
  void TakeWriterResults() {
    for (ArtifactWriter::Done& done : writer_.TakeResults()) {
      if (done.kind == ArtifactWriter::Kind::kWrite) {
        ++credits_owed_[done.agent];
        continue;
      }
      ArtifactRecord* a = RecordAt(done.dispatch, done.artifact);
      if (a != nullptr && a->stream == done.stream) {
        a->status = done.error.empty() ? (mode_ == Mode::kGather ? "recovered" : "ok") : "failed";
        a->error = done.error;
        manifest_dirty_ = true;
      }
      auto it = agents_.find(done.agent);
      if (it == agents_.end() || it->second.dead) continue;
      if (done.error.empty()) {
        SendTo(it->second, done.rank, protocol::ArtifactAck{done.transfer_id, true, ""});
      } else {
        AckFail(it->second, done.transfer_id, done.error);
      }
    }
    FlushCredits();
  }

  ArtifactRecord* RecordAt(const std::optional<size_t>& dispatch, size_t artifact) {
    if (dispatch) {
      if (*dispatch >= dispatches_.size()) return nullptr;
      auto& arts = dispatches_[*dispatch].artifacts;
      return artifact < arts.size() ? &arts[artifact] : nullptr;
    }
    return artifact < recovered_.size() ? &recovered_[artifact] : nullptr;
  }

  ArtifactWriter::Job WriterJob(ArtifactWriter::Kind kind, const Transfer& t) {
    ArtifactWriter::Job job;
    job.kind = kind;
    job.sink = t.sink;
    job.agent = t.agent;
    job.transfer_id = t.id;
    job.rank = t.rank;
    job.stream = t.stream;
    job.dispatch = t.dispatch;
    job.artifact = t.artifact;
    return job;
  }

  // Pumps the loop until the writer has finished every queued job (or the deadline).
  void DrainWriter(uint64_t deadline) {
    while (!writer_.Idle() && Now() < deadline) (void)Pump(20);
  }

  DispatchRecord* InflightRecord(int rank, uint32_t k) {
    if (rank < 0 || rank >= static_cast<int>(ranks_.size())) return nullptr;
    auto& rs = ranks_[rank];
    if (!rs.inflight) return nullptr;
    DispatchRecord& d = dispatches_[*rs.inflight];
    return d.k == k ? &d : nullptr;
  }

  void AckFail(AgentState& agent, uint64_t id, const std::string& why) {
    DFX_LOG_WARN("artifact stream {} from {} rejected: {}", id, agent.identity, why);
    SendTo(agent, agent.ranks.front(), protocol::ArtifactAck{id, false, why});
  }

  void OnBegin(AgentState& agent, const protocol::ArtifactBegin& b) {
    auto key = std::make_pair(agent.identity, b.transfer_id);
    if (transfers_.count(key)) {
      AckFail(agent, b.transfer_id, "transfer id reused while its stream is open");
      return;
    }
    auto clean =
        protocol::SanitizeArtifactPath(b.path);  // Validate checked it; keep the canonical form
    if (!clean.ok()) {
      AckFail(agent, b.transfer_id, clean.status().message());
      return;
    }
    std::optional<size_t> record;
    if (mode_ == Mode::kRun) {
      DispatchRecord* d = InflightRecord(b.rank, b.k);
      if (d == nullptr) {
        AckFail(agent, b.transfer_id,
                fmt::format("rank {} has no dispatch d{} in flight", b.rank, b.k));
        return;
      }
      record = static_cast<size_t>(d - dispatches_.data());
    }
    const std::string rel = collectors::DispatchDirPath(b.rank, b.k) + "/" + *clean;
    if (CrossesSymlink(dfx_dir_, rel)) {
      AckFail(agent, b.transfer_id, "the destination " + rel + " goes through a symbolic link");
      return;
    }
    Transfer t;
    t.agent = agent.identity;
    t.id = b.transfer_id;
    t.rank = b.rank;
    t.k = b.k;
    t.rel = rel;
    t.size = b.size;
    t.stream = ++streams_;
    t.sink = std::make_shared<ArtifactWriter::Sink>();
    t.dispatch = record;
    ArtifactRecord a;
    a.path = rel;
    a.size = b.size;
    a.stream = t.stream;
    if (record) {
      auto& arts = dispatches_[*record].artifacts;
      // A second pass rewrites the same file: keep one entry per path.
      auto same = std::find_if(arts.begin(), arts.end(),
                               [&](const ArtifactRecord& x) { return x.path == rel; });
      if (same != arts.end()) {
        *same = a;
        t.artifact = static_cast<size_t>(same - arts.begin());
      } else {
        arts.push_back(a);
        t.artifact = arts.size() - 1;
      }
    } else {
      recovered_.push_back(a);
      t.artifact = recovered_.size() - 1;
    }
    // Opened by the writer thread, in order: an earlier stream of the same
    // file (a second pass) is committed before this one truncates its
    // temporary file. An open error fails the stream at its End.
    ArtifactWriter::Job open = WriterJob(ArtifactWriter::Kind::kOpen, t);
    open.path = dfx_dir_ / rel;
    writer_.Push(std::move(open));
    transfers_.emplace(key, std::move(t));
  }

  ArtifactRecord& RecordOf(Transfer& t) {
    return t.dispatch ? dispatches_[*t.dispatch].artifacts[t.artifact] : recovered_[t.artifact];
  }

  void FailTransfer(Transfer& t, const std::string& why) {
    if (!t.failed) writer_.Push(WriterJob(ArtifactWriter::Kind::kAbort, t));
    t.failed = true;
    ArtifactRecord& a = RecordOf(t);
    a.status = "failed";
    a.error = why;
  }

  // `data` lives in `frame`. Every chunk costs the agent a credit; it gets it
  // back whatever happens: at once when the chunk is dropped, once the
  // writer thread wrote it otherwise (that bounds the coordinator's memory).
  void OnChunk(AgentState& agent, uint64_t transfer_id, uint64_t offset, std::string_view data,
               const protocol::FrameBytes& frame) {
    auto it = transfers_.find({agent.identity, transfer_id});
    if (it == transfers_.end()) {
      ++credits_owed_[agent.identity];
      DFX_LOG_WARN("chunk for unknown stream {} from {} dropped", transfer_id, agent.identity);
      return;
    }
    Transfer& t = it->second;
    if (t.failed) {  // already failed; wait for its End
      ++credits_owed_[agent.identity];
      return;
    }
    if (offset != t.received) {
      ++credits_owed_[agent.identity];
      FailTransfer(
          t, fmt::format("chunk at offset {} but {} bytes were received", offset, t.received));
      return;
    }
    if (t.received + data.size() > t.size) {
      ++credits_owed_[agent.identity];
      FailTransfer(t, fmt::format("more bytes than the announced size {}", t.size));
      return;
    }
    ArtifactWriter::Job write = WriterJob(ArtifactWriter::Kind::kWrite, t);
    write.frame = frame;
    write.data = data;
    writer_.Push(std::move(write));
    t.received += data.size();
    bytes_gathered_ += data.size();
    ++chunks_received_;
    if (crash_after_chunks_ > 0 && chunks_received_ >= crash_after_chunks_) {
      // Fault injection for the gather test (DFX_FAULT_COORDINATOR_KILL_AFTER_CHUNKS).
      std::fprintf(stderr, "dfx-coordinator: fault injection: killing myself after %llu chunks\n",
                   static_cast<unsigned long long>(chunks_received_));
      std::fflush(stderr);
      ::kill(::getpid(), SIGKILL);
    }
  }

  void OnEnd(AgentState& agent, const protocol::ArtifactEnd& e) {
    auto it = transfers_.find({agent.identity, e.transfer_id});
    if (it == transfers_.end()) {
      AckFail(agent, e.transfer_id, "end of an unknown stream");
      return;
    }
    Transfer& t = it->second;
    ArtifactRecord& a = RecordOf(t);
    std::string error;
    if (t.failed) {
      error = a.error.empty() ? "stream failed" : a.error;
    } else if (t.received != t.size) {
      error = fmt::format("received {} of {} bytes", t.received, t.size);
    }
    if (error.empty()) {
      // The writer thread verifies the checksum once every chunk is on disk,
      // renames the file into place and the ack follows (TakeWriterResults).
      a.checksum = e.checksum;
      ArtifactWriter::Job commit = WriterJob(ArtifactWriter::Kind::kCommit, t);
      commit.checksum = e.checksum;
      writer_.Push(std::move(commit));
    } else {
      FailTransfer(t, error);
      AckFail(agent, e.transfer_id, error);
    }
    transfers_.erase(it);
  }

  void FinishDispatch(size_t index, const std::string& status, const std::string& error) {
    DispatchRecord& d = dispatches_[index];
    d.status = status;
    if (!error.empty()) d.error = error;
    d.end_ns = Now();
    RankState& rs = ranks_[d.rank];
    if (rs.inflight == index) rs.inflight.reset();
    rs.stage.clear();
    rs.tasks_done = rs.tasks_total = 0;
    ++rs.done;
    // Streams of this dispatch still open: they can no longer complete.
    for (auto it = transfers_.begin(); it != transfers_.end();) {
      if (it->second.dispatch == index) {
        FailTransfer(it->second, "stream incomplete when the dispatch ended: " +
                                     (error.empty() ? std::string("no ArtifactEnd") : error));
        it = transfers_.erase(it);
      } else {
        ++it;
      }
    }
    if (!options_.live_progress) {
      std::fprintf(stderr, "[dfx-coordinator] rank %d d%u (%s, %s pass): %s%s%s\n", d.rank, d.k,
                   d.program.c_str(), config::PassKindName(d.pass), d.status.c_str(),
                   d.error.empty() ? "" : ": ", d.error.c_str());
    }
    manifest_dirty_ = true;
  }

  void OnDone(AgentState& agent, const protocol::DispatchDone& done) {
    DispatchRecord* d = InflightRecord(done.rank, done.k);
    if (d == nullptr) {
      DFX_LOG_WARN("{}: DispatchDone for rank {} d{}, which is not in flight; ignored",
                   agent.identity, done.rank, done.k);
      return;
    }
    d->tasks = done.tasks_executed;
    d->agent_wall_ns = done.wall_ns;
    const bool ok = done.status == protocol::DispatchStatus::kOk;
    FinishDispatch(
        static_cast<size_t>(d - dispatches_.data()), ok ? "ok" : "failed",
        ok ? "" : fmt::format("{}: {}", protocol::DispatchStatusName(done.status), done.error));
  }

  // --------------------------------------------------------------- failure --
  void DeclareDead(AgentState& agent, const std::string& why) {
    if (agent.dead) return;
    agent.dead = true;
    agent.error = why;
    DFX_LOG_ERROR("{} (pid {} on {}) declared dead: {}", agent.identity, agent.pid, agent.host,
                  why);
    for (auto it = transfers_.begin(); it != transfers_.end();) {
      if (it->second.agent == agent.identity) {
        FailTransfer(it->second, "transfer interrupted: " + why);
        it = transfers_.erase(it);
      } else {
        ++it;
      }
    }
    if (mode_ != Mode::kRun) return;
    for (int32_t r : agent.ranks)
      FailRank(r, fmt::format("agent {} died: {}", agent.identity, why));
  }

  void FailRank(int r, const std::string& why) {
    RankState& rs = ranks_[r];
    if (rs.status == "failed") return;
    rs.status = "failed";
    rs.error = why;
    if (rs.inflight) FinishDispatch(*rs.inflight, "failed", "in flight when " + why);
    while (!rs.queue.empty()) {
      size_t i = rs.queue.front();
      rs.queue.pop_front();
      FinishDispatch(i, "not_run",
                     "never dispatched: rank " + std::to_string(r) + " failed: " + why);
    }
    manifest_dirty_ = true;
  }

  // ---------------------------------------------------------------- loop --
  uint64_t Now() const { return options_.clock->NowNs(); }

  // Heartbeats, silence and deadline checks.
  void Housekeeping() {
    const uint64_t now = Now();
    const uint64_t interval = SecondsToNs(options_.heartbeat_interval_s);
    const uint64_t timeout = SecondsToNs(options_.heartbeat_timeout_s);
    for (auto& [id, agent] : agents_) {
      if (agent.dead || agent.shutdown_sent) continue;
      if (now - agent.last_rx_ns > timeout) {
        DeclareDead(agent,
                    fmt::format("silent for {:.1f} s (heartbeat deadline "
                                "--heartbeat-timeout {:g} s)",
                                (now - agent.last_rx_ns) / 1e9, options_.heartbeat_timeout_s));
        continue;
      }
      if (now - agent.last_ping_ns >= interval) {
        SendTo(agent, agent.ranks.front(), protocol::Heartbeat{now, 0, true});
        agent.last_ping_ns = now;
      }
    }
    if (mode_ == Mode::kRun) {
      const uint64_t budget = SecondsToNs(options_.dispatch_timeout_s);
      for (size_t r = 0; r < ranks_.size(); ++r) {
        RankState& rs = ranks_[r];
        if (!rs.inflight) continue;
        DispatchRecord& d = dispatches_[*rs.inflight];
        if (now - d.start_ns > budget) {
          auto it = agents_.find(rs.agent);
          if (it != agents_.end()) {
            SendTo(it->second, d.rank, protocol::Cancel{d.rank, d.k, "dispatch timeout"});
          }
          FailRank(static_cast<int>(r),
                   fmt::format("dispatch d{} exceeded --dispatch-timeout {:g} s", d.k,
                               options_.dispatch_timeout_s));
        }
      }
    }
    ReapChildren();
  }

  void ReapChildren() {
    for (size_t i = 0; i < children_.size(); ++i) {
      ChildProcess& child = children_[i];
      if (child.exit_status() || !child.Poll()) continue;
      const std::string how = child.Describe();
      if (mode_ == Mode::kGather) {
        for (auto& [id, agent] : agents_) {
          if (agent.pid == static_cast<uint32_t>(child.pid()) && !agent.dead &&
              !agent.shutdown_sent) {
            DeclareDead(agent, fmt::format("the recovery agent exited ({})", how));
          }
        }
        continue;
      }
      if (options_.launcher == Launcher::kMpirun) {
        for (auto& [id, agent] : agents_) {
          if (!agent.dead && !agent.shutdown_sent) {
            DeclareDead(agent, fmt::format("mpirun exited ({})", how));
          }
        }
        for (size_t r = 0; r < ranks_.size(); ++r) {
          if (ranks_[r].agent.empty() && !finishing_) {
            FailRank(static_cast<int>(r),
                     "mpirun exited (" + how + ") before this rank said HELLO");
          }
        }
        continue;
      }
      // Local launcher: child i runs the agent of ranks i*chips ...
      const int first = static_cast<int>(i) * options_.chips_per_agent;
      bool matched = false;
      for (auto& [id, agent] : agents_) {
        if (!agent.ranks.empty() && agent.ranks.front() == first) {
          matched = true;
          if (!agent.dead && !agent.shutdown_sent) {
            DeclareDead(agent, fmt::format("its process (pid {}) exited: {}", child.pid(), how));
          }
        }
      }
      if (!matched && !finishing_) {
        for (int c = 0; c < options_.chips_per_agent; ++c) {
          if (first + c < options_.ranks && ranks_[first + c].agent.empty()) {
            FailRank(first + c, fmt::format("its agent process (pid {}) exited before HELLO: {}",
                                            child.pid(), how));
          }
        }
      }
    }
  }

  // One turn of the event loop: wait up to `timeout_ms`, handle what arrived.
  Status Pump(int timeout_ms) {
    auto polled = router_.Receive(timeout_ms, writer_.wake_fd());
    if (!polled.ok()) return polled.status();
    if (polled->frame) {
      OnFrame(*polled->frame);
      for (int i = 0; i < 256; ++i) {
        auto more = router_.Receive(0);
        if (!more.ok() || !more->frame) break;
        OnFrame(*more->frame);
      }
    }
    TakeWriterResults();
    Housekeeping();
    if (options_.live_progress) DrawProgress(false);
    if (manifest_dirty_ && mode_ == Mode::kRun && Now() - last_manifest_ns_ > 500 * kMs) {
      WriteManifest("running");
    }
    return Status::Ok();
  }

  // ------------------------------------------------------------ progress --
  void DrawProgress(bool final) {
    const uint64_t now = Now();
    if (!final && now - last_draw_ns_ < 100 * kMs) return;
    last_draw_ns_ = now;
    std::string line;
    for (size_t r = 0; r < ranks_.size() && r < 16; ++r) {
      const RankState& rs = ranks_[r];
      std::string tasks;  // the in-flight dispatch's task progress (Progress messages)
      if (rs.inflight && rs.tasks_total > 0) {
        tasks = fmt::format(" [{}/{} tasks]", rs.tasks_done, rs.tasks_total);
      } else if (rs.inflight && rs.stage == "streaming") {
        tasks = " [streaming]";
      }
      line += fmt::format("r{} {}/{}{}{} ", r, rs.done, rs.total, tasks,
                          rs.status == "failed" ? "!" : "");
    }
    if (ranks_.size() > 16) line += "... ";
    line += fmt::format("| {} gathered", FormatBytes(bytes_gathered_));
    std::fprintf(stderr, "\r\033[K[dfx-coordinator] %s%s", line.c_str(), final ? "\n" : "");
    std::fflush(stderr);
  }

  // ------------------------------------------------------------ manifest --
  Json ManifestJson(const std::string& status) const {
    Json m;
    m["session"] = Hex64(session_);
    m["status"] = status;
    m["plan"] = plan_name_;
    m["work_dir"] = fs::absolute(options_.work_dir).string();
    m["launcher"] = LauncherName(options_.launcher);
    m["endpoint"] = router_.endpoint();
    m["run_config"] = config::RunConfigToJson(options_.config);
    Json passes = Json::array();
    for (const auto& p : passes_) passes.push_back(config::PassKindName(p.kind));
    m["passes"] = passes;
    Json ranks = Json::array();
    for (size_t r = 0; r < ranks_.size(); ++r) {
      const RankState& rs = ranks_[r];
      Json j;
      j["rank"] = r;
      const AgentState* agent = nullptr;
      if (auto it = agents_.find(rs.agent); it != agents_.end()) agent = &it->second;
      j["host"] = agent ? Json(agent->host) : Json(nullptr);
      j["pid"] = agent ? Json(agent->pid) : Json(nullptr);
      j["status"] = rs.status;
      j["error"] = NullOr(rs.error);
      j["clock_offset_ns"] = agent ? Json(agent->clock_offset_ns) : Json(nullptr);
      j["clock_offset_rtt_ns"] =
          agent && agent->best_rtt_ns != UINT64_MAX ? Json(agent->best_rtt_ns) : Json(nullptr);
      j["dispatches"] = rs.total;
      ranks.push_back(j);
    }
    m["ranks"] = ranks;
    Json dispatches = Json::array();
    for (const DispatchRecord& d : dispatches_) {
      Json j;
      j["rank"] = d.rank;
      j["k"] = d.k;
      j["dir"] = collectors::DispatchDirPath(d.rank, d.k);
      j["program"] = d.program;
      j["pass"] = config::PassKindName(d.pass);
      j["status"] = d.status;
      j["error"] = NullOr(d.error);
      j["start_ns"] = d.start_ns;
      j["end_ns"] = d.end_ns;
      j["tasks_executed"] = d.tasks;
      Json arts = Json::array();
      for (const ArtifactRecord& a : d.artifacts) arts.push_back(ArtifactJson(a));
      j["artifacts"] = arts;
      dispatches.push_back(j);
    }
    m["dispatches"] = dispatches;
    m["bytes_gathered"] = bytes_gathered_;
    return m;
  }

  static Json ArtifactJson(const ArtifactRecord& a) {
    Json j;
    j["path"] = a.path;
    j["size"] = a.size;
    j["checksum"] = a.status == "ok" || a.status == "recovered" ? Json("xxh64:" + Hex64(a.checksum))
                                                                : Json(nullptr);
    j["status"] = a.status;
    j["error"] = NullOr(a.error);
    return j;
  }

  void WriteManifest(const std::string& status) {
    last_manifest_ns_ = Now();
    manifest_dirty_ = false;
    if (Status s = WriteJsonFileAtomic(dfx_dir_ / kManifestFile, ManifestJson(status), 2);
        !s.ok()) {
      DFX_LOG_ERROR("cannot write the run manifest: {}", s.message());
    }
  }

  // ------------------------------------------------------------ the run --
  Result<SessionOutcome> Run(const Plan& plan) {
    plan_name_ = plan.name;
    if (const char* f = std::getenv("DFX_FAULT_COORDINATOR_KILL_AFTER_CHUNKS")) {
      crash_after_chunks_ = std::strtoull(f, nullptr, 10);
    }
    DFX_ASSIGN_OR_RETURN(std::vector<PlannedDispatch> planned, ExpandPlan(plan, options_.ranks));
    passes_ = config::PlanPasses(options_.config, /*l3=*/true);
    session_ = RandomSessionId();
    ranks_.assign(static_cast<size_t>(options_.ranks), RankState{});

    DFX_RETURN_IF_ERROR(MakeDirs(dfx_dir_));
    if (options_.config.AnyDfx()) ClearStaleDispatchDirs(dfx_dir_);
    DFX_RETURN_IF_ERROR(Bind());
    fs::path spool =
        options_.spool_root.empty() ? options_.work_dir / ".dfx_spool" : options_.spool_root;
    spool = fs::absolute(spool).lexically_normal();
    Json session_record;
    session_record["session"] = Hex64(session_);
    session_record["spool"] = spool.string();
    session_record["endpoint"] = endpoint();
    session_record["launcher"] = LauncherName(options_.launcher);
    session_record["ranks"] = options_.ranks;
    session_record["coordinator_pid"] = ::getpid();
    DFX_RETURN_IF_ERROR(WriteJsonFileAtomic(dfx_dir_ / kSessionFile, session_record, 2));
    std::fprintf(stderr, "[dfx-coordinator] session %s: %d rank(s), %s launcher, listening on %s\n",
                 Hex64(session_).c_str(), options_.ranks, LauncherName(options_.launcher),
                 endpoint().c_str());

    // Dispatch records for every pass, queued per rank in plan order.
    for (const config::PassPlan& pass : passes_) {
      for (const PlannedDispatch& p : planned) {
        DispatchRecord d;
        d.rank = p.rank;
        d.k = p.k;
        d.program = p.program;
        d.pass = pass.kind;
        dispatches_.push_back(d);
      }
    }
    for (const auto& d : dispatches_) ++ranks_[d.rank].total;

    DFX_RETURN_IF_ERROR(Launch(spool));
    WriteManifest("starting");

    // 1. Readiness barrier under one startup deadline.
    const uint64_t startup_deadline = Now() + SecondsToNs(options_.startup_timeout_s);
    for (;;) {
      bool all = true;
      for (const RankState& rs : ranks_) all &= rs.status != "waiting";
      if (all) break;
      if (Now() > startup_deadline) {
        for (size_t r = 0; r < ranks_.size(); ++r) {
          if (ranks_[r].status != "waiting") continue;
          FailRank(
              static_cast<int>(r),
              ranks_[r].agent.empty()
                  ? fmt::format("no agent said HELLO for rank {} within --startup-timeout {:g} s",
                                r, options_.startup_timeout_s)
                  : fmt::format("agent {} said HELLO but not READY within --startup-timeout {:g} s",
                                ranks_[r].agent, options_.startup_timeout_s));
        }
        break;
      }
      DFX_RETURN_IF_ERROR(Pump(20));
    }

    // Agents attached from elsewhere spool where they were told to: record
    // every spool so `dfx-coordinator gather` finds them after a crash.
    {
      Json spools = Json::array();
      std::set<std::string> seen = {spool.string()};
      for (const auto& [id, agent] : agents_) {
        if (!agent.spool.empty() && seen.insert(agent.spool).second) spools.push_back(agent.spool);
      }
      session_record["agent_spools"] = spools;
      (void)WriteJsonFileAtomic(dfx_dir_ / kSessionFile, session_record, 2);
    }

    // 2. Fan-out, pass by pass: ordered per rank, ranks in parallel.
    size_t per_pass = planned.size();
    for (size_t p = 0; p < passes_.size(); ++p) {
      const config::PassPlan& pass = passes_[p];
      if (passes_.size() > 1) {
        std::fprintf(stderr, "[dfx-coordinator] l3_swimlane_pass=%s event=begin\n",
                     config::PassKindName(pass.kind));
      }
      for (size_t i = p * per_pass; i < (p + 1) * per_pass; ++i) {
        DispatchRecord& d = dispatches_[i];
        if (ranks_[d.rank].status == "failed") {
          FinishDispatch(i, "not_run", "never dispatched: rank failed: " + ranks_[d.rank].error);
        } else {
          ranks_[d.rank].queue.push_back(i);
        }
      }
      for (;;) {
        bool busy = false;
        for (size_t r = 0; r < ranks_.size(); ++r) {
          RankState& rs = ranks_[r];
          if (rs.status == "failed") continue;
          if (!rs.inflight && !rs.queue.empty()) SendNext(static_cast<int>(r), pass);
          busy |= rs.inflight.has_value() || !rs.queue.empty();
        }
        if (!busy) break;
        DFX_RETURN_IF_ERROR(Pump(20));
      }
      if (passes_.size() > 1) {
        std::fprintf(stderr, "[dfx-coordinator] l3_swimlane_pass=%s event=end\n",
                     config::PassKindName(pass.kind));
      }
    }
    for (RankState& rs : ranks_) {
      if (rs.status == "ready") rs.status = "ok";
    }

    // 3. Shut the agents down; wait for them under the shutdown deadline.
    Finish();

    SessionOutcome out;
    out.session_id = session_;
    out.manifest_path = dfx_dir_ / kManifestFile;
    bool ok = true;
    for (const RankState& rs : ranks_) {
      if (rs.status != "ok") {
        ok = false;
        out.summary += fmt::format("rank failed: {}\n", rs.error);
      }
    }
    for (const DispatchRecord& d : dispatches_) {
      if (d.status == "failed" && d.pass == config::PassKind::kGraph) {
        // Best effort (spec §2.6/§2.7): the timing pass still ran; lanes of
        // this dispatch fall back to anonymous task(rXtY).
        std::printf(
            "warning: graph pass (dep_gen capture) failed for rank %d d%u (%s): %s; the "
            "swimlane will have no arrows or kernel names, its lanes fall back to anonymous "
            "task(rXtY) (deps.json expected at %s); diagnose it from this error -- "
            "--enable-dep-gen reruns nothing, that pass already runs on its own\n",
            d.rank, d.k, d.program.c_str(), d.error.c_str(),
            ShellQuote((dfx_dir_ / collectors::DispatchDirPath(d.rank, d.k) / "deps.json").string())
                .c_str());
      } else if (d.status != "ok") {
        ok = false;
        if (d.status == "failed") {
          out.summary +=
              fmt::format("rank {} d{} ({}) failed: {}\n", d.rank, d.k, d.program, d.error);
        }
      }
      for (const ArtifactRecord& a : d.artifacts) {
        if (a.status == "ok") {
          if (std::find(out.artifacts.begin(), out.artifacts.end(), a.path) ==
              out.artifacts.end()) {
            out.artifacts.push_back(a.path);
          }
        } else {
          ok = false;
          out.summary += fmt::format("artifact {} missing: {}\n", a.path, a.error);
        }
      }
    }
    out.success = ok;
    if (options_.config.AnyDfx()) {
      for (const DispatchRecord& d : dispatches_) {
        for (const char* extra : {"dispatch_program.json"}) {
          std::string rel = collectors::DispatchDirPath(d.rank, d.k) + "/" + extra;
          if (fs::exists(dfx_dir_ / rel) &&
              std::find(out.artifacts.begin(), out.artifacts.end(), rel) == out.artifacts.end()) {
            out.artifacts.push_back(rel);
          }
        }
      }
    }
    WriteManifest(ok ? "ok" : "failed");
    std::error_code ec;
    fs::remove(spool, ec);  // only when every agent emptied it
    return out;
  }

  void SendNext(int rank, const config::PassPlan& pass) {
    RankState& rs = ranks_[rank];
    size_t index = rs.queue.front();
    rs.queue.pop_front();
    DispatchRecord& d = dispatches_[index];
    auto it = agents_.find(rs.agent);
    if (it == agents_.end() || it->second.dead) {
      FinishDispatch(index, "not_run", "rank has no live agent");
      return;
    }
    const PlanProgram& program = current_plan_programs_->at(d.program);
    if (options_.config.AnyDfx()) {
      Json label;
      label["program"] = d.program;
      Status s = WriteJsonFileAtomic(
          dfx_dir_ / collectors::DispatchDirPath(d.rank, d.k) / "dispatch_program.json", label, -1);
      if (!s.ok()) DFX_LOG_WARN("dispatch_program.json: {}", s.message());
    }
    protocol::Dispatch msg;
    msg.session_id = session_;
    msg.rank = d.rank;
    msg.k = d.k;
    msg.program_name = d.program;
    msg.program_json = program.json_text;
    msg.config = pass.config;
    msg.pass = pass.kind;
    d.start_ns = Now();
    d.status = "sent";
    rs.inflight = index;
    if (!SendTo(it->second, d.rank, std::move(msg))) {
      FinishDispatch(index, "failed", "could not send the dispatch to " + it->second.identity);
    }
  }

  Status Launch(const fs::path& spool) {
    if (options_.launcher == Launcher::kAttach) {
      std::fprintf(stderr,
                   "[dfx-coordinator] waiting for %d rank(s) to attach: start them with\n"
                   "  dfx-rank-agent serve --coordinator %s --rank R\n",
                   options_.ranks, endpoint().c_str());
      return Status::Ok();
    }
    std::vector<std::string> common = {"--coordinator",
                                       endpoint(),
                                       "--session",
                                       Hex64(session_),
                                       "--chips",
                                       std::to_string(options_.chips_per_agent),
                                       "--spool",
                                       spool.string(),
                                       "--connect-timeout",
                                       fmt::format("{:g}", options_.startup_timeout_s),
                                       "--heartbeat-interval",
                                       fmt::format("{:g}", options_.heartbeat_interval_s),
                                       "--heartbeat-timeout",
                                       fmt::format("{:g}", options_.heartbeat_timeout_s),
                                       "--log-level",
                                       options_.agent_log_level};
    common.insert(common.end(), options_.agent_args.begin(), options_.agent_args.end());
    const int agents = (options_.ranks + options_.chips_per_agent - 1) / options_.chips_per_agent;
    if (options_.launcher == Launcher::kMpirun) {
      // --enable-recovery: without it Open MPI 4.1 aborts every rank as soon
      // as one dies (e.g. SIGKILL); with it the others run on, the dead
      // rank is found by its heartbeat deadline and mpirun exits once all
      // ranks are gone.
      std::vector<std::string> argv = {"mpirun", "--enable-recovery"};
      if (::geteuid() == 0) argv.push_back("--allow-run-as-root");
      if (agents > static_cast<int>(std::thread::hardware_concurrency())) {
        argv.push_back("--oversubscribe");
      }
      argv.insert(argv.end(), {"-np", std::to_string(agents), options_.agent_binary.string()});
      argv.insert(argv.end(), common.begin(), common.end());
      DFX_LOG_INFO("starting {}", fmt::join(argv, " "));
      DFX_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Spawn(argv));
      children_.push_back(std::move(child));
      return Status::Ok();
    }
    for (int i = 0; i < agents; ++i) {
      std::vector<std::string> argv = {options_.agent_binary.string(), "--rank", std::to_string(i)};
      argv.insert(argv.end(), common.begin(), common.end());
      DFX_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Spawn(argv));
      children_.push_back(std::move(child));
    }
    return Status::Ok();
  }

  void Finish() {
    finishing_ = true;
    // Every received file is verified and acknowledged before the agents are
    // told to go: an agent keeps an unacknowledged file in its spool.
    DrainWriter(Now() + SecondsToNs(options_.shutdown_timeout_s));
    for (auto& [id, agent] : agents_) {
      if (!agent.dead) {
        SendTo(agent, agent.ranks.front(), protocol::Shutdown{"run complete"});
        agent.shutdown_sent = true;
      }
    }
    const uint64_t deadline = Now() + SecondsToNs(options_.shutdown_timeout_s);
    for (;;) {
      bool running = false;
      for (auto& child : children_) running |= !child.Poll();
      if (!running || Now() > deadline) break;
      (void)Pump(20);
    }
    for (auto& child : children_) {
      if (!child.Poll()) {
        DFX_LOG_WARN("child pid {} still running after --shutdown-timeout; terminating it",
                     child.pid());
        child.Terminate(2000);
      }
    }
    if (options_.live_progress) DrawProgress(true);
  }

  // -------------------------------------------------------------- gather --
  // Gather from serve agents that connect to --bind: done once every rank of
  // the run was offered by an agent and everything it streamed is on disk.
  Result<GatherOutcome> GatherAttached(const GatherOptions& g, int expected_ranks) {
    gather_attach_ = true;
    DFX_RETURN_IF_ERROR(Bind());
    std::fprintf(stderr,
                 "[dfx-coordinator] gather of session %s: waiting for %d rank(s) on %s; start "
                 "(or keep running) `dfx-rank-agent serve --coordinator %s --rank R`\n",
                 Hex64(session_).c_str(), expected_ranks, endpoint().c_str(), endpoint().c_str());
    const uint64_t deadline = Now() + SecondsToNs(g.timeout_s);
    GatherOutcome out;
    out.session_id = session_;
    std::set<int32_t> missing;
    for (;;) {
      missing.clear();
      for (int32_t r = 0; r < expected_ranks; ++r) missing.insert(r);
      bool busy = false;
      for (auto& [id, agent] : agents_) {
        if (agent.dead) continue;
        if (agent.gather_done) {
          for (int32_t r : agent.ranks) missing.erase(r);
        } else {
          busy = true;
        }
      }
      if (missing.empty() && !busy && transfers_.empty() && writer_.Idle()) break;
      if (Now() > deadline) {
        for (auto& [id, agent] : agents_) {
          if (!agent.gather_done) DeclareDead(agent, "gather exceeded --timeout");
        }
        break;
      }
      DFX_RETURN_IF_ERROR(Pump(20));
    }
    Finish();
    for (const ArtifactRecord& a : recovered_) {
      if (a.status == "recovered") {
        out.recovered.push_back(a.path);
      } else {
        out.failed.push_back(a.path + ": " + a.error);
      }
    }
    out.success = out.failed.empty() && gather_offered_ == recovered_.size();
    for (auto& [id, agent] : agents_) {
      if (agent.dead) {
        out.success = false;
        out.failed.push_back("agent " + agent.identity + ": " + agent.error);
      }
    }
    if (!missing.empty()) {
      out.success = false;
      out.failed.push_back(
          fmt::format("no serve agent offered rank(s) {} within --timeout {:g} s (are they running "
                      "with --coordinator {}?)",
                      fmt::join(missing, ","), g.timeout_s, endpoint()));
    }
    UpdateManifestAfterGather(out);
    return out;
  }

  Result<GatherOutcome> Gather(const GatherOptions& g, const fs::path& spool) {
    DFX_RETURN_IF_ERROR(Bind());
    // One recovery agent per rank directory, so ranks stream in parallel
    // like the agents of the run did.
    static const std::regex kRankDir(R"(rank(\d+))");
    std::vector<int> ranks;
    std::error_code ec;
    for (auto& entry : fs::directory_iterator(spool / Hex64(session_), ec)) {
      std::smatch m;
      const std::string name = entry.path().filename().string();
      if (entry.is_directory(ec) && std::regex_match(name, m, kRankDir))
        ranks.push_back(std::stoi(m[1]));
    }
    std::sort(ranks.begin(), ranks.end());
    for (int r : ranks) {
      std::vector<std::string> argv = {g.agent_binary.string(),
                                       "--recover",
                                       "--rank",
                                       std::to_string(r),
                                       "--coordinator",
                                       endpoint(),
                                       "--session",
                                       Hex64(session_),
                                       "--spool",
                                       spool.string(),
                                       "--connect-timeout",
                                       fmt::format("{:g}", g.timeout_s),
                                       "--heartbeat-timeout",
                                       fmt::format("{:g}", g.heartbeat_timeout_s),
                                       "--log-level",
                                       "warn"};
      DFX_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Spawn(argv));
      children_.push_back(std::move(child));
    }
    const uint64_t deadline = Now() + SecondsToNs(g.timeout_s);
    GatherOutcome out;
    out.session_id = session_;
    for (;;) {
      size_t exited_silent = 0;
      for (auto& child : children_) exited_silent += child.exit_status().has_value() ? 1 : 0;
      bool done = agents_.size() + (agents_.empty() ? exited_silent : 0) >= children_.size();
      for (auto& [id, agent] : agents_)
        done &= agent.dead || (agent.gather_done && transfers_.empty());
      if (done && writer_.Idle()) break;
      if (agents_.empty() && exited_silent == children_.size()) {
        return Unavailable("every recovery agent exited (" + children_.front().Describe() +
                           ") before it connected");
      }
      if (Now() > deadline) {
        for (auto& [id, agent] : agents_) DeclareDead(agent, "gather exceeded --timeout");
        break;
      }
      DFX_RETURN_IF_ERROR(Pump(20));
    }
    Finish();
    for (const ArtifactRecord& a : recovered_) {
      if (a.status == "recovered") {
        out.recovered.push_back(a.path);
      } else {
        out.failed.push_back(a.path + ": " + a.error);
      }
    }
    out.success = out.failed.empty() && gather_offered_ == recovered_.size();
    for (auto& [id, agent] : agents_) {
      if (agent.dead) {
        out.success = false;
        out.failed.push_back("recovery agent: " + agent.error);
      }
    }
    UpdateManifestAfterGather(out);
    return out;
  }

  void UpdateManifestAfterGather(const GatherOutcome& out) {
    fs::path path = dfx_dir_ / kManifestFile;
    Json m;
    if (auto existing = ReadJsonFile(path); existing.ok() && existing->is_object()) m = *existing;
    m["session"] = Hex64(session_);
    Json recovered = Json::array();
    for (const ArtifactRecord& a : recovered_) recovered.push_back(ArtifactJson(a));
    // Mark the dispatch entries whose artifacts came back through gather.
    if (m.contains("dispatches") && m["dispatches"].is_array()) {
      for (auto& d : m["dispatches"]) {
        const std::string dir = d.value("dir", "");
        for (const ArtifactRecord& a : recovered_) {
          if (a.path.rfind(dir + "/", 0) != 0 || a.status != "recovered") continue;
          bool found = false;
          for (auto& art : d["artifacts"]) {
            if (art.value("path", "") == a.path) {
              art = ArtifactJson(a);
              found = true;
            }
          }
          if (!found) d["artifacts"].push_back(ArtifactJson(a));
        }
      }
    }
    // One gather may visit several spools: accumulate into one record.
    Json gather;
    const bool same = m.contains("gather") && m["gather"].is_object() &&
                      m["gather"].value("gather_id", "") == gather_id_;
    if (same) gather = m["gather"];
    gather["gather_id"] = gather_id_;
    gather["status"] =
        out.success && (!same || gather.value("status", "") == "ok") ? "ok" : "failed";
    if (!same) {
      gather["recovered"] = Json::array();
      gather["failed"] = Json::array();
    }
    for (auto& r : recovered) gather["recovered"].push_back(r);
    for (auto& f : out.failed) gather["failed"].push_back(f);
    m["gather"] = gather;
    if (Status s = WriteJsonFileAtomic(path, m, 2); !s.ok()) {
      DFX_LOG_ERROR("cannot update the run manifest: {}", s.message());
    }
  }

  void set_gather_id(const std::string& id) { gather_id_ = id; }
  void set_plan_programs(const std::map<std::string, PlanProgram>* programs) {
    current_plan_programs_ = programs;
  }

 private:
  Mode mode_;
  SessionOptions options_;
  fs::path dfx_dir_;
  protocol::Context context_;
  protocol::RouterChannel router_;
  uint64_t session_ = 0;
  std::string plan_name_;
  std::vector<config::PassPlan> passes_;
  std::map<std::string, AgentState> agents_;
  std::vector<RankState> ranks_;
  std::vector<DispatchRecord> dispatches_;
  std::map<std::pair<std::string, uint64_t>, Transfer> transfers_;
  std::vector<ArtifactRecord> recovered_;
  std::vector<ChildProcess> children_;
  std::map<std::string, uint32_t> credits_owed_;  // by agent identity, sent by FlushCredits
  uint64_t streams_ = 0;
  const std::map<std::string, PlanProgram>* current_plan_programs_ = nullptr;
  uint64_t bytes_gathered_ = 0;
  uint64_t chunks_received_ = 0;
  uint64_t crash_after_chunks_ = 0;
  uint64_t gather_offered_ = 0;
  uint64_t last_draw_ns_ = 0;
  uint64_t last_manifest_ns_ = 0;
  bool manifest_dirty_ = false;
  bool finishing_ = false;
  bool gather_attach_ = false;
  std::string gather_id_;
  // Last member: destroyed (its thread joined) first, while the state its
  // pending jobs name still exists.
  ArtifactWriter writer_;
};

}  // namespace

Result<SessionOutcome> RunSession(const Plan& plan, const SessionOptions& options) {
  if (options.ranks < 1) return InvalidArgument("--ranks must be >= 1");
  if (options.chips_per_agent < 1) return InvalidArgument("--chips-per-agent must be >= 1");
  if (options.work_dir.empty()) return InvalidArgument("--work-dir DIR is required");
  Coordinator coordinator(Coordinator::Mode::kRun, options);
  coordinator.set_plan_programs(&plan.programs);
  return coordinator.Run(plan);
}

Result<GatherOutcome> RunGather(const GatherOptions& options) {
  const fs::path dfx_dir = options.work_dir / "dfx_outputs";
  const fs::path record_path = dfx_dir / kSessionFile;
  auto record = ReadJsonFile(record_path);
  if (!record.ok()) {
    return NotFound(fmt::format("{}: no session record; was a run started with --work-dir {}? ({})",
                                record_path.string(), options.work_dir.string(),
                                record.status().message()));
  }
  if (!record->contains("session") || !(*record)["session"].is_string()) {
    return JsonError(record_path.string(), "$.session", "the session id as hex", *record);
  }
  const std::string hex = (*record)["session"].get<std::string>();
  uint64_t session = std::strtoull(hex.c_str(), nullptr, 16);
  if (session == 0)
    return JsonError(record_path.string(), "$.session", "a non-zero hex id", (*record)["session"]);
  std::vector<fs::path> spools;
  if (!options.spool_root.empty()) {
    spools.push_back(options.spool_root);
  } else {
    if (!record->contains("spool") || !(*record)["spool"].is_string()) {
      return JsonError(record_path.string(), "$.spool", "the spool directory (or pass --spool)",
                       *record);
    }
    spools.push_back((*record)["spool"].get<std::string>());
    if (record->contains("agent_spools") && (*record)["agent_spools"].is_array()) {
      for (const auto& s : (*record)["agent_spools"]) {
        if (s.is_string()) spools.push_back(s.get<std::string>());
      }
    }
  }
  // A coordinator killed mid-stream leaves its temporary files behind: they
  // were never renamed into place, so they are garbage.
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dfx_dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec) &&
        it->path().filename().string().find(".tmp.") != std::string::npos) {
      fs::remove(it->path(), ec);
    }
  }
  const std::string gather_id = fmt::format("{}-{}", ::getpid(), Hex64(RandomSessionId()));
  if (options.attach) {
    if (!record->contains("ranks") || !(*record)["ranks"].is_number_integer() ||
        (*record)["ranks"].get<int>() < 1) {
      return JsonError(record_path.string(), "$.ranks", "the run's rank count (>= 1)", *record);
    }
    SessionOptions so;
    so.work_dir = options.work_dir;
    so.bind = options.bind;
    so.heartbeat_timeout_s = options.heartbeat_timeout_s;
    so.clock = options.clock;
    Coordinator coordinator(Coordinator::Mode::kGather, so);
    coordinator.set_session(session);
    coordinator.set_gather_id(gather_id);
    return coordinator.GatherAttached(options, (*record)["ranks"].get<int>());
  }
  GatherOutcome total;
  total.session_id = session;
  total.success = true;
  for (const fs::path& spool : spools) {
    if (!fs::is_directory(spool / Hex64(session), ec)) {
      std::fprintf(stderr, "[dfx-coordinator] nothing to gather: %s holds no spool of session %s\n",
                   spool.string().c_str(), hex.c_str());
      continue;
    }
    SessionOptions so;
    so.work_dir = options.work_dir;
    so.heartbeat_timeout_s = options.heartbeat_timeout_s;
    so.clock = options.clock;
    Coordinator coordinator(Coordinator::Mode::kGather, so);
    coordinator.set_session(session);
    coordinator.set_gather_id(gather_id);
    DFX_ASSIGN_OR_RETURN(GatherOutcome out, coordinator.Gather(options, fs::absolute(spool)));
    total.success &= out.success;
    total.recovered.insert(total.recovered.end(), out.recovered.begin(), out.recovered.end());
    total.failed.insert(total.failed.end(), out.failed.begin(), out.failed.end());
  }
  return total;
}

}  // namespace dfx::coordinator
