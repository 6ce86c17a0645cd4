#include "rank_agent/artifact_sender.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectors/artifact_layout.h"
#include "common/file_util.h"
#include "common/testing/temp_dirs.h"
#include "protocol/codec.h"
#include "rank_agent/spool_sum.h"

namespace dfx::rank_agent {
namespace {

namespace fs = std::filesystem;
using namespace dfx::protocol;

constexpr uint64_t kSession = 0xa11;

uint64_t SumOf(const std::string& bytes) {
  Checksum64 sum;
  sum.Update(bytes.data(), bytes.size());
  return sum.Digest();
}

// A sender on a link to an inproc ROUTER played by the test, with a spool
// under a fresh directory: chunks of 4 bytes.
class SenderBench {
 public:
  explicit SenderBench(const std::string& name)
      : dir_{FreshTestDir("artifact_sender_test_" + std::to_string(::getpid()) + "_" + name)},
        endpoint_("inproc://sender-test-" + name + "-" + std::to_string(::getpid())),
        router_(RouterChannel::Bind(context_, endpoint_)) {
    options_.coordinator = endpoint_;
    options_.session_id = kSession;
    options_.spool_root = dir_ / "spool";
    options_.chunk_bytes = 4;
    link_.emplace(context_, options_);
    connected_ = link_->Connect("sender-" + name, {0}).ok();
    sender_.emplace(context_, *link_, options_, spool_);
  }
  bool connected() const { return connected_ && router_.ok(); }
  ArtifactSender& sender() { return *sender_; }
  fs::path SessionDir() const { return collectors::SessionSpoolDir(options_.spool_root, kSession); }
  fs::path DispatchDir(int32_t rank, uint32_t k) const {
    return SessionDir() / collectors::DispatchDirPath(rank, k);
  }
  // Writes a spool file of dispatch (rank, k).
  fs::path Spool(int32_t rank, uint32_t k, const std::string& rel, const std::string& bytes) {
    const fs::path file = DispatchDir(rank, k) / rel;
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << bytes;
    return file;
  }
  // Everything the sender sent up to now, in order.
  std::vector<Message> Received() {
    std::vector<Message> out;
    for (;;) {
      auto r = router_->Receive(out.empty() ? 1000 : 100);
      if (!r.ok() || !r->frame) return out;
      auto m = Decode(r->frame->bytes);
      if (m.ok()) out.push_back(*m);
    }
  }
  // Pumps until it has nothing more to send right away.
  void PumpAll() {
    while (sender_->Pump()) {
    }
  }

 private:
  fs::path dir_;
  protocol::Context context_;
  std::string endpoint_;
  Result<RouterChannel> router_;
  AgentOptions options_;
  SpoolDirs spool_;
  std::optional<CoordinatorLink> link_;
  std::optional<ArtifactSender> sender_;
  bool connected_ = false;
};

template <typename T>
std::vector<T> Only(const std::vector<Message>& messages) {
  std::vector<T> out;
  for (const Message& m : messages) {
    if (const auto* body = std::get_if<T>(&m.body)) out.push_back(*body);
  }
  return out;
}

TEST(ArtifactSenderTest, ChunksGoOnlyWithinTheCreditWindow) {
  SenderBench bench("credits");
  ASSERT_TRUE(bench.connected());
  const std::string bytes = "0123456789";  // 3 chunks of at most 4 bytes
  bench.Spool(0, 1, "pmu.csv", bytes);
  bench.sender().QueueFile(0, 1, bench.DispatchDir(0, 1), "pmu.csv");

  bench.PumpAll();  // no credit yet: only the announcement
  auto first = bench.Received();
  ASSERT_EQ(first.size(), 1u);
  const auto begin = std::get<ArtifactBegin>(first[0].body);
  EXPECT_EQ(begin.path, "pmu.csv");
  EXPECT_EQ(begin.size, bytes.size());
  EXPECT_EQ(begin.k, 1u);

  bench.sender().OnCredit(Credit{2, "", ""});
  bench.PumpAll();
  auto second = bench.Received();
  auto chunks = Only<ArtifactChunk>(second);
  ASSERT_EQ(second.size(), 2u) << "two credits, two chunks, nothing else";
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].offset, 0u);
  EXPECT_EQ(chunks[0].data, "0123");
  EXPECT_EQ(chunks[1].offset, 4u);
  EXPECT_EQ(chunks[1].data, "4567");

  bench.sender().OnCredit(Credit{5, "", ""});
  bench.PumpAll();
  auto third = bench.Received();
  ASSERT_EQ(third.size(), 2u);
  EXPECT_EQ(std::get<ArtifactChunk>(third[0].body).data, "89");
  const auto end = std::get<ArtifactEnd>(third[1].body);
  EXPECT_EQ(end.transfer_id, begin.transfer_id);
  EXPECT_EQ(end.checksum, SumOf(bytes)) << "hashed while sent: no checksum was kept";
}

TEST(ArtifactSenderTest, TheChecksumKeptAtWriteIsTheOneSent) {
  SenderBench bench("kept-sum");
  ASSERT_TRUE(bench.connected());
  const fs::path file = bench.Spool(0, 0, "trace.json", "written");
  ASSERT_TRUE(WriteSum(bench.DispatchDir(0, 0), "trace.json").ok());
  // The file changes in the spool after its checksum was kept: the
  // coordinator's check then fails the stream instead of accepting it.
  std::ofstream(file, std::ios::binary) << "WRITTEN";
  bench.sender().OnCredit(Credit{8, "", ""});
  bench.sender().QueueFile(0, 0, bench.DispatchDir(0, 0), "trace.json");
  bench.PumpAll();
  auto ends = Only<ArtifactEnd>(bench.Received());
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].checksum, SumOf("written"));
}

TEST(ArtifactSenderTest, AFileLeavesTheSpoolOnlyOnceAcknowledged) {
  SenderBench bench("ack");
  ASSERT_TRUE(bench.connected());
  const fs::path kept = bench.Spool(0, 2, "a.bin", "aaaa");
  const fs::path gone = bench.Spool(0, 3, "b.bin", "bbbb");
  ASSERT_TRUE(WriteSum(bench.DispatchDir(0, 3), "b.bin").ok());
  bench.sender().OnCredit(Credit{8, "", ""});
  bench.sender().QueueFile(0, 2, bench.DispatchDir(0, 2), "a.bin");
  bench.sender().QueueFile(0, 3, bench.DispatchDir(0, 3), "b.bin");
  bench.PumpAll();
  auto begins = Only<ArtifactBegin>(bench.Received());
  ASSERT_EQ(begins.size(), 2u);
  EXPECT_TRUE(fs::exists(kept) && fs::exists(gone)) << "sent is not confirmed";
  EXPECT_TRUE(bench.sender().DirInFlight(bench.DispatchDir(0, 3)));

  bench.sender().OnAck(ArtifactAck{begins[0].transfer_id, false, "checksum mismatch"});
  EXPECT_TRUE(fs::exists(kept)) << "a rejected file stays in the spool";
  bench.sender().OnAck(ArtifactAck{begins[1].transfer_id, true, ""});
  EXPECT_FALSE(fs::exists(gone));
  EXPECT_FALSE(fs::exists(SumPath(bench.DispatchDir(0, 3), "b.bin")));
  EXPECT_FALSE(fs::exists(bench.DispatchDir(0, 3))) << "the emptied dispatch dir goes too";
  EXPECT_TRUE(fs::exists(bench.SessionDir())) << "the session dir is shared with other agents";
  EXPECT_FALSE(bench.sender().DirInFlight(bench.DispatchDir(0, 3)));
  EXPECT_FALSE(bench.sender().DirInFlight(bench.DispatchDir(0, 2)));
  EXPECT_EQ(bench.sender().unconfirmed(), 0u);
}

TEST(ArtifactSenderTest, ADispatchDoneFollowsItsFiles) {
  SenderBench bench("done-order");
  ASSERT_TRUE(bench.connected());
  bench.Spool(0, 4, "x.bin", "xx");
  bench.sender().QueueFile(0, 4, bench.DispatchDir(0, 4), "x.bin");
  DispatchDone done;
  done.rank = 0;
  done.k = 4;
  done.artifact_count = 1;
  bench.sender().QueueDone(done);
  bench.PumpAll();  // no credit: the Done waits behind the file
  EXPECT_TRUE(Only<DispatchDone>(bench.Received()).empty());
  bench.sender().OnCredit(Credit{1, "", ""});
  bench.PumpAll();
  auto rest = bench.Received();
  ASSERT_EQ(rest.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<ArtifactChunk>(rest[0].body));
  EXPECT_TRUE(std::holds_alternative<ArtifactEnd>(rest[1].body));
  EXPECT_EQ(std::get<DispatchDone>(rest[2].body).k, 4u);
  EXPECT_TRUE(bench.sender().idle());
}

// A reconnect (docs/design.md §9): the stream under way goes on from the
// offset the coordinator holds, read again from the spool; a stream whose
// End went but which the coordinator never saw begin goes again from byte 0
// under its id; one the coordinator verified (its ack lost) leaves the
// spool; the credit window is the Resume's.
TEST(ArtifactSenderTest, AResumeContinuesEachStreamWhereTheCoordinatorHoldsIt) {
  SenderBench bench("resume");
  ASSERT_TRUE(bench.connected());
  const fs::path done = bench.Spool(0, 1, "deps.json", "abcdef");  // End sent, acked there
  bench.Spool(0, 1, "name_map.json", "ghij");                      // End sent, Begin lost
  const std::string big = "0123456789";                            // under way
  bench.Spool(0, 1, "pmu.csv", big);
  for (const char* rel : {"deps.json", "name_map.json", "pmu.csv"}) {
    bench.sender().QueueFile(0, 1, bench.DispatchDir(0, 1), rel);
  }
  bench.sender().OnCredit(Credit{5, "", ""});
  bench.PumpAll();  // deps (2 chunks), name_map (1), pmu.csv: 2 chunks of 3
  auto before = bench.Received();
  const auto begins = Only<ArtifactBegin>(before);
  ASSERT_EQ(begins.size(), 3u);
  std::vector<uint64_t> open = bench.sender().OpenTransfers();
  ASSERT_EQ(open.size(), 3u) << "two ended and unacknowledged, one under way";

  Resume resume;
  resume.reconnected = true;
  resume.credits = 8;
  resume.transfers = {{begins[0].transfer_id, TransferState::kAcked, 0},
                      {begins[1].transfer_id, TransferState::kUnknown, 0},
                      {begins[2].transfer_id, TransferState::kOpen, 4}};
  bench.sender().OnResume(resume);
  EXPECT_FALSE(fs::exists(done)) << "verified there: the spool copy goes";
  bench.PumpAll();
  auto after = bench.Received();
  std::map<uint64_t, std::string> bytes;
  std::map<uint64_t, uint64_t> first_offset;
  for (const auto& c : Only<ArtifactChunk>(after)) {
    if (!first_offset.count(c.transfer_id)) first_offset[c.transfer_id] = c.offset;
    bytes[c.transfer_id] += c.data;
  }
  const auto again = Only<ArtifactBegin>(after);
  ASSERT_EQ(again.size(), 1u) << "only the stream never begun there begins again";
  EXPECT_EQ(again[0].transfer_id, begins[1].transfer_id);
  EXPECT_EQ(first_offset[begins[1].transfer_id], 0u);
  EXPECT_EQ(bytes[begins[1].transfer_id], "ghij");
  EXPECT_EQ(first_offset[begins[2].transfer_id], 4u) << "the coordinator held 4 bytes";
  EXPECT_EQ(bytes[begins[2].transfer_id], "456789");
  std::map<uint64_t, uint64_t> sums;
  for (const auto& e : Only<ArtifactEnd>(after)) sums[e.transfer_id] = e.checksum;
  EXPECT_EQ(sums[begins[1].transfer_id], SumOf("ghij"));
  EXPECT_EQ(sums[begins[2].transfer_id], SumOf(big)) << "the checksum covers the whole file";
  EXPECT_FALSE(sums.count(begins[0].transfer_id));
}

}  // namespace
}  // namespace dfx::rank_agent
