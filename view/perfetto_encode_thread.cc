#include "view/perfetto_encode_thread.h"

#include <cassert>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace dfx::view {

// A command: its op byte, then its fields as the recording side stored
// them (memcpy), a text as its uint32 length and bytes.
enum PerfettoEncodeThread::Op : uint8_t {
  kProcess,
  kThread,
  kBeginSlice,
  kAnnotateInt,
  kAnnotateUint,
  kAnnotateDouble,
  kAnnotateNull,
  kAnnotateBool,
  kAnnotateString,
  kAnnotateNumberText,
  kAnnotateInts,
  kEndSlice,
  kCounterNumberText,
  kCounterInt,
  kFlow,
};

namespace {

template <typename T>
char* Put(char* p, const T& v) {
  std::memcpy(p, &v, sizeof v);
  return p + sizeof v;
}

// Room a text takes: its length, then its bytes.
size_t TextRoom(std::string_view s) { return sizeof(uint32_t) + s.size(); }

char* PutText(char* p, std::string_view s) {
  // The texts are a trace's names, keys and values: far under 4 GiB.
  assert(s.size() <= std::numeric_limits<uint32_t>::max());
  p = Put(p, static_cast<uint32_t>(s.size()));
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

}  // namespace

struct PerfettoEncodeThread::CommandReader {
  const char* p;
  template <typename T>
  T Get() {
    T v;
    std::memcpy(&v, p, sizeof v);
    p += sizeof v;
    return v;
  }
  std::string_view Text() {
    const uint32_t n = Get<uint32_t>();
    const std::string_view s(p, n);
    p += n;
    return s;
  }
};

namespace {

std::unique_ptr<proto_wire::Buffer> NewChunk() {
  auto chunk = std::make_unique<proto_wire::Buffer>();
  chunk->Reserve(PerfettoEncodeThread::kChunkBytes + 4096);
  return chunk;
}

}  // namespace

PerfettoEncodeThread::PerfettoEncodeThread(ChunkedWriter* writer)
    : writer_(writer),
      encoder_(&writer->buffer()),
      chunk_(NewChunk()),
      handoff_(kDepth, NewChunk),
      thread_([this] { Run(); }) {}

PerfettoEncodeThread::~PerfettoEncodeThread() { Stop(/*drop=*/true); }

char* PerfettoEncodeThread::Begin(Op op, size_t n) {
  char* p = chunk_->Reserve(n + 1);
  *p = static_cast<char>(op);
  return p + 1;
}

void PerfettoEncodeThread::Process(int pid, std::string_view name, int sort_index) {
  char* p = Begin(kProcess, 8 + TextRoom(name));
  p = Put(p, pid);
  p = Put(p, sort_index);
  Commit(PutText(p, name));
}

void PerfettoEncodeThread::Thread(int pid, int tid, std::string_view name, int sort_index) {
  char* p = Begin(kThread, 12 + TextRoom(name));
  p = Put(p, pid);
  p = Put(p, tid);
  p = Put(p, sort_index);
  Commit(PutText(p, name));
}

void PerfettoEncodeThread::BeginSlice(int pid, int tid, double ts_us, std::string_view cat,
                                      std::string_view name, bool per_task) {
  char* p = Begin(kBeginSlice, 17 + TextRoom(cat) + TextRoom(name));
  p = Put(p, pid);
  p = Put(p, tid);
  p = Put(p, ts_us);
  p = Put(p, per_task);
  p = PutText(p, cat);
  Commit(PutText(p, name));
}

template <typename Value>
void PerfettoEncodeThread::KeyAndValue(Op op, std::string_view key, Value v) {
  char* p = Begin(op, sizeof v + TextRoom(key));
  p = Put(p, v);
  Commit(PutText(p, key));
}

void PerfettoEncodeThread::AnnotateInt(std::string_view key, int64_t v) {
  KeyAndValue(kAnnotateInt, key, v);
}

void PerfettoEncodeThread::AnnotateUint(std::string_view key, uint64_t v) {
  KeyAndValue(kAnnotateUint, key, v);
}

void PerfettoEncodeThread::AnnotateDouble(std::string_view key, double v) {
  KeyAndValue(kAnnotateDouble, key, v);
}

void PerfettoEncodeThread::AnnotateNull(std::string_view key) {
  Commit(PutText(Begin(kAnnotateNull, TextRoom(key)), key));
}

void PerfettoEncodeThread::AnnotateBool(std::string_view key, bool v) {
  KeyAndValue(kAnnotateBool, key, v);
}

void PerfettoEncodeThread::AnnotateString(std::string_view key, std::string_view text,
                                          bool per_task) {
  char* p = Begin(kAnnotateString, 1 + TextRoom(key) + TextRoom(text));
  p = Put(p, per_task);
  p = PutText(p, key);
  Commit(PutText(p, text));
}

void PerfettoEncodeThread::AnnotateNumberText(std::string_view key, std::string_view text) {
  char* p = Begin(kAnnotateNumberText, TextRoom(key) + TextRoom(text));
  p = PutText(p, key);
  Commit(PutText(p, text));
}

void PerfettoEncodeThread::AnnotateInts(std::string_view key, const int64_t* values, size_t n) {
  char* p = Begin(kAnnotateInts, 8 + 8 * n + TextRoom(key));
  p = Put(p, static_cast<uint64_t>(n));
  if (n != 0) std::memcpy(p, values, 8 * n);
  Commit(PutText(p + 8 * n, key));
}

void PerfettoEncodeThread::EndSlice(double ts_us, double dur_us) {
  char* p = Begin(kEndSlice, 16);
  p = Put(p, ts_us);
  Commit(Put(p, dur_us));
}

void PerfettoEncodeThread::CounterNumberText(int pid, std::string_view name, std::string_view key,
                                             double ts_us, std::string_view text) {
  char* p = Begin(kCounterNumberText, 12 + TextRoom(name) + TextRoom(key) + TextRoom(text));
  p = Put(p, pid);
  p = Put(p, ts_us);
  p = PutText(p, name);
  p = PutText(p, key);
  Commit(PutText(p, text));
}

void PerfettoEncodeThread::CounterInt(int pid, std::string_view name, std::string_view key,
                                      double ts_us, int64_t v) {
  char* p = Begin(kCounterInt, 20 + TextRoom(name) + TextRoom(key));
  p = Put(p, pid);
  p = Put(p, ts_us);
  p = Put(p, v);
  p = PutText(p, name);
  Commit(PutText(p, key));
}

void PerfettoEncodeThread::Flow(uint64_t flow_id, std::string_view name, int from_pid, int from_tid,
                                double from_ts, int to_pid, int to_tid, double to_ts) {
  char* p = Begin(kFlow, 40 + TextRoom(name));
  p = Put(p, flow_id);
  p = Put(p, from_pid);
  p = Put(p, from_tid);
  p = Put(p, from_ts);
  p = Put(p, to_pid);
  p = Put(p, to_tid);
  p = Put(p, to_ts);
  Commit(PutText(p, name));
}

void PerfettoEncodeThread::Run() {
  Chunk chunk;
  while (handoff_.Take(chunk)) {
    if (status_.ok()) Replay(*chunk);
    bytes_written_.store(writer_->bytes_written(), std::memory_order_relaxed);
    chunk->clear();
  }
}

void PerfettoEncodeThread::Replay(const proto_wire::Buffer& chunk) {
  CommandReader r{chunk.data()};
  const char* const end = chunk.data() + chunk.size();
  while (r.p < end) {
    const Op op = static_cast<Op>(*r.p++);
    if (!(op <= kAnnotateInts ? ReplayAnnotation(op, r) : ReplayEvent(op, r))) return;
    writer_->MaybeFlush();
  }
}

// The commands up to kAnnotateInts: tracks and a slice's annotations.
bool PerfettoEncodeThread::ReplayAnnotation(Op op, CommandReader& r) {
  PerfettoTraceEncoder& e = encoder_;
  switch (op) {
    case kProcess: {
      const int pid = r.Get<int>(), sort = r.Get<int>();
      e.Process(pid, r.Text(), sort);
      return true;
    }
    case kThread: {
      const int pid = r.Get<int>(), tid = r.Get<int>(), sort = r.Get<int>();
      e.Thread(pid, tid, r.Text(), sort);
      return true;
    }
    case kBeginSlice: {
      const int pid = r.Get<int>(), tid = r.Get<int>();
      const double ts = r.Get<double>();
      const bool per_task = r.Get<bool>();
      const std::string_view cat = r.Text();
      e.BeginSlice(pid, tid, ts, cat, r.Text(), per_task);
      return true;
    }
    case kAnnotateInt: {
      const int64_t v = r.Get<int64_t>();
      e.AnnotateInt(r.Text(), v);
      return true;
    }
    case kAnnotateUint: {
      const uint64_t v = r.Get<uint64_t>();
      e.AnnotateUint(r.Text(), v);
      return true;
    }
    case kAnnotateDouble: {
      const double v = r.Get<double>();
      e.AnnotateDouble(r.Text(), v);
      return true;
    }
    case kAnnotateNull:
      e.AnnotateNull(r.Text());
      return true;
    case kAnnotateBool: {
      const bool v = r.Get<bool>();
      e.AnnotateBool(r.Text(), v);
      return true;
    }
    case kAnnotateString: {
      const bool per_task = r.Get<bool>();
      const std::string_view key = r.Text();
      e.AnnotateString(key, r.Text(), per_task);
      return true;
    }
    case kAnnotateNumberText: {
      const std::string_view key = r.Text(), text = r.Text();
      if (e.AnnotateNumberText(key, text)) return true;
      status_ = Internal("proto trace: bad number " + std::string(text));
      return false;
    }
    case kAnnotateInts: {
      const uint64_t n = r.Get<uint64_t>();
      int64_t values[8];  // PerfettoTraceEvent::Ints: at most 8
      std::vector<int64_t> more;
      int64_t* v = values;
      if (n > 8) {
        more.resize(n);
        v = more.data();
      }
      if (n != 0) std::memcpy(v, r.p, 8 * n);
      r.p += 8 * n;
      e.AnnotateInts(r.Text(), v, n);
      return true;
    }
    default:
      status_ = Internal("proto trace: no such command");
      return false;
  }
}

// The commands after kAnnotateInts: a slice's end, counters and flows.
bool PerfettoEncodeThread::ReplayEvent(Op op, CommandReader& r) {
  PerfettoTraceEncoder& e = encoder_;
  switch (op) {
    case kEndSlice: {
      const double ts = r.Get<double>(), dur = r.Get<double>();
      e.EndSlice(ts, dur);
      return true;
    }
    case kCounterNumberText: {
      const int pid = r.Get<int>();
      const double ts = r.Get<double>();
      const std::string_view name = r.Text(), key = r.Text(), text = r.Text();
      if (e.CounterNumberText(pid, name, key, ts, text)) return true;
      status_ = Internal("proto trace: bad number " + std::string(text));
      return false;
    }
    case kCounterInt: {
      const int pid = r.Get<int>();
      const double ts = r.Get<double>();
      const int64_t v = r.Get<int64_t>();
      const std::string_view name = r.Text();
      e.CounterInt(pid, name, r.Text(), ts, v);
      return true;
    }
    case kFlow: {
      const uint64_t id = r.Get<uint64_t>();
      const int from_pid = r.Get<int>(), from_tid = r.Get<int>();
      const double from_ts = r.Get<double>();
      const int to_pid = r.Get<int>(), to_tid = r.Get<int>();
      const double to_ts = r.Get<double>();
      const std::string_view name = r.Text();
      e.FlowEnd(true, id, name, from_pid, from_tid, from_ts);
      e.FlowEnd(false, id, name, to_pid, to_tid, to_ts);
      return true;
    }
    default:
      status_ = Internal("proto trace: no such command");
      return false;
  }
}

void PerfettoEncodeThread::Stop(bool drop) {
  if (!thread_.joinable()) return;
  if (drop) {
    handoff_.Drop();
  } else {
    if (!chunk_->empty()) Hand();
    handoff_.Close();
  }
  thread_.join();
}

Status PerfettoEncodeThread::Finish() {
  Stop(/*drop=*/false);
  bytes_written_.store(writer_->bytes_written(), std::memory_order_relaxed);
  return status_;
}

}  // namespace dfx::view
