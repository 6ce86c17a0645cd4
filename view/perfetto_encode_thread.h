// PerfettoEncodeThread: the proto trace's encoder (PerfettoTraceEncoder) on
// a thread of its own. The converter's thread was the wall of a large
// conversion, and a third of its time was the encoder: interning strings,
// building packets. Here the converter's thread only records each call, its
// fields copied into a compact command chunk, and the encoding thread replays
// the chunks in order into the encoder and the trace's ChunkedWriter, on the
// other core. The trace's bytes are the ones the encoder writes when called
// directly: the same calls reach it in the same order.
//
// Chunks of kChunkBytes, at most kDepth of them queued: memory stays bounded
// however long the trace. An encoder call that fails (a number text that is
// not a number) is reported by Finish, and nothing after it is encoded; a
// trace with an error is not committed anyway (TraceWriter::Finish).
//
// One recording thread; the ChunkedWriter is the encoding thread's from the
// constructor until Finish returns, then the caller's again (with encoder(),
// e.g. for PerfettoTraceEncoder::Metadata).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <thread>

#include "common/handoff.h"
#include "common/json_stream.h"
#include "common/status.h"
#include "view/perfetto_trace_encoder.h"
#include "view/proto_wire.h"

namespace dfx::view {

class PerfettoEncodeThread {
 public:
  static constexpr size_t kChunkBytes = 128 << 10;
  static constexpr size_t kDepth = 4;

  // Encodes into `writer` (open; it must outlive this).
  explicit PerfettoEncodeThread(ChunkedWriter* writer);
  // Without Finish: what is still queued is dropped (the trace is abandoned).
  ~PerfettoEncodeThread();
  PerfettoEncodeThread(const PerfettoEncodeThread&) = delete;
  PerfettoEncodeThread& operator=(const PerfettoEncodeThread&) = delete;

  // The calls of PerfettoTraceEncoder, recorded; see there.
  void Process(int pid, std::string_view name, int sort_index);
  void Thread(int pid, int tid, std::string_view name, int sort_index);
  void BeginSlice(int pid, int tid, double ts_us, std::string_view cat, std::string_view name,
                  bool per_task = false);
  void AnnotateInt(std::string_view key, int64_t v);
  void AnnotateUint(std::string_view key, uint64_t v);
  void AnnotateDouble(std::string_view key, double v);
  void AnnotateNull(std::string_view key);
  void AnnotateBool(std::string_view key, bool v);
  void AnnotateString(std::string_view key, std::string_view text, bool per_task = false);
  // Not a number: Finish reports "proto trace: bad number <text>".
  void AnnotateNumberText(std::string_view key, std::string_view text);
  void AnnotateInts(std::string_view key, const int64_t* values, size_t n);
  void EndSlice(double ts_us, double dur_us);
  void CounterNumberText(int pid, std::string_view name, std::string_view key, double ts_us,
                         std::string_view text);
  void CounterInt(int pid, std::string_view name, std::string_view key, double ts_us, int64_t v);
  // Both ends of a flow arrow (FlowEnd 's', then 'f').
  void Flow(uint64_t flow_id, std::string_view name, int from_pid, int from_tid, double from_ts,
            int to_pid, int to_tid, double to_ts);

  // Waits until everything recorded is encoded and stops the thread; the
  // first error of an encoder call, if any.
  Status Finish();
  // The encoder, once Finish returned.
  PerfettoTraceEncoder& encoder() { return encoder_; }
  // The writer's bytes_written() as of the last chunk encoded.
  uint64_t bytes_written() const { return bytes_written_.load(std::memory_order_relaxed); }

 private:
  enum Op : uint8_t;
  using Chunk = std::unique_ptr<proto_wire::Buffer>;

  // Room for a command of at most `n` bytes (a string's bytes included).
  char* Begin(Op op, size_t n);
  // A command of a value and a key (the annotations of one number).
  template <typename Value>
  void KeyAndValue(Op op, std::string_view key, Value v);
  // Ends the command begun last at `end`; hands the chunk over once full.
  void Commit(char* end) {
    chunk_->Advance(end);
    if (chunk_->size() >= kChunkBytes) Hand();
  }
  // Queues the chunk being filled and takes an empty one.
  void Hand() { handoff_.Put(chunk_); }
  void Run();
  struct CommandReader;
  // Replays one chunk's commands into encoder_; stops at the first that fails.
  void Replay(const proto_wire::Buffer& chunk);
  // One command of each half of Op (false: it failed, status_ says why).
  bool ReplayAnnotation(Op op, CommandReader& r);
  bool ReplayEvent(Op op, CommandReader& r);
  void Stop(bool drop);

  ChunkedWriter* writer_;
  PerfettoTraceEncoder encoder_;
  Chunk chunk_;  // the recording side's
  Handoff<Chunk> handoff_;
  Status status_;  // the encoding thread's, read after the join
  std::atomic<uint64_t> bytes_written_{0};
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace dfx::view
