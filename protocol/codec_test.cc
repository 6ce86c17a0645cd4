#include "protocol/codec.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/file_util.h"

namespace dfx::protocol {
namespace {

namespace fs = std::filesystem;

Message MakeHello() {
  Hello hello;
  hello.ranks = {4, 5};
  hello.chips = 2;
  hello.session_id = 0x1122334455667788ull;
  hello.host = "node-a";
  hello.pid = 4242;
  hello.agent_clock_ns = 123456789;
  hello.mode = AgentMode::kServe;
  hello.spool_dir = "/tmp/spool";
  return Message{Header{kProtocolVersion, 0x1122334455667788ull, 4, 1}, hello};
}

Message MakeDispatch() {
  Dispatch d;
  d.session_id = 0xabcdefull;
  d.rank = 3;
  d.k = 2;
  d.program_name = "attn";
  d.program_json = R"({"kernels": []})";
  d.program_file = "attention_decode.json";
  d.config.backend_type = config::BackendType::kA5;
  d.config.execution_mode = config::ExecutionMode::kOnboard;
  d.config.enable_chip_swimlane = 4;
  d.config.enable_dep_gen = true;
  d.config.enable_dump_args = 1;
  d.config.enable_pmu = 2;
  d.config.enable_scope_stats = true;
  d.config.save_kernels = true;
  d.config.aicpu_thread_num = 3;
  d.config.rings.task_window = {1024, 0, 0, 2048};
  d.config.rings.heap = {1 << 20, 1 << 20, 1 << 20, 1 << 20};
  d.config.rings.dep_pool = {0, 64, 0, 0};
  d.pass = PassKind::kTiming;
  d.program_hash = ProgramHash(d.program_json);
  return Message{Header{kProtocolVersion, 0xabcdefull, 3, 7}, d};
}

Message MakeChunk() {
  ArtifactChunk c;
  c.transfer_id = 9;
  c.offset = 1 << 20;
  c.data = std::string("\x00\x01\x02 binary \xff", 13);
  return Message{Header{kProtocolVersion, 0xabcdefull, 3, 8}, c};
}

Message MakeDone() {
  DispatchDone d;
  d.rank = 3;
  d.k = 2;
  d.status = DispatchStatus::kFailed;
  d.error = "kernel 'fail' raised: injected failure";
  d.tasks_executed = 17;
  d.artifact_count = 4;
  d.wall_ns = 99;
  d.makespan_ns = 42;
  d.carries_acceptance = true;
  d.accepted_held_ns = 1234567;
  return Message{Header{kProtocolVersion, 0xabcdefull, 3, 9}, d};
}

// Golden encodings: small binary files produced by this encoder and committed.
// Set DFX_UPDATE_GOLDEN=1 to regenerate them after an intended wire change
// (which must also bump kProtocolVersion or only append fields).
void CheckGolden(const std::string& name, const Message& message) {
  const fs::path path = fs::path(DFX_SOURCE_DIR) / "protocol/testdata" / (name + ".bin");
  auto encoded = Encode(message);
  ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();
  if (std::getenv("DFX_UPDATE_GOLDEN") != nullptr) {
    ASSERT_TRUE(WriteFileAtomic(path, *encoded).ok());
  }
  auto golden = ReadFile(path);
  ASSERT_TRUE(golden.ok()) << golden.status().ToString();
  EXPECT_EQ(*encoded, *golden) << name << ": encoder output differs from the golden wire bytes";
  auto decoded = Decode(*golden);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->header, message.header);
  EXPECT_TRUE(decoded->body == message.body) << name << ": golden bytes decode differently";
}

TEST(CodecTest, GoldenHello) { CheckGolden("hello", MakeHello()); }

// A HELLO encoded before Hello.launchFailure was appended (an older agent)
// still decodes, with no launch failure.
// A HELLO encoded before Hello.reconnect / resumeToken / openTransfers were
// appended (an older agent) decodes as a first HELLO, not a reconnect.
TEST(CodecTest, HelloFromBeforeReconnectDecodes) {
  auto old = ReadFile(fs::path(DFX_SOURCE_DIR) / "protocol/testdata/hello_before_reconnect.bin");
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  auto decoded = Decode(*old);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(decoded->body == MakeHello().body);
  EXPECT_FALSE(std::get<Hello>(decoded->body).reconnect);
}

TEST(CodecTest, HelloFromBeforeLaunchFailureDecodes) {
  auto old =
      ReadFile(fs::path(DFX_SOURCE_DIR) / "protocol/testdata/hello_before_launch_failure.bin");
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  auto decoded = Decode(*old);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(decoded->body == MakeHello().body);
  Hello failed = std::get<Hello>(MakeHello().body);
  failed.launch_failure = "killed by signal 9 (Killed)";
  auto bytes = Encode(Message{Header{kProtocolVersion, 1, 0, 1}, failed});
  ASSERT_TRUE(bytes.ok());
  auto back = Decode(*bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(std::get<Hello>(back->body).launch_failure, "killed by signal 9 (Killed)");
}
TEST(CodecTest, GoldenDispatch) { CheckGolden("dispatch", MakeDispatch()); }
// Wire bytes from before Dispatch.programFile was appended: they still
// decode, with the field empty (old peers of the same protocol version).
TEST(CodecTest, GoldenDispatchWithoutProgramFileStillDecodes) {
  auto golden =
      ReadFile(fs::path(DFX_SOURCE_DIR) / "protocol/testdata/dispatch_without_program_file.bin");
  ASSERT_TRUE(golden.ok()) << golden.status().ToString();
  auto decoded = Decode(*golden);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  Dispatch expected = std::get<Dispatch>(MakeDispatch().body);
  expected.program_file.clear();
  expected.program_hash = 0;  // appended later still
  EXPECT_TRUE(decoded->body == Body(expected));
}
// Wire bytes from before Dispatch.programHash was appended decode with no
// hash: the agent parses the program they carry, as it always did.
TEST(CodecTest, GoldenDispatchWithoutProgramHashStillDecodes) {
  auto golden =
      ReadFile(fs::path(DFX_SOURCE_DIR) / "protocol/testdata/dispatch_without_program_hash.bin");
  ASSERT_TRUE(golden.ok()) << golden.status().ToString();
  auto decoded = Decode(*golden);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  Dispatch expected = std::get<Dispatch>(MakeDispatch().body);
  expected.program_hash = 0;
  EXPECT_TRUE(decoded->body == Body(expected));
}
// A dispatch by hash (no program text) and the agent's answer when it does
// not keep that program.
TEST(CodecTest, ADispatchByHashAndProgramUnknownRoundTrip) {
  Dispatch d = std::get<Dispatch>(MakeDispatch().body);
  d.program_json.clear();
  DispatchDone unknown{3, 2, DispatchStatus::kProgramUnknown, "program attn is not kept", 0, 0, 0};
  for (const Body& body : {Body(d), Body(unknown)}) {
    auto bytes = Encode(Message{Header{kProtocolVersion, 1, 3, 1}, body});
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    auto back = Decode(*bytes);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_TRUE(back->body == body);
  }
  EXPECT_STREQ(DispatchStatusName(DispatchStatus::kProgramUnknown), "program_unknown");
  EXPECT_EQ(ProgramHash(R"({"kernels": []})"), ProgramHash(R"({"kernels": []})"));
  EXPECT_NE(ProgramHash(R"({"kernels": []})"), ProgramHash(R"({"kernels": [] })"));
}
TEST(CodecTest, GoldenChunk) { CheckGolden("artifact_chunk", MakeChunk()); }
// A chunk encoded before ArtifactChunk.coding was appended (an older agent)
// decodes as raw bytes, in place too.
TEST(CodecTest, ChunkFromBeforeCodingDecodesAsRaw) {
  auto old =
      ReadFile(fs::path(DFX_SOURCE_DIR) / "protocol/testdata/artifact_chunk_before_coding.bin");
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  auto decoded = Decode(*old);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(decoded->body == MakeChunk().body);
  auto view = DecodeChunkView(*old);
  ASSERT_TRUE(view.ok() && view->has_value());
  EXPECT_EQ((*view)->coding, ChunkCoding::kRaw);
  EXPECT_EQ((*view)->raw_size, 0u);
}
TEST(CodecTest, GoldenDispatchDone) { CheckGolden("dispatch_done", MakeDone()); }
// Wire bytes from before DispatchDone.carriesAcceptance was appended (an
// older agent, which always sends DispatchAccepted) decode as carrying none.
TEST(CodecTest, GoldenDispatchDoneWithoutAcceptanceStillDecodes) {
  auto golden =
      ReadFile(fs::path(DFX_SOURCE_DIR) / "protocol/testdata/dispatch_done_without_acceptance.bin");
  ASSERT_TRUE(golden.ok()) << golden.status().ToString();
  auto decoded = Decode(*golden);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  DispatchDone expected = std::get<DispatchDone>(MakeDone().body);
  expected.carries_acceptance = false;
  expected.accepted_held_ns = 0;
  EXPECT_TRUE(decoded->body == Body(expected));
}

TEST(CodecTest, EveryMessageRoundTrips) {
  std::vector<Body> bodies = {
      Ready{{"a2a3 emulator", "a5 emulator"}},
      DispatchAccepted{1, 2, 7000000},
      Progress{1, 2, "running", 77, 5, 9},
      ArtifactBegin{5, 1, 2, "args_dump/args_dump.json", 1000},
      ArtifactEnd{5, 0xdeadbeefcafef00dull},
      Credit{8},
      Credit{0, "ipc:///tmp/dfx-bulk-a1b2c3/s", "0123456789abcdef"},
      Credit{8, "", "", WireCompression::kOff},
      ArtifactAck{5, false, "checksum mismatch"},
      ArtifactAck{6, false, "over budget", true},
      Heartbeat{1, 2, true},
      Cancel{1, 2, "agent lost"},
      Shutdown{"run complete"},
      Error{ErrorCode::kSessionMismatch, "wrong session"},
      GatherRequest{42},
      GatherDone{3},
      Resume{"f00d", false, {}, {}, 0},
      Resume{"",
             true,
             {{7, TransferState::kOpen, 3 << 20}, {8, TransferState::kAcked, 0}},
             {{1, 4, PassKind::kTiming}},
             8},
      Resumed{{{1, 4, PassKind::kGraph}, {2, 0, PassKind::kSingle}}},
      [] {
        Hello h;
        h.ranks = {3};
        h.chips = 1;
        h.reconnect = true;
        h.resume_token = "0123abcd";
        h.open_transfers = {7, 8, 9};
        return Body(h);
      }(),
      // Bigger than the encoder's size hint: exercises the multi-segment path.
      Ready{std::vector<std::string>(100, std::string(1000, 'd'))},
  };
  for (const Body& body : bodies) {
    Message m{Header{kProtocolVersion, 42, 1, 3}, body};
    auto bytes = Encode(m);
    ASSERT_TRUE(bytes.ok());
    auto back = Decode(*bytes);
    ASSERT_TRUE(back.ok()) << BodyName(body) << ": " << back.status().ToString();
    EXPECT_TRUE(back->body == body) << BodyName(body);
  }
}

TEST(CodecTest, EncodeChunkFillsInPlaceAndMatchesEncode) {
  const Message reference = MakeChunk();
  const auto& chunk = std::get<ArtifactChunk>(reference.body);
  std::string_view filled;
  auto bytes = EncodeChunk(
      reference.header, chunk.transfer_id, chunk.offset, chunk.data.size(),
      [&](char* dst, size_t size) -> Result<size_t> {
        std::memcpy(dst, chunk.data.data(), size);
        return size;
      },
      &filled);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(filled, chunk.data) << "the caller sees the payload inside the frame";
  EXPECT_GE(filled.data(), bytes->data());
  EXPECT_LE(filled.data() + filled.size(), bytes->data() + bytes->size());
  auto decoded = Decode(*bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->header, reference.header);
  EXPECT_TRUE(decoded->body == reference.body);

  // A short fill (the file shrank) yields a smaller, still valid chunk.
  auto shorter = EncodeChunk(
      reference.header, 1, 0, 100,
      [](char* dst, size_t) -> Result<size_t> {
        std::memcpy(dst, "abc", 3);
        return 3;
      },
      &filled);
  ASSERT_TRUE(shorter.ok());
  EXPECT_EQ(filled, "abc");
  auto short_decoded = Decode(*shorter);
  ASSERT_TRUE(short_decoded.ok());
  EXPECT_EQ(std::get<ArtifactChunk>(short_decoded->body).data, "abc");

  // A failing fill is the caller's error, not a half-built frame.
  auto failed = EncodeChunk(reference.header, 1, 0, 8,
                            [](char*, size_t) -> Result<size_t> { return NotFound("gone"); });
  EXPECT_EQ(failed.status().code(), Code::kNotFound);
  EXPECT_FALSE(EncodeChunk(reference.header, 1, 0, kMaxChunkBytes + 1,
                           [](char*, size_t size) -> Result<size_t> { return size; })
                   .ok());
}

TEST(CodecTest, ChunkViewPointsIntoTheFrameAndIgnoresOtherMessages) {
  auto bytes = Encode(MakeChunk());
  ASSERT_TRUE(bytes.ok());
  auto view = DecodeChunkView(*bytes);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  ASSERT_TRUE(view->has_value());
  const ChunkView& v = **view;
  EXPECT_EQ(v.header, MakeChunk().header);
  EXPECT_EQ(v.transfer_id, 9u);
  EXPECT_EQ(v.offset, 1u << 20);
  EXPECT_EQ(v.data, std::get<ArtifactChunk>(MakeChunk().body).data);
  EXPECT_GE(v.data.data(), bytes->data()) << "no copy: the view points into the frame";
  EXPECT_LT(v.data.data(), bytes->data() + bytes->size());

  auto other = Encode(MakeDone());
  ASSERT_TRUE(other.ok());
  auto none = DecodeChunkView(*other);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_FALSE(DecodeChunkView(std::string(64, '\xff')).ok());
  EXPECT_FALSE(DecodeChunkView(std::string_view(*bytes).substr(0, 13)).ok());
}

TEST(CodecTest, DecodesMisalignedFrames) {
  auto bytes = Encode(MakeDispatch());
  ASSERT_TRUE(bytes.ok());
  std::string shifted = "x" + *bytes;  // data() + 1 is not word-aligned
  auto decoded = Decode(std::string_view(shifted).substr(1));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(decoded->body == MakeDispatch().body);
}

TEST(CodecTest, TruncatedAndGarbageFramesAreRejected) {
  auto bytes = Encode(MakeDispatch());
  ASSERT_TRUE(bytes.ok());
  for (size_t cut : {size_t{0}, size_t{3}, size_t{8}, bytes->size() / 2, bytes->size() - 8}) {
    auto r = Decode(std::string_view(*bytes).substr(0, cut));
    EXPECT_FALSE(r.ok()) << "cut at " << cut;
  }
  std::string garbage(4096, '\xff');
  EXPECT_FALSE(Decode(garbage).ok());
  std::string zeros(64, '\0');
  EXPECT_FALSE(Decode(zeros).ok());
}

TEST(CodecTest, OversizedChunkIsRejectedOnBothSides) {
  Message m = MakeChunk();
  std::get<ArtifactChunk>(m.body).data.assign(kMaxChunkBytes + 1, 'x');
  EXPECT_FALSE(Encode(m).ok());
  std::string huge(kMaxFrameBytes + 8, '\0');
  auto r = Decode(huge);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exceeds the limit"), std::string::npos);
}

TEST(CodecTest, ValidateChecksVersionSessionRankAndPath) {
  Expectations expect;
  expect.session_id = 0xabcdefull;
  expect.ranks = {3};
  Message ok = MakeDone();
  EXPECT_TRUE(Validate(ok, expect).ok());

  Message wrong_version = ok;
  wrong_version.header.protocol_version = kProtocolVersion + 1;
  auto s = Validate(wrong_version, expect);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("protocol version"), std::string::npos);

  Message wrong_session = ok;
  wrong_session.header.session_id = 1;
  EXPECT_EQ(Validate(wrong_session, expect).code(), Code::kFailedPrecondition);

  Message wrong_rank = ok;
  wrong_rank.header.rank = 9;
  EXPECT_EQ(Validate(wrong_rank, expect).code(), Code::kInvalidArgument);

  Message traversal{ok.header, ArtifactBegin{1, 3, 0, "../../etc/passwd", 10}};
  s = Validate(traversal, expect);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find(".."), std::string::npos);
}

TEST(PathTest, SanitizerAcceptsArtifactNamesAndRejectsEscapes) {
  for (const char* good : {"deps.json", "args_dump/args_dump.json", "scope_stats/scope_stats.jsonl",
                           "merged_swimlane_20260101_120000.json", "args_dump/bin/t0_in-1.bin"}) {
    auto r = SanitizeArtifactPath(good);
    ASSERT_TRUE(r.ok()) << good << ": " << r.status().ToString();
    EXPECT_EQ(*r, good);
  }
  for (const char* bad : {"", "/etc/passwd", "../x", "a/../../x", "a//b", "./a", "a/.", "a\\b",
                          "a/b/", "x\ny", "..", "dir/.."}) {
    EXPECT_FALSE(SanitizeArtifactPath(bad).ok()) << "accepted \"" << bad << "\"";
  }
  EXPECT_FALSE(SanitizeArtifactPath(std::string("a\0b", 3)).ok());
}

}  // namespace
}  // namespace dfx::protocol
