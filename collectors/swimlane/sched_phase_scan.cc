#include "collectors/swimlane/sched_phase_scan.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collectors/swimlane/swimlane_keys.h"
#include "common/prefetch.h"

namespace dfx::collectors {

namespace {

namespace keys = swimlane_keys;

constexpr size_t kWindow = 1 << 20;  // bytes read at a time
constexpr size_t kMaxPhase = 4096;   // longest phase (with the blanks before it) read here

// The window over the file: [p, end) unread, *end == '\0' (a byte no token
// of the subset contains, so every scan stops at the end of what was read).
class Window {
 public:
  // `offset`: where f is (the file offset of the first byte read).
  Window(std::FILE* f, uint64_t offset)
      : f_(f), buf_(kWindow + 1), end_(buf_.data()), origin_(offset) {
    *end_ = '\0';
  }
  const char* begin() const { return buf_.data(); }
  // The file offset of p.
  uint64_t Offset(const char* p) const { return origin_ + static_cast<uint64_t>(p - buf_.data()); }
  // Makes at least kMaxPhase bytes (or the rest of the file) readable from p.
  bool Fill(const char*& p) {
    if (static_cast<size_t>(end_ - p) >= kMaxPhase || eof_) return true;
    origin_ = Offset(p);
    const size_t keep = static_cast<size_t>(end_ - p);
    std::memmove(buf_.data(), p, keep);
    const size_t got = std::fread(buf_.data() + keep, 1, kWindow - keep, f_);
    if (got < kWindow - keep) {
      if (std::ferror(f_)) return false;
      eof_ = true;
    }
    p = buf_.data();
    end_ = buf_.data() + keep + got;
    *end_ = '\0';
    return true;
  }

 private:
  std::FILE* f_;
  std::vector<char> buf_;
  char* end_;
  uint64_t origin_;  // the file offset of buf_[0]
  bool eof_ = false;
};

inline void Blanks(const char*& p) {
  while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') ++p;
}

inline bool Digit(char c) { return c >= '0' && c <= '9'; }

// A non-negative JSON integer of at most 19 digits (no u64 overflow).
inline bool Uint(const char*& p, uint64_t* v) {
  if (!Digit(*p) || (*p == '0' && Digit(p[1]))) return false;
  const char* first = p;
  uint64_t n = 0;
  while (Digit(*p)) {
    n = n * 10 + static_cast<uint64_t>(*p - '0');
    ++p;
  }
  if (p - first > 19 || *p == '.' || *p == 'e' || *p == 'E') return false;
  *v = n;
  return true;
}

// A string without escapes or control bytes; [*s, *s + *n) is its text.
inline bool PlainString(const char*& p, const char** s, size_t* n) {
  if (*p != '"') return false;
  const char* q = ++p;
  while (*q != '"') {
    if (static_cast<unsigned char>(*q) < 0x20 || *q == '\\') return false;
    ++q;
  }
  *s = p;
  *n = static_cast<size_t>(q - p);
  p = q + 1;
  return true;
}

// [N, ...] into out[0..2] as ReadSwimlaneRecords reads it (int16, the rest dropped).
inline bool Triple(const char*& p, int16_t out[3]) {
  out[0] = out[1] = out[2] = 0;
  if (*p != '[') return false;
  ++p;
  Blanks(p);
  if (*p == ']') {
    ++p;
    return true;
  }
  for (size_t i = 0;; ++i) {
    uint64_t v;
    if (!Uint(p, &v)) return false;
    if (i < 3) out[i] = static_cast<int16_t>(static_cast<int64_t>(v));
    Blanks(p);
    if (*p == ']') {
      ++p;
      return true;
    }
    if (*p != ',') return false;
    ++p;
    Blanks(p);
  }
}

// Whether [s, s + n) is `key`: a compare of a known size, inlined.
template <size_t N>
inline bool Is(const char* s, size_t n, const KeyText<N>& key) {
  return n == N - 1 && std::memcmp(s, key.chars, N - 1) == 0;
}

// One object of the subset, `{}` or `{"key": value, ...}`: member(key,
// len, p) reads each value at p, false when it is outside the subset.
template <typename Member>
bool Object(const char*& p, const Member& member) {
  if (*p != '{') return false;
  ++p;
  Blanks(p);
  if (*p == '}') {
    ++p;
    return true;
  }
  for (;;) {
    const char* key;
    size_t len;
    if (!PlainString(p, &key, &len)) return false;
    Blanks(p);
    if (*p != ':') return false;
    ++p;
    Blanks(p);
    if (!member(key, len, p)) return false;
    Blanks(p);
    if (*p == '}') {
      ++p;
      return true;
    }
    if (*p != ',') return false;
    ++p;
    Blanks(p);
  }
}

// One phase object, as ReadSwimlaneRecords' ReadSchedPhase reads it.
bool Phase(const char*& p, SchedPhase* ph) {
  return Object(p, [ph](const char* key, size_t len, const char*& at) {
    if (Is(key, len, keys::kKind) || Is(key, len, keys::kLegacyKind)) {
      const char* s;
      size_t n;
      if (!PlainString(at, &s, &n)) return false;
      ph->kind = ParsePhaseKind({s, n});
      return true;
    }
    if (Is(key, len, keys::kSharedAtStart)) {
      if (!Triple(at, ph->shared_at_start)) return false;
      ph->has_depths = true;
      return true;
    }
    if (Is(key, len, keys::kSharedAtEnd)) {
      if (!Triple(at, ph->shared_at_end)) return false;
      ph->has_depths = true;
      return true;
    }
    uint64_t v = 0;
    if (!Uint(at, &v)) return false;
    if (Is(key, len, keys::kStartCycles)) {
      ph->start = v;
    } else if (Is(key, len, keys::kEndCycles)) {
      ph->end = v;
    } else if (Is(key, len, keys::kLoopIter)) {
      ph->loop_iter = static_cast<uint32_t>(v);
    } else if (Is(key, len, keys::kTasksProcessed)) {
      ph->tasks_processed = static_cast<uint32_t>(v);
    } else if (Is(key, len, keys::kPopHit)) {
      ph->pop_hit = static_cast<uint32_t>(v);
    } else if (Is(key, len, keys::kPopMiss)) {
      ph->pop_miss = static_cast<uint32_t>(v);
    } else if (Is(key, len, keys::kTaskId)) {
      ph->task_id = static_cast<int64_t>(v);
    } else {
      return false;  // a key of no phase field: the generic reader skips it
    }
    return true;
  });
}

// One device orchestrator phase, as ReadSwimlaneRecords' ReadOrchPhase
// reads the collector's shape ({"submit_idx", "task_id", "start_cycles",
// "end_cycles"}, non-negative integers). Any other key or value: false.
bool Orch(const char*& p, OrchPhase* ph) {
  return Object(p, [ph](const char* key, size_t len, const char*& at) {
    uint64_t v = 0;
    if (!Uint(at, &v)) return false;
    if (Is(key, len, keys::kStartCycles)) {
      ph->start = v;
    } else if (Is(key, len, keys::kEndCycles)) {
      ph->end = v;
    } else if (Is(key, len, keys::kTaskId)) {
      ph->task_id = static_cast<int64_t>(v);
    } else if (Is(key, len, keys::kSubmitIdx)) {
      ph->submit_idx = static_cast<int64_t>(v);
    } else {
      return false;
    }
    return true;
  });
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// [[phase, ...], ...] at `offset`: each phase read by parse(p, &phase) and
// given to fn(lane, phase), until the value's end or the first byte outside
// the subset.
template <typename PhaseT, typename Parse, typename Fn>
Result<FastSchedScan> ScanLanes(const std::filesystem::path& path, uint64_t offset,
                                const char* what, Parse parse, const Fn& fn) {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (f == nullptr || std::fseek(f.get(), static_cast<long>(offset), SEEK_SET) != 0) {
    return NotFound(path.string() + ": cannot read the " + what + ": " + std::strerror(errno));
  }
  const auto read_error = [&] {
    return Internal(path.string() + ": read failed: " + std::strerror(errno));
  };
  Window w(f.get(), offset);
  FastSchedScan scan;  // not whole until the value's ']'
  const auto whole = [&](const char* end) {
    scan.whole = true;
    scan.end_offset = w.Offset(end);
    return scan;
  };
  const char* p = w.begin();
  if (!w.Fill(p)) return read_error();
  // [ [phase, ...], ... ]
  Blanks(p);
  if (*p != '[') return scan;
  ++p;
  Blanks(p);
  if (*p == ']') return whole(p + 1);
  for (size_t t = 0;; ++t) {
    if (*p != '[') return scan;
    ++p;
    scan.lanes = t + 1;
    if (!w.Fill(p)) return read_error();
    Blanks(p);
    if (*p != ']') {
      for (;;) {
        if (!w.Fill(p)) return read_error();
        Blanks(p);
        PhaseT ph;
        if (!parse(p, &ph)) return scan;
        if (!fn(t, ph)) return scan;  // the caller stopped: not whole
        Blanks(p);
        if (*p == ']') break;
        if (*p != ',') return scan;
        ++p;
      }
    }
    ++p;  // the lane's ']'
    if (!w.Fill(p)) return read_error();
    Blanks(p);
    if (*p == ']') return whole(p + 1);
    if (*p != ',') return scan;
    ++p;
    Blanks(p);
  }
}

}  // namespace

Result<FastSchedScan> FastScanSchedPhases(
    const std::filesystem::path& path, uint64_t offset,
    const std::function<void(size_t, const SchedPhase&)>& fn) {
  // Through a lambda, so that the parse inlines (a function pointer did not).
  return ScanLanes<SchedPhase>(
      path, offset, "scheduler phases", [](const char*& p, SchedPhase* ph) { return Phase(p, ph); },
      [&fn](size_t t, const SchedPhase& ph) {
        fn(t, ph);
        return true;
      });
}

Result<FastSchedScan> FastScanOrchPhases(const std::filesystem::path& path, uint64_t offset,
                                         const std::function<bool(size_t, const OrchPhase&)>& fn) {
  return ScanLanes<OrchPhase>(
      path, offset, "orchestrator phases",
      [](const char*& p, OrchPhase* ph) { return Orch(p, ph); }, fn);
}

Result<bool> FastForEachSchedPhase(const SwimlaneRecords& records,
                                   const std::function<void(size_t, const SchedPhase&)>& fn) {
  DFX_ASSIGN_OR_RETURN(FastSchedScan scan,
                       FastScanSchedPhases(records.path, records.sched_phases_offset, fn));
  return scan.whole;
}

Result<bool> FastForEachSchedPhaseAhead(const SwimlaneRecords& records,
                                        const std::function<void(size_t, const SchedPhase&)>& fn) {
  using Item = std::pair<size_t, SchedPhase>;
  bool whole = false;  // written by the reader, read once the stream ended
  Prefetch<Item> ahead([&](const Prefetch<Item>::Push& push) {
    Result<bool> read = FastForEachSchedPhase(records, [&](size_t t, const SchedPhase& p) {
      push({t, p});
    });
    if (!read.ok()) return read.status();
    whole = read.value();
    return Status::Ok();
  });
  DFX_RETURN_IF_ERROR(ahead.ForEach([&](const Item& item) { fn(item.first, item.second); }));
  return whole;
}

}  // namespace dfx::collectors
