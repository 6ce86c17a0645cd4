# The wire protocol between dfx-coordinator and dfx-rank-agent (docs/design.md §7).
#
# This file is the spec of the wire. Rules:
#  * Every message travels as one ZeroMQ frame holding one Envelope, encoded
#    as an unpacked Cap'n Proto flat array.
#  * Field numbers are only ever appended; a field is never renumbered or
#    reused. A breaking change bumps kProtocolVersion (protocol/messages.h);
#    peers with a different version are turned away, not negotiated with.
#  * Big data travels beside messages: an artifact is streamed as
#    ArtifactBegin, then ArtifactChunk* (each at most a few MiB), then
#    ArtifactEnd, under credit-based flow control.
#  * Direction is noted per message: C->A (coordinator to agent) or A->C.

@0xe720bddcaad7ef5b;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("dfx::protocol::wire");

# Carried by every message.
struct Header {
  protocolVersion @0 :UInt32;  # must equal the receiver's version exactly
  sessionId @1 :UInt64;        # the run's random 64-bit id; 0 = "no session yet" (serve-mode HELLO)
  rank @2 :Int32;              # the chip rank the message is about (A->C: one of the sender's ranks)
  sequence @3 :UInt64;         # per-sender monotonic counter, starting at 1
}

# A->C. First message of an agent: who it is and what it owns.
struct Hello {
  ranks @0 :List(Int32);       # global chip ranks this agent owns (dense, ascending)
  chips @1 :UInt32;            # number of local chips (= ranks.size())
  protocolVersion @2 :UInt32;  # the agent's protocol version (repeated from the header for the log)
  sessionId @3 :UInt64;        # session the agent was started for; 0 = attach to any (serve mode)
  host @4 :Text;               # the agent's host name
  pid @5 :UInt32;              # the agent's process id
  agentClockNs @6 :UInt64;     # agent monotonic clock when sent (first clock-offset sample)
  mode @7 :AgentMode;          # how the agent was started
  spoolDir @8 :Text;           # the agent's spool root (its files live in <spoolDir>/<session>/rank<N>/d<K>/)
  launchFailure @9 :Text;      # set only by an agent's launch guard (a launched agent's parent
                               # process) when the agent process ended before it said HELLO: how
                               # it ended. The coordinator fails these ranks and admits nobody.
  reconnect @10 :Bool;         # the agent lost its connection in this session and is back
                               # (docs/design.md §9, "reconnect window"); needs resumeToken
  resumeToken @11 :Text;       # with reconnect: the token the coordinator's Resume gave it
  openTransfers @12 :List(UInt64);  # with reconnect: streams begun and not yet acknowledged
}

enum AgentMode {
  oneShot @0;   # started for one session (mpirun / local launcher); exits after Shutdown
  serve @1;     # long-lived: accepts successive sessions
  recover @2;   # started by `dfx-coordinator gather`: streams what its spool still holds
}

# A->C. The agent's chips are initialised; it may now be scheduled.
struct Ready {
  chipDescriptions @0 :List(Text);  # one per rank, e.g. "a2a3 emulator: 2 AIC + 4 AIV, 50 MHz"
}

# Which pass of the DFX pass protocol a dispatch belongs to (docs/run-config.md §2.6, §2.7).
enum PassKind {
  single @0;   # sim, or onboard without swimlane: one pass with the flags as given
  graph @1;    # onboard graph pass: dep_gen only
  timing @2;   # onboard timing pass: dep_gen forced off
}

enum BackendType {
  a2a3 @0;
  a5 @1;
}

enum ExecutionMode {
  sim @0;
  onboard @1;
}

# The RunConfig (config/run_config.h), mirrored 1:1.
struct RunConfigWire {
  obsoleteBackendType @0 :Text;    # protocol v1 only (a string); v2 sends `backend`
  obsoleteExecutionMode @1 :Text;  # protocol v1 only (a string); v2 sends `mode`
  enableChipSwimlane @2 :Int32;  # 0..4
  enableDepGen @3 :Bool;
  enableDumpArgs @4 :Int32;      # 0 off, 1 partial, 2 full, 3 hybrid
  enablePmu @5 :Int32;           # 0 off, else event type 1,2,4,5,6,7,8
  enableScopeStats @6 :Bool;
  saveKernels @7 :Bool;          # forced true when any DFX flag is on
  aicpuThreadNum @8 :Int32;      # 0 = chip model default
  ringTaskWindow @9 :List(UInt64);  # exactly 4 entries; 0 = keep default
  ringHeap @10 :List(UInt64);       # exactly 4 entries, bytes; 0 = keep default
  ringDepPool @11 :List(UInt64);    # exactly 4 entries; 0 = keep default
  backend @12 :BackendType;         # the chip model this dispatch runs on
  mode @13 :ExecutionMode;          # the DFX pass protocol of the run
}

# How an agent sends artifact chunks (--wire-compression, docs/design.md §7).
enum WireCompression {
  auto @0;   # the agent decides: zstd unless the coordinator is on loopback/ipc, per
             # stream raw when its first chunk does not shrink enough
  zstd @1;   # every chunk as one zstd frame
  off @2;    # every chunk raw
}

# What an ArtifactChunk's data is.
enum ChunkCoding {
  raw @0;    # the file's bytes
  zstd @1;   # one zstd frame that decompresses to exactly rawSize bytes
}

# C->A. Run one program once on one chip.
struct Dispatch {
  sessionId @0 :UInt64;      # the session id of the run (repeated for the agent's log)
  rank @1 :Int32;            # the chip that runs it (one of the agent's ranks)
  k @2 :UInt32;              # dispatch number on that chip in this run: artifacts go to rank<rank>/d<k>/
  programName @3 :Text;      # the plan's name for the program (dispatch_program.json)
  programJson @4 :Text;      # the program file's full JSON text (docs/design.md §6)
  config @5 :RunConfigWire;  # collectors to arm
  pass @6 :PassKind;         # which pass this dispatch belongs to
  programFile @7 :Text;      # the program file's base name (scope sites "<file>:<line>"); may be empty
  programHash @8 :UInt64;    # XXH64 of the program's JSON text. An agent keeps the programs it ran
                             # (bounded), keyed by (hash, programName, programFile): after the first
                             # dispatch of a program to an agent, the coordinator sends programJson
                             # empty and the agent runs its own copy, or answers programUnknown
  wireCompression @9 :WireCompression;  # how the agent sends this dispatch's artifact chunks
}

# A->C. The dispatch was queued on its chip. An agent may hold this message
# back for a short while (a few tens of ms at most) and send it right
# before the DispatchDone of a dispatch that finished by then, in one
# burst, so a short dispatch costs one wake-up of each side instead of two.
struct DispatchAccepted {
  rank @0 :Int32;
  k @1 :UInt32;
  heldNs @2 :UInt64;         # how long the agent held it back after accepting (agent clock); the
                             # coordinator dates the acceptance that much before it received it.
                             # 0 = sent when accepted (what agents before this field always did)
}

# A->C. Something moved on a dispatch (informational; drives the live display).
# Sent on a schedule (a few per second at most), never per task.
struct Progress {
  rank @0 :Int32;
  k @1 :UInt32;
  stage @2 :Text;            # "running" | "streaming"
  bytesSent @3 :UInt64;      # artifact bytes streamed so far for this dispatch
  tasksDone @4 :UInt64;      # "running": tasks of the program finished so far
  tasksTotal @5 :UInt64;     # "running": tasks of the program (0 = unknown)
}

# A->C. A file of rank<rank>/d<k>/ starts streaming.
struct ArtifactBegin {
  transferId @0 :UInt64;     # unique per agent connection; names the stream in Chunk/End/Ack
  rank @1 :Int32;
  k @2 :UInt32;
  path @3 :Text;             # relative to rank<rank>/d<k>/; no "..", not absolute (one sanitizer: protocol/codec.h SanitizeArtifactPath)
  size @4 :UInt64;           # exact byte count that will follow
}

# A->C. The next bytes of a stream. Costs one credit.
struct ArtifactChunk {
  transferId @0 :UInt64;
  offset @1 :UInt64;         # must equal the bytes already received on this stream
  data @2 :Data;             # at most kMaxChunkBytes
  coding @3 :ChunkCoding;    # raw, or one zstd frame; offset and checksum count the file's (raw) bytes
  rawSize @4 :UInt64;        # zstd: the decompressed size (at most kMaxChunkBytes), exactly; raw: 0
}

# A->C. The stream is complete.
struct ArtifactEnd {
  transferId @0 :UInt64;
  checksum @1 :UInt64;       # XXH64 (seed 0) of the whole file
}

# C->A. Flow control: the agent may send `chunks` more ArtifactChunk messages.
# A Credit with a bulkEndpoint also offers the local bulk path (docs/design.md
# §7, "local bulk path"): an agent on the coordinator's host may send its
# artifact streams (ArtifactBegin/Chunk/End and the DispatchDone/GatherDone
# that follow them) over that ipc:// endpoint, authenticated as PLAIN user
# = its identity, password = bulkToken, from its own pid and the
# coordinator's uid (the kernel's SO_PEERCRED). Everything else stays here.
struct Credit {
  chunks @0 :UInt32;
  bulkEndpoint @1 :Text;   # "" = no offer
  bulkToken @2 :Text;
  wireCompression @3 :WireCompression;  # how chunks go from now on (a gather's --wire-compression)
}

# C->A. The coordinator verified and stored (or rejected) a stream; the agent
# may delete its spool copy when ok.
struct ArtifactAck {
  transferId @0 :UInt64;
  ok @1 :Bool;
  error @2 :Text;            # why, when not ok
  keepInSpool @3 :Bool;      # not ok and refused, not bad (over the run's --max-run-bytes): the
                             # agent keeps the file in its spool for a later gather
}

enum DispatchStatus {
  ok @0;
  failed @1;                 # the program failed (kernel error, ring deadlock, dump timeout)
  rejected @2;               # the agent could not accept it (bad program, unknown rank)
  cancelled @3;
  programUnknown @4;         # a dispatch without programJson named a program the agent does not hold
                             # (new or restarted agent, evicted): send it again with the program
}

# A->C. A dispatch finished and all its artifacts were streamed (Ends sent).
struct DispatchDone {
  rank @0 :Int32;
  k @1 :UInt32;
  status @2 :DispatchStatus;
  error @3 :Text;            # the error text when not ok (bounded by kMaxErrorBytes)
  tasksExecuted @4 :UInt64;
  artifactCount @5 :UInt32;  # number of ArtifactBegin sent for this dispatch
  wallNs @6 :UInt64;         # host wall time of the execution on the agent
  makespanNs @7 :UInt64;     # first task dispatched to last retired, the chip's own accounting
                             # (virtual or emulated chip clock, not host time); 0 when nothing ran
  carriesAcceptance @8 :Bool;  # no DispatchAccepted was sent for this dispatch: this message says
                               # the agent accepted it too (a short dispatch with no artifacts)
  acceptedHeldNs @9 :UInt64;   # with carriesAcceptance: the agent accepted it this long before
                               # sending this message (agent clock; DispatchAccepted.heldNs)
}

# Both ways. Liveness and clock-offset sampling; independent of task budgets.
struct Heartbeat {
  senderClockNs @0 :UInt64;  # the sender's monotonic clock when sent
  echoClockNs @1 :UInt64;    # for a reply: the senderClockNs being answered; 0 otherwise
  wantReply @2 :Bool;        # ask the peer to answer with echoClockNs set
}

# C->A. Abandon a queued or running dispatch (best effort).
struct Cancel {
  rank @0 :Int32;
  k @1 :UInt32;
  reason @2 :Text;
}

# C->A. The run is over: a one-shot agent exits, a serve agent waits for the next session.
struct Shutdown {
  reason @0 :Text;
}

enum ErrorCode {
  badMessage @0;             # undecodable / invalid message
  versionMismatch @1;
  sessionMismatch @2;
  unknownRank @3;
  duplicateRank @4;
  internal @5;
}

# Both ways. A message was rejected; fatal codes (version, session, rank) end the connection.
struct Error {
  code @0 :ErrorCode;
  message @1 :Text;
}

# C->A (recover mode). Stream everything the spool still holds for the session.
struct GatherRequest {
  sessionId @0 :UInt64;
}

# A->C (recover mode). Every spooled file has been offered.
struct GatherDone {
  files @0 :UInt32;          # number of files streamed
}

# Which dispatch (a reconnect's Resume / Resumed).
struct DispatchRef {
  rank @0 :Int32;
  k @1 :UInt32;
  pass @2 :PassKind;
}

# What the coordinator holds of a stream the agent named in its reconnect HELLO.
enum TransferState {
  unknown @0;     # nothing: start it again from offset 0 (its Begin was lost, or it failed)
  open @1;        # open: continue at `offset` (raw bytes received and queued for writing)
  committing @2;  # complete, its checksum being verified: wait for the ArtifactAck
  acked @3;       # verified and in place (the ArtifactAck was lost): delete the spool copy
}

struct TransferResume {
  transferId @0 :UInt64;
  state @1 :TransferState;
  offset @2 :UInt64;
}

# C->A. The first answer to an admitted agent carries `token` only: the proof a
# reconnect HELLO repeats. The answer to a reconnect HELLO (reconnected = true)
# says where each named stream stands, which dispatches the coordinator still
# awaits, and the agent's fresh credit window (it replaces what it held).
struct Resume {
  token @0 :Text;
  reconnected @1 :Bool;
  transfers @2 :List(TransferResume);
  dispatches @3 :List(DispatchRef);
  credits @4 :UInt32;
}

# A->C. After a Resume: the awaited dispatches this agent never received (sent
# while its connection was down); the coordinator sends them again. Nothing
# this agent received runs twice.
struct Resumed {
  missing @0 :List(DispatchRef);
}

# One message on the wire.
struct Envelope {
  header @0 :Header;
  body :union {
    hello @1 :Hello;
    ready @2 :Ready;
    dispatch @3 :Dispatch;
    dispatchAccepted @4 :DispatchAccepted;
    progress @5 :Progress;
    artifactBegin @6 :ArtifactBegin;
    artifactChunk @7 :ArtifactChunk;
    artifactEnd @8 :ArtifactEnd;
    credit @9 :Credit;
    artifactAck @10 :ArtifactAck;
    dispatchDone @11 :DispatchDone;
    heartbeat @12 :Heartbeat;
    cancel @13 :Cancel;
    shutdown @14 :Shutdown;
    error @15 :Error;
    gatherRequest @16 :GatherRequest;
    gatherDone @17 :GatherDone;
    resume @18 :Resume;
    resumed @19 :Resumed;
  }
}
