// The sending half of the gather (docs/design.md §7): each artifact a chip
// wrote to the spool goes to the coordinator as ArtifactBegin, chunks and
// ArtifactEnd with its checksum (the one kept at write, spool_sum.h, or one
// hashed while sending), under credit-based flow control: a chunk goes only
// with a credit the coordinator gave. A file is deleted from the spool only
// after the coordinator acknowledged it (ArtifactAck ok), with the
// directories it left empty, so a coordinator crash loses nothing.
//
// The send queue also carries each dispatch's DispatchDone and a
// recovery's GatherDone, so they follow their files in order. Once the
// coordinator offered the local bulk path and its handshake completed, the
// queue goes there, on a socket of its own; everything else stays on the
// link.
//
// Threads: the event loop's only.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>

#include "protocol/channel.h"
#include "protocol/messages.h"
#include "rank_agent/agent.h"
#include "rank_agent/coordinator_link.h"
#include "rank_agent/spool_dirs.h"
#include "rank_agent/wire_coder.h"

namespace dfx::rank_agent {

// Bytes streamed so far of the dispatch whose file is being sent.
struct StreamProgress {
  int32_t rank = 0;
  uint32_t k = 0;
  uint64_t sent = 0;
};

class ArtifactSender {
 public:
  // `context`, `link`, `options` and `spool` must outlive the sender.
  ArtifactSender(protocol::Context& context, CoordinatorLink& link, const AgentOptions& options,
                 SpoolDirs& spool);
  ~ArtifactSender();

  // Queues <dispatch_dir>/<rel>, a file of dispatch (rank, k).
  void QueueFile(int32_t rank, uint32_t k, const std::filesystem::path& dispatch_dir,
                 const std::string& rel);
  // Queues a DispatchDone behind the files queued before it. `accepted_ns`:
  // it carries the dispatch's held DispatchAccepted, accepted then.
  void QueueDone(protocol::DispatchDone done, std::optional<uint64_t> accepted_ns = std::nullopt);
  // Queues every file of `ranks` in the session's spool, then GatherDone.
  void QueueRecovery(const std::set<int32_t>& ranks);
  bool recovering() const { return recovering_; }

  void OnCredit(const protocol::Credit& credit);
  // The coordinator's --wire-compression (a Dispatch names it; Credits too).
  void SetWireCompression(protocol::WireCompression mode);
  void OnAck(const protocol::ArtifactAck& ack);

  // Sends as much as credits allow, a bounded amount per call so receiving
  // (credits, acks, heartbeats) is never starved. Returns true if more is
  // ready to send right away.
  bool Pump();
  // The bulk path's handshake: once it completed the queue goes there; if
  // it was refused or did not complete in time, everything stays on the
  // link.
  void CheckBulk(uint64_t now);
  // Logs handshakes the bulk path refused once it is in use.
  void NoteBulkRefusals();

  // Whether a file of dispatch dir `dir` is queued, or sent and not yet
  // acknowledged.
  bool DirInFlight(const std::filesystem::path& dir) const;
  bool idle() const { return queue_.empty(); }
  // Files and messages not yet confirmed.
  size_t unconfirmed() const { return unacked_.size() + queue_.size(); }
  bool bulk_on() const { return bulk_on_; }
  bool bulk_pending() const { return bulk_pending_; }
  // The stream under way, when its byte count changed since the last call.
  std::optional<StreamProgress> ProgressChange();
  // A reconnect (docs/design.md §9): the streams begun and not yet
  // acknowledged, for the reconnect HELLO.
  std::vector<uint64_t> OpenTransfers() const;
  // The coordinator's answer to it: each named stream goes on from the
  // offset the coordinator holds (read again from the spool copy), is
  // started again, or is done; the credit window is the Resume's.
  void OnResume(const protocol::Resume& resume);
  // The last DispatchDone sent for `rank`, when it was for (rank, k) (a
  // reconnect sends it again: it may have been lost). ForgetDone: a new
  // dispatch of the rank came.
  std::optional<protocol::DispatchDone> SentDone(int32_t rank, uint32_t k) const;
  void NoteSentDone(const protocol::DispatchDone& done) { sent_done_[done.rank] = done; }
  void ForgetDone(int32_t rank) { sent_done_.erase(rank); }
  // The session ended: forget what was queued or unconfirmed (the spool
  // keeps it), the credits and the bulk path.
  void Reset();

 private:
  struct OutTransfer;
  struct DoneMarker {
    protocol::DispatchDone done;
    std::optional<uint64_t> accepted_ns;
  };
  struct GatherDoneMarker {
    uint32_t files = 0;
  };
  using SendItem = std::variant<std::unique_ptr<OutTransfer>, DoneMarker, GatherDoneMarker>;
  struct Unacked {
    int32_t rank = 0;
    uint32_t k = 0;
    std::string rel;
    std::filesystem::path file;
    std::filesystem::path dispatch_dir;
    std::filesystem::path sum_file;  // its kept checksum (may not exist)
  };
  enum class Step { kDone, kBlocked, kAgain };

  bool SendQueued(int32_t rank, protocol::Body body);
  Step PumpMarker(SendItem& item);
  Step PumpTransfer(OutTransfer& t);
  bool BeginTransfer(OutTransfer& t);
  Step SendChunk(OutTransfer& t);
  Result<std::string> EncodeCompressed(OutTransfer& t, size_t want, std::string_view* filled);
  void AcceptBulk(const protocol::Credit& offer);
  protocol::DealerChannel& StreamChannel();
  // Moves `t` to `offset` of its file (0 and not begun: it starts again).
  void Rewind(OutTransfer& t, const protocol::TransferResume& where);

  protocol::Context& context_;
  CoordinatorLink& link_;
  const AgentOptions& options_;
  SpoolDirs& spool_;
  std::deque<SendItem> queue_;
  std::map<uint64_t, Unacked> unacked_;
  std::map<int32_t, protocol::DispatchDone> sent_done_;  // the last per rank
  std::map<std::pair<int32_t, uint32_t>, uint64_t> bytes_sent_;
  uint64_t last_reported_bytes_ = 0;
  uint32_t credits_ = 0;
  uint64_t next_transfer_id_ = 1;
  bool recovering_ = false;  // a GatherRequest queued the spool
  // The local bulk path, once the coordinator offered it.
  protocol::DealerChannel bulk_;
  bool bulk_on_ = false;
  // Offer taken, handshake not yet completed: the queue waits (at most
  // kBulkHandshakeNs), so no stream is split between two sockets and
  // nothing is handed to a socket the coordinator may refuse.
  bool bulk_pending_ = false;
  bool bulk_failed_ = false;  // refused once: this session stays on the link
  uint64_t bulk_offered_ns_ = 0;
  std::string bulk_endpoint_;
  WireCoder coder_;
  std::string raw_;  // a compressed stream's chunk, read from the spool
};

}  // namespace dfx::rank_agent
