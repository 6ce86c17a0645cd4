// One parser (ReadDeps below) walks the file once with the pull reader and
// hands each entry to a sink; the two public readers are two sinks. With
// `details` off the parser skips what the compact graph does not keep, so the
// trace converter pays nothing for the annotations.
#include "collectors/dep_gen/deps_reader.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "collectors/dep_gen/deps_fast_scan.h"
#include "collectors/dep_gen/deps_keys.h"
#include "common/json_stream.h"

namespace dfx::collectors {
namespace {

namespace keys = deps_keys;

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
  *matched = rest == keys::kShape || rest == keys::kStartOffset || rest == keys::kStrides;
  if (rest == keys::kShape) return ReadDims(r, "dimension", &slice->shape);
  if (rest == keys::kStrides) return ReadDims(r, "stride", &slice->strides);
  if (rest == keys::kStartOffset) return ReadOptionalU64(r, "offset", &slice->start_offset);
  return true;
}

bool ReadArg(JsonPullReader& r, DepsArg* a) {
  if (!r.BeginObject()) return false;
  std::string key;
  while (r.NextKey(&key)) {
    bool ok = true, slice_key = false;
    if (key == keys::kIdx) {
      int32_t idx = 0;
      ok = ReadInt(r, &idx);
      a->idx = idx;
    } else if (key == keys::kType) {
      ok = ReadOptionalString(r, &a->type);
    } else if (key == keys::kTensorId) {
      ok = ReadOptionalU64(r, "tensor id", &a->tensor_id);
    } else if (key == keys::kDtype) {
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

// `key` is scratch, reused across entries (a long key costs no allocation
// per entry).
bool ReadTask(JsonPullReader& r, bool details, std::string& key, DepsTask* t) {
  bool have_id = false;
  if (!r.BeginObject()) return false;
  while (r.NextKey(&key)) {
    bool ok = true;
    if (key == keys::kTaskId) {
      ok = ReadU64(r, "task id", &t->task_id);
      have_id = true;
    } else if (key == keys::kKernelIds) {
      t->has_kernel_ids = true;
      ok = r.BeginArray();
      for (size_t i = 0; ok && r.NextElement(); ++i) {
        int32_t id = -1;
        ok = ReadInt(r, &id);
        if (i < 3) t->kernel_ids[i] = id;
      }
      ok = ok && r.ok();
    } else if (key == keys::kBlockNum) {
      ok = ReadInt(r, &t->block_num);
    } else if (key == keys::kEarlyDispatch && r.Peek() == Kind::kBool) {
      ok = r.ReadBool(&t->early_dispatch);
    } else if (key == keys::kArgs && details) {
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
  if (!have_id)
    return r.Fail(std::string(JoinedText<keys::kTasks, "[] entry without ", keys::kTaskId>));
  return true;
}

bool ReadTensor(JsonPullReader& r, DepsTensor* t) {
  bool have_id = false;
  std::string key;
  if (!r.BeginObject()) return false;
  while (r.NextKey(&key)) {
    bool ok = true;
    if (key == keys::kTensorId) {
      ok = ReadU64(r, "tensor id", &t->tensor_id);
      have_id = true;
    } else if (key == keys::kBufferAddr) {
      ok = ReadOptionalU64(r, "buffer address", &t->buffer_addr);
    } else if (key == keys::kVersion) {
      ok = ReadInt(r, &t->version);
    } else if (key == keys::kDtype) {
      ok = ReadOptionalString(r, &t->dtype);
    } else if (key == keys::kBufferNumel) {
      ok = ReadOptionalU64(r, "element count", &t->buffer_numel);
    } else {
      ok = r.Skip();
    }
    if (!ok) return false;
  }
  if (!r.ok()) return false;
  if (!have_id)
    return r.Fail(std::string(JoinedText<keys::kTensors, "[] entry without ", keys::kTensorId>));
  return true;
}

bool ReadEdge(JsonPullReader& r, bool details, std::string& key, DepsEdge* e) {
  int have = 0;
  if (!r.BeginObject()) return false;
  while (r.NextKey(&key)) {
    bool ok = true, slice_key = false;
    if (key == keys::kPred) {
      ok = ReadU64(r, "task id", &e->pred);
      have |= 1;
    } else if (key == keys::kSucc) {
      ok = ReadU64(r, "task id", &e->succ);
      have |= 2;
    } else if (!details) {
      ok = r.Skip();
    } else if (key == keys::kArg) {
      ok = ReadInt(r, &e->arg);
    } else if (key == keys::kSource) {
      ok = r.ReadString(&e->source);
    } else if (key == keys::kOverlap) {
      ok = ReadOptionalString(r, &e->overlap);
    } else if (key == keys::kTensorId) {
      ok = ReadOptionalU64(r, "tensor id", &e->tensor_id);
    } else if (key == JoinedText<keys::kConsumer, keys::kDtype>) {
      ok = ReadOptionalString(r, &e->consumer_dtype);
    } else {
      ok = ReadSliceKey(r, key, keys::kConsumer, &e->consumer, &slice_key) &&
           (slice_key || ReadSliceKey(r, key, keys::kProducer, &e->producer, &slice_key)) &&
           (slice_key || r.Skip());
    }
    if (!ok) return false;
  }
  if (!r.ok()) return false;
  if (have != 3)
    return r.Fail(std::string(
        JoinedText<keys::kEdges, "[] entry needs both ", keys::kPred, " and ", keys::kSucc>));
  return true;
}

// The one parser: every entry of "tasks", "tensors" (with `details` only) and
// "edges", in file order.
Status ReadDeps(JsonPullReader& r, bool details, DepsSink& sink) {
  if (!r.BeginObject()) return r.status();
  std::string key, entry_key;
  while (r.NextKey(&key)) {
    const bool tasks = key == keys::kTasks, edges = key == keys::kEdges;
    const bool tensors = details && key == keys::kTensors;
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
    if (FastScanTaskGraph(path, &g)) {
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

}  // namespace dfx::collectors
