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

#include "common/file_util.h"
#include "protocol/dfx.capnp.h"

namespace dfx::protocol {
namespace {

namespace w = ::dfx::protocol::wire;

capnp::Text::Reader AsText(const std::string& s) { return capnp::Text::Reader(s.data(), s.size()); }

std::string ToString(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }

// Per-field size checks shared by Encode and Decode.
Status CheckText(const char* field, size_t size, uint64_t limit) {
  if (size > limit) {
    return InvalidArgument(
        fmt::format("field {} is {} bytes; the limit is {}", field, size, limit));
  }
  return Status::Ok();
}

template <typename List>
void SetU64List(List builder_list, const std::array<uint64_t, 4>& values) {
  for (unsigned i = 0; i < 4; ++i) builder_list.set(i, values[i]);
}

Status ReadU64List(const char* field, capnp::List<uint64_t>::Reader list,
                   std::array<uint64_t, 4>* out) {
  if (list.size() != 4) {
    return InvalidArgument(fmt::format(
        "field {} must have exactly 4 entries (one per ring), got {}", field, list.size()));
  }
  for (unsigned i = 0; i < 4; ++i) (*out)[i] = list[i];
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

void EncodeBody(const Body& body, w::Envelope::Body::Builder b) {
  std::visit(
      [&b](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, Hello>) {
          auto h = b.initHello();
          auto ranks = h.initRanks(static_cast<unsigned>(m.ranks.size()));
          for (unsigned i = 0; i < m.ranks.size(); ++i) ranks.set(i, m.ranks[i]);
          h.setChips(m.chips);
          h.setProtocolVersion(m.protocol_version);
          h.setSessionId(m.session_id);
          h.setHost(AsText(m.host));
          h.setPid(m.pid);
          h.setAgentClockNs(m.agent_clock_ns);
          h.setMode(static_cast<w::AgentMode>(m.mode));
          h.setSpoolDir(AsText(m.spool_dir));
          if (!m.launch_failure.empty()) h.setLaunchFailure(AsText(m.launch_failure));
        } else if constexpr (std::is_same_v<T, Ready>) {
          auto r = b.initReady();
          auto list = r.initChipDescriptions(static_cast<unsigned>(m.chip_descriptions.size()));
          for (unsigned i = 0; i < m.chip_descriptions.size(); ++i) {
            list.set(i, AsText(m.chip_descriptions[i]));
          }
        } else if constexpr (std::is_same_v<T, Dispatch>) {
          auto d = b.initDispatch();
          d.setSessionId(m.session_id);
          d.setRank(m.rank);
          d.setK(m.k);
          d.setProgramName(AsText(m.program_name));
          d.setProgramJson(AsText(m.program_json));
          d.setProgramFile(AsText(m.program_file));
          d.setProgramHash(m.program_hash);
          auto c = d.initConfig();
          c.setBackend(m.config.backend_type == config::BackendType::kA5 ? w::BackendType::A5
                                                                         : w::BackendType::A2A3);
          c.setMode(m.config.execution_mode == config::ExecutionMode::kOnboard
                        ? w::ExecutionMode::ONBOARD
                        : w::ExecutionMode::SIM);
          c.setEnableChipSwimlane(m.config.enable_chip_swimlane);
          c.setEnableDepGen(m.config.enable_dep_gen);
          c.setEnableDumpArgs(m.config.enable_dump_args);
          c.setEnablePmu(m.config.enable_pmu);
          c.setEnableScopeStats(m.config.enable_scope_stats);
          c.setSaveKernels(m.config.save_kernels);
          c.setAicpuThreadNum(m.config.aicpu_thread_num);
          SetU64List(c.initRingTaskWindow(4), m.config.rings.task_window);
          SetU64List(c.initRingHeap(4), m.config.rings.heap);
          SetU64List(c.initRingDepPool(4), m.config.rings.dep_pool);
          d.setPass(static_cast<w::PassKind>(m.pass));
        } else if constexpr (std::is_same_v<T, DispatchAccepted>) {
          auto d = b.initDispatchAccepted();
          d.setRank(m.rank);
          d.setK(m.k);
          d.setHeldNs(m.held_ns);
        } else if constexpr (std::is_same_v<T, Progress>) {
          auto p = b.initProgress();
          p.setRank(m.rank);
          p.setK(m.k);
          p.setStage(AsText(m.stage));
          p.setBytesSent(m.bytes_sent);
          p.setTasksDone(m.tasks_done);
          p.setTasksTotal(m.tasks_total);
        } else if constexpr (std::is_same_v<T, ArtifactBegin>) {
          auto a = b.initArtifactBegin();
          a.setTransferId(m.transfer_id);
          a.setRank(m.rank);
          a.setK(m.k);
          a.setPath(AsText(m.path));
          a.setSize(m.size);
        } else if constexpr (std::is_same_v<T, ArtifactChunk>) {
          auto a = b.initArtifactChunk();
          a.setTransferId(m.transfer_id);
          a.setOffset(m.offset);
          a.setData(
              capnp::Data::Reader(reinterpret_cast<const kj::byte*>(m.data.data()), m.data.size()));
        } else if constexpr (std::is_same_v<T, ArtifactEnd>) {
          auto a = b.initArtifactEnd();
          a.setTransferId(m.transfer_id);
          a.setChecksum(m.checksum);
        } else if constexpr (std::is_same_v<T, Credit>) {
          auto c = b.initCredit();
          c.setChunks(m.chunks);
          c.setBulkEndpoint(AsText(m.bulk_endpoint));
          c.setBulkToken(AsText(m.bulk_token));
        } else if constexpr (std::is_same_v<T, ArtifactAck>) {
          auto a = b.initArtifactAck();
          a.setTransferId(m.transfer_id);
          a.setOk(m.ok);
          a.setError(AsText(m.error));
        } else if constexpr (std::is_same_v<T, DispatchDone>) {
          auto d = b.initDispatchDone();
          d.setRank(m.rank);
          d.setK(m.k);
          d.setStatus(static_cast<w::DispatchStatus>(m.status));
          d.setError(AsText(m.error));
          d.setTasksExecuted(m.tasks_executed);
          d.setArtifactCount(m.artifact_count);
          d.setWallNs(m.wall_ns);
          d.setMakespanNs(m.makespan_ns);
          d.setCarriesAcceptance(m.carries_acceptance);
          d.setAcceptedHeldNs(m.accepted_held_ns);
        } else if constexpr (std::is_same_v<T, Heartbeat>) {
          auto h = b.initHeartbeat();
          h.setSenderClockNs(m.sender_clock_ns);
          h.setEchoClockNs(m.echo_clock_ns);
          h.setWantReply(m.want_reply);
        } else if constexpr (std::is_same_v<T, Cancel>) {
          auto c = b.initCancel();
          c.setRank(m.rank);
          c.setK(m.k);
          c.setReason(AsText(m.reason));
        } else if constexpr (std::is_same_v<T, Shutdown>) {
          b.initShutdown().setReason(AsText(m.reason));
        } else if constexpr (std::is_same_v<T, Error>) {
          auto e = b.initError();
          e.setCode(static_cast<w::ErrorCode>(m.code));
          e.setMessage(AsText(m.message));
        } else if constexpr (std::is_same_v<T, GatherRequest>) {
          b.initGatherRequest().setSessionId(m.session_id);
        } else if constexpr (std::is_same_v<T, GatherDone>) {
          b.initGatherDone().setFiles(m.files);
        }
      },
      body);
}

template <typename E>
Result<E> CheckedEnum(const char* field, uint16_t raw, uint16_t max) {
  if (raw > max) {
    return InvalidArgument(fmt::format("field {} has unknown enum value {}", field, raw));
  }
  return static_cast<E>(raw);
}

Result<Body> DecodeBody(w::Envelope::Body::Reader b) {
  switch (b.which()) {
    case w::Envelope::Body::HELLO: {
      auto h = b.getHello();
      Hello m;
      auto ranks = h.getRanks();
      if (ranks.size() > kMaxRanksPerAgent) {
        return InvalidArgument(fmt::format("field hello.ranks has {} entries; the limit is {}",
                                           ranks.size(), kMaxRanksPerAgent));
      }
      for (auto r : ranks) m.ranks.push_back(r);
      m.chips = h.getChips();
      m.protocol_version = h.getProtocolVersion();
      m.session_id = h.getSessionId();
      m.host = ToString(h.getHost());
      m.pid = h.getPid();
      m.agent_clock_ns = h.getAgentClockNs();
      DFX_ASSIGN_OR_RETURN(
          m.mode, CheckedEnum<AgentMode>("hello.mode", static_cast<uint16_t>(h.getMode()), 2));
      m.spool_dir = ToString(h.getSpoolDir());
      m.launch_failure = ToString(h.getLaunchFailure());
      return Body(std::move(m));
    }
    case w::Envelope::Body::READY: {
      Ready m;
      auto list = b.getReady().getChipDescriptions();
      if (list.size() > kMaxRanksPerAgent) {
        return InvalidArgument("field ready.chipDescriptions has too many entries");
      }
      for (auto t : list) m.chip_descriptions.push_back(ToString(t));
      return Body(std::move(m));
    }
    case w::Envelope::Body::DISPATCH: {
      auto d = b.getDispatch();
      Dispatch m;
      m.session_id = d.getSessionId();
      m.rank = d.getRank();
      m.k = d.getK();
      m.program_name = ToString(d.getProgramName());
      m.program_json = ToString(d.getProgramJson());
      m.program_file = ToString(d.getProgramFile());
      m.program_hash = d.getProgramHash();
      if (!d.hasConfig()) return InvalidArgument("field dispatch.config is missing");
      auto c = d.getConfig();
      DFX_ASSIGN_OR_RETURN(m.config.backend_type, CheckedEnum<config::BackendType>(
                                                      "dispatch.config.backend",
                                                      static_cast<uint16_t>(c.getBackend()), 1));
      DFX_ASSIGN_OR_RETURN(m.config.execution_mode,
                           CheckedEnum<config::ExecutionMode>(
                               "dispatch.config.mode", static_cast<uint16_t>(c.getMode()), 1));
      m.config.enable_chip_swimlane = c.getEnableChipSwimlane();
      m.config.enable_dep_gen = c.getEnableDepGen();
      m.config.enable_dump_args = c.getEnableDumpArgs();
      m.config.enable_pmu = c.getEnablePmu();
      m.config.enable_scope_stats = c.getEnableScopeStats();
      m.config.save_kernels = c.getSaveKernels();
      m.config.aicpu_thread_num = c.getAicpuThreadNum();
      DFX_RETURN_IF_ERROR(ReadU64List("dispatch.config.ringTaskWindow", c.getRingTaskWindow(),
                                      &m.config.rings.task_window));
      DFX_RETURN_IF_ERROR(
          ReadU64List("dispatch.config.ringHeap", c.getRingHeap(), &m.config.rings.heap));
      DFX_RETURN_IF_ERROR(
          ReadU64List("dispatch.config.ringDepPool", c.getRingDepPool(), &m.config.rings.dep_pool));
      DFX_ASSIGN_OR_RETURN(
          m.pass, CheckedEnum<PassKind>("dispatch.pass", static_cast<uint16_t>(d.getPass()), 2));
      return Body(std::move(m));
    }
    case w::Envelope::Body::DISPATCH_ACCEPTED: {
      auto d = b.getDispatchAccepted();
      return Body(DispatchAccepted{d.getRank(), d.getK(), d.getHeldNs()});
    }
    case w::Envelope::Body::PROGRESS: {
      auto p = b.getProgress();
      return Body(Progress{p.getRank(), p.getK(), ToString(p.getStage()), p.getBytesSent(),
                           p.getTasksDone(), p.getTasksTotal()});
    }
    case w::Envelope::Body::ARTIFACT_BEGIN: {
      auto a = b.getArtifactBegin();
      return Body(ArtifactBegin{a.getTransferId(), a.getRank(), a.getK(), ToString(a.getPath()),
                                a.getSize()});
    }
    case w::Envelope::Body::ARTIFACT_CHUNK: {
      auto a = b.getArtifactChunk();
      auto data = a.getData();
      if (data.size() > kMaxChunkBytes) {
        return InvalidArgument(fmt::format("field artifactChunk.data is {} bytes; the limit is {}",
                                           data.size(), kMaxChunkBytes));
      }
      return Body(
          ArtifactChunk{a.getTransferId(), a.getOffset(),
                        std::string(reinterpret_cast<const char*>(data.begin()), data.size())});
    }
    case w::Envelope::Body::ARTIFACT_END: {
      auto a = b.getArtifactEnd();
      return Body(ArtifactEnd{a.getTransferId(), a.getChecksum()});
    }
    case w::Envelope::Body::CREDIT:
      return Body(Credit{b.getCredit().getChunks(), ToString(b.getCredit().getBulkEndpoint()),
                         ToString(b.getCredit().getBulkToken())});
    case w::Envelope::Body::ARTIFACT_ACK: {
      auto a = b.getArtifactAck();
      return Body(ArtifactAck{a.getTransferId(), a.getOk(), ToString(a.getError())});
    }
    case w::Envelope::Body::DISPATCH_DONE: {
      auto d = b.getDispatchDone();
      DispatchDone m;
      m.rank = d.getRank();
      m.k = d.getK();
      DFX_ASSIGN_OR_RETURN(m.status,
                           CheckedEnum<DispatchStatus>("dispatchDone.status",
                                                       static_cast<uint16_t>(d.getStatus()), 4));
      m.error = ToString(d.getError());
      m.tasks_executed = d.getTasksExecuted();
      m.artifact_count = d.getArtifactCount();
      m.wall_ns = d.getWallNs();
      m.makespan_ns = d.getMakespanNs();
      m.carries_acceptance = d.getCarriesAcceptance();
      m.accepted_held_ns = d.getAcceptedHeldNs();
      return Body(std::move(m));
    }
    case w::Envelope::Body::HEARTBEAT: {
      auto h = b.getHeartbeat();
      return Body(Heartbeat{h.getSenderClockNs(), h.getEchoClockNs(), h.getWantReply()});
    }
    case w::Envelope::Body::CANCEL: {
      auto c = b.getCancel();
      return Body(Cancel{c.getRank(), c.getK(), ToString(c.getReason())});
    }
    case w::Envelope::Body::SHUTDOWN:
      return Body(Shutdown{ToString(b.getShutdown().getReason())});
    case w::Envelope::Body::ERROR: {
      auto e = b.getError();
      Error m;
      DFX_ASSIGN_OR_RETURN(
          m.code, CheckedEnum<ErrorCode>("error.code", static_cast<uint16_t>(e.getCode()), 5));
      m.message = ToString(e.getMessage());
      return Body(std::move(m));
    }
    case w::Envelope::Body::GATHER_REQUEST:
      return Body(GatherRequest{b.getGatherRequest().getSessionId()});
    case w::Envelope::Body::GATHER_DONE:
      return Body(GatherDone{b.getGatherDone().getFiles()});
  }
  return InvalidArgument(
      fmt::format("unknown message type {} (a newer peer?)", static_cast<int>(b.which())));
}

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

const char* AgentModeName(AgentMode mode) {
  switch (mode) {
    case AgentMode::kOneShot:
      return "one-shot";
    case AgentMode::kServe:
      return "serve";
    case AgentMode::kRecover:
      return "recover";
  }
  return "?";
}

uint64_t ProgramHash(std::string_view program_json) {
  Checksum64 sum;
  sum.Update(program_json.data(), program_json.size());
  return sum.Digest();
}

const char* DispatchStatusName(DispatchStatus status) {
  switch (status) {
    case DispatchStatus::kOk:
      return "ok";
    case DispatchStatus::kFailed:
      return "failed";
    case DispatchStatus::kRejected:
      return "rejected";
    case DispatchStatus::kCancelled:
      return "cancelled";
    case DispatchStatus::kProgramUnknown:
      return "program_unknown";
  }
  return "?";
}

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kBadMessage:
      return "bad_message";
    case ErrorCode::kVersionMismatch:
      return "version_mismatch";
    case ErrorCode::kSessionMismatch:
      return "session_mismatch";
    case ErrorCode::kUnknownRank:
      return "unknown_rank";
    case ErrorCode::kDuplicateRank:
      return "duplicate_rank";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "?";
}

const char* BodyName(const Body& body) {
  static const char* const kNames[] = {
      "hello",         "ready",         "dispatch",    "dispatchAccepted", "progress",
      "artifactBegin", "artifactChunk", "artifactEnd", "credit",           "artifactAck",
      "dispatchDone",  "heartbeat",     "cancel",      "shutdown",         "error",
      "gatherRequest", "gatherDone"};
  static_assert(std::size(kNames) == std::variant_size_v<Body>);
  return kNames[body.index()];
}

}  // namespace dfx::protocol
