#include "view/perfetto_encode_thread.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "collectors/testing/test_util.h"

namespace dfx::view {
namespace {

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `n` rounds of every call the pipe records; `flow` draws an arrow (the
// direct encoder's two FlowEnds, or the pipe's Flow).
template <typename Encoder, typename FlowFn>
void Calls(Encoder& e, int n, const FlowFn& flow) {
  e.Process(1, "Worker View", 4);
  for (int i = 0; i < n; ++i) {
    const double ts = 10.0 + i * 0.125;
    e.Thread(1, 100 + i % 7, "AIV_" + std::to_string(i % 7), i % 3 - 1);
    // A task's own name and hint (per_task), and shared keys and values.
    e.BeginSlice(1, 100 + i % 7, ts, "event", "add(t" + std::to_string(i) + ")", true);
    e.AnnotateInt("taskId", -i);
    e.AnnotateUint("big", ~uint64_t{0} - static_cast<uint64_t>(i));
    e.AnnotateDouble("finish-time-us", ts + 0.001);
    e.AnnotateNull("none");
    e.AnnotateBool("predicated_pass", i % 3 == 0);
    e.AnnotateString("event-hint", "Task:" + std::to_string(i) + ", FuncId:0", true);
    e.AnnotateString("phase", "complete");
    e.AnnotateNumberText("whole", "1000");
    const int64_t depths[3] = {i, -1, 2};
    e.AnnotateInts("shared", depths, 3);
    e.EndSlice(ts, i % 5 == 0 ? std::nan("") : 0.5);
    e.CounterInt(2, "queue", "depth", ts, i % 11);
    e.CounterNumberText(2, "queue", "fill", ts, i % 2 ? "0.25" : "3");
    flow(e, static_cast<uint64_t>(i + 1), i % 2 ? "dependency" : "complete\u2192ready", ts);
  }
}

TEST(PerfettoEncodeThreadTest, WritesTheBytesTheEncoderWritesWhenCalledDirectly) {
  collectors::testing::TempDir dir;
  // 40k rounds record some 20 MB of commands: hundreds of chunks, each
  // waiting for room behind kDepth others.
  const int n = 40000;
  std::string direct;
  size_t before_metadata = 0;
  {
    PerfettoTraceEncoder e(&direct);
    Calls(e, n, [](PerfettoTraceEncoder& d, uint64_t id, std::string_view name, double ts) {
      d.FlowEnd(true, id, name, 1, 100, ts);
      d.FlowEnd(false, id, name, 3, 200, ts + 1);
    });
    before_metadata = direct.size();
    e.Metadata(R"({"level":4})");
  }
  const auto path = dir.path() / "piped.pftrace";
  ChunkedWriter writer;
  ASSERT_TRUE(writer.Open(path, false, /*background=*/true).ok());
  PerfettoEncodeThread pipe(&writer);
  Calls(pipe, n, [](PerfettoEncodeThread& p, uint64_t id, std::string_view name, double ts) {
    p.Flow(id, name, 1, 100, ts, 3, 200, ts + 1);
  });
  ASSERT_TRUE(pipe.Finish().ok());
  EXPECT_EQ(pipe.bytes_written(), before_metadata);
  pipe.encoder().Metadata(R"({"level":4})");
  ASSERT_TRUE(writer.Commit().ok());
  const std::string piped = Slurp(path);
  ASSERT_GT(direct.size(), 4u * PerfettoEncodeThread::kDepth * PerfettoEncodeThread::kChunkBytes);
  EXPECT_EQ(piped.size(), direct.size());
  EXPECT_TRUE(piped == direct) << "the piped trace differs from the direct one";
}

// What the pipe wrote before Finish, with `after` rounds of calls recorded
// after a number text that is not a number.
uint64_t BytesAfterABadNumber(const std::filesystem::path& path, int after, Status* status) {
  ChunkedWriter writer;
  if (!writer.Open(path, false, true).ok()) return 0;
  PerfettoEncodeThread pipe(&writer);
  auto flow = [](PerfettoEncodeThread& p, uint64_t id, std::string_view name, double ts) {
    p.Flow(id, name, 1, 100, ts, 3, 200, ts + 1);
  };
  Calls(pipe, 1000, flow);
  pipe.BeginSlice(1, 2, 5.0, "event", "bad");
  pipe.AnnotateNumberText("n", "12abc");
  pipe.EndSlice(5.0, 1.0);
  Calls(pipe, after, flow);
  *status = pipe.Finish();
  const uint64_t bytes = pipe.bytes_written();
  writer.Abort();
  return bytes;
}

TEST(PerfettoEncodeThreadTest, ABadNumberIsFinishsErrorAndNothingAfterItIsEncoded) {
  collectors::testing::TempDir dir;
  Status alone, followed;
  const uint64_t a = BytesAfterABadNumber(dir.path() / "a", 0, &alone);
  const uint64_t b = BytesAfterABadNumber(dir.path() / "b", 20000, &followed);
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.message().find("proto trace: bad number 12abc"), std::string::npos)
      << alone.message();
  EXPECT_EQ(followed.message(), alone.message());
  EXPECT_GT(a, 0u);
  EXPECT_EQ(b, a) << "calls after the failed one were encoded";
}

TEST(PerfettoEncodeThreadTest, DroppedWithoutFinishItStopsAndCommitsNothing) {
  collectors::testing::TempDir dir;
  const auto path = dir.path() / "dropped.pftrace";
  {
    ChunkedWriter writer;
    ASSERT_TRUE(writer.Open(path, false, true).ok());
    PerfettoEncodeThread pipe(&writer);
    Calls(pipe, 20000, [](PerfettoEncodeThread& p, uint64_t id, std::string_view name, double ts) {
      p.Flow(id, name, 1, 100, ts, 3, 200, ts + 1);
    });
  }  // the pipe first (its thread joined), then the writer
  EXPECT_FALSE(std::filesystem::exists(path));
  size_t left = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path())) ++left;
  EXPECT_EQ(left, 0u) << "the temporary file was left behind";
}

}  // namespace
}  // namespace dfx::view
