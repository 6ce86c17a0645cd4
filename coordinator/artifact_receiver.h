// The receiving half of the gather (docs/design.md §7): artifact streams from
// agents (ArtifactBegin, ArtifactChunk*, ArtifactEnd), checked chunk by chunk
// (offset, announced size, destination path), written by the ArtifactWriter
// thread to a temporary name and renamed into place once the checksum
// verifies; then acknowledged, so the agent deletes its spool copy. Flow
// control: an agent may have `credit_window` chunks unwritten; a chunk's
// credit goes back once it is on disk (or dropped). Credits are enforced
// here, where chunks arrive (TakeCredit): a peer past its window is dropped
// by the event loop, so the memory a peer can hold is bounded by the window
// whatever it sends. A declared size above max_artifact_bytes is refused.
// A refused stream is recorded (failed, with the reason) in its dispatch's
// entries: nothing an agent offered disappears without a trace.
//
// Each stream updates one ArtifactEntry of the run manifest through the
// ArtifactLedger the owner gives (artifact_ledger.h): the artifacts of a
// dispatch record, or the list a gather recovers.
//
// Threads: the event loop's only (the writer thread is internal).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/run_manifest.h"
#include "coordinator/agent_registry.h"
#include "coordinator/artifact_ledger.h"
#include "coordinator/artifact_writer.h"
#include "protocol/channel.h"
#include "protocol/chunk_zstd.h"
#include "protocol/messages.h"

namespace dfx::coordinator {

// The default cap on one artifact's declared size: far above any real
// artifact (a full args dump of a big program is a few hundred MiB), far
// below what a disk or a bogus peer could make of it.
inline constexpr uint64_t kDefaultMaxArtifactBytes = 8ull << 30;

struct ReceiverOptions {
  uint32_t credit_window = 8;                              // chunks in flight per agent
  uint64_t max_artifact_bytes = kDefaultMaxArtifactBytes;  // declared size cap per artifact
  // How agents send chunks (--wire-compression), named in every Credit.
  protocol::WireCompression wire_compression = protocol::WireCompression::kAuto;
  // The byte budget (--max-run-bytes; 0 = none): a stream whose declared
  // size would take the bytes declared so far past it is refused, recorded
  // as in_spool, and its agent keeps the file for a later gather.
  uint64_t max_run_bytes = 0;
  // The state a verified file gets: kOk in a run, kRecovered in a gather.
  collectors::ArtifactState verified_state = collectors::ArtifactState::kOk;
  // Test-only fault injection: SIGKILL this process after receiving this
  // many chunks (0 = never). Set by main from DFX_FAULT_COORDINATOR_KILL_AFTER_CHUNKS.
  uint64_t fault_kill_after_chunks = 0;
  // Test-only fault injection: every chunk write takes this long (a slow
  // disk). Set by main from DFX_FAULT_COORDINATOR_WRITE_DELAY_MS.
  uint32_t fault_write_delay_ms = 0;
  // Called with the dispatch record's index each time one of its artifacts
  // is verified and in place (the host lane's "verify" end); may be empty.
  std::function<void(size_t dispatch)> on_verified;
};

class ArtifactReceiver {
 public:
  // `dfx_dir` is where files land (<work_dir>/dfx_outputs). `registry` sends
  // the acks and credits; it must outlive the receiver.
  ArtifactReceiver(std::filesystem::path dfx_dir, AgentRegistry& registry, ArtifactLedger& ledger,
                   ReceiverOptions options);

  // The fd that becomes readable when the writer thread has results.
  int wake_fd() const { return writer_.wake_fd(); }

  // Gives a newly ready agent its credit window.
  void GrantCredits(AgentState& agent);
  // A stream starts. `dispatch` is the record it belongs to (in a run: the
  // dispatch rank<b.rank>/d<b.k> in flight; the caller checked that), unset
  // in a gather. Refused streams are acknowledged with the reason.
  void OnBegin(AgentState& agent, const protocol::ArtifactBegin& begin,
               std::optional<size_t> dispatch);
  // `data` lives in `frame` (zero copy into the writer).
  // A zstd-coded chunk (`coding`) is decompressed here, bounded
  // (protocol/chunk_zstd.h): one that lies about its size fails its stream.
  void OnChunk(AgentState& agent, uint64_t transfer_id, uint64_t offset, std::string_view data,
               const protocol::FrameBytes& frame,
               protocol::ChunkCoding coding = protocol::ChunkCoding::kRaw, uint64_t raw_size = 0);
  void OnEnd(AgentState& agent, const protocol::ArtifactEnd& end);
  // Every chunk that arrives takes one of the agent's credits; false when
  // it has none left (it ignored flow control: the caller drops it).
  bool TakeCredit(AgentState& agent);
  // A chunk that failed validation still gives its credit back.
  void ReturnCredit(AgentState& agent) { ++credits_owed_[agent.identity]; }
  // Refuses a stream before it starts (the agent keeps its spool copy).
  void Refuse(AgentState& agent, uint64_t transfer_id, const std::string& why) {
    AckFail(agent, transfer_id, why);
  }

  // Takes what the writer finished: credits back for written chunks, acks
  // for committed (or refused) files; updates the entries.
  // `woken`: the event loop's wait saw wake_fd() readable (it is then
  // drained; else only when results are waiting).
  void TakeWriterResults(bool woken = true);

  // Fails every open stream of `agent` (it died) and frees what it held:
  // its queued chunk data, its credits. / Fails every open stream of
  // dispatch record `dispatch`.
  void AbortAgent(const std::string& identity, const std::string& why);
  void AbortDispatch(size_t dispatch, const std::string& why);

  // A reconnect (docs/design.md §9): where stream `transfer_id` of `agent`
  // stands here (a failed one is forgotten: it starts again), and the
  // agent's credit window afresh (what it held was lost with its
  // connection); returns the window.
  protocol::TransferResume Where(const AgentState& agent, uint64_t transfer_id);
  uint32_t RenewCredits(const AgentState& agent);

  // No open stream and the writer has nothing queued.
  bool Idle() { return transfers_.empty() && writer_.Idle(); }
  bool WriterIdle() { return writer_.Idle(); }
  size_t open_streams() const { return transfers_.size(); }
  uint64_t bytes_received() const { return bytes_received_; }

  // What travelled: raw artifact bytes and their payload bytes on the wire,
  // streams with at least one zstd chunk, and streams that sent any chunk.
  struct WireTotals {
    uint64_t artifact_bytes = 0;
    uint64_t wire_bytes = 0;
    uint64_t zstd_streams = 0;
    uint64_t streams = 0;
  };
  const WireTotals& wire_totals() const { return wire_; }
  // "zstd on 12 of 14 streams" (the manifest's wire.chosen).
  std::string WireChoice() const;
  // Artifact paths (relative to dfx_outputs) refused over the byte budget,
  // and the bytes declared so far (what the budget counts).
  const std::vector<std::string>& over_budget() const { return over_budget_; }
  uint64_t declared_bytes() const { return declared_bytes_; }
  uint64_t refused_bytes() const { return refused_bytes_; }

 private:
  struct Transfer {
    std::string agent;
    uint64_t id = 0;
    int32_t rank = 0;
    uint64_t size = 0;
    uint64_t received = 0;
    uint64_t wire = 0;    // payload bytes on the wire
    bool zstd = false;    // a chunk came zstd-coded
    uint64_t stream = 0;  // receiver-wide stream number
    bool failed = false;  // refused on the loop side; the writer was told to abort
    std::shared_ptr<ArtifactWriter::Sink> sink;
    std::optional<size_t> dispatch;
    size_t index = 0;  // into the store's vector
  };
  // What a stream number refers to while the writer still holds its jobs
  // (results arrive after the Transfer is gone).
  struct StreamRef {
    std::string agent;
    uint64_t transfer_id = 0;
    int32_t rank = 0;
    std::optional<size_t> dispatch;
    size_t index = 0;
    uint32_t pending_writes = 0;  // write results not yet taken
    bool committing = false;      // the commit result ends it
    bool aborted = false;         // ends once its write results are taken
    uint64_t checksum = 0;        // what the agent said at ArtifactEnd
    uint64_t wire_bytes = 0;      // payload bytes the stream took on the wire
  };

  ArtifactWriter::Job JobFor(ArtifactWriter::Kind kind, const Transfer& t);
  void Fail(Transfer& t, const std::string& why);
  void AckFail(AgentState& agent, uint64_t transfer_id, const std::string& why,
               bool keep_in_spool = false);
  // Refuses a stream that would take the run past max_run_bytes.
  bool OverBudget(AgentState& agent, const protocol::ArtifactBegin& begin,
                  const std::optional<size_t>& dispatch, const std::string& rel);
  // The chunk's file bytes: `data`, or its zstd frame decompressed into an
  // owned frame; an error fails the stream.
  Result<std::pair<std::string_view, protocol::FrameBytes>> RawChunk(
      std::string_view data, const protocol::FrameBytes& frame, protocol::ChunkCoding coding,
      uint64_t raw_size);
  void FlushCredits();
  void ForgetIfDone(std::map<uint64_t, StreamRef>::iterator it);
  // Refuses a stream at its begin and records it (failed, `why`) where its
  // entry would have been.
  void RefuseBegin(AgentState& agent, const protocol::ArtifactBegin& begin,
                   const std::optional<size_t>& dispatch, const std::string& rel,
                   const std::string& why);

  std::filesystem::path dfx_dir_;
  AgentRegistry& registry_;
  ArtifactLedger& ledger_;
  ReceiverOptions options_;
  std::map<std::pair<std::string, uint64_t>, Transfer> transfers_;
  std::map<uint64_t, StreamRef> streams_;  // streams whose writer jobs are not all taken
  // The stream that last wrote each entry: a later stream of the same file
  // (a second pass) supersedes an earlier one's result.
  std::map<std::pair<std::optional<size_t>, size_t>, uint64_t> entry_stream_;
  std::map<std::string, uint32_t> credits_owed_;
  // Streams verified and acknowledged, per agent: a reconnect tells the
  // agent the ack it may have missed.
  std::map<std::string, std::set<uint64_t>> acked_;
  // Credits each agent holds: granted (or returned) minus chunks received.
  std::map<std::string, int64_t> credit_balance_;
  uint64_t next_stream_ = 0;
  uint64_t bytes_received_ = 0;
  uint64_t chunks_received_ = 0;
  uint64_t declared_bytes_ = 0;
  uint64_t refused_bytes_ = 0;  // declared by streams the budget refused
  WireTotals wire_;
  std::vector<std::string> over_budget_;
  // Streams refused at their Begin for the budget: the agent stops sending
  // them, and the chunks already on the way are dropped quietly.
  std::set<std::pair<std::string, uint64_t>> refused_;
  protocol::ChunkDecompressor decompressor_;
  // Last member: destroyed (its thread joined) first, while the state its
  // pending jobs name still exists.
  ArtifactWriter writer_;
};

}  // namespace dfx::coordinator
