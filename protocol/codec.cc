#include "protocol/codec.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fmt/format.h>
#include <kj/exception.h>
#include <kj/io.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "common/enum_text.h"
#include "common/file_util.h"
#include "common/input_file.h"
#include "protocol/body_codec.h"
#include "protocol/dfx.capnp.h"

namespace dfx::protocol {

// One size limit for programs at every level: what L2 reads, L3 can send.
static_assert(kMaxProgramJsonBytes == kMaxProgramFileBytes);
namespace {

namespace w = ::dfx::protocol::wire;

// Per-field size checks shared by Encode and Decode.
Status CheckText(const char* field, size_t size, uint64_t limit) {
  if (size > limit) {
    return InvalidArgument(
        fmt::format("field {} is {} bytes; the limit is {}", field, size, limit));
  }
  return Status::Ok();
}

Status CheckLimits(const Body& body) {
  return std::visit(
      [](const auto& m) -> Status {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, Hello>) {
          DFX_RETURN_IF_ERROR(CheckText("hello.host", m.host.size(), kMaxTextBytes));
          DFX_RETURN_IF_ERROR(CheckText("hello.spoolDir", m.spool_dir.size(), kMaxTextBytes));
          DFX_RETURN_IF_ERROR(
              CheckText("hello.launchFailure", m.launch_failure.size(), kMaxTextBytes));
          DFX_RETURN_IF_ERROR(CheckText("hello.resumeToken", m.resume_token.size(), kMaxTextBytes));
          if (m.open_transfers.size() > kMaxResumeEntries) {
            return InvalidArgument("field hello.openTransfers has too many entries");
          }
          if (m.ranks.size() > kMaxRanksPerAgent) {
            return InvalidArgument(fmt::format("field hello.ranks has {} entries; the limit is {}",
                                               m.ranks.size(), kMaxRanksPerAgent));
          }
        } else if constexpr (std::is_same_v<T, Ready>) {
          if (m.chip_descriptions.size() > kMaxRanksPerAgent) {
            return InvalidArgument("field ready.chipDescriptions has too many entries");
          }
          for (const auto& d : m.chip_descriptions) {
            DFX_RETURN_IF_ERROR(CheckText("ready.chipDescriptions[]", d.size(), kMaxTextBytes));
          }
        } else if constexpr (std::is_same_v<T, Dispatch>) {
          DFX_RETURN_IF_ERROR(
              CheckText("dispatch.programName", m.program_name.size(), kMaxTextBytes));
          DFX_RETURN_IF_ERROR(
              CheckText("dispatch.programJson", m.program_json.size(), kMaxProgramJsonBytes));
          DFX_RETURN_IF_ERROR(
              CheckText("dispatch.programFile", m.program_file.size(), kMaxTextBytes));
        } else if constexpr (std::is_same_v<T, Progress>) {
          DFX_RETURN_IF_ERROR(CheckText("progress.stage", m.stage.size(), kMaxTextBytes));
        } else if constexpr (std::is_same_v<T, ArtifactBegin>) {
          DFX_RETURN_IF_ERROR(CheckText("artifactBegin.path", m.path.size(), kMaxTextBytes));
          if (m.size > kMaxArtifactBytes) {
            return InvalidArgument(fmt::format("field artifactBegin.size is {}; the limit is {}",
                                               m.size, kMaxArtifactBytes));
          }
        } else if constexpr (std::is_same_v<T, ArtifactChunk>) {
          DFX_RETURN_IF_ERROR(CheckText("artifactChunk.data", m.data.size(), kMaxChunkBytes));
        } else if constexpr (std::is_same_v<T, Credit>) {
          DFX_RETURN_IF_ERROR(
              CheckText("credit.bulkEndpoint", m.bulk_endpoint.size(), kMaxTextBytes));
          DFX_RETURN_IF_ERROR(CheckText("credit.bulkToken", m.bulk_token.size(), kMaxTextBytes));
        } else if constexpr (std::is_same_v<T, ArtifactAck>) {
          DFX_RETURN_IF_ERROR(CheckText("artifactAck.error", m.error.size(), kMaxErrorBytes));
        } else if constexpr (std::is_same_v<T, DispatchDone>) {
          DFX_RETURN_IF_ERROR(CheckText("dispatchDone.error", m.error.size(), kMaxErrorBytes));
        } else if constexpr (std::is_same_v<T, Cancel>) {
          DFX_RETURN_IF_ERROR(CheckText("cancel.reason", m.reason.size(), kMaxErrorBytes));
        } else if constexpr (std::is_same_v<T, Shutdown>) {
          DFX_RETURN_IF_ERROR(CheckText("shutdown.reason", m.reason.size(), kMaxErrorBytes));
        } else if constexpr (std::is_same_v<T, Error>) {
          DFX_RETURN_IF_ERROR(CheckText("error.message", m.message.size(), kMaxErrorBytes));
        } else if constexpr (std::is_same_v<T, Resume>) {
          DFX_RETURN_IF_ERROR(CheckText("resume.token", m.token.size(), kMaxTextBytes));
          if (m.transfers.size() > kMaxResumeEntries || m.dispatches.size() > kMaxResumeEntries) {
            return InvalidArgument("field resume has too many entries");
          }
        } else if constexpr (std::is_same_v<T, Resumed>) {
          if (m.missing.size() > kMaxResumeEntries) {
            return InvalidArgument("field resumed.missing has too many entries");
          }
        }
        return Status::Ok();
      },
      body);
}

// A MessageBuilder whose first segment is caller-owned, zeroed memory (the
// output string), and which, unlike MallocMessageBuilder, does not wipe that
// segment on destruction. Further segments (rare: the size hint was too
// small) are zeroed heap arrays it owns.
class InPlaceBuilder final : public capnp::MessageBuilder {
 public:
  explicit InPlaceBuilder(kj::ArrayPtr<capnp::word> first) : first_(first) {}
  kj::ArrayPtr<capnp::word> allocateSegment(unsigned minimum_size) override {
    if (!first_used_ && first_.size() >= minimum_size) {
      first_used_ = true;
      return first_;
    }
    more_.push_back(kj::heapArray<capnp::word>(std::max<size_t>(minimum_size, 1024)));
    auto& seg = more_.back();
    std::memset(seg.begin(), 0, seg.size() * sizeof(capnp::word));
    return seg;
  }

 private:
  kj::ArrayPtr<capnp::word> first_;
  bool first_used_ = false;
  std::vector<kj::Array<capnp::word>> more_;
};

constexpr auto kAgentModeText = MakeEnumTable<AgentMode>({
    {AgentMode::kOneShot, "one-shot"},
    {AgentMode::kServe, "serve"},
    {AgentMode::kRecover, "recover"},
});

constexpr auto kDispatchStatusText = MakeEnumTable<DispatchStatus>({
    {DispatchStatus::kOk, "ok"},
    {DispatchStatus::kFailed, "failed"},
    {DispatchStatus::kRejected, "rejected"},
    {DispatchStatus::kCancelled, "cancelled"},
    {DispatchStatus::kProgramUnknown, "program_unknown"},
});

constexpr auto kErrorCodeText = MakeEnumTable<ErrorCode>({
    {ErrorCode::kBadMessage, "bad_message"},
    {ErrorCode::kVersionMismatch, "version_mismatch"},
    {ErrorCode::kSessionMismatch, "session_mismatch"},
    {ErrorCode::kUnknownRank, "unknown_rank"},
    {ErrorCode::kDuplicateRank, "duplicate_rank"},
    {ErrorCode::kInternal, "internal"},
});

}  // namespace

Result<std::string> Encode(const Message& message) {
  DFX_RETURN_IF_ERROR(CheckLimits(message.body));
  try {
    // The builder's first segment lives inside the output string, right after
    // the 8-byte segment table, so a single-segment message (the common case:
    // the hint covers a full chunk or program) is built in place and needs no
    // serialisation copy. std::string storage is heap-aligned, so +8 is
    // word-aligned; the string is zero-filled as capnp requires.
    size_t hint_words = 1024;
    if (const auto* chunk = std::get_if<ArtifactChunk>(&message.body)) {
      hint_words += chunk->data.size() / sizeof(capnp::word) + 16;
    } else if (const auto* dispatch = std::get_if<Dispatch>(&message.body)) {
      hint_words += dispatch->program_json.size() / sizeof(capnp::word) + 16;
    }
    std::string out((hint_words + 1) * sizeof(capnp::word), '\0');
    DFX_CHECK(reinterpret_cast<uintptr_t>(out.data()) % alignof(capnp::word) == 0);
    auto* first = reinterpret_cast<capnp::word*>(out.data()) + 1;
    InPlaceBuilder builder(kj::arrayPtr(first, hint_words));
    auto env = builder.initRoot<w::Envelope>();
    auto h = env.initHeader();
    h.setProtocolVersion(message.header.protocol_version);
    h.setSessionId(message.header.session_id);
    h.setRank(message.header.rank);
    h.setSequence(message.header.sequence);
    EncodeBody(message.body, env.initBody());
    auto segments = builder.getSegmentsForOutput();
    if (segments.size() == 1 && segments[0].begin() == first) {
      const uint32_t table[2] = {0, static_cast<uint32_t>(segments[0].size())};
      std::memcpy(out.data(), table, sizeof(table));
      out.resize((segments[0].size() + 1) * sizeof(capnp::word));
      return out;
    }
    // More than one segment: serialise the usual way.
    std::string multi(capnp::computeSerializedSizeInWords(builder) * sizeof(capnp::word), '\0');
    kj::ArrayOutputStream stream(
        kj::arrayPtr(reinterpret_cast<kj::byte*>(multi.data()), multi.size()));
    capnp::writeMessage(stream, builder);
    return multi;
  } catch (const kj::Exception& e) {
    return Internal(std::string("encoding a message failed: ") + e.getDescription().cStr());
  }
}

namespace {

Status CheckFrameShape(std::string_view frame) {
  if (frame.size() > kMaxFrameBytes) {
    return InvalidArgument(
        fmt::format("message of {} bytes exceeds the limit of {}", frame.size(), kMaxFrameBytes));
  }
  if (frame.empty() || frame.size() % sizeof(capnp::word) != 0) {
    return InvalidArgument(fmt::format(
        "message of {} bytes is truncated (a message is a non-empty multiple of 8 bytes)",
        frame.size()));
  }
  return Status::Ok();
}

capnp::ReaderOptions Limits() {
  capnp::ReaderOptions options;
  options.traversalLimitInWords = kMaxFrameBytes / sizeof(capnp::word) * 2;
  options.nestingLimit = 16;
  return options;
}

}  // namespace

Result<std::optional<ChunkView>> DecodeChunkView(std::string_view frame) {
  DFX_RETURN_IF_ERROR(CheckFrameShape(frame));
  if (reinterpret_cast<uintptr_t>(frame.data()) % alignof(capnp::word) != 0) {
    return std::optional<ChunkView>();
  }
  const kj::ArrayPtr<const capnp::word> words(reinterpret_cast<const capnp::word*>(frame.data()),
                                              frame.size() / sizeof(capnp::word));
  try {
    capnp::FlatArrayMessageReader reader(words, Limits());
    if (reader.getEnd() != words.end()) {
      return InvalidArgument("message has trailing bytes after the envelope");
    }
    auto env = reader.getRoot<w::Envelope>();
    if (!env.hasHeader()) return InvalidArgument("message has no header");
    auto body = env.getBody();
    if (body.which() != w::Envelope::Body::ARTIFACT_CHUNK) return std::optional<ChunkView>();
    ChunkView v;
    auto h = env.getHeader();
    v.header = Header{h.getProtocolVersion(), h.getSessionId(), h.getRank(), h.getSequence()};
    auto c = body.getArtifactChunk();
    v.transfer_id = c.getTransferId();
    v.offset = c.getOffset();
    if (static_cast<uint16_t>(c.getCoding()) > 1) {
      return InvalidArgument(
          fmt::format("field artifactChunk.coding is {}; expected 0 (raw) or 1 (zstd)",
                      static_cast<uint16_t>(c.getCoding())));
    }
    v.coding = static_cast<ChunkCoding>(c.getCoding());
    v.raw_size = c.getRawSize();
    auto data = c.getData();
    if (data.size() > kMaxChunkBytes) {
      return InvalidArgument(fmt::format("field artifactChunk.data is {} bytes; the limit is {}",
                                         data.size(), kMaxChunkBytes));
    }
    v.data = std::string_view(reinterpret_cast<const char*>(data.begin()), data.size());
    return std::optional<ChunkView>(v);
  } catch (const kj::Exception& e) {
    return InvalidArgument(std::string("malformed message: ") + e.getDescription().cStr());
  }
}

Result<std::string> EncodeChunk(const Header& header, uint64_t transfer_id, uint64_t offset,
                                size_t size, const ChunkFill& fill, std::string_view* filled) {
  if (size > kMaxChunkBytes) {
    return InvalidArgument(
        fmt::format("field artifactChunk.data is {} bytes; the limit is {}", size, kMaxChunkBytes));
  }
  std::string out;
  size_t n = 0;
  char* data = nullptr;
  try {
    // Built in place exactly like Encode: one segment inside the output string.
    const size_t hint_words = 64 + size / sizeof(capnp::word) + 16;
    out.assign((hint_words + 1) * sizeof(capnp::word), '\0');
    auto* first = reinterpret_cast<capnp::word*>(out.data()) + 1;
    InPlaceBuilder builder(kj::arrayPtr(first, hint_words));
    auto env = builder.initRoot<w::Envelope>();
    auto h = env.initHeader();
    h.setProtocolVersion(header.protocol_version);
    h.setSessionId(header.session_id);
    h.setRank(header.rank);
    h.setSequence(header.sequence);
    auto c = env.initBody().initArtifactChunk();
    c.setTransferId(transfer_id);
    c.setOffset(offset);
    auto bytes = c.initData(static_cast<unsigned>(size));
    data = reinterpret_cast<char*>(bytes.begin());
    auto segments = builder.getSegmentsForOutput();
    DFX_CHECK(segments.size() == 1 && segments[0].begin() == first);
    DFX_ASSIGN_OR_RETURN(n, fill(data, size));
    if (n > size) return Internal("EncodeChunk: the fill wrote more than it was given");
    if (n == size) {
      const uint32_t table[2] = {0, static_cast<uint32_t>(segments[0].size())};
      std::memcpy(out.data(), table, sizeof(table));
      out.resize((segments[0].size() + 1) * sizeof(capnp::word));
      if (filled != nullptr) *filled = std::string_view(data, n);
      return out;
    }
  } catch (const kj::Exception& e) {
    return Internal(std::string("encoding a chunk failed: ") + e.getDescription().cStr());
  }
  // A short fill (the file shrank): re-encode the smaller payload the usual way.
  Message m{header, ArtifactChunk{transfer_id, offset, std::string(data, n)}};
  DFX_ASSIGN_OR_RETURN(std::string shorter, Encode(m));
  if (filled != nullptr) {
    auto view = DecodeChunkView(shorter);
    *filled = view.ok() && view->has_value() ? (*view)->data : std::string_view();
  }
  return shorter;
}

Result<Message> Decode(std::string_view frame) {
  DFX_RETURN_IF_ERROR(CheckFrameShape(frame));
  // Received frames are not guaranteed word-aligned: parse in place when they
  // are (a heap-allocated std::string usually is), else copy into aligned
  // storage first.
  kj::Array<capnp::word> copy;
  kj::ArrayPtr<const capnp::word> words;
  if (reinterpret_cast<uintptr_t>(frame.data()) % alignof(capnp::word) == 0) {
    words = kj::arrayPtr(reinterpret_cast<const capnp::word*>(frame.data()),
                         frame.size() / sizeof(capnp::word));
  } else {
    copy = kj::heapArray<capnp::word>(frame.size() / sizeof(capnp::word));
    std::memcpy(copy.begin(), frame.data(), frame.size());
    words = copy.asPtr();
  }
  try {
    capnp::FlatArrayMessageReader reader(words, Limits());
    if (reader.getEnd() != words.end()) {
      return InvalidArgument("message has trailing bytes after the envelope");
    }
    auto env = reader.getRoot<w::Envelope>();
    if (!env.hasHeader()) return InvalidArgument("message has no header");
    Message m;
    auto h = env.getHeader();
    m.header.protocol_version = h.getProtocolVersion();
    m.header.session_id = h.getSessionId();
    m.header.rank = h.getRank();
    m.header.sequence = h.getSequence();
    DFX_ASSIGN_OR_RETURN(m.body, DecodeBody(env.getBody()));
    DFX_RETURN_IF_ERROR(CheckLimits(m.body));
    return m;
  } catch (const kj::Exception& e) {
    return InvalidArgument(std::string("malformed message: ") + e.getDescription().cStr());
  }
}

Status Validate(const Message& message, const Expectations& expect) {
  const Header& h = message.header;
  const char* name = BodyName(message.body);
  if (h.protocol_version != kProtocolVersion) {
    return FailedPrecondition(fmt::format(
        "{} speaks protocol version {}, this side speaks version {}; run the same build on "
        "both sides",
        name, h.protocol_version, kProtocolVersion));
  }
  const bool session_free =
      std::holds_alternative<Hello>(message.body) || std::holds_alternative<Error>(message.body);
  if (!session_free && expect.session_id != 0 && h.session_id != expect.session_id) {
    return FailedPrecondition(fmt::format("{} is for session {}, expected session {}", name,
                                          Hex64(h.session_id), Hex64(expect.session_id)));
  }
  if (!expect.ranks.empty() && !expect.ranks.count(h.rank)) {
    return InvalidArgument(
        fmt::format("{} names rank {}, which this peer does not own", name, h.rank));
  }
  if (const auto* begin = std::get_if<ArtifactBegin>(&message.body)) {
    if (begin->rank != h.rank) {
      return InvalidArgument(
          fmt::format("artifactBegin for rank {} sent under rank {}", begin->rank, h.rank));
    }
    auto path = SanitizeArtifactPath(begin->path);
    if (!path.ok()) return path.status();
  }
  if (const auto* hello = std::get_if<Hello>(&message.body)) {
    if (hello->ranks.empty()) return InvalidArgument("hello lists no ranks");
    if (hello->chips != hello->ranks.size()) {
      return InvalidArgument(
          fmt::format("hello says {} chips but lists {} ranks", hello->chips, hello->ranks.size()));
    }
    for (int32_t r : hello->ranks) {
      if (r < 0) return InvalidArgument(fmt::format("hello lists negative rank {}", r));
    }
  }
  return Status::Ok();
}

Result<std::string> SanitizeArtifactPath(std::string_view path) {
  auto bad = [&](const std::string& why) {
    std::string shown(path.substr(0, 200));
    for (char& c : shown) {
      if (static_cast<unsigned char>(c) < 0x20) c = '?';
    }
    return InvalidArgument(fmt::format(
        "artifact path \"{}\" rejected: {} (a path must be relative to rank<N>/d<K>/, made of "
        "plain names, without \"..\")",
        shown, why));
  };
  if (path.empty()) return bad("it is empty");
  if (path.size() > kMaxTextBytes) return bad("it is too long");
  if (path.front() == '/') return bad("it is absolute");
  std::string out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view part = path.substr(start, slash - start);
    if (part.empty()) return bad("it has an empty component");
    if (part == ".") return bad("it has a \".\" component");
    if (part == "..") return bad("it has a \"..\" component");
    for (char c : part) {
      const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' || c == '+' ||
                         c == '@' || c == '=' || c == ',';
      if (!plain) {
        return bad(
            fmt::format("it contains the character 0x{:02x}", static_cast<unsigned char>(c)));
      }
    }
    if (!out.empty()) out += '/';
    out += part;
    start = slash + 1;
    if (slash == path.size()) break;
  }
  return out;
}

const char* AgentModeName(AgentMode mode) { return kAgentModeText.Name(mode); }

uint64_t ProgramHash(std::string_view program_json) {
  Checksum64 sum;
  sum.Update(program_json.data(), program_json.size());
  return sum.Digest();
}

const char* DispatchStatusName(DispatchStatus status) { return kDispatchStatusText.Name(status); }

const char* ErrorCodeName(ErrorCode code) { return kErrorCodeText.Name(code); }

const char* BodyName(const Body& body) {
  static const char* const kNames[] = {
      "hello",         "ready",         "dispatch",    "dispatchAccepted", "progress",
      "artifactBegin", "artifactChunk", "artifactEnd", "credit",           "artifactAck",
      "dispatchDone",  "heartbeat",     "cancel",      "shutdown",         "error",
      "gatherRequest", "gatherDone",    "resume",      "resumed"};
  static_assert(std::size(kNames) == std::variant_size_v<Body>);
  return kNames[body.index()];
}

}  // namespace dfx::protocol
