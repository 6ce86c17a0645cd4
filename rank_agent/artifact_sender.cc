#include "rank_agent/artifact_sender.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/log.h"
#include "common/metrics.h"
#include "protocol/codec.h"
#include "rank_agent/spool_sum.h"

namespace dfx::rank_agent {

namespace fs = std::filesystem;
using protocol::AgentMode;

namespace {

// How long the queue waits for the bulk path's handshake (local: it takes
// about a millisecond) before it goes over the link instead.
constexpr uint64_t kBulkHandshakeNs = 2000000000;

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

std::unique_ptr<Checksum64> ChecksumPrefix(int fd, uint64_t bytes) {
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

}  // namespace

struct ArtifactSender::OutTransfer {
  uint64_t id = 0;
  int32_t rank = 0;
  uint32_t k = 0;
  std::string rel;  // relative to rank<N>/d<K>/
  fs::path file;
  fs::path dispatch_dir;
  uint64_t size = 0;
  uint64_t offset = 0;
  bool begun = false;
  bool compress = false;  // chunks go zstd-coded (WireCoder)
  int fd = -1;
  std::unique_ptr<Checksum64> sum;   // hashed while sending: only when none was kept
  std::optional<uint64_t> kept_sum;  // the checksum kept at write (SumPath)
  ~OutTransfer() {
    if (fd >= 0) ::close(fd);
  }
};

ArtifactSender::ArtifactSender(protocol::Context& context, CoordinatorLink& link,
                               const AgentOptions& options, SpoolDirs& spool)
    : context_(context),
      link_(link),
      options_(options),
      spool_(spool),
      coder_(options.coordinator) {}

ArtifactSender::~ArtifactSender() = default;

void ArtifactSender::QueueFile(int32_t rank, uint32_t k, const fs::path& dispatch_dir,
                               const std::string& rel) {
  auto t = std::make_unique<OutTransfer>();
  t->id = next_transfer_id_++;
  t->rank = rank;
  t->k = k;
  t->rel = rel;
  t->file = dispatch_dir / rel;
  t->dispatch_dir = dispatch_dir;
  queue_.emplace_back(std::move(t));
}

void ArtifactSender::QueueDone(protocol::DispatchDone done, std::optional<uint64_t> accepted_ns) {
  queue_.emplace_back(DoneMarker{std::move(done), accepted_ns});
}

void ArtifactSender::QueueRecovery(const std::set<int32_t>& ranks) {
  recovering_ = true;
  uint32_t files = 0;
  const fs::path session_dir = link_.SessionDir();
  for (const collectors::DispatchDir& d : collectors::ListDispatchDirs(session_dir)) {
    if (!ranks.count(d.rank)) continue;
    const fs::path dir = session_dir / collectors::DispatchDirPath(d);
    for (const std::string& rel : collectors::ListArtifactFiles(dir)) {
      if (IsSumFile(rel)) continue;
      QueueFile(d.rank, d.k, dir, rel);
      ++files;
    }
  }
  DFX_LOG_INFO("recover: offering {} spooled files of session {}", files, Hex64(link_.session()));
  queue_.emplace_back(GatherDoneMarker{files});
}

protocol::DealerChannel& ArtifactSender::StreamChannel() {
  return bulk_on_ ? bulk_ : link_.channel();
}

bool ArtifactSender::SendQueued(int32_t rank, protocol::Body body) {
  return link_.Send(rank, std::move(body), bulk_on_ ? &bulk_ : nullptr);
}

bool ArtifactSender::Pump() {
  if (bulk_pending_) return false;  // CheckBulk decides where the queue goes
  int budget = 16;
  while (!queue_.empty() && budget-- > 0) {
    SendItem& item = queue_.front();
    auto* transfer = std::get_if<std::unique_ptr<OutTransfer>>(&item);
    const Step step = transfer != nullptr ? PumpTransfer(**transfer) : PumpMarker(item);
    if (step == Step::kBlocked) return false;
    if (step == Step::kDone) queue_.pop_front();
  }
  if (queue_.empty()) return false;
  const SendItem& front = queue_.front();
  if (auto* t = std::get_if<std::unique_ptr<OutTransfer>>(&front)) {
    return !(*t)->begun || (*t)->offset >= (*t)->size || credits_ > 0;
  }
  return true;
}

ArtifactSender::Step ArtifactSender::PumpMarker(SendItem& item) {
  if (auto* marker = std::get_if<DoneMarker>(&item)) {
    if (marker->accepted_ns) {
      marker->done.carries_acceptance = true;
      marker->done.accepted_held_ns = link_.Now() - *marker->accepted_ns;
    }
    if (!SendQueued(marker->done.rank, marker->done)) return Step::kBlocked;
    NoteSentDone(marker->done);
    return Step::kDone;
  }
  const auto& gather = std::get<GatherDoneMarker>(item);
  return SendQueued(link_.ranks().front(), protocol::GatherDone{gather.files}) ? Step::kDone
                                                                               : Step::kBlocked;
}

// Opens the file and takes its kept checksum; false (logged) when it is
// unreadable: it is dropped from the queue and stays in the spool.
bool ArtifactSender::BeginTransfer(OutTransfer& t) {
  std::error_code ec;
  t.size = fs::file_size(t.file, ec);
  if (ec || (t.fd = ::open(t.file.c_str(), O_RDONLY | O_CLOEXEC)) < 0) {
    DFX_LOG_WARN("cannot read spooled artifact {}: {}", t.file.string(),
                 ec ? ec.message() : std::strerror(errno));
    return false;
  }
  (void)::posix_fadvise(t.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  t.kept_sum = ReadSum(t.dispatch_dir, t.rel);
  if (!t.kept_sum) t.sum = std::make_unique<Checksum64>();
  return true;
}

ArtifactSender::Step ArtifactSender::PumpTransfer(OutTransfer& t) {
  if (!t.begun) {
    if (!BeginTransfer(t)) return Step::kDone;
    if (!SendQueued(t.rank, protocol::ArtifactBegin{t.id, t.rank, t.k, t.rel, t.size})) {
      return Step::kBlocked;
    }
    t.begun = true;
    t.compress = coder_.StartCompressed();
  }
  if (t.offset < t.size) {
    if (credits_ == 0) return Step::kBlocked;
    const Step chunk = SendChunk(t);
    if (chunk != Step::kDone) return chunk;
  }
  const uint64_t sum = t.kept_sum ? *t.kept_sum : t.sum->Digest();
  if (!SendQueued(t.rank, protocol::ArtifactEnd{t.id, sum})) return Step::kBlocked;
  unacked_[t.id] =
      Unacked{t.rank, t.k, t.rel, t.file, t.dispatch_dir, SumPath(t.dispatch_dir, t.rel)};
  return Step::kDone;
}

// kAgain: a chunk went; kBlocked: it could not; kDone: the rest of the
// file is given up (End reports the checksum of what was read).
ArtifactSender::Step ArtifactSender::SendChunk(OutTransfer& t) {
  // The file is read straight into the encoded frame, checksummed while
  // hot, and handed to ZeroMQ without a copy. A short read (the file shrank
  // under us) sends what exists; the coordinator's size check fails the
  // stream and the file stays in the spool.
  const size_t want = std::min<uint64_t>(options_.chunk_bytes, t.size - t.offset);
  const uint64_t at = t.offset;
  std::string_view filled;
  auto frame =
      t.compress
          ? EncodeCompressed(t, want, &filled)
          : protocol::EncodeChunk(
                link_.NextHeader(t.rank), t.id, at, want,
                [&t, at](char* dst, size_t size) { return ReadAt(t.fd, dst, size, at); }, &filled);
  if (!frame.ok() || filled.empty()) {
    link_.TakeBackHeader();
    if (!frame.ok()) DFX_LOG_WARN("{}: {}", t.file.string(), frame.status().message());
    t.offset = t.size;
    return Step::kDone;
  }
  const size_t n = filled.size();
  if (t.sum) t.sum->Update(filled.data(), n);  // before sending: ZeroMQ owns it after
  auto sent = StreamChannel().SendEncoded(std::move(*frame));
  if (!sent.ok() || *sent != protocol::SendResult::kSent) {
    // Rare (the queue holds far more than the credit window): the frame is
    // gone, so rebuild the checksum of what the peer has.
    link_.TakeBackHeader();
    if (!sent.ok()) DFX_LOG_WARN("sending a chunk failed: {}", sent.status().ToString());
    if (t.sum) t.sum = ChecksumPrefix(t.fd, t.offset);
    return Step::kBlocked;
  }
  // A recovery reads a spool written long before (clean pages), once: what
  // was sent leaves the page cache, so a coordinator on this host writes
  // its copy into warm free pages (bench/README.md, "Cold pages"). A live
  // run's spool is freshly written (dirty): dropping it would first write
  // it back. The range is everything sent so far (to the end of the file
  // with the last chunk): the kernel drops only whole folios, and a large
  // folio can straddle a chunk's bounds.
  if (recovering_) {
    const uint64_t done = at + n;
    (void)::posix_fadvise(t.fd, 0, done >= t.size ? 0 : static_cast<off_t>(done),
                          POSIX_FADV_DONTNEED);
  }
  t.offset += n;
  --credits_;
  bytes_sent_[{t.rank, t.k}] += n;
  metrics::BytesSent().Add(n);
  return Step::kAgain;
}

// The chunk is read into a buffer of the sender, and compressed from there
// into the frame (WireCoder); `filled` is the raw bytes, for the checksum.
Result<std::string> ArtifactSender::EncodeCompressed(OutTransfer& t, size_t want,
                                                     std::string_view* filled) {
  // Taken first: the caller gives it back whenever no frame goes.
  const protocol::Header header = link_.NextHeader(t.rank);
  raw_.resize(want);
  DFX_ASSIGN_OR_RETURN(size_t n, ReadAt(t.fd, raw_.data(), want, t.offset));
  *filled = std::string_view(raw_.data(), n);
  if (n == 0) return std::string();
  uint64_t wire = 0;
  return coder_.Encode(header, t.id, t.offset, *filled, t.offset == 0, &t.compress, &wire);
}

void ArtifactSender::SetWireCompression(protocol::WireCompression mode) { coder_.SetMode(mode); }

void ArtifactSender::OnCredit(const protocol::Credit& credit) {
  credits_ += credit.chunks;
  coder_.SetMode(credit.wire_compression);
  if (!credit.bulk_endpoint.empty()) AcceptBulk(credit);
}

void ArtifactSender::OnAck(const protocol::ArtifactAck& ack) {
  // Refused while it is being sent (at its Begin, e.g. over the run's byte
  // budget): no more of it goes, and the file stays in the spool.
  if (!ack.ok && !queue_.empty()) {
    auto* t = std::get_if<std::unique_ptr<OutTransfer>>(&queue_.front());
    if (t != nullptr && (*t)->begun && (*t)->id == ack.transfer_id) {
      const bool keep = ack.keep_in_spool;
      if (keep) {
        DFX_LOG_INFO("coordinator did not take {} ({}); it stays in the spool for a later gather",
                     (*t)->file.string(), ack.error);
      } else {
        DFX_LOG_WARN("coordinator rejected {}: {}; the file stays in the spool",
                     (*t)->file.string(), ack.error);
      }
      queue_.pop_front();
      return;
    }
  }
  auto it = unacked_.find(ack.transfer_id);
  if (it == unacked_.end()) {
    DFX_LOG_WARN("ack for unknown transfer {} ignored", ack.transfer_id);
    return;
  }
  if (ack.ok) {
    std::error_code ec;
    fs::remove(it->second.file, ec);
    fs::remove(it->second.sum_file, ec);
    spool_.PruneEmpty(it->second.sum_file.parent_path(), it->second.dispatch_dir);
    // Other agents of the session share <spool>/<session>/: only this
    // agent's rank<N>/ subtree is removed while the run goes on.
    spool_.PruneEmpty(it->second.file.parent_path(), options_.mode == AgentMode::kRecover
                                                         ? options_.spool_root
                                                         : link_.SessionDir());
  } else if (ack.keep_in_spool) {
    DFX_LOG_INFO("coordinator did not take {} ({}); it stays in the spool for a later gather",
                 it->second.file.string(), ack.error);
  } else {
    DFX_LOG_WARN("coordinator rejected {}: {}; the file stays in the spool",
                 it->second.file.string(), ack.error);
  }
  unacked_.erase(it);
}

bool ArtifactSender::DirInFlight(const fs::path& dir) const {
  for (const auto& entry : unacked_) {
    if (entry.second.dispatch_dir == dir) return true;
  }
  for (const SendItem& item : queue_) {
    const auto* t = std::get_if<std::unique_ptr<OutTransfer>>(&item);
    if (t != nullptr && (*t)->dispatch_dir == dir) return true;
  }
  return false;
}

std::optional<StreamProgress> ArtifactSender::ProgressChange() {
  if (queue_.empty()) return std::nullopt;
  const auto* t = std::get_if<std::unique_ptr<OutTransfer>>(&queue_.front());
  if (t == nullptr) return std::nullopt;
  const OutTransfer& out = **t;
  const uint64_t sent = bytes_sent_[{out.rank, out.k}];
  if (!out.begun || sent == last_reported_bytes_) return std::nullopt;
  last_reported_bytes_ = sent;
  return StreamProgress{out.rank, out.k, sent};
}

// Taken only between streams (a stream never spans two sockets) and only
// when the socket is where the offer says: in a directory of this uid that
// nobody else may enter, on this host.
void ArtifactSender::AcceptBulk(const protocol::Credit& offer) {
  if (bulk_on_ || bulk_pending_ || bulk_failed_) return;
  if (!queue_.empty()) {
    if (auto* t = std::get_if<std::unique_ptr<OutTransfer>>(&queue_.front()); t && (*t)->begun) {
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
  o.plain_client = std::make_pair(link_.identity(), token);
  auto bulk = protocol::DealerChannel::Connect(context_, offer.bulk_endpoint, link_.identity(), o);
  if (!bulk.ok()) {
    DFX_LOG_WARN("{}; artifacts go over CURVE", bulk.status().message());
    return;
  }
  bulk_ = std::move(*bulk);
  bulk_pending_ = true;
  bulk_offered_ns_ = link_.Now();
  bulk_endpoint_ = offer.bulk_endpoint;
}

// The coordinator's ZAP handler checks uid, token and pid; a refused or
// late socket is closed, and nothing was sent on it yet.
void ArtifactSender::CheckBulk(uint64_t now) {
  if (!bulk_pending_) return;
  protocol::HandshakeRefusals refused = bulk_.TakeRefusals();
  std::string why;
  if (refused.count > 0) {
    why = "refused this agent: " + refused.last;
  } else if (bulk_.Handshaken()) {
    bulk_pending_ = false;
    bulk_on_ = true;
    DFX_LOG_INFO("artifact streams go over the local bulk path {}", bulk_endpoint_);
    coder_.SetLocalPath(true);
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

void ArtifactSender::NoteBulkRefusals() {
  if (!bulk_on_) return;
  protocol::HandshakeRefusals b = bulk_.TakeRefusals();
  if (b.count > 0) {
    DFX_LOG_WARN("the local bulk path {} refused this agent: {}", options_.coordinator, b.last);
  }
}

std::vector<uint64_t> ArtifactSender::OpenTransfers() const {
  std::vector<uint64_t> ids;
  for (const auto& [id, u] : unacked_) ids.push_back(id);
  if (!queue_.empty()) {
    const auto* t = std::get_if<std::unique_ptr<OutTransfer>>(&queue_.front());
    if (t != nullptr && (*t)->begun) ids.push_back((*t)->id);
  }
  if (ids.size() > protocol::kMaxResumeEntries) ids.resize(protocol::kMaxResumeEntries);
  return ids;
}

void ArtifactSender::Rewind(OutTransfer& t, const protocol::TransferResume& where) {
  if (where.state != protocol::TransferState::kOpen || where.offset > t.size) {
    // Nothing of it is held there: a fresh Begin (same id) and every byte again.
    if (t.fd >= 0) ::close(t.fd);
    t.fd = -1;
    t.begun = false;
    t.offset = 0;
    t.sum.reset();
    t.kept_sum.reset();
    return;
  }
  t.offset = where.offset;
  if (t.sum) t.sum = ChecksumPrefix(t.fd, t.offset);
}

void ArtifactSender::OnResume(const protocol::Resume& resume) {
  credits_ = resume.credits;
  std::map<uint64_t, protocol::TransferResume> where;
  for (const protocol::TransferResume& r : resume.transfers) where[r.transfer_id] = r;
  const auto state_of = [&where](uint64_t id) {
    auto it = where.find(id);
    return it == where.end() ? protocol::TransferResume{id, protocol::TransferState::kUnknown, 0}
                             : it->second;
  };
  // The stream under way (its End not sent yet).
  if (!queue_.empty()) {
    if (auto* t = std::get_if<std::unique_ptr<OutTransfer>>(&queue_.front()); t && (*t)->begun) {
      Rewind(**t, state_of((*t)->id));
    }
  }
  // Streams whose End went: done there, being verified, or to send again
  // (from the offset held there, or from the start) ahead of the queue.
  std::vector<uint64_t> ids;
  for (const auto& [id, u] : unacked_) ids.push_back(id);
  for (uint64_t id : ids) {
    const protocol::TransferResume r = state_of(id);
    if (r.state == protocol::TransferState::kAcked) {
      OnAck(protocol::ArtifactAck{id, true, ""});
      continue;
    }
    if (r.state == protocol::TransferState::kCommitting) continue;  // its ack will come
    const Unacked u = unacked_[id];
    unacked_.erase(id);
    auto t = std::make_unique<OutTransfer>();
    t->id = id;
    t->rank = u.rank;
    t->k = u.k;
    t->rel = u.rel;
    t->file = u.file;
    t->dispatch_dir = u.dispatch_dir;
    if (r.state == protocol::TransferState::kOpen && BeginTransfer(*t)) {
      t->begun = true;
      Rewind(*t, r);
    }
    queue_.emplace_front(std::move(t));
  }
}

std::optional<protocol::DispatchDone> ArtifactSender::SentDone(int32_t rank, uint32_t k) const {
  auto it = sent_done_.find(rank);
  if (it == sent_done_.end() || it->second.k != k) return std::nullopt;
  return it->second;
}

void ArtifactSender::Reset() {
  queue_.clear();
  unacked_.clear();
  sent_done_.clear();
  credits_ = 0;
  recovering_ = false;
  bulk_ = protocol::DealerChannel();
  bulk_on_ = false;
  bulk_pending_ = false;
  bulk_failed_ = false;
  coder_.SetLocalPath(false);
}

}  // namespace dfx::rank_agent
