// The protocol's messages as plain structs (docs/design.md §7). protocol/dfx.capnp
// is the spec of the wire; these structs mirror it 1:1 so that no Cap'n Proto
// reader/builder type leaves protocol/ (docs/design.md §11.2).
//
// Value types: copy and move freely, any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/pass_plan.h"
#include "config/run_config.h"

namespace dfx::protocol {

// Bumped on any breaking wire change; peers must match exactly.
// v2: RunConfigWire carries the backend and mode as enums.
constexpr uint32_t kProtocolVersion = 2;

// Reader limits. A frame larger than kMaxFrameBytes is rejected before parsing.
constexpr uint64_t kMaxChunkBytes = 4ull << 20;         // one ArtifactChunk payload
constexpr uint64_t kDefaultChunkBytes = 1ull << 20;     // what the agent sends
constexpr uint64_t kMaxProgramJsonBytes = 32ull << 20;  // Dispatch.programJson
constexpr uint64_t kMaxFrameBytes = 48ull << 20;        // whole encoded envelope
constexpr uint64_t kMaxTextBytes = 4096;                // names, hosts, paths
constexpr uint64_t kMaxErrorBytes = 16384;              // error texts (truncated beyond)
constexpr uint64_t kMaxArtifactBytes = 1ull << 40;      // declared artifact size (wire limit)
// The largest frame an agent ever sends: an ArtifactChunk of kMaxChunkBytes
// and its envelope (a Hello of kMaxRanksPerAgent ranks is far smaller). The
// coordinator's socket refuses anything larger before buffering it.
constexpr uint64_t kMaxAgentFrameBytes = kMaxChunkBytes + (256ull << 10);
constexpr uint32_t kMaxRanksPerAgent = 4096;

struct Header {
  uint32_t protocol_version = kProtocolVersion;
  uint64_t session_id = 0;
  int32_t rank = 0;
  uint64_t sequence = 0;
  bool operator==(const Header&) const = default;
};

enum class AgentMode : uint8_t { kOneShot = 0, kServe = 1, kRecover = 2 };
const char* AgentModeName(AgentMode mode);

struct Hello {
  std::vector<int32_t> ranks;
  uint32_t chips = 0;
  uint32_t protocol_version = kProtocolVersion;
  uint64_t session_id = 0;
  std::string host;
  uint32_t pid = 0;
  uint64_t agent_clock_ns = 0;
  AgentMode mode = AgentMode::kOneShot;
  std::string spool_dir;
  // The launch guard's report: the agent process of these ranks ended
  // before saying HELLO, and how ("killed by signal 9"). Empty for a real HELLO.
  std::string launch_failure;
  // A reconnect (docs/design.md §9): the agent lost its connection in this
  // session and is back, proving it with the token of the coordinator's
  // first Resume, and naming its streams begun and not yet acknowledged.
  bool reconnect = false;
  std::string resume_token;
  std::vector<uint64_t> open_transfers;
  bool operator==(const Hello&) const = default;
};

struct Ready {
  std::vector<std::string> chip_descriptions;
  bool operator==(const Ready&) const = default;
};

using config::PassKind;
using config::PassKindName;

// How an agent sends artifact chunks (--wire-compression): kAuto lets the
// agent decide (rank_agent/artifact_sender.h).
enum class WireCompression : uint8_t { kAuto = 0, kZstd = 1, kOff = 2 };
const char* WireCompressionName(WireCompression mode);  // "auto" | "zstd" | "off"
bool ParseWireCompression(std::string_view text, WireCompression* mode);
// What an ArtifactChunk's data holds: the file's bytes, or one zstd frame of
// exactly raw_size of them.
enum class ChunkCoding : uint8_t { kRaw = 0, kZstd = 1 };

struct Dispatch {
  uint64_t session_id = 0;  // the run's session (repeats the header's, for the agent's log)
  int32_t rank = 0;
  uint32_t k = 0;
  std::string program_name;
  std::string program_json;
  config::RunConfig config;  // the collectors to arm; backend_type selects the chip model
  PassKind pass = PassKind::kSingle;
  std::string program_file;  // the program file's base name, for scope sites; may be empty
  // XXH64 of the program's JSON text (ProgramHash). With program_json empty
  // the agent runs the copy it keeps under (hash, program_name,
  // program_file), or answers DispatchStatus::kProgramUnknown.
  uint64_t program_hash = 0;
  WireCompression wire_compression = WireCompression::kAuto;
  bool operator==(const Dispatch&) const = default;
};
// Dispatch::program_hash of a program's JSON text: its XXH64.
uint64_t ProgramHash(std::string_view program_json);

struct DispatchAccepted {
  int32_t rank = 0;
  uint32_t k = 0;
  // How long the agent held the message back after accepting the dispatch
  // (agent clock; 0 = sent at once): the acceptance happened that long
  // before the message was received.
  uint64_t held_ns = 0;
  bool operator==(const DispatchAccepted&) const = default;
};

struct Progress {
  int32_t rank = 0;
  uint32_t k = 0;
  std::string stage;  // "running" | "streaming"
  uint64_t bytes_sent = 0;
  uint64_t tasks_done = 0;
  uint64_t tasks_total = 0;  // 0 = unknown
  bool operator==(const Progress&) const = default;
};

struct ArtifactBegin {
  uint64_t transfer_id = 0;
  int32_t rank = 0;
  uint32_t k = 0;
  std::string path;  // relative to rank<rank>/d<k>/
  uint64_t size = 0;
  bool operator==(const ArtifactBegin&) const = default;
};

struct ArtifactChunk {
  uint64_t transfer_id = 0;
  uint64_t offset = 0;
  std::string data;
  // offset counts raw bytes whatever the coding; raw_size: kZstd only.
  ChunkCoding coding = ChunkCoding::kRaw;
  uint64_t raw_size = 0;
  bool operator==(const ArtifactChunk&) const = default;
};

struct ArtifactEnd {
  uint64_t transfer_id = 0;
  uint64_t checksum = 0;
  bool operator==(const ArtifactEnd&) const = default;
};

struct Credit {
  uint32_t chunks = 0;
  // The local bulk path's offer (docs/design.md §7): an ipc:// endpoint and the
  // token that admits this agent on it. Empty: no offer.
  std::string bulk_endpoint;
  std::string bulk_token;
  WireCompression wire_compression = WireCompression::kAuto;
  bool operator==(const Credit&) const = default;
};

struct ArtifactAck {
  uint64_t transfer_id = 0;
  bool ok = false;
  std::string error;
  // Refused, not bad (over the run's byte budget): the agent keeps its copy.
  bool keep_in_spool = false;
  bool operator==(const ArtifactAck&) const = default;
};

// kProgramUnknown: a Dispatch without its program named one the agent does
// not hold; the coordinator sends it again with the program (not a failure).
enum class DispatchStatus : uint8_t {
  kOk = 0,
  kFailed = 1,
  kRejected = 2,
  kCancelled = 3,
  kProgramUnknown = 4
};
const char* DispatchStatusName(DispatchStatus status);

struct DispatchDone {
  int32_t rank = 0;
  uint32_t k = 0;
  DispatchStatus status = DispatchStatus::kOk;
  std::string error;
  uint64_t tasks_executed = 0;
  uint32_t artifact_count = 0;
  uint64_t wall_ns = 0;
  uint64_t makespan_ns = 0;  // the chip's own accounting (device::DispatchResult)
  // The dispatch's acceptance, folded into this message when the agent sent
  // no DispatchAccepted (a short dispatch without artifacts): it accepted
  // the dispatch accepted_held_ns before sending this (agent clock).
  bool carries_acceptance = false;
  uint64_t accepted_held_ns = 0;
  bool operator==(const DispatchDone&) const = default;
};

struct Heartbeat {
  uint64_t sender_clock_ns = 0;
  uint64_t echo_clock_ns = 0;
  bool want_reply = false;
  bool operator==(const Heartbeat&) const = default;
};

struct Cancel {
  int32_t rank = 0;
  uint32_t k = 0;
  std::string reason;
  bool operator==(const Cancel&) const = default;
};

struct Shutdown {
  std::string reason;
  bool operator==(const Shutdown&) const = default;
};

enum class ErrorCode : uint8_t {
  kBadMessage = 0,
  kVersionMismatch = 1,
  kSessionMismatch = 2,
  kUnknownRank = 3,
  kDuplicateRank = 4,
  kInternal = 5,
};
const char* ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kBadMessage;
  std::string message;
  bool operator==(const Error&) const = default;
};

struct GatherRequest {
  uint64_t session_id = 0;
  bool operator==(const GatherRequest&) const = default;
};

struct GatherDone {
  uint32_t files = 0;
  bool operator==(const GatherDone&) const = default;
};

// A dispatch named in a reconnect's Resume / Resumed.
struct DispatchRef {
  int32_t rank = 0;
  uint32_t k = 0;
  PassKind pass = PassKind::kSingle;
  bool operator==(const DispatchRef&) const = default;
};

enum class TransferState : uint8_t { kUnknown = 0, kOpen = 1, kCommitting = 2, kAcked = 3 };

struct TransferResume {
  uint64_t transfer_id = 0;
  TransferState state = TransferState::kUnknown;
  uint64_t offset = 0;  // kOpen: raw bytes the coordinator holds
  bool operator==(const TransferResume&) const = default;
};

// C->A. First answer: `token` only. Answer to a reconnect HELLO
// (`reconnected`): the named streams, the awaited dispatches, the fresh
// credit window (replacing what the agent held).
struct Resume {
  std::string token;
  bool reconnected = false;
  std::vector<TransferResume> transfers;
  std::vector<DispatchRef> dispatches;
  uint32_t credits = 0;
  bool operator==(const Resume&) const = default;
};

// A->C. The awaited dispatches the agent never received.
struct Resumed {
  std::vector<DispatchRef> missing;
  bool operator==(const Resumed&) const = default;
};

// Bounds of a reconnect's lists (streams an agent has open, dispatches in flight).
constexpr uint32_t kMaxResumeEntries = 65536;

using Body = std::variant<Hello, Ready, Dispatch, DispatchAccepted, Progress, ArtifactBegin,
                          ArtifactChunk, ArtifactEnd, Credit, ArtifactAck, DispatchDone, Heartbeat,
                          Cancel, Shutdown, Error, GatherRequest, GatherDone, Resume, Resumed>;

struct Message {
  Header header;
  Body body;
};

// "hello", "dispatch", ... (the schema's union member names).
const char* BodyName(const Body& body);

}  // namespace dfx::protocol
