#include "coordinator/artifact_receiver.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/metrics.h"
#include "coordinator/testing/loopback.h"
#include "protocol/chunk_zstd.h"

namespace dfx::coordinator {
namespace {

namespace fs = std::filesystem;
using collectors::ArtifactEntry;
using collectors::ArtifactState;
using testing::FakeAgent;
using testing::MakeHello;

constexpr uint64_t kSession = 0xa11;

uint64_t Sum(const std::string& s) {
  Checksum64 c;
  c.Update(s.data(), s.size());
  return c.Digest();
}

class ArtifactReceiverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dfx_receiver_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "dfx_outputs");
    endpoint_ = testing::UniqueInproc("receiver");
    auto r = protocol::RouterChannel::Bind(context_, endpoint_);
    ASSERT_TRUE(r.ok());
    router_ = std::move(*r);
    AdmissionPolicy policy;
    policy.session = kSession;
    policy.num_ranks = 2;
    policy.modes = {protocol::AgentMode::kOneShot};
    registry_ = std::make_unique<AgentRegistry>(router_, clock_, policy);
    ReceiverOptions options;
    options.credit_window = 2;
    receiver_ =
        std::make_unique<ArtifactReceiver>(dir_ / "dfx_outputs", *registry_, ledger_, options);
    peer_ = std::make_unique<FakeAgent>(context_, endpoint_, "rank-1", kSession);
    peer_->Send(1, MakeHello({1}, 7, kSession));
    for (int i = 0; i < 500; ++i) {
      auto f = router_.Receive(10);
      if (f.ok() && f->frame) break;
    }
    auto admitted =
        registry_->Admit("rank-1", protocol::Header{protocol::kProtocolVersion, 0, 1, 1},
                         MakeHello({1}, 7, kSession));
    agent_ = std::get<AgentRegistry::Admitted>(admitted).agent;
  }
  // The receiver's writer thread may still be carrying out an abort whose
  // ack went out already: end it before removing what it writes into.
  void TearDown() override {
    receiver_.reset();
    fs::remove_all(dir_);
  }

  // Runs the writer until `peer` got an ack (or gives up).
  std::optional<protocol::ArtifactAck> AwaitAck() {
    for (int i = 0; i < 500; ++i) {
      receiver_->TakeWriterResults();
      auto m = peer_->Receive(10);
      if (m) {
        if (auto* ack = std::get_if<protocol::ArtifactAck>(&m->body)) return *ack;
        if (auto* credit = std::get_if<protocol::Credit>(&m->body)) credits_ += credit->chunks;
      }
    }
    return std::nullopt;
  }
  // Collects the credits that follow the acks (sent once per batch of results).
  void DrainCredits() {
    for (int i = 0; i < 20; ++i) {
      receiver_->TakeWriterResults();
      auto m = peer_->Receive(10);
      if (!m) continue;
      if (auto* credit = std::get_if<protocol::Credit>(&m->body)) credits_ += credit->chunks;
    }
  }
  void Chunk(uint64_t id, uint64_t offset, const std::string& data) {
    protocol::FrameBytes frame(data);
    receiver_->OnChunk(*agent_, id, offset, frame.view(), frame);
  }

  fs::path dir_;
  FakeClock clock_;
  protocol::Context context_;
  std::string endpoint_;
  protocol::RouterChannel router_;
  std::unique_ptr<AgentRegistry> registry_;
  ListLedger ledger_;
  std::unique_ptr<ArtifactReceiver> receiver_;
  std::unique_ptr<FakeAgent> peer_;
  AgentState* agent_ = nullptr;
  uint32_t credits_ = 0;
};

// --metrics: a window used up by unwritten chunks is a credit withheld; a
// chunk beyond it is one without credit (common/metrics.h).
TEST_F(ArtifactReceiverTest, AUsedUpWindowAndAChunkWithoutCreditAreCounted) {
  const uint64_t withheld = metrics::CreditsWithheld().Value();
  const uint64_t without = metrics::ChunksWithoutCredit().Value();
  receiver_->GrantCredits(*agent_);  // the window: 2
  EXPECT_TRUE(receiver_->TakeCredit(*agent_));
  EXPECT_EQ(metrics::CreditsWithheld().Value(), withheld);
  EXPECT_TRUE(receiver_->TakeCredit(*agent_));
  EXPECT_EQ(metrics::CreditsWithheld().Value(), withheld + 1);
  EXPECT_FALSE(receiver_->TakeCredit(*agent_));
  EXPECT_EQ(metrics::ChunksWithoutCredit().Value(), without + 1);
}

TEST_F(ArtifactReceiverTest, AVerifiedStreamIsRenamedIntoPlaceAndAcknowledged) {
  const std::string a = "first half, ", b = "second half";
  receiver_->OnBegin(*agent_, protocol::ArtifactBegin{5, 1, 0, "deps.json", a.size() + b.size()},
                     std::nullopt);
  Chunk(5, 0, a);
  Chunk(5, a.size(), b);
  receiver_->OnEnd(*agent_, protocol::ArtifactEnd{5, Sum(a + b)});
  auto ack = AwaitAck();
  ASSERT_TRUE(ack.has_value());
  EXPECT_TRUE(ack->ok) << ack->error;
  EXPECT_EQ(ack->transfer_id, 5u);
  DrainCredits();
  EXPECT_EQ(credits_, 2u) << "each written chunk gives its credit back";
  const fs::path file = dir_ / "dfx_outputs/rank1/d0/deps.json";
  auto content = ReadFile(file);
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(*content, a + b);
  ASSERT_EQ(ledger_.entries().size(), 1u);
  EXPECT_EQ(ledger_.entries()[0].path, "rank1/d0/deps.json");
  EXPECT_EQ(ledger_.entries()[0].status, ArtifactState::kOk);
  EXPECT_EQ(ledger_.entries()[0].checksum, Sum(a + b));
  EXPECT_EQ(receiver_->bytes_received(), a.size() + b.size());
  EXPECT_TRUE(receiver_->Idle());
}

TEST_F(ArtifactReceiverTest, AChecksumMismatchLeavesNoFileUnderTheFinalName) {
  receiver_->OnBegin(*agent_, protocol::ArtifactBegin{6, 1, 2, "pmu.csv", 4}, std::nullopt);
  Chunk(6, 0, "abcd");
  receiver_->OnEnd(*agent_, protocol::ArtifactEnd{6, Sum("abce")});
  auto ack = AwaitAck();
  ASSERT_TRUE(ack.has_value());
  EXPECT_FALSE(ack->ok);
  EXPECT_NE(ack->error.find("checksum mismatch"), std::string::npos) << ack->error;
  EXPECT_FALSE(fs::exists(dir_ / "dfx_outputs/rank1/d2/pmu.csv"));
  EXPECT_TRUE(collectors::ListArtifactFiles(dir_ / "dfx_outputs").empty())
      << "no temporary file left either";
  EXPECT_EQ(ledger_.entries()[0].status, ArtifactState::kFailed);
  EXPECT_FALSE(ledger_.entries()[0].checksum.has_value());
}

TEST_F(ArtifactReceiverTest, OutOfOrderAndOversizedChunksFailTheStream) {
  receiver_->OnBegin(*agent_, protocol::ArtifactBegin{7, 1, 0, "a.json", 4}, std::nullopt);
  Chunk(7, 2, "ab");  // offset 2 before 0
  receiver_->OnEnd(*agent_, protocol::ArtifactEnd{7, Sum("ab")});
  auto ack = AwaitAck();
  ASSERT_TRUE(ack.has_value());
  EXPECT_FALSE(ack->ok);
  EXPECT_NE(ack->error.find("offset 2"), std::string::npos) << ack->error;

  receiver_->OnBegin(*agent_, protocol::ArtifactBegin{8, 1, 0, "b.json", 2}, std::nullopt);
  Chunk(8, 0, "abc");
  receiver_->OnEnd(*agent_, protocol::ArtifactEnd{8, Sum("abc")});
  ack = AwaitAck();
  ASSERT_TRUE(ack.has_value());
  EXPECT_FALSE(ack->ok);
  EXPECT_NE(ack->error.find("announced size"), std::string::npos) << ack->error;
  DrainCredits();
  EXPECT_EQ(credits_, 2u) << "dropped chunks give their credit back too";
}

TEST_F(ArtifactReceiverTest, ADestinationThroughALinkIsRefused) {
  fs::create_directories(dir_ / "outside");
  fs::create_directories(dir_ / "dfx_outputs/rank1");
  fs::create_directory_symlink(dir_ / "outside", dir_ / "dfx_outputs/rank1/d0");
  receiver_->OnBegin(*agent_, protocol::ArtifactBegin{9, 1, 0, "deps.json", 1}, std::nullopt);
  auto ack = AwaitAck();
  ASSERT_TRUE(ack.has_value());
  EXPECT_FALSE(ack->ok);
  EXPECT_NE(ack->error.find("symbolic link"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir_ / "outside"));
}

TEST_F(ArtifactReceiverTest, AnAgentThatDiesFailsItsOpenStreams) {
  receiver_->OnBegin(*agent_, protocol::ArtifactBegin{10, 1, 0, "big.bin", 100}, std::nullopt);
  Chunk(10, 0, "0123456789");
  receiver_->AbortAgent("rank-1", "silent for 10 s");
  for (int i = 0; i < 200 && !receiver_->Idle(); ++i) {
    receiver_->TakeWriterResults();
    peer_->Receive(5);
  }
  EXPECT_TRUE(receiver_->Idle());
  ASSERT_EQ(ledger_.entries().size(), 1u);
  EXPECT_EQ(ledger_.entries()[0].status, ArtifactState::kFailed);
  EXPECT_NE(ledger_.entries()[0].error.find("silent for 10 s"), std::string::npos);
  EXPECT_TRUE(collectors::ListArtifactFiles(dir_ / "dfx_outputs").empty());
}

// A zstd-coded chunk lands as the file's bytes; its entry records the
// bytes the wire carried beside the file's size.
TEST_F(ArtifactReceiverTest, AZstdChunkLandsDecompressedAndItsWireBytesAreRecorded) {
  std::string raw;
  for (int i = 0; i < 2000; ++i) raw += "{\"task\": " + std::to_string(i % 17) + "},\n";
  std::string frame;
  protocol::ChunkCompressor c;
  ASSERT_TRUE(c.Compress(raw, &frame).ok());
  receiver_->OnBegin(*agent_, protocol::ArtifactBegin{3, 1, 0, "deps.json", raw.size()},
                     std::nullopt);
  protocol::FrameBytes bytes(frame);
  receiver_->OnChunk(*agent_, 3, 0, bytes.view(), bytes, protocol::ChunkCoding::kZstd, raw.size());
  receiver_->OnEnd(*agent_, protocol::ArtifactEnd{3, Sum(raw)});
  auto ack = AwaitAck();
  ASSERT_TRUE(ack.has_value());
  EXPECT_TRUE(ack->ok) << ack->error;
  auto content = ReadFile(dir_ / "dfx_outputs/rank1/d0/deps.json");
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(*content, raw);
  ASSERT_EQ(ledger_.entries().size(), 1u);
  EXPECT_EQ(ledger_.entries()[0].wire_bytes, frame.size());
  EXPECT_LT(frame.size() * 4, raw.size());
  EXPECT_EQ(receiver_->wire_totals().zstd_streams, 1u);
  EXPECT_EQ(receiver_->WireChoice(), "zstd on 1 of 1 streams");
}

// A chunk whose frame holds more (or less) than it declares fails its
// stream, named; nothing lands under the final name.
TEST_F(ArtifactReceiverTest, AZstdChunkThatLiesFailsItsStream) {
  const std::string raw(100000, 'a');
  std::string frame;
  protocol::ChunkCompressor c;
  ASSERT_TRUE(c.Compress(raw, &frame).ok());
  receiver_->OnBegin(*agent_, protocol::ArtifactBegin{4, 1, 0, "deps.json", 1000}, std::nullopt);
  protocol::FrameBytes bytes(frame);
  receiver_->OnChunk(*agent_, 4, 0, bytes.view(), bytes, protocol::ChunkCoding::kZstd, 1000);
  receiver_->OnEnd(*agent_, protocol::ArtifactEnd{4, Sum(raw)});
  auto ack = AwaitAck();
  ASSERT_TRUE(ack.has_value());
  EXPECT_FALSE(ack->ok);
  EXPECT_FALSE(ack->keep_in_spool);
  EXPECT_NE(ack->error.find("declares 1000 raw bytes but its frame holds 100000"),
            std::string::npos)
      << ack->error;
  EXPECT_FALSE(fs::exists(dir_ / "dfx_outputs/rank1/d0/deps.json"));
}

// Past the byte budget a stream is refused at its Begin, the agent told to
// keep it, and it is recorded in_spool; one that fits still goes through.
TEST_F(ArtifactReceiverTest, AStreamPastTheBudgetIsRefusedAndLeftInTheSpool) {
  ReceiverOptions options;
  options.credit_window = 2;
  options.max_run_bytes = 100;
  receiver_.reset();
  receiver_ =
      std::make_unique<ArtifactReceiver>(dir_ / "dfx_outputs", *registry_, ledger_, options);
  const std::string small(60, 's');
  receiver_->OnBegin(*agent_, protocol::ArtifactBegin{1, 1, 0, "a.json", small.size()},
                     std::nullopt);
  receiver_->OnBegin(*agent_, protocol::ArtifactBegin{2, 1, 0, "b.json", 50}, std::nullopt);
  auto refused = AwaitAck();
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->transfer_id, 2u);
  EXPECT_FALSE(refused->ok);
  EXPECT_TRUE(refused->keep_in_spool);
  EXPECT_NE(refused->error.find("past --max-run-bytes 100"), std::string::npos) << refused->error;
  // Chunks of the refused stream already on the way are dropped quietly.
  Chunk(2, 0, std::string(50, 'b'));
  Chunk(1, 0, small);
  receiver_->OnEnd(*agent_, protocol::ArtifactEnd{1, Sum(small)});
  auto ok = AwaitAck();
  ASSERT_TRUE(ok.has_value());
  EXPECT_TRUE(ok->ok) << ok->error;
  EXPECT_TRUE(fs::exists(dir_ / "dfx_outputs/rank1/d0/a.json"));
  EXPECT_FALSE(fs::exists(dir_ / "dfx_outputs/rank1/d0/b.json"));
  ASSERT_EQ(receiver_->over_budget(), std::vector<std::string>{"rank1/d0/b.json"});
  bool recorded = false;
  for (const ArtifactEntry& e : ledger_.entries()) {
    if (e.path == "rank1/d0/b.json") recorded = e.status == ArtifactState::kInSpool;
  }
  EXPECT_TRUE(recorded);
}

}  // namespace
}  // namespace dfx::coordinator
