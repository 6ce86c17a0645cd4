#include "protocol/body_codec.h"

#include <fmt/format.h>

#include <array>
#include <string>
#include <type_traits>
#include <utility>

namespace dfx::protocol {

namespace w = ::dfx::protocol::wire;

namespace {

capnp::Text::Reader AsText(const std::string& s) { return capnp::Text::Reader(s.data(), s.size()); }

std::string ToString(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }

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

template <typename E>
Result<E> CheckedEnum(const char* field, uint16_t raw, uint16_t max) {
  if (raw > max) {
    return InvalidArgument(fmt::format("field {} has unknown enum value {}", field, raw));
  }
  return static_cast<E>(raw);
}

void EncodeHello(const Hello& m, w::Hello::Builder h) {
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
  h.setReconnect(m.reconnect);
  if (!m.resume_token.empty()) h.setResumeToken(AsText(m.resume_token));
  if (!m.open_transfers.empty()) {
    auto open = h.initOpenTransfers(static_cast<unsigned>(m.open_transfers.size()));
    for (unsigned i = 0; i < m.open_transfers.size(); ++i) open.set(i, m.open_transfers[i]);
  }
}

template <typename List>
void EncodeRefs(const std::vector<DispatchRef>& refs, List list) {
  for (unsigned i = 0; i < refs.size(); ++i) {
    list[i].setRank(refs[i].rank);
    list[i].setK(refs[i].k);
    list[i].setPass(static_cast<w::PassKind>(refs[i].pass));
  }
}

Result<std::vector<DispatchRef>> DecodeRefs(const char* field,
                                            capnp::List<w::DispatchRef>::Reader list) {
  if (list.size() > kMaxResumeEntries) {
    return InvalidArgument(fmt::format("field {} has {} entries; the limit is {}", field,
                                       list.size(), kMaxResumeEntries));
  }
  std::vector<DispatchRef> out;
  for (auto r : list) {
    DFX_ASSIGN_OR_RETURN(PassKind pass,
                         CheckedEnum<PassKind>(field, static_cast<uint16_t>(r.getPass()), 2));
    out.push_back(DispatchRef{r.getRank(), r.getK(), pass});
  }
  return out;
}

void EncodeResume(const Resume& m, w::Resume::Builder r) {
  if (!m.token.empty()) r.setToken(AsText(m.token));
  r.setReconnected(m.reconnected);
  auto transfers = r.initTransfers(static_cast<unsigned>(m.transfers.size()));
  for (unsigned i = 0; i < m.transfers.size(); ++i) {
    transfers[i].setTransferId(m.transfers[i].transfer_id);
    transfers[i].setState(static_cast<w::TransferState>(m.transfers[i].state));
    transfers[i].setOffset(m.transfers[i].offset);
  }
  EncodeRefs(m.dispatches, r.initDispatches(static_cast<unsigned>(m.dispatches.size())));
  r.setCredits(m.credits);
}

Result<Body> DecodeResume(w::Resume::Reader r) {
  Resume m;
  m.token = ToString(r.getToken());
  m.reconnected = r.getReconnected();
  auto transfers = r.getTransfers();
  if (transfers.size() > kMaxResumeEntries) {
    return InvalidArgument("field resume.transfers has too many entries");
  }
  for (auto t : transfers) {
    DFX_ASSIGN_OR_RETURN(TransferState state,
                         CheckedEnum<TransferState>("resume.transfers.state",
                                                    static_cast<uint16_t>(t.getState()), 3));
    m.transfers.push_back(TransferResume{t.getTransferId(), state, t.getOffset()});
  }
  DFX_ASSIGN_OR_RETURN(m.dispatches, DecodeRefs("resume.dispatches", r.getDispatches()));
  m.credits = r.getCredits();
  return Body(std::move(m));
}

void EncodeRunConfig(const config::RunConfig& rc, w::RunConfigWire::Builder c) {
  c.setBackend(rc.backend_type == config::BackendType::kA5 ? w::BackendType::A5
                                                           : w::BackendType::A2A3);
  c.setMode(rc.execution_mode == config::ExecutionMode::kOnboard ? w::ExecutionMode::ONBOARD
                                                                 : w::ExecutionMode::SIM);
  c.setEnableChipSwimlane(rc.enable_chip_swimlane);
  c.setEnableDepGen(rc.enable_dep_gen);
  c.setEnableDumpArgs(rc.enable_dump_args);
  c.setEnablePmu(rc.enable_pmu);
  c.setEnableScopeStats(rc.enable_scope_stats);
  c.setSaveKernels(rc.save_kernels);
  c.setAicpuThreadNum(rc.aicpu_thread_num);
  SetU64List(c.initRingTaskWindow(4), rc.rings.task_window);
  SetU64List(c.initRingHeap(4), rc.rings.heap);
  SetU64List(c.initRingDepPool(4), rc.rings.dep_pool);
}

Result<Body> DecodeHello(w::Hello::Reader h) {
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
  DFX_ASSIGN_OR_RETURN(m.mode,
                       CheckedEnum<AgentMode>("hello.mode", static_cast<uint16_t>(h.getMode()), 2));
  m.spool_dir = ToString(h.getSpoolDir());
  m.launch_failure = ToString(h.getLaunchFailure());
  m.reconnect = h.getReconnect();
  m.resume_token = ToString(h.getResumeToken());
  auto open = h.getOpenTransfers();
  if (open.size() > kMaxResumeEntries) {
    return InvalidArgument(fmt::format("field hello.openTransfers has {} entries; the limit is {}",
                                       open.size(), kMaxResumeEntries));
  }
  for (auto id : open) m.open_transfers.push_back(id);
  return Body(std::move(m));
}

Result<Body> DecodeDispatch(w::Dispatch::Reader d) {
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
  DFX_ASSIGN_OR_RETURN(m.config.backend_type,
                       CheckedEnum<config::BackendType>("dispatch.config.backend",
                                                        static_cast<uint16_t>(c.getBackend()), 1));
  DFX_ASSIGN_OR_RETURN(m.config.execution_mode,
                       CheckedEnum<config::ExecutionMode>("dispatch.config.mode",
                                                          static_cast<uint16_t>(c.getMode()), 1));
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
  DFX_ASSIGN_OR_RETURN(m.wire_compression, CheckedEnum<WireCompression>(
                                               "dispatch.wireCompression",
                                               static_cast<uint16_t>(d.getWireCompression()), 2));
  return Body(std::move(m));
}

}  // namespace

void EncodeBody(const Body& body, w::Envelope::Body::Builder b) {
  std::visit(
      [&b](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, Hello>) {
          EncodeHello(m, b.initHello());
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
          EncodeRunConfig(m.config, d.initConfig());
          d.setPass(static_cast<w::PassKind>(m.pass));
          d.setWireCompression(static_cast<w::WireCompression>(m.wire_compression));
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
          a.setCoding(static_cast<w::ChunkCoding>(m.coding));
          a.setRawSize(m.raw_size);
        } else if constexpr (std::is_same_v<T, ArtifactEnd>) {
          auto a = b.initArtifactEnd();
          a.setTransferId(m.transfer_id);
          a.setChecksum(m.checksum);
        } else if constexpr (std::is_same_v<T, Credit>) {
          auto c = b.initCredit();
          c.setChunks(m.chunks);
          c.setBulkEndpoint(AsText(m.bulk_endpoint));
          c.setBulkToken(AsText(m.bulk_token));
          c.setWireCompression(static_cast<w::WireCompression>(m.wire_compression));
        } else if constexpr (std::is_same_v<T, ArtifactAck>) {
          auto a = b.initArtifactAck();
          a.setTransferId(m.transfer_id);
          a.setOk(m.ok);
          a.setError(AsText(m.error));
          a.setKeepInSpool(m.keep_in_spool);
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
        } else if constexpr (std::is_same_v<T, Resume>) {
          EncodeResume(m, b.initResume());
        } else if constexpr (std::is_same_v<T, Resumed>) {
          auto r = b.initResumed();
          EncodeRefs(m.missing, r.initMissing(static_cast<unsigned>(m.missing.size())));
        }
      },
      body);
}

Result<Body> DecodeBody(w::Envelope::Body::Reader b) {
  switch (b.which()) {
    case w::Envelope::Body::HELLO:
      return DecodeHello(b.getHello());
    case w::Envelope::Body::READY: {
      Ready m;
      auto list = b.getReady().getChipDescriptions();
      if (list.size() > kMaxRanksPerAgent) {
        return InvalidArgument("field ready.chipDescriptions has too many entries");
      }
      for (auto t : list) m.chip_descriptions.push_back(ToString(t));
      return Body(std::move(m));
    }
    case w::Envelope::Body::DISPATCH:
      return DecodeDispatch(b.getDispatch());
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
      ArtifactChunk m{a.getTransferId(), a.getOffset(),
                      std::string(reinterpret_cast<const char*>(data.begin()), data.size())};
      DFX_ASSIGN_OR_RETURN(m.coding,
                           CheckedEnum<ChunkCoding>("artifactChunk.coding",
                                                    static_cast<uint16_t>(a.getCoding()), 1));
      m.raw_size = a.getRawSize();
      return Body(std::move(m));
    }
    case w::Envelope::Body::ARTIFACT_END: {
      auto a = b.getArtifactEnd();
      return Body(ArtifactEnd{a.getTransferId(), a.getChecksum()});
    }
    case w::Envelope::Body::CREDIT: {
      auto c = b.getCredit();
      Credit m{c.getChunks(), ToString(c.getBulkEndpoint()), ToString(c.getBulkToken())};
      DFX_ASSIGN_OR_RETURN(
          m.wire_compression,
          CheckedEnum<WireCompression>("credit.wireCompression",
                                       static_cast<uint16_t>(c.getWireCompression()), 2));
      return Body(std::move(m));
    }
    case w::Envelope::Body::ARTIFACT_ACK: {
      auto a = b.getArtifactAck();
      return Body(
          ArtifactAck{a.getTransferId(), a.getOk(), ToString(a.getError()), a.getKeepInSpool()});
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
    case w::Envelope::Body::RESUME:
      return DecodeResume(b.getResume());
    case w::Envelope::Body::RESUMED: {
      Resumed m;
      DFX_ASSIGN_OR_RETURN(m.missing, DecodeRefs("resumed.missing", b.getResumed().getMissing()));
      return Body(std::move(m));
    }
  }
  return InvalidArgument(
      fmt::format("unknown message type {} (a newer peer?)", static_cast<int>(b.which())));
}

}  // namespace dfx::protocol
