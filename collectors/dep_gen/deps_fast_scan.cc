#include "collectors/dep_gen/deps_fast_scan.h"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "collectors/dep_gen/deps_keys.h"
#include "collectors/key_text.h"
#include "common/byte_scan.h"
#include "common/json_stream.h"

namespace dfx::collectors {
namespace {

namespace keys = deps_keys;

// The rest of a tasks[] or edges[] entry after its ids, in the exact form
// DepGenRecorder::Export writes it, matched byte for byte: the keys and
// punctuation as literals, the values by their shape (an unsigned integer,
// a string without escapes, a list of integers or of such strings). A
// token skipper decides at every token what comes next, on data the
// branch predictor cannot learn; this form decides nothing, so it runs at
// the speed of the compares. Everything it accepts is JSON that
// FastGraphScan::Skip accepts to the same end (its literals are JSON
// punctuation and keys without escapes, its strings stop at the first '"',
// '\\' or NUL and fail at the last two), so any difference, anywhere in the
// entry, only sends the entry to Skip. Reads stay within the chunk's
// sentinel and padding: a literal is compared only when it fits before the
// chunk's end, and the scans stop at the sentinel.
class DepGenForm {
 public:
  DepGenForm(const char* q, const char* end) : q_(q), end_(end) {}
  const char* at() const { return q_; }

  // The literal's length is a constant: the compare is a few word loads
  // (std::memcmp of these lengths is a call into libc).
  template <size_t N>
  [[gnu::always_inline]] bool Lit(const char (&s)[N]) {
    constexpr size_t n = N - 1;
    if (static_cast<size_t>(end_ - q_) < n || !Same<n>(q_, s)) return false;
    q_ += n;
    return true;
  }
  template <size_t N>
  [[gnu::always_inline]] bool Lit(const KeyText<N>& s) {
    return Lit(s.chars);
  }
  bool Uint() {
    const char* d = q_;
    while (static_cast<unsigned char>(*q_ - '0') < 10) ++q_;
    return q_ != d;
  }
  bool Int() {
    if (*q_ == '-') ++q_;
    return Uint();
  }
  // A string's body: q_ stops at its closing quote (the next literal's).
  bool Str() {
    q_ = byte_scan::StringStop(q_);
    return *q_ == '"';
  }
  // [] or [i, ...] of integers.
  bool IntList() {
    if (!Lit("[")) return false;
    if (Lit("]")) return true;
    for (;;) {
      if (!Int()) return false;
      if (Lit("]")) return true;
      if (!Lit(",")) return false;
    }
  }
  // [] or ["s", ...] of strings.
  bool StrList() {
    if (!Lit("[")) return false;
    if (Lit("]")) return true;
    for (;;) {
      if (!Lit("\"") || !Str() || !Lit("\"")) return false;
      if (Lit("]")) return true;
      if (!Lit(",")) return false;
    }
  }

  // A task's `args` after its block_num, and the task's '}'.
  static const char* TaskRest(const char* q, const char* end) {
    DepGenForm f(q, end);
    if (!f.Lit(JoinedKey<",\"", keys::kArgs, "\":[">)) return nullptr;
    if (!f.Lit("]")) {
      for (;;) {
        if (!f.Arg()) return nullptr;
        if (f.Lit("]")) break;
        if (!f.Lit(",")) return nullptr;
      }
    }
    return f.Lit("}") ? f.at() : nullptr;
  }
  // An edge's annotations after its succ, and the edge's '}'.
  static const char* EdgeRest(const char* q, const char* end) {
    DepGenForm f(q, end);
    const bool ok =
        f.Lit(JoinedKey<",\"", keys::kArg, "\":">) && f.Uint() &&
        f.Lit(JoinedKey<",\"", keys::kSource, "\":\"">) && f.Str() &&
        f.Lit(JoinedKey<"\",\"", keys::kFlags, "\":">) && f.StrList() &&
        f.Lit(JoinedKey<",\"", keys::kOverlap, "\":\"">) && f.Str() &&
        f.Lit(JoinedKey<"\",\"", keys::kTensorId, "\":\"">) && f.Str() &&
        f.Lit(JoinedKey<"\",\"", keys::kConsumer, keys::kDtype, "\":\"">) && f.Str() &&
        f.Lit(JoinedKey<"\",\"", keys::kConsumer, keys::kShape, "\":">) && f.IntList() &&
        f.Lit(JoinedKey<",\"", keys::kConsumer, keys::kStartOffset, "\":\"">) && f.Str() &&
        f.Lit(JoinedKey<"\",\"", keys::kConsumer, keys::kStrides, "\":">) && f.IntList() &&
        f.Lit(JoinedKey<",\"", keys::kProducer, keys::kShape, "\":">) && f.IntList() &&
        f.Lit(JoinedKey<",\"", keys::kProducer, keys::kStartOffset, "\":\"">) && f.Str() &&
        f.Lit(JoinedKey<"\",\"", keys::kProducer, keys::kStrides, "\":">) && f.IntList() &&
        f.Lit("}");
    return ok ? f.at() : nullptr;
  }
  // A tensors[] entry.
  static const char* Tensor(const char* q, const char* end) {
    DepGenForm f(q, end);
    const bool ok = f.Lit(JoinedKey<"{\"", keys::kTensorId, "\":\"">) && f.Str() &&
                    f.Lit(JoinedKey<"\",\"", keys::kBufferAddr, "\":\"">) && f.Str() &&
                    f.Lit(JoinedKey<"\",\"", keys::kVersion, "\":">) && f.Uint() &&
                    f.Lit(JoinedKey<",\"", keys::kDtype, "\":\"">) && f.Str() &&
                    f.Lit(JoinedKey<"\",\"", keys::kBufferNumel, "\":\"">) && f.Str() &&
                    f.Lit(R"("})");
    return ok ? f.at() : nullptr;
  }

 private:
  template <size_t n>
  [[gnu::always_inline]] static bool Same(const char* a, const char* b) {
    using byte_scan::Load;
    if constexpr (n < 8) {
      bool same = true;
      for (size_t i = 0; i < n; ++i) same &= a[i] == b[i];
      return same;
    } else {
      uint64_t diff = Load(a + n - 8) ^ Load(b + n - 8);  // the last 8 bytes
      for (size_t i = 0; i + 8 <= n; i += 8) diff |= Load(a + i) ^ Load(b + i);
      return diff == 0;
    }
  }

  // One tensor argument of a task.
  bool Arg() {
    return Lit(JoinedKey<"{\"", keys::kIdx, "\":">) && Uint() &&
           Lit(JoinedKey<",\"", keys::kType, "\":\"">) && Str() &&
           Lit(JoinedKey<"\",\"", keys::kTensorId, "\":\"">) && Str() &&
           Lit(JoinedKey<"\",\"", keys::kDtype, "\":\"">) && Str() &&
           Lit(JoinedKey<"\",\"", keys::kShape, "\":">) && IntList() &&
           Lit(JoinedKey<",\"", keys::kStartOffset, "\":\"">) && Str() &&
           Lit(JoinedKey<"\",\"", keys::kStrides, "\":">) && IntList() && Lit("}");
  }

  const char* q_;
  const char* const end_;
};

// dep_gen writes deps.json as one compact object (docs/formats.md §6.2), and most
// of its bytes are annotations the compact graph skips. FastGraphScan reads
// such a file in 1 MiB chunks with pointer scans over the chunk (no per-byte
// call, no copy of a skipped string), one array entry at a time: an entry
// that runs past the chunk's end is re-scanned once the chunk has been
// refilled behind it. It validates every value it skips, in a subset of JSON:
// at the first byte outside that subset — whitespace, an escape in a key,
// nesting deeper than kMaxDepth, an entry longer than a chunk, an id that is
// not a plain integer, a missing id, a truncated file — Scan() returns false
// and ReadTaskGraph reads the file again with the generic reader, whose
// result or error (naming the file and byte) is the reference. Every input
// the scan accepts, the generic reader reads to the same graph.
class FastGraphScan {
 public:
  explicit FastGraphScan(TaskGraph* graph) : graph_(graph) {}
  ~FastGraphScan() {
    if (file_ != nullptr) std::fclose(file_);
  }
  FastGraphScan(const FastGraphScan&) = delete;
  FastGraphScan& operator=(const FastGraphScan&) = delete;

  // True when the whole file was read into the graph.
  bool Scan(const std::filesystem::path& path);

 private:
  enum R { kOk, kMore, kBad };  // kMore: the chunk ended first
  enum class Section { kTasks, kEdges, kSkip };
  static constexpr size_t kChunk = 1 << 20;
  static constexpr int kMaxDepth = 32;  // well below kMaxJsonDepth
  static constexpr size_t kPad = byte_scan::kStopPad;

  // Moves the entry being read [mark_, end_) to the front and reads more
  // behind it; false at end of file, on a read error, or when the entry
  // already fills the chunk.
  bool Refill();
  // The byte at p_; '\0' (the sentinel at end_) also for an embedded NUL.
  R AtEnd() const { return p_ == end_ ? kMore : kBad; }
  R Byte(char c) {
    if (*p_ == c) {
      ++p_;
      return kOk;
    }
    return *p_ == '\0' ? AtEnd() : kBad;
  }
  // The first '"', '\\' or '\0' at or after `q` (the chunk has kPad
  // readable bytes after its sentinel).
  static const char* StringStop(const char* q) { return byte_scan::StringStop(q); }
  // A key without escapes: [*b, *e) and the ':' after it.
  R Key(const char** b, const char** e);
  R SkipWord(std::string_view word);
  R SkipValue(int depth);
  // After a member's value inside an entry's object: the rest of its members
  // and its '}', validated like SkipValue, in one pass. A later member whose
  // key `read(key)` says the entry reads is kBad (the generic reader then
  // decides what a repeated key means).
  template <typename Read>
  R SkipRestOfEntry(Read read, const char* (*dep_gen_form)(const char*, const char*));
  // SkipValue (open == 0) and SkipRestOfEntry (open == 1, the entry's
  // object) in one loop; `top_key` sees the keys of the entry's members.
  template <typename TopKey>
  [[gnu::noinline]] R Skip(int depth, int open, TopKey top_key);
  // An integer of at most 18 digits, optionally negative.
  R Int(int64_t* out);
  // A u64 id as a quoted or bare integer (negatives masked, as ReadU64).
  R Id(uint64_t* out);
  template <typename ReadValue, typename Done, typename Read>
  R Members(ReadValue value, Done done, Read read,
            const char* (*dep_gen_form)(const char*, const char*));
  R KernelIds(TaskInfo* info);
  R Task();
  R Edge();
  R TopMember();
  R Element();

  TaskGraph* graph_;
  std::FILE* file_ = nullptr;
  std::vector<char> buf_;
  const char* p_ = nullptr;
  const char* end_ = nullptr;
  const char* mark_ = nullptr;
  bool eof_ = false;
  bool first_member_ = true;
  bool in_array_ = false;
  bool done_ = false;
  Section section_ = Section::kSkip;
  std::pair<uint64_t, TaskInfo> pending_task_;  // the entry read, added after its ',' or ']'
  std::pair<uint64_t, uint64_t> pending_edge_;
};

bool FastGraphScan::Refill() {
  if (eof_ || file_ == nullptr) return false;
  const size_t keep = static_cast<size_t>(end_ - mark_);
  if (keep >= kChunk) return false;  // one entry longer than a chunk
  std::memmove(buf_.data(), mark_, keep);
  const size_t got = std::fread(buf_.data() + keep, 1, kChunk - keep, file_);
  if (got == 0) {
    eof_ = true;
    return false;
  }
  mark_ = p_ = buf_.data();
  end_ = buf_.data() + keep + got;
  buf_[keep + got] = '\0';  // the sentinel
  return true;
}

FastGraphScan::R FastGraphScan::Key(const char** b, const char** e) {
  if (R r = Byte('"'); r != kOk) return r;
  const char* q = StringStop(p_);
  if (*q != '"') return q == end_ ? kMore : kBad;
  *b = p_;
  *e = q;
  p_ = q + 1;
  return Byte(':');
}

FastGraphScan::R FastGraphScan::SkipWord(std::string_view word) {
  for (char c : word) {
    if (R r = Byte(c); r != kOk) return r;
  }
  return kOk;
}

// Any value of the subset, validated as the comment above says, in one
// loop: the cursor in a local, the open containers as a bit stack (1: an
// object), the commonest tokens (strings, then numbers) tested first. Most
// of deps.json is annotations this skips: with a recursive call per value
// and the cursor in a member, reading a real run's 100k-task deps.json
// (92 MB) took 807 M instructions, 633 M this way (with SkipRestOfEntry).
FastGraphScan::R FastGraphScan::SkipValue(int depth) {
  return Skip(depth, 0, [](std::string_view) { return true; });
}

template <typename Read>
FastGraphScan::R FastGraphScan::SkipRestOfEntry(Read read,
                                                const char* (*dep_gen_form)(const char*,
                                                                            const char*)) {
  if (const char* e = dep_gen_form(p_, end_)) {
    p_ = e;
    return kOk;
  }
  // The entry's members are values at depth 1, as Members' SkipValue(1).
  return Skip(0, 1, [&read](std::string_view key) { return !read(key); });
}

template <typename TopKey>
FastGraphScan::R FastGraphScan::Skip(int depth, int open, TopKey top_key) {
  static_assert(kMaxDepth <= 64, "the open containers are bits of a uint64_t");
  const char* q = p_;
  const char* const end = end_;
  // A byte other than the one expected: the chunk's end (kMore) or not the subset.
  const auto stop = [end](const char* at) { return at == end ? kMore : kBad; };
  // The string whose opening quote is at q: q moves past its closing quote.
  bool escaped = false;  // the last string had an escape
  const auto string = [&q, &escaped, end]() -> R {
    escaped = false;
    ++q;
    for (;;) {
      q = StringStop(q);
      if (*q == '"') {
        ++q;
        return kOk;
      }
      if (*q == '\0') {
        if (q == end) return kMore;
        ++q;  // a NUL inside a string: the generic reader keeps it too
        continue;
      }
      const char c = q[1];  // after the backslash
      escaped = true;
      if (c == 'u') {
        for (int i = 2; i < 6; ++i) {
          if (!std::isxdigit(static_cast<unsigned char>(q[i]))) return q + i == end ? kMore : kBad;
        }
        q += 6;
      } else if (c == '\0') {
        return q + 1 == end ? kMore : kBad;
      } else if (JsonEscapedChar(c) != '\0') {
        q += 2;
      } else {
        return kBad;
      }
    }
  };
  const auto is_digit = [](char c) { return static_cast<unsigned char>(c - '0') < 10; };
  // Bit i: the i-th innermost open container is an object (the entry's, if open).
  uint64_t objects = open == 0 ? 0 : 1;
  enum class Next { kValue, kAfter, kKey } next = open == 0 ? Next::kValue : Next::kAfter;
  for (;;) {
    if (next == Next::kValue) {
      const char c = *q;
      next = Next::kAfter;
      if (c == '"') {
        if (R r = string(); r != kOk) return r;
      } else if (is_digit(c) || c == '-') {
        if (c == '-') ++q;
        const char* d = q;
        while (is_digit(*q)) ++q;
        if (q == d) return stop(q);
        if (*q == '.') {
          d = ++q;
          while (is_digit(*q)) ++q;
          if (q == d) return stop(q);
        }
        if (*q == 'e' || *q == 'E') {
          ++q;
          if (*q == '+' || *q == '-') ++q;
          d = q;
          while (is_digit(*q)) ++q;
          if (q == d) return stop(q);
        }
        if (q == end) return kMore;  // the number may go on in the next chunk
      } else if (c == '[' || c == '{') {
        if (depth + open >= kMaxDepth) return kBad;
        const bool object = c == '{';
        ++q;
        if (*q == (object ? '}' : ']')) {
          ++q;
        } else {
          objects = (objects << 1) | (object ? 1u : 0u);
          ++open;
          next = object ? Next::kKey : Next::kValue;
        }
      } else if (c == 't' || c == 'f' || c == 'n') {
        const std::string_view word = c == 't' ? "true" : c == 'f' ? "false" : "null";
        for (char w : word) {
          if (*q != w) return *q == '\0' ? stop(q) : kBad;
          ++q;
        }
      } else {
        return c == '\0' ? stop(q) : kBad;
      }
    } else if (next == Next::kAfter) {
      // After a value: the end of the skipped value, a ',' or its container's end.
      if (open == 0) {
        p_ = q;
        return kOk;
      }
      const bool object = (objects & 1) != 0;
      if (*q == ',') {
        ++q;
        next = object ? Next::kKey : Next::kValue;
      } else if (*q == (object ? '}' : ']')) {
        ++q;
        objects >>= 1;
        --open;
      } else {
        return *q == '\0' ? stop(q) : kBad;
      }
    } else {
      // A member's key (escapes allowed, as in any skipped string) and ':'.
      if (*q != '"') return *q == '\0' ? stop(q) : kBad;
      const char* key = q + 1;
      if (R r = string(); r != kOk) return r;
      if (open == 1) {
        // An entry's key, raw: one with an escape may spell a key it reads.
        if (escaped || !top_key(std::string_view(key, static_cast<size_t>(q - 1 - key))))
          return kBad;
      }
      if (*q != ':') return *q == '\0' ? stop(q) : kBad;
      ++q;
      next = Next::kValue;
    }
  }
}

FastGraphScan::R FastGraphScan::Int(int64_t* out) {
  const char* q = p_;
  const bool negative = *q == '-';
  if (negative) ++q;
  const char* d = q;
  uint64_t v = 0;
  while (*q >= '0' && *q <= '9') v = v * 10 + static_cast<uint64_t>(*q++ - '0');
  if (q == end_) return kMore;
  if (q == d || q - d > 18 || *q == '.' || *q == 'e' || *q == 'E') return kBad;
  *out = negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  p_ = q;
  return kOk;
}

FastGraphScan::R FastGraphScan::Id(uint64_t* out) {
  const bool quoted = *p_ == '"';
  if (quoted) ++p_;
  int64_t v = 0;
  if (R r = Int(&v); r != kOk) return r;
  *out = static_cast<uint64_t>(v);
  return quoted ? Byte('"') : kOk;
}

// The members of an object: `value(key)` reads each member's value. Once
// `done()` after one, the rest is skipped in one pass (SkipRestOfEntry)
// unless a key `read(key)` says `value` reads comes again.
template <typename ReadValue, typename Done, typename Read>
FastGraphScan::R FastGraphScan::Members(ReadValue value, Done done, Read read,
                                        const char* (*dep_gen_form)(const char*, const char*)) {
  if (R r = Byte('{'); r != kOk) return r;
  if (*p_ == '}') return kBad;  // no id: the generic reader says so
  for (;;) {
    const char *b, *e;
    if (R r = Key(&b, &e); r != kOk) return r;
    if (R r = value(std::string_view(b, static_cast<size_t>(e - b))); r != kOk) return r;
    if (done()) return SkipRestOfEntry(read, dep_gen_form);
    if (*p_ == '}') {
      ++p_;
      return kOk;
    }
    if (R r = Byte(','); r != kOk) return r;
  }
}

// One tasks[] entry, as ReadTask reads it without details.
FastGraphScan::R FastGraphScan::Task() {
  uint64_t id = 0;
  TaskInfo info;
  int seen = 0;  // the four keys read, as bits (1: task_id)
  const auto reads = [](std::string_view key) {
    return key == keys::kTaskId || key == keys::kKernelIds || key == keys::kBlockNum ||
           key == keys::kEarlyDispatch;
  };
  R r = Members(
      [&](std::string_view key) {
        if (key == keys::kTaskId) {
          seen |= 1;
          return Id(&id);
        }
        if (key == keys::kKernelIds) {
          seen |= 2;
          return KernelIds(&info);
        }
        if (key == keys::kBlockNum) {
          seen |= 4;
          int64_t v = 0;
          const R got = Int(&v);
          info.block_num = static_cast<int32_t>(v);
          return got;
        }
        if (key == keys::kEarlyDispatch) {
          seen |= 8;
          if (*p_ == 't' || *p_ == 'f') {
            info.early_dispatch = *p_ == 't';
            return SkipWord(*p_ == 't' ? "true" : "false");
          }
        }
        return SkipValue(1);
      },
      [&seen] { return seen == 15; }, reads, DepGenForm::TaskRest);
  if (r != kOk) return r;
  if ((seen & 1) == 0) return kBad;
  pending_task_ = {id, info};
  return kOk;
}

FastGraphScan::R FastGraphScan::KernelIds(TaskInfo* info) {
  if (R r = Byte('['); r != kOk) return r;
  if (*p_ == ']') {
    ++p_;
    return kOk;
  }
  for (size_t i = 0;; ++i) {
    int64_t v = 0;
    if (R r = Int(&v); r != kOk) return r;
    if (i < 3) info->kernel_ids[i] = static_cast<int32_t>(v);
    if (*p_ == ']') {
      ++p_;
      return kOk;
    }
    if (R r = Byte(','); r != kOk) return r;
  }
}

// One edges[] entry, as ReadEdge reads it without details.
FastGraphScan::R FastGraphScan::Edge() {
  uint64_t pred = 0, succ = 0;
  int have = 0;
  const auto reads = [](std::string_view key) { return key == keys::kPred || key == keys::kSucc; };
  // Once both ids are read, the annotations after them (dep_gen writes them
  // first) are skipped in one pass.
  R r = Members(
      [&](std::string_view key) {
        if (key == keys::kPred) {
          have |= 1;
          return Id(&pred);
        }
        if (key == keys::kSucc) {
          have |= 2;
          return Id(&succ);
        }
        return SkipValue(1);
      },
      [&have] { return have == 3; }, reads, DepGenForm::EdgeRest);
  if (r != kOk) return r;
  if (have != 3) return kBad;
  pending_edge_ = {pred, succ};
  return kOk;
}

// One member of the top-level object up to its value, or the object's end.
// "tasks", "edges" and any other array are then read entry by entry.
FastGraphScan::R FastGraphScan::TopMember() {
  if (*p_ == '}') {
    ++p_;
    done_ = true;  // what follows the object is not read (as ReadDeps)
    return kOk;
  }
  if (!first_member_) {
    if (R r = Byte(','); r != kOk) return r;
  }
  const char *b, *e;
  if (R r = Key(&b, &e); r != kOk) return r;
  const std::string_view key(b, static_cast<size_t>(e - b));
  const Section section = key == keys::kTasks   ? Section::kTasks
                          : key == keys::kEdges ? Section::kEdges
                                                : Section::kSkip;
  if (*p_ == '[') {
    ++p_;
    if (*p_ == ']') {
      ++p_;
    } else if (*p_ == '\0') {
      return AtEnd();
    } else {
      in_array_ = true;
      section_ = section;
    }
  } else {
    if (section != Section::kSkip) return kBad;  // not an array: the generic error
    if (R r = SkipValue(1); r != kOk) return r;
  }
  first_member_ = false;
  return kOk;
}

// One entry of the array being read and the ',' or ']' after it.
FastGraphScan::R FastGraphScan::Element() {
  R r = kOk;
  if (section_ == Section::kTasks) {
    r = Task();
  } else if (section_ == Section::kEdges) {
    r = Edge();
  } else if (const char* e = DepGenForm::Tensor(p_, end_)) {
    p_ = e;  // a tensors[] entry as dep_gen writes it
  } else {
    r = SkipValue(1);
  }
  if (r != kOk) return r;
  if (*p_ == ',') {
    ++p_;
  } else if (*p_ == ']') {
    ++p_;
    in_array_ = false;
  } else {
    return AtEnd();
  }
  // Added only now: an entry re-read after a refill is added once.
  if (section_ == Section::kTasks) graph_->AddTask(pending_task_.first, pending_task_.second);
  if (section_ == Section::kEdges) graph_->AddEdge(pending_edge_.first, pending_edge_.second);
  return kOk;
}

bool FastGraphScan::Scan(const std::filesystem::path& path) {
  file_ = std::fopen(path.c_str(), "rb");
  if (file_ == nullptr) return false;
  buf_.assign(kChunk + 1 + kPad, '\0');
  mark_ = p_ = end_ = buf_.data();
  if (!Refill() || Byte('{') != kOk) return false;
  while (!done_) {
    mark_ = p_;
    // A task or edge entry is added to the graph only once it is read whole.
    const R r = in_array_ ? Element() : TopMember();
    if (r == kBad) return false;
    if (r == kMore) {
      p_ = mark_;
      if (!Refill()) return false;
    }
  }
  return true;
}

}  // namespace

bool FastScanTaskGraph(const std::filesystem::path& path, TaskGraph* graph) {
  return FastGraphScan(graph).Scan(path);
}

}  // namespace dfx::collectors
