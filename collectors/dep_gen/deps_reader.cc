// One parser (ReadDeps below) walks the file once with the pull reader and
// hands each entry to a sink; the two public readers are two sinks. With
// `details` off the parser skips what the compact graph does not keep, so the
// trace converter pays nothing for the annotations.
#include "collectors/dep_gen/deps_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <tuple>

#include "common/byte_scan.h"
#include "common/json_stream.h"

namespace dfx::collectors {
namespace {

using Kind = JsonPullReader::Kind;

// Parses a u64 written as decimal text; a negative value is masked to u64.
// False when the text is not an integer.
bool ParseU64Text(const std::string& text, uint64_t* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  if (text[0] == '-') {
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (*end != '\0') return false;
    *out = static_cast<uint64_t>(v);
    return true;
  }
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE) return false;
  *out = v;
  return true;
}

// A u64 the file stores as a string (or a number).
bool ReadU64(JsonPullReader& r, const char* what, uint64_t* out) {
  if (r.Peek() == Kind::kString) {
    std::string s;
    if (!r.ReadString(&s)) return false;
    if (!ParseU64Text(s, out))
      return r.Fail(fmt::format("expected a u64 {} string, got \"{}\"", what, s));
    return true;
  }
  JsonNumber n;
  if (!r.ReadNumber(&n)) return false;
  *out = n.negative ? static_cast<uint64_t>(n.AsInt64()) : n.magnitude;
  return true;
}

bool ReadOptionalU64(JsonPullReader& r, const char* what, std::optional<uint64_t>* out) {
  uint64_t v = 0;
  if (!ReadU64(r, what, &v)) return false;
  *out = v;
  return true;
}

bool ReadInt(JsonPullReader& r, int32_t* out) {
  JsonNumber n;
  if (!r.ReadNumber(&n)) return false;
  *out = static_cast<int32_t>(n.AsInt64());
  return true;
}

bool ReadOptionalString(JsonPullReader& r, std::optional<std::string>* out) {
  std::string s;
  if (!r.ReadString(&s)) return false;
  *out = std::move(s);
  return true;
}

bool ReadDims(JsonPullReader& r, const char* what, std::optional<std::vector<uint64_t>>* out) {
  if (!r.BeginArray()) return false;
  out->emplace();
  while (r.NextElement()) {
    uint64_t v = 0;
    if (!ReadU64(r, what, &v)) return false;
    (*out)->push_back(v);
  }
  return r.ok();
}

// Reads the value of `key` into `slice` when it is one of the slice's three
// keys "<prefix>shape", "<prefix>start_offset", "<prefix>strides". Sets
// `*matched`.
bool ReadSliceKey(JsonPullReader& r, const std::string& key, std::string_view prefix,
                  DepsSlice* slice, bool* matched) {
  *matched = false;
  if (key.size() <= prefix.size() || key.compare(0, prefix.size(), prefix) != 0) return true;
  const std::string_view rest = std::string_view(key).substr(prefix.size());
  *matched = rest == "shape" || rest == "start_offset" || rest == "strides";
  if (rest == "shape") return ReadDims(r, "dimension", &slice->shape);
  if (rest == "strides") return ReadDims(r, "stride", &slice->strides);
  if (rest == "start_offset") return ReadOptionalU64(r, "offset", &slice->start_offset);
  return true;
}

bool ReadArg(JsonPullReader& r, DepsArg* a) {
  if (!r.BeginObject()) return false;
  std::string key;
  while (r.NextKey(&key)) {
    bool ok = true, slice_key = false;
    if (key == "idx") {
      int32_t idx = 0;
      ok = ReadInt(r, &idx);
      a->idx = idx;
    } else if (key == "type") {
      ok = ReadOptionalString(r, &a->type);
    } else if (key == "tensor_id") {
      ok = ReadOptionalU64(r, "tensor id", &a->tensor_id);
    } else if (key == "dtype") {
      ok = ReadOptionalString(r, &a->dtype);
    } else {
      ok = ReadSliceKey(r, key, "", &a->slice, &slice_key) && (slice_key || r.Skip());
    }
    if (!ok) return false;
  }
  return r.ok();
}

class DepsSink {
 public:
  virtual ~DepsSink() = default;
  virtual void OnTask(DepsTask task) = 0;
  virtual void OnTensor(DepsTensor tensor) = 0;
  virtual void OnEdge(DepsEdge edge) = 0;
};

// `key` is scratch, reused across entries (a long key no longer costs an
// allocation per entry).
bool ReadTask(JsonPullReader& r, bool details, std::string& key, DepsTask* t) {
  bool have_id = false;
  if (!r.BeginObject()) return false;
  while (r.NextKey(&key)) {
    bool ok = true;
    if (key == "task_id") {
      ok = ReadU64(r, "task id", &t->task_id);
      have_id = true;
    } else if (key == "kernel_ids") {
      t->has_kernel_ids = true;
      ok = r.BeginArray();
      for (size_t i = 0; ok && r.NextElement(); ++i) {
        int32_t id = -1;
        ok = ReadInt(r, &id);
        if (i < 3) t->kernel_ids[i] = id;
      }
      ok = ok && r.ok();
    } else if (key == "block_num") {
      ok = ReadInt(r, &t->block_num);
    } else if (key == "early_dispatch" && r.Peek() == Kind::kBool) {
      ok = r.ReadBool(&t->early_dispatch);
    } else if (key == "args" && details) {
      t->args.emplace();
      ok = r.BeginArray();
      while (ok && r.NextElement()) ok = ReadArg(r, &t->args->emplace_back());
      ok = ok && r.ok();
    } else {
      ok = r.Skip();
    }
    if (!ok) return false;
  }
  if (!r.ok()) return false;
  if (!have_id) return r.Fail("tasks[] entry without task_id");
  return true;
}

bool ReadTensor(JsonPullReader& r, DepsTensor* t) {
  bool have_id = false;
  std::string key;
  if (!r.BeginObject()) return false;
  while (r.NextKey(&key)) {
    bool ok = true;
    if (key == "tensor_id") {
      ok = ReadU64(r, "tensor id", &t->tensor_id);
      have_id = true;
    } else if (key == "buffer_addr") {
      ok = ReadOptionalU64(r, "buffer address", &t->buffer_addr);
    } else if (key == "version") {
      ok = ReadInt(r, &t->version);
    } else if (key == "dtype") {
      ok = ReadOptionalString(r, &t->dtype);
    } else if (key == "buffer_numel") {
      ok = ReadOptionalU64(r, "element count", &t->buffer_numel);
    } else {
      ok = r.Skip();
    }
    if (!ok) return false;
  }
  if (!r.ok()) return false;
  if (!have_id) return r.Fail("tensors[] entry without tensor_id");
  return true;
}

bool ReadEdge(JsonPullReader& r, bool details, std::string& key, DepsEdge* e) {
  int have = 0;
  if (!r.BeginObject()) return false;
  while (r.NextKey(&key)) {
    bool ok = true, slice_key = false;
    if (key == "pred") {
      ok = ReadU64(r, "task id", &e->pred);
      have |= 1;
    } else if (key == "succ") {
      ok = ReadU64(r, "task id", &e->succ);
      have |= 2;
    } else if (!details) {
      ok = r.Skip();
    } else if (key == "arg") {
      ok = ReadInt(r, &e->arg);
    } else if (key == "source") {
      ok = r.ReadString(&e->source);
    } else if (key == "overlap") {
      ok = ReadOptionalString(r, &e->overlap);
    } else if (key == "tensor_id") {
      ok = ReadOptionalU64(r, "tensor id", &e->tensor_id);
    } else if (key == "consumer_dtype") {
      ok = ReadOptionalString(r, &e->consumer_dtype);
    } else {
      ok = ReadSliceKey(r, key, "consumer_", &e->consumer, &slice_key) &&
           (slice_key || ReadSliceKey(r, key, "producer_", &e->producer, &slice_key)) &&
           (slice_key || r.Skip());
    }
    if (!ok) return false;
  }
  if (!r.ok()) return false;
  if (have != 3) return r.Fail("edges[] entry needs both pred and succ");
  return true;
}

// The one parser: every entry of "tasks", "tensors" (with `details` only) and
// "edges", in file order.
Status ReadDeps(JsonPullReader& r, bool details, DepsSink& sink) {
  if (!r.BeginObject()) return r.status();
  std::string key, entry_key;
  while (r.NextKey(&key)) {
    const bool tasks = key == "tasks", edges = key == "edges";
    const bool tensors = details && key == "tensors";
    if (!tasks && !edges && !tensors) {
      if (!r.Skip()) return r.status();
      continue;
    }
    if (!r.BeginArray()) return r.status();
    while (r.NextElement()) {
      if (tasks) {
        DepsTask t;
        if (!ReadTask(r, details, entry_key, &t)) return r.status();
        sink.OnTask(std::move(t));
      } else if (tensors) {
        DepsTensor t;
        if (!ReadTensor(r, &t)) return r.status();
        sink.OnTensor(std::move(t));
      } else {
        DepsEdge e;
        if (!ReadEdge(r, details, entry_key, &e)) return r.status();
        sink.OnEdge(std::move(e));
      }
    }
    if (!r.ok()) return r.status();
  }
  return r.status();
}

class DepsFileSink : public DepsSink {
 public:
  explicit DepsFileSink(DepsFile* file) : file_(file) {}
  void OnTask(DepsTask task) override { file_->tasks.push_back(std::move(task)); }
  void OnTensor(DepsTensor tensor) override { file_->tensors.push_back(std::move(tensor)); }
  void OnEdge(DepsEdge edge) override { file_->edges.push_back(std::move(edge)); }

 private:
  DepsFile* file_;
};

class TaskGraphSink : public DepsSink {
 public:
  explicit TaskGraphSink(TaskGraph* graph) : graph_(graph) {}
  void OnTask(DepsTask task) override {
    TaskInfo info;
    for (size_t i = 0; i < 3; ++i) info.kernel_ids[i] = task.kernel_ids[i];
    info.block_num = task.block_num;
    info.early_dispatch = task.early_dispatch;
    graph_->AddTask(task.task_id, info);
  }
  void OnTensor(DepsTensor) override {}
  void OnEdge(DepsEdge edge) override { graph_->AddEdge(edge.pred, edge.succ); }

 private:
  TaskGraph* graph_;
};

// --- The fast path of ReadTaskGraph ---------------------------------------------

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
    if (!f.Lit(R"(,"args":[)")) return nullptr;
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
        f.Lit(R"(,"arg":)") && f.Uint() && f.Lit(R"(,"source":")") && f.Str() &&
        f.Lit(R"(","flags":)") && f.StrList() && f.Lit(R"(,"overlap":")") && f.Str() &&
        f.Lit(R"(","tensor_id":")") && f.Str() && f.Lit(R"(","consumer_dtype":")") && f.Str() &&
        f.Lit(R"(","consumer_shape":)") && f.IntList() && f.Lit(R"(,"consumer_start_offset":")") &&
        f.Str() && f.Lit(R"(","consumer_strides":)") && f.IntList() &&
        f.Lit(R"(,"producer_shape":)") && f.IntList() && f.Lit(R"(,"producer_start_offset":")") &&
        f.Str() && f.Lit(R"(","producer_strides":)") && f.IntList() && f.Lit("}");
    return ok ? f.at() : nullptr;
  }
  // A tensors[] entry.
  static const char* Tensor(const char* q, const char* end) {
    DepGenForm f(q, end);
    const bool ok = f.Lit(R"({"tensor_id":")") && f.Str() && f.Lit(R"(","buffer_addr":")") &&
                    f.Str() && f.Lit(R"(","version":)") && f.Uint() && f.Lit(R"(,"dtype":")") &&
                    f.Str() && f.Lit(R"(","buffer_numel":")") && f.Str() && f.Lit(R"("})");
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
    return Lit(R"({"idx":)") && Uint() && Lit(R"(,"type":")") && Str() &&
           Lit(R"(","tensor_id":")") && Str() && Lit(R"(","dtype":")") && Str() &&
           Lit(R"(","shape":)") && IntList() && Lit(R"(,"start_offset":")") && Str() &&
           Lit(R"(","strides":)") && IntList() && Lit("}");
  }

  const char* q_;
  const char* const end_;
};

// dep_gen writes deps.json as one compact object (artifacts.md §6.2), and most
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
    return key == "task_id" || key == "kernel_ids" || key == "block_num" || key == "early_dispatch";
  };
  R r = Members(
      [&](std::string_view key) {
        if (key == "task_id") {
          seen |= 1;
          return Id(&id);
        }
        if (key == "kernel_ids") {
          seen |= 2;
          return KernelIds(&info);
        }
        if (key == "block_num") {
          seen |= 4;
          int64_t v = 0;
          const R got = Int(&v);
          info.block_num = static_cast<int32_t>(v);
          return got;
        }
        if (key == "early_dispatch") {
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
  const auto reads = [](std::string_view key) { return key == "pred" || key == "succ"; };
  // Once both ids are read, the annotations after them (dep_gen writes them
  // first) are skipped in one pass.
  R r = Members(
      [&](std::string_view key) {
        if (key == "pred") {
          have |= 1;
          return Id(&pred);
        }
        if (key == "succ") {
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
  const Section section = key == "tasks"   ? Section::kTasks
                          : key == "edges" ? Section::kEdges
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

Result<DepsFile> ReadDepsFile(const std::filesystem::path& path) {
  JsonPullReader r;
  DFX_RETURN_IF_ERROR(r.Open(path));
  DepsFile file;
  DepsFileSink sink(&file);
  DFX_RETURN_IF_ERROR(ReadDeps(r, /*details=*/true, sink));
  return file;
}

Result<TaskGraph> ReadTaskGraph(const std::filesystem::path& path, bool* fast_scan) {
  if (fast_scan != nullptr) *fast_scan = false;
  // Upper bounds from the file size (an edge takes >= 24 bytes of text, a task
  // >= 16): reserved but untouched pages are not resident, and no reallocation
  // doubles the peak while reading.
  std::error_code size_ec;
  const uint64_t file_size = std::filesystem::file_size(path, size_ec);
  const auto reserve = [&](TaskGraph& g) {
    if (!size_ec) {
      g.Reserve(static_cast<size_t>(file_size / 16 + 16), static_cast<size_t>(file_size / 24 + 16));
    }
  };
  {
    TaskGraph g;
    reserve(g);
    if (FastGraphScan(&g).Scan(path)) {
      g.Finalize();
      if (fast_scan != nullptr) *fast_scan = true;
      return g;
    }
  }
  // Not dep_gen's compact form (or not readable): the generic reader, from
  // the start, is the reference for the result or the error.
  TaskGraph g;
  JsonPullReader r;
  DFX_RETURN_IF_ERROR(r.Open(path));
  reserve(g);
  TaskGraphSink sink(&g);
  DFX_RETURN_IF_ERROR(ReadDeps(r, /*details=*/false, sink));
  g.Finalize();
  return g;
}

void TaskGraph::Reserve(size_t tasks, size_t edges) {
  ids_.reserve(tasks);
  info_of_.reserve(tasks);
  edges_.reserve(edges);
}

uint32_t TaskGraph::Intern(const TaskInfo& info) {
  const std::array<int, 5> key = {info.kernel_ids[0], info.kernel_ids[1], info.kernel_ids[2],
                                  info.block_num, info.early_dispatch ? 1 : 0};
  auto [it, inserted] = intern_.try_emplace(key, static_cast<uint32_t>(infos_.size()));
  if (inserted) infos_.push_back(info);
  return it->second;
}

namespace {
// The id table of tasks that were only counted (see AddTask); nothing when
// the table is already written.
void WriteOutCountedIds(uint64_t first, size_t count, std::vector<uint64_t>* ids) {
  if (!ids->empty() || count == 0) return;
  ids->resize(count);
  for (size_t i = 0; i < count; ++i) (*ids)[i] = first + i;
}
}  // namespace

// While the tasks seen so far are first_id_, first_id_ + 1, ... (dep_gen's
// ids) they are only counted (num_ids_, ids_ empty): the table is written
// out at the first id that breaks the run, so a dense graph never holds one.
void TaskGraph::AddTask(uint64_t id, const TaskInfo& info) {
  const uint32_t k = Intern(info);
  if (sealed_) {
    late_tasks_.emplace_back(id, k);
    return;
  }
  if (ids_.empty() && (num_ids_ == 0 || (id >= first_id_ && id - first_id_ == num_ids_))) {
    if (num_ids_ == 0) first_id_ = id;
    ++num_ids_;
    info_of_.push_back(k);
    return;
  }
  WriteOutCountedIds(first_id_, num_ids_, &ids_);
  ids_.push_back(id);
  info_of_.push_back(k);
}

// The tasks before the first edge become the sorted id table edges index into.
void TaskGraph::Seal() {
  sealed_ = true;
  if (ids_.empty() && num_ids_ > 0) {  // only counted: sorted, unique and dense
    dense_ = true;
    return;
  }
  // dep_gen writes tasks in id order: check before sorting (a sort would take a
  // temporary copy of every task).
  if (!std::is_sorted(ids_.begin(), ids_.end())) {
    std::vector<std::pair<uint64_t, uint32_t>> t(ids_.size());
    for (size_t i = 0; i < ids_.size(); ++i) t[i] = {ids_[i], info_of_[i]};
    std::stable_sort(t.begin(), t.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < t.size(); ++i) std::tie(ids_[i], info_of_[i]) = t[i];
  }
  // In-place dedupe; the last entry wins for a duplicated task id.
  size_t w = 0;
  for (size_t i = 0; i < ids_.size(); ++i) {
    if (w > 0 && ids_[w - 1] == ids_[i]) {
      info_of_[w - 1] = info_of_[i];
    } else {
      ids_[w] = ids_[i];
      info_of_[w++] = info_of_[i];
    }
  }
  ids_.resize(w);
  info_of_.resize(w);
  SetDense();
}

void TaskGraph::SetDense() {
  dense_ = ids_.empty() || ids_.back() - ids_.front() == ids_.size() - 1;
  first_id_ = ids_.empty() ? 0 : ids_.front();
  num_ids_ = ids_.size();
}

uint32_t TaskGraph::IndexOf(uint64_t id) const {
  if (dense_) {
    return id >= first_id_ && id - first_id_ < num_ids_ ? static_cast<uint32_t>(id - first_id_)
                                                        : kNoInfo;
  }
  auto it = std::lower_bound(ids_.begin(), ids_.end(), id);
  return it != ids_.end() && *it == id ? static_cast<uint32_t>(it - ids_.begin()) : kNoInfo;
}

uint32_t TaskGraph::StageIndex(uint64_t id) {
  const uint32_t i = IndexOf(id);
  if (i != kNoInfo) return i;
  auto [it, inserted] = staged_index_.try_emplace(id, static_cast<uint32_t>(staged_ids_.size()));
  if (inserted) staged_ids_.push_back(id);
  return kStaged | it->second;
}

void TaskGraph::AddEdge(uint64_t pred, uint64_t succ) {
  if (!sealed_) Seal();
  edges_.emplace_back(StageIndex(pred), StageIndex(succ));
}

void TaskGraph::Finalize() {
  if (!sealed_) Seal();
  if (!late_tasks_.empty() || !staged_ids_.empty()) {
    // Rare (edge ends deps.json does not list, tasks after the edges): merge
    // them into the id table and renumber the edges.
    WriteOutCountedIds(first_id_, num_ids_, &ids_);
    std::vector<uint64_t> all = ids_;
    all.insert(all.end(), staged_ids_.begin(), staged_ids_.end());
    for (const auto& [id, k] : late_tasks_) all.push_back(id);
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    const auto pos = [&all](uint64_t id) {
      return static_cast<uint32_t>(std::lower_bound(all.begin(), all.end(), id) - all.begin());
    };
    std::vector<uint32_t> info(all.size(), kNoInfo);
    for (size_t i = 0; i < ids_.size(); ++i) info[pos(ids_[i])] = info_of_[i];
    for (const auto& [id, k] : late_tasks_) info[pos(id)] = k;  // file order: the last wins
    const auto remap = [&](uint32_t x) {
      return pos((x & kStaged) != 0 ? staged_ids_[x & ~kStaged] : ids_[x]);
    };
    for (auto& e : edges_) e = {remap(e.first), remap(e.second)};
    ids_ = std::move(all);
    info_of_ = std::move(info);
    SetDense();
  }
  // Dense ids (dep_gen's) need no table: 8 bytes per task less.
  if (dense_) ids_ = {};
  late_tasks_ = {};
  staged_ids_ = {};
  staged_index_ = {};
  intern_ = {};
  num_tasks_ = static_cast<size_t>(
      std::count_if(info_of_.begin(), info_of_.end(), [](uint32_t k) { return k != kNoInfo; }));
  if (!std::is_sorted(edges_.begin(), edges_.end())) std::sort(edges_.begin(), edges_.end());
  edges_.erase(std::unique(edges_.begin(), edges_.end()), edges_.end());
  by_succ_.resize(edges_.size());
  for (size_t i = 0; i < edges_.size(); ++i) by_succ_[i] = static_cast<uint32_t>(i);
  std::sort(by_succ_.begin(), by_succ_.end(), [this](uint32_t a, uint32_t b) {
    return edges_[a].second != edges_[b].second ? edges_[a].second < edges_[b].second
                                                : edges_[a].first < edges_[b].first;
  });
}

const TaskInfo* TaskGraph::FindTask(uint64_t id) const {
  const uint32_t i = IndexOf(id);
  if (i == kNoInfo || info_of_[i] == kNoInfo) return nullptr;
  return &infos_[info_of_[i]];
}

TaskGraph::EdgeRange TaskGraph::Edges() const { return EdgeRange(this, nullptr, 0, edges_.size()); }

TaskGraph::EdgeRange TaskGraph::Succs(uint64_t id) const {
  const uint32_t i = IndexOf(id);
  if (i == kNoInfo) return EdgeRange(this, nullptr, 0, 0);
  auto lo = std::lower_bound(edges_.begin(), edges_.end(), i,
                             [](const auto& e, uint32_t x) { return e.first < x; });
  auto hi = lo;
  while (hi != edges_.end() && hi->first == i) ++hi;
  return EdgeRange(this, nullptr, static_cast<size_t>(lo - edges_.begin()),
                   static_cast<size_t>(hi - edges_.begin()));
}

TaskGraph::EdgeRange TaskGraph::Preds(uint64_t id) const {
  const uint32_t i = IndexOf(id);
  if (i == kNoInfo) return EdgeRange(this, by_succ_.data(), 0, 0);
  auto lo = std::lower_bound(by_succ_.begin(), by_succ_.end(), i,
                             [this](uint32_t e, uint32_t x) { return edges_[e].second < x; });
  auto hi = lo;
  while (hi != by_succ_.end() && edges_[*hi].second == i) ++hi;
  return EdgeRange(this, by_succ_.data(), static_cast<size_t>(lo - by_succ_.begin()),
                   static_cast<size_t>(hi - by_succ_.begin()));
}

}  // namespace dfx::collectors
