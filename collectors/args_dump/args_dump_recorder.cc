// Args dump recorder and writer (docs/formats.md §8).
//
// A real producer/consumer, as the reference's per-thread arena and host
// collector: Capture copies the payload into a bounded circular arena; a drain
// thread appends the arena's bytes, in order, to args.bin (under its temporary
// name), optionally rate-limited to model the host collector's drain speed.
// When the arena has no room, Capture parks until the drain frees enough, up
// to drain_timeout_ms, then fails the dispatch with DeadlineExceeded.
//
// Because payload bytes enter the arena and leave it for args.bin in one FIFO
// order, an entry's bin_offset is the arena's monotonic write position at
// capture time (host collection order).
//
// Metadata entries live in a preallocated array; the arena is one allocation
// made in the constructor. Capture never allocates.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "collectors/args_dump/args_dump_keys.h"
#include "collectors/artifact_layout.h"
#include "collectors/internal/compiled_format.h"
#include "collectors/internal/fixed_string.h"
#include "collectors/internal/lazy_array.h"
#include "collectors/recorders.h"
#include "common/enum_text.h"
#include "common/file_util.h"
#include "common/json_stream.h"
#include "common/log.h"

namespace dfx::collectors {
namespace {

namespace keys = args_dump_keys;

using SteadyClock = std::chrono::steady_clock;

struct Entry {
  DumpArgMeta meta;
  uint64_t bin_offset = 0;
  uint64_t bin_size = 0;
  bool truncated = false;
};

constexpr auto kRoleText = MakeEnumTable<DumpRole>(
    {
        {DumpRole::kInput, keys::kRoleInput.c_str()},
        {DumpRole::kOutput, keys::kRoleOutput.c_str()},
        {DumpRole::kInout, keys::kRoleInout.c_str()},
    },
    keys::kRoleInput.c_str());
const char* RoleName(DumpRole r) { return kRoleText.Name(r); }

constexpr auto kStageText = MakeEnumTable<DumpStage>(
    {
        {DumpStage::kBeforeDispatch, keys::kStageBefore.c_str()},
        {DumpStage::kAfterCompletion, keys::kStageAfter.c_str()},
    },
    keys::kStageAfter.c_str());
const char* StageName(DumpStage s) { return kStageText.Name(s); }

// The counts of the manifest's summary.
struct Counts {
  uint64_t before = 0, after = 0, in = 0, out = 0, inout = 0, bytes = 0;
};

// The scalar `value` of a manifest entry, per the reference writer's rules.
void WriteScalarValue(ChunkedWriter& w, std::string_view dtype, uint64_t bits) {
  if (dtype == "FLOAT32") {
    uint32_t b32 = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &b32, sizeof f);
    if (std::isnan(f)) {
      w.Append("null");
    } else if (std::isinf(f)) {
      w.Append(f > 0 ? "\"$Inf\"" : "\"-$Inf\"");
    } else {
      // C++ default stream formatting: 6 significant digits (%g).
      std::string s = fmt::format("{:g}", static_cast<double>(f));
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      w.Append(s);
    }
  } else if (dtype == "INT32") {
    internal::Put(w, FMT_COMPILE("{}"), static_cast<int32_t>(static_cast<uint32_t>(bits)));
  } else if (dtype == "UINT32") {
    internal::Put(w, FMT_COMPILE("{}"), static_cast<uint32_t>(bits));
  } else if (dtype == "INT64") {
    internal::Put(w, FMT_COMPILE("{}"), static_cast<int64_t>(bits));
  } else if (dtype == "BOOL") {
    w.Append(bits != 0 ? "true" : "false");
  } else {
    internal::Put(w, FMT_COMPILE("{}"), bits);
  }
}

// The summary members before the list of args, and the list's opening.
void WriteSummary(ChunkedWriter& w, int level, uint64_t total, const Counts& c, uint64_t truncated,
                  uint64_t dropped, bool has_bin) {
  using internal::KeyFormat;
  internal::Put(
      w,
      KeyFormat<"{{\"", keys::kRunDir, "\": \"{}\", \"", keys::kBinFormat, "\": {{\"",
                keys::kBinFormatType, "\": \"", keys::kBinFormatContiguous, "\", \"",
                keys::kByteOrder, "\": \"", keys::kLittleEndian, "\"}}, \"", keys::kDumpArgsLevel,
                "\": {}, \"", keys::kTotalArgs, "\": {}, \"", keys::kStageBefore, "\": {}, \"",
                keys::kStageAfter, "\": {}, \"", keys::kInputArgs, "\": {}, \"", keys::kOutputArgs,
                "\": {}, \"", keys::kInoutArgs, "\": {}, \"", keys::kTruncatedArgs, "\": {}, \"",
                keys::kDroppedRecords, "\": {}, \"", keys::kDroppedOverwrite, "\": 0, \"",
                keys::kBinFile, "\": {}{}{},\n \"", keys::kArgs, "\": [">{},
      kArgsDumpDir, level, total, c.before, c.after, c.in, c.out, c.inout, truncated, dropped,
      has_bin ? "\"" : "", has_bin ? kArgsDumpBinName : "null", has_bin ? "\"" : "");
}

// One entry of the list of args (`first`: no ',' before it).
void WriteEntry(ChunkedWriter& w, const Entry& e, bool first) {
  using internal::KeyFormat;
  const DumpArgMeta& x = e.meta;
  const bool scalar = x.kind == DumpKind::kScalar;
  internal::Put(
      w, KeyFormat<"{}\n  {{\"", keys::kTaskId, "\": \"0x{:016x}\", \"", keys::kFuncId, "\": [">{},
      first ? "" : ",", x.task_id);
  uint8_t fc = std::clamp<uint8_t>(x.func_count, 0, 3);
  if (fc == 0) w.Append("-1");
  for (uint8_t i = 0; i < fc; ++i)
    internal::Put(w, FMT_COMPILE("{}{}"), i ? ", " : "", x.func_ids[i]);
  internal::Put(
      w,
      KeyFormat<"], \"", keys::kArgIndex, "\": {}, \"", keys::kRole, "\": \"{}\", \"", keys::kStage,
                "\": \"{}\", \"", keys::kKind, "\": \"{}\", \"", keys::kDtype, "\": ">{},
      x.arg_index, RoleName(x.role), StageName(x.stage),
      scalar ? keys::kKindScalar.c_str() : keys::kKindTensor.c_str());
  std::string_view dtype = internal::FixedString(x.dtype);
  w.String(dtype.empty() ? keys::kDtypeUnknown.view() : dtype);
  if (scalar) {
    w.Append(JoinedText<", \"", keys::kValue, "\": ">);
    WriteScalarValue(w, dtype, x.scalar_bits);
  }
  internal::Put(w, KeyFormat<", \"", keys::kIsContiguous, "\": {}, \"", keys::kShape, "\": [">{},
                x.is_contiguous ? "true" : "false");
  const uint8_t nd = scalar ? 0 : std::min<uint8_t>(x.ndims, kMaxDims);
  int64_t numel = 1;
  for (uint8_t i = 0; i < nd; ++i) {
    internal::Put(w, FMT_COMPILE("{}{}"), i ? ", " : "", x.shape[i]);
    numel *= x.shape[i];
  }
  w.Append(JoinedText<"], \"", keys::kStrides, "\": [">);
  for (uint8_t i = 0; i < nd; ++i)
    internal::Put(w, FMT_COMPILE("{}{}"), i ? ", " : "", x.strides[i]);
  internal::Put(w, KeyFormat<"], \"", keys::kStartOffset, "\": {}, \"", keys::kNumel, "\": {}">{},
                scalar ? 0 : x.start_offset, numel);
  if (x.arg_index_ambiguous) w.Append(JoinedText<", \"", keys::kArgIndexAmbiguous, "\": true">);
  internal::Put(w,
                KeyFormat<", \"", keys::kBinOffset, "\": {}, \"", keys::kBinSize, "\": {}, \"",
                          keys::kTruncated, "\": {}, \"", keys::kOverwritten, "\": false}}">{},
                e.bin_size > 0 ? e.bin_offset : 0, e.bin_size, e.truncated ? "true" : "false");
}

std::string HumanBytes(uint64_t b) {
  if (b >= (1ull << 20)) return fmt::format("{:.1f} MiB", b / 1048576.0);
  if (b >= 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

}  // namespace

struct ArgsDumpRecorder::Impl {
  ArgsDumpOptions options;
  fs::path dir;  // <output_dir>/args_dump

  internal::LazyArray<Entry> entries;  // sized for every binding; mapped as used
  std::unique_ptr<uint8_t[]> arena;
  uint64_t arena_size = 0;

  std::mutex mu;
  std::condition_variable space_cv;  // producers wait for room
  std::condition_variable work_cv;   // the drain thread waits for bytes / stop
  uint64_t num_entries = 0;          // guarded by mu
  uint64_t write_pos = 0;            // monotonic bytes copied into the arena
  uint64_t drained_pos = 0;          // monotonic bytes appended to args.bin
  uint64_t truncated_args = 0;
  uint64_t dropped_records = 0;
  bool stop = false;
  bool exported = false;

  // Owned by the drain thread until it is joined.
  AtomicFileWriter bin;
  Status drain_status;
  std::thread drain_thread;

  void DrainLoop();
  void StopDrain();
};

void ArgsDumpRecorder::Impl::DrainLoop() {
  const double rate = options.drain_bytes_per_sec;
  // Small chunks under a rate limit keep progress smooth (about 100 per second).
  const uint64_t max_chunk =
      rate > 0 ? std::clamp<uint64_t>(static_cast<uint64_t>(rate / 100), 1, 1 << 16) : 1 << 20;
  const auto start = SteadyClock::now();
  uint64_t drained_total = 0;
  std::unique_lock<std::mutex> lock(mu);
  while (true) {
    work_cv.wait(lock, [&] { return stop || write_pos > drained_pos; });
    if (write_pos == drained_pos) {
      if (stop) break;
      continue;
    }
    uint64_t offset = drained_pos % arena_size;
    uint64_t n = std::min({write_pos - drained_pos, arena_size - offset, max_chunk});
    lock.unlock();
    // The producer never overwrites [drained_pos, write_pos), so this read races nothing.
    if (drain_status.ok()) {
      if (!bin.is_open()) drain_status = bin.Open(dir / kArgsDumpBinName);
      if (drain_status.ok()) {
        drain_status =
            bin.Write(std::string_view(reinterpret_cast<const char*>(arena.get() + offset), n));
      }
      if (!drain_status.ok()) DFX_LOG_ERROR("args dump: {}", drain_status.message());
    }
    drained_total += n;
    lock.lock();
    if (rate > 0 && !stop) {
      // Model the host collector's drain speed: these bytes are gone only once
      // the time they take at `rate` has passed. Stop lifts the limit (export
      // writes the rest at disk speed).
      auto due = start + std::chrono::duration_cast<SteadyClock::duration>(
                             std::chrono::duration<double>(drained_total / rate));
      work_cv.wait_until(lock, due, [&] { return stop; });
    }
    drained_pos += n;
    space_cv.notify_all();
  }
}

void ArgsDumpRecorder::Impl::StopDrain() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
  }
  work_cv.notify_all();
  if (drain_thread.joinable()) drain_thread.join();
}

ArgsDumpRecorder::ArgsDumpRecorder(const ArgsDumpOptions& options, const CapacityHint& hint,
                                   const fs::path& output_dir)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.options = options;
  m.options.level = std::clamp(options.level, 1, 3);
  m.dir = output_dir / kArgsDumpDir;
  // INOUT args are captured at both stages.
  uint64_t max_records = options.max_records > 0 ? options.max_records : 2 * hint.tensor_args + 256;
  m.entries.Reset(max_records);
  m.arena_size = std::max<uint64_t>(options.arena_bytes, 64);
  // Not value-initialised: untouched pages of a large arena cost nothing.
  m.arena.reset(new uint8_t[m.arena_size]);
  m.drain_thread = std::thread([&m] { m.DrainLoop(); });
}

ArgsDumpRecorder::~ArgsDumpRecorder() { impl_->StopDrain(); }

int ArgsDumpRecorder::level() const { return impl_->options.level; }

Status ArgsDumpRecorder::Capture(const DumpArgMeta& meta, std::span<const uint8_t> payload) {
  Impl& m = *impl_;
  std::unique_lock<std::mutex> lock(m.mu);
  if (m.stop || m.num_entries >= m.entries.size()) {
    ++m.dropped_records;
    return Status::Ok();
  }
  uint64_t size = payload.size();
  bool truncated = false;
  if (size > m.arena_size) {
    size = m.arena_size / 2;
    truncated = true;
  }
  uint64_t offset = 0;
  if (size > 0) {
    auto deadline = SteadyClock::now() + std::chrono::milliseconds(m.options.drain_timeout_ms);
    bool room = m.space_cv.wait_until(lock, deadline, [&] {
      return m.stop || m.arena_size - (m.write_pos - m.drained_pos) >= size;
    });
    if (!room || m.stop) {
      ++m.dropped_records;
      std::string msg = fmt::format(
          "args dump could not drain: the dump arena ({}) stayed full for {} ms while the host "
          "collector drained {}; task 0x{:016x} arg {} ({} payload) was not captured and the "
          "dispatch fails. ",
          HumanBytes(m.arena_size), m.options.drain_timeout_ms,
          m.options.drain_bytes_per_sec > 0
              ? "at " + HumanBytes(static_cast<uint64_t>(m.options.drain_bytes_per_sec)) + "/s"
              : std::string("at disk speed"),
          meta.task_id, meta.arg_index, HumanBytes(size));
      if (m.options.level == 2) {
        msg += "enable_dump_args=2 (full) dumps every binding of every task; ";
      } else {
        msg += fmt::format("enable_dump_args={} is on; ", m.options.level);
      }
      msg += "use enable_dump_args=1 (partial) and dump_tag only the tensors you need";
      return DeadlineExceeded(msg);
    }
    offset = m.write_pos;
    uint64_t at = offset % m.arena_size;
    uint64_t first = std::min(size, m.arena_size - at);
    std::memcpy(m.arena.get() + at, payload.data(), first);
    if (first < size) std::memcpy(m.arena.get(), payload.data() + first, size - first);
    m.write_pos += size;
  }
  if (truncated) {
    if (m.truncated_args == 0) {
      DFX_LOG_WARN("Args dump truncation detected. Increase the dump arena (arena_bytes).");
    }
    ++m.truncated_args;
  }
  m.entries.MapAhead(m.num_entries);
  Entry& e = m.entries[m.num_entries++];
  e.meta = meta;
  e.bin_offset = offset;
  e.bin_size = size;
  e.truncated = truncated;
  lock.unlock();
  if (size > 0) m.work_cv.notify_one();
  return Status::Ok();
}

Status ArgsDumpRecorder::Export() {
  Impl& m = *impl_;
  m.StopDrain();
  if (m.exported) return FailedPrecondition("args dump: Export() called twice");
  m.exported = true;
  if (m.dropped_records > 0 || m.truncated_args > 0) {
    DFX_LOG_WARN("Args dump anomalies: truncated={}, dropped_records={}, overwritten=0",
                 m.truncated_args, m.dropped_records);
  }
  if (m.num_entries == 0) {
    // Normal for a program that tags nothing: no warning per dispatch; the
    // coordinator says once per run how many dispatches dumped nothing.
    m.bin.Abort();
    return NotFound("no tensor tagged for dump (" + m.dir.string() + " not written)");
  }
  DFX_RETURN_IF_ERROR(m.drain_status);
  const int level = m.options.level;
  // Levels 1 and 2 always have args.bin once records exist (maybe empty); level 3
  // only when some marked payload arrived.
  if (!m.bin.is_open() && level != 3) DFX_RETURN_IF_ERROR(m.bin.Open(m.dir / kArgsDumpBinName));
  const bool has_bin = m.bin.is_open();
  if (has_bin) DFX_RETURN_IF_ERROR(m.bin.Commit());

  std::vector<uint32_t> order(m.num_entries);
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const DumpArgMeta& x = m.entries[a].meta;
    const DumpArgMeta& y = m.entries[b].meta;
    if (x.task_id != y.task_id) return x.task_id < y.task_id;
    if (x.stage != y.stage) return x.stage < y.stage;
    if (x.arg_index != y.arg_index) return x.arg_index < y.arg_index;
    return x.role < y.role;
  });
  Counts counts;
  for (uint64_t i = 0; i < m.num_entries; ++i) {
    const DumpArgMeta& x = m.entries[i].meta;
    (x.stage == DumpStage::kBeforeDispatch ? counts.before : counts.after)++;
    (x.role == DumpRole::kInput    ? counts.in
     : x.role == DumpRole::kOutput ? counts.out
                                   : counts.inout)++;
    counts.bytes += m.entries[i].bin_size;
  }

  ChunkedWriter w;
  DFX_RETURN_IF_ERROR(w.Open(m.dir / kArgsDumpManifestName));
  WriteSummary(w, level, m.num_entries, counts, m.truncated_args, m.dropped_records, has_bin);
  for (size_t k = 0; k < order.size(); ++k) WriteEntry(w, m.entries[order[k]], k == 0);
  w.Append("\n ]}\n");
  DFX_RETURN_IF_ERROR(w.Commit());
  DFX_LOG_INFO("Collected {} args, wrote {} to disk", m.num_entries, HumanBytes(counts.bytes));
  return Status::Ok();
}

}  // namespace dfx::collectors
