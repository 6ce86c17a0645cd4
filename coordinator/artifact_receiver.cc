#include "coordinator/artifact_receiver.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <system_error>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/log.h"
#include "common/metrics.h"
#include "protocol/codec.h"

namespace dfx::coordinator {

namespace fs = std::filesystem;
using collectors::ArtifactEntry;
using collectors::ArtifactState;

namespace {

// A path as the agent sent it, printable and bounded (for a record of a
// stream refused because of its path).
std::string Printable(const std::string& path) {
  std::string out;
  for (unsigned char c : path.substr(0, 200)) out += (c >= 0x20 && c < 0x7f) ? char(c) : '?';
  return out.empty() ? std::string("?") : out;
}

}  // namespace

ArtifactReceiver::ArtifactReceiver(fs::path dfx_dir, AgentRegistry& registry,
                                   ArtifactLedger& ledger, ReceiverOptions options)
    : dfx_dir_(std::move(dfx_dir)),
      registry_(registry),
      ledger_(ledger),
      options_(options),
      writer_(std::chrono::milliseconds(options.fault_write_delay_ms)) {}

void ArtifactReceiver::GrantCredits(AgentState& agent) {
  if (registry_.Send(agent, agent.ranks.front(),
                     protocol::Credit{options_.credit_window, {}, {}, options_.wire_compression})) {
    credit_balance_[agent.identity] += options_.credit_window;
  }
}

bool ArtifactReceiver::TakeCredit(AgentState& agent) {
  int64_t& balance = credit_balance_[agent.identity];
  if (balance <= 0) {
    metrics::ChunksWithoutCredit().Add();
    return false;
  }
  // The window is used up by chunks the writer has not written yet: the
  // agent waits until their credits come back (--metrics counts it).
  if (--balance == 0) metrics::CreditsWithheld().Add();
  return true;
}

void ArtifactReceiver::RefuseBegin(AgentState& agent, const protocol::ArtifactBegin& b,
                                   const std::optional<size_t>& dispatch, const std::string& rel,
                                   const std::string& why) {
  AckFail(agent, b.transfer_id, why);
  ArtifactEntry entry;
  entry.path = rel;
  entry.size = b.size;
  entry.status = ArtifactState::kFailed;
  entry.error = "refused: " + why;
  ledger_.RefuseArtifact(dispatch, std::move(entry));
}

ArtifactWriter::Job ArtifactReceiver::JobFor(ArtifactWriter::Kind kind, const Transfer& t) {
  ArtifactWriter::Job job;
  job.kind = kind;
  job.sink = t.sink;
  job.stream = t.stream;
  return job;
}

void ArtifactReceiver::AckFail(AgentState& agent, uint64_t transfer_id, const std::string& why,
                               bool keep_in_spool) {
  if (!keep_in_spool) {
    DFX_LOG_WARN("artifact stream {} from {} rejected: {}", transfer_id, agent.identity, why);
  }
  registry_.Send(agent, agent.ranks.front(),
                 protocol::ArtifactAck{transfer_id, false, why, keep_in_spool});
}

bool ArtifactReceiver::OverBudget(AgentState& agent, const protocol::ArtifactBegin& b,
                                  const std::optional<size_t>& dispatch, const std::string& rel) {
  if (options_.max_run_bytes == 0 || declared_bytes_ + b.size <= options_.max_run_bytes) {
    declared_bytes_ += b.size;
    return false;
  }
  const std::string why =
      fmt::format("over budget: {} bytes would take the run's {} past --max-run-bytes {}", b.size,
                  declared_bytes_, options_.max_run_bytes);
  DFX_LOG_WARN("{} not gathered ({}); it stays in the spool of {}", rel, why, agent.identity);
  AckFail(agent, b.transfer_id, why, /*keep_in_spool=*/true);
  ArtifactEntry entry;
  entry.path = rel;
  entry.size = b.size;
  entry.status = ArtifactState::kInSpool;
  entry.error = why;
  ledger_.RefuseArtifact(dispatch, std::move(entry));
  if (over_budget_.size() < kMaxRefusedEntries) over_budget_.push_back(rel);
  refused_bytes_ += b.size;
  if (refused_.size() >= kMaxRefusedEntries) refused_.clear();
  refused_.emplace(agent.identity, b.transfer_id);
  return true;
}

std::string ArtifactReceiver::WireChoice() const {
  if (wire_.streams == 0) return "no stream sent a chunk";
  if (wire_.zstd_streams == 0) return fmt::format("raw on all {} streams", wire_.streams);
  return fmt::format("zstd on {} of {} streams", wire_.zstd_streams, wire_.streams);
}

Result<std::pair<std::string_view, protocol::FrameBytes>> ArtifactReceiver::RawChunk(
    std::string_view data, const protocol::FrameBytes& frame, protocol::ChunkCoding coding,
    uint64_t raw_size) {
  if (coding == protocol::ChunkCoding::kRaw) {
    if (raw_size != 0) {
      return InvalidArgument(fmt::format("a raw chunk declares a raw size of {}", raw_size));
    }
    return std::make_pair(data, frame);
  }
  std::string raw;
  DFX_RETURN_IF_ERROR(decompressor_.Decompress(data, raw_size, &raw));
  protocol::FrameBytes owned(std::move(raw));
  return std::make_pair(owned.view(), owned);
}

void ArtifactReceiver::OnBegin(AgentState& agent, const protocol::ArtifactBegin& b,
                               std::optional<size_t> dispatch) {
  const auto key = std::make_pair(agent.identity, b.transfer_id);
  const std::string dir = collectors::DispatchDirPath(b.rank, b.k) + "/";
  if (transfers_.count(key)) {
    AckFail(agent, b.transfer_id, "transfer id reused while its stream is open");
    return;
  }
  // Validate checked the path; keep its canonical form.
  auto clean = protocol::SanitizeArtifactPath(b.path);
  if (!clean.ok()) {
    RefuseBegin(agent, b, dispatch, dir + Printable(b.path), clean.status().message());
    return;
  }
  const std::string rel = dir + *clean;
  if (b.size > options_.max_artifact_bytes) {
    RefuseBegin(agent, b, dispatch, rel,
                fmt::format("it declares {} bytes; this coordinator takes at most {} bytes per "
                            "artifact (--max-artifact-bytes)",
                            b.size, options_.max_artifact_bytes));
    return;
  }
  if (Status s = CheckNoLinks(dfx_dir_, rel); !s.ok()) {
    RefuseBegin(agent, b, dispatch, rel, s.message());
    return;
  }
  if (OverBudget(agent, b, dispatch, rel)) return;
  Transfer t;
  t.agent = agent.identity;
  t.id = b.transfer_id;
  t.rank = b.rank;
  t.size = b.size;
  t.stream = ++next_stream_;
  t.sink = std::make_shared<ArtifactWriter::Sink>();
  t.dispatch = dispatch;
  ArtifactEntry entry;
  entry.path = rel;
  entry.size = b.size;
  t.index = ledger_.BeginArtifact(dispatch, std::move(entry));
  entry_stream_[{dispatch, t.index}] = t.stream;
  streams_[t.stream] = StreamRef{t.agent, t.id, t.rank, t.dispatch, t.index, 0, false};
  // Opened by the writer thread, in order: an earlier stream of the same
  // file (a second pass) is committed before this one truncates its
  // temporary file. An open error fails the stream at its End.
  ArtifactWriter::Job open = JobFor(ArtifactWriter::Kind::kOpen, t);
  open.path = dfx_dir_ / rel;
  writer_.Push(std::move(open));
  transfers_.emplace(key, std::move(t));
}

void ArtifactReceiver::Fail(Transfer& t, const std::string& why) {
  if (!t.failed) writer_.Push(JobFor(ArtifactWriter::Kind::kAbort, t));
  t.failed = true;
  if (entry_stream_[{t.dispatch, t.index}] == t.stream) {
    ledger_.SettleArtifact(t.dispatch, t.index,
                           ArtifactSettlement{ArtifactState::kFailed, why, {}});
  }
}

void ArtifactReceiver::OnChunk(AgentState& agent, uint64_t transfer_id, uint64_t offset,
                               std::string_view wire_data, const protocol::FrameBytes& wire_frame,
                               protocol::ChunkCoding coding, uint64_t raw_size) {
  auto it = transfers_.find({agent.identity, transfer_id});
  if (it == transfers_.end()) {
    ReturnCredit(agent);
    if (!refused_.count({agent.identity, transfer_id})) {
      DFX_LOG_WARN("chunk for unknown stream {} from {} dropped", transfer_id, agent.identity);
    }
    return;
  }
  Transfer& t = it->second;
  if (t.failed) {  // already failed; wait for its End
    ReturnCredit(agent);
    return;
  }
  if (offset != t.received) {
    ReturnCredit(agent);
    Fail(t, fmt::format("chunk at offset {} but {} bytes were received", offset, t.received));
    return;
  }
  auto raw = RawChunk(wire_data, wire_frame, coding, raw_size);
  if (!raw.ok()) {
    ReturnCredit(agent);
    Fail(t, fmt::format("chunk at offset {}: {}", offset, raw.status().message()));
    return;
  }
  const std::string_view data = raw->first;
  const protocol::FrameBytes& frame = raw->second;
  if (t.received + data.size() > t.size) {
    ReturnCredit(agent);
    Fail(t, fmt::format("more bytes than the announced size {}", t.size));
    return;
  }
  ArtifactWriter::Job write = JobFor(ArtifactWriter::Kind::kWrite, t);
  write.frame = frame;
  write.data = data;
  writer_.Push(std::move(write));
  ++streams_[t.stream].pending_writes;
  t.received += data.size();
  t.wire += wire_data.size();
  t.zstd = t.zstd || coding == protocol::ChunkCoding::kZstd;
  bytes_received_ += data.size();
  metrics::BytesReceived().Add(data.size());
  ++chunks_received_;
#ifdef DFX_FAULT_HOOKS  // test builds only: a release build cannot kill itself on request
  if (options_.fault_kill_after_chunks > 0 &&
      chunks_received_ >= options_.fault_kill_after_chunks) {
    std::fprintf(stderr, "dfx-coordinator: fault injection: killing myself after %llu chunks\n",
                 static_cast<unsigned long long>(chunks_received_));
    std::fflush(stderr);
    ::kill(::getpid(), SIGKILL);
  }
#endif
}

void ArtifactReceiver::OnEnd(AgentState& agent, const protocol::ArtifactEnd& e) {
  auto it = transfers_.find({agent.identity, e.transfer_id});
  if (it == transfers_.end()) {
    if (refused_.erase({agent.identity, e.transfer_id}) == 0) {
      AckFail(agent, e.transfer_id, "end of an unknown stream");
    }
    return;
  }
  Transfer& t = it->second;
  std::string error;
  if (t.failed) {
    const ArtifactEntry& a = ledger_.Artifact(t.dispatch, t.index);
    error = a.error.empty() ? "stream failed" : a.error;
  } else if (t.received != t.size) {
    error = fmt::format("received {} of {} bytes", t.received, t.size);
  }
  auto ref = streams_.find(t.stream);
  if (t.received > 0) {
    wire_.artifact_bytes += t.received;
    wire_.wire_bytes += t.wire;
    ++wire_.streams;
    wire_.zstd_streams += t.zstd ? 1 : 0;
  }
  if (ref != streams_.end()) ref->second.wire_bytes = t.wire;
  if (error.empty()) {
    // The writer verifies the checksum once every chunk is on disk, renames
    // the file into place, and the ack follows (TakeWriterResults).
    ArtifactWriter::Job commit = JobFor(ArtifactWriter::Kind::kCommit, t);
    commit.checksum = e.checksum;
    writer_.Push(std::move(commit));
    if (ref != streams_.end()) {
      ref->second.committing = true;
      ref->second.checksum = e.checksum;
    }
  } else {
    Fail(t, error);
    AckFail(agent, e.transfer_id, error);
    if (ref != streams_.end()) {
      ref->second.aborted = true;
      ForgetIfDone(ref);
    }
  }
  transfers_.erase(it);
}

void ArtifactReceiver::ForgetIfDone(std::map<uint64_t, StreamRef>::iterator it) {
  if (it->second.aborted && it->second.pending_writes == 0) streams_.erase(it);
}

void ArtifactReceiver::TakeWriterResults(bool woken) {
  for (ArtifactWriter::Done& done : writer_.TakeResults(woken)) {
    auto ref = streams_.find(done.stream);
    if (ref == streams_.end()) continue;
    StreamRef& s = ref->second;
    if (done.kind == ArtifactWriter::Kind::kWrite) {
      ++credits_owed_[s.agent];
      if (s.pending_writes > 0) --s.pending_writes;
      ForgetIfDone(ref);
      continue;
    }
    // kCommit: the file is verified and in place, or it failed.
    if (entry_stream_[{s.dispatch, s.index}] == done.stream) {
      ArtifactSettlement settled{ArtifactState::kFailed, done.error, {}, s.wire_bytes};
      if (done.error.empty()) {
        settled.state = options_.verified_state;
        settled.checksum = s.checksum;
      }
      ledger_.SettleArtifact(s.dispatch, s.index, std::move(settled));
      if (done.error.empty() && s.dispatch && options_.on_verified)
        options_.on_verified(*s.dispatch);
    }
    if (done.error.empty()) acked_[s.agent].insert(s.transfer_id);
    AgentState* agent = registry_.Find(s.agent);
    if (agent != nullptr && !agent->dead) {
      if (done.error.empty()) {
        registry_.Send(*agent, s.rank, protocol::ArtifactAck{s.transfer_id, true, ""});
      } else {
        AckFail(*agent, s.transfer_id, done.error);
      }
    }
    streams_.erase(ref);
  }
  FlushCredits();
}

void ArtifactReceiver::FlushCredits() {
  for (auto& [identity, n] : credits_owed_) {
    if (n == 0) continue;
    AgentState* agent = registry_.Find(identity);
    if (agent != nullptr && !agent->dead &&
        registry_.Send(*agent, agent->ranks.front(),
                       protocol::Credit{n, {}, {}, options_.wire_compression})) {
      credit_balance_[identity] += n;
    }
    n = 0;
  }
}

void ArtifactReceiver::AbortAgent(const std::string& identity, const std::string& why) {
  std::set<uint64_t> streams;
  for (auto it = transfers_.begin(); it != transfers_.end();) {
    if (it->second.agent == identity) {
      Fail(it->second, "transfer interrupted: " + why);
      streams.insert(it->second.stream);
      it = transfers_.erase(it);
    } else {
      ++it;
    }
  }
  // Its chunk data still queued for the writer is freed now, not written.
  const std::map<uint64_t, uint32_t> dropped = writer_.DiscardWrites(streams);
  for (uint64_t stream : streams) {
    auto ref = streams_.find(stream);
    if (ref == streams_.end()) continue;
    if (auto d = dropped.find(stream); d != dropped.end()) {
      ref->second.pending_writes -= std::min(ref->second.pending_writes, d->second);
    }
    ref->second.aborted = true;
    ForgetIfDone(ref);
  }
  credits_owed_.erase(identity);
  credit_balance_.erase(identity);
}

protocol::TransferResume ArtifactReceiver::Where(const AgentState& agent, uint64_t transfer_id) {
  using protocol::TransferState;
  if (auto it = transfers_.find({agent.identity, transfer_id}); it != transfers_.end()) {
    if (!it->second.failed) return {transfer_id, TransferState::kOpen, it->second.received};
    if (auto ref = streams_.find(it->second.stream); ref != streams_.end()) {
      ref->second.aborted = true;
      ForgetIfDone(ref);
    }
    transfers_.erase(it);
    return {transfer_id, TransferState::kUnknown, 0};
  }
  for (const auto& [stream, ref] : streams_) {
    if (ref.agent == agent.identity && ref.transfer_id == transfer_id && ref.committing) {
      return {transfer_id, TransferState::kCommitting, 0};
    }
  }
  if (auto a = acked_.find(agent.identity); a != acked_.end() && a->second.count(transfer_id)) {
    return {transfer_id, TransferState::kAcked, 0};
  }
  return {transfer_id, TransferState::kUnknown, 0};
}

uint32_t ArtifactReceiver::RenewCredits(const AgentState& agent) {
  if (!credit_balance_.count(agent.identity)) return 0;  // none granted yet (not READY)
  credits_owed_[agent.identity] = 0;
  credit_balance_[agent.identity] = options_.credit_window;
  return options_.credit_window;
}

void ArtifactReceiver::AbortDispatch(size_t dispatch, const std::string& why) {
  for (auto it = transfers_.begin(); it != transfers_.end();) {
    if (it->second.dispatch == dispatch) {
      Fail(it->second, why);
      if (auto ref = streams_.find(it->second.stream); ref != streams_.end()) {
        ref->second.aborted = true;
        ForgetIfDone(ref);
      }
      it = transfers_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace dfx::coordinator
