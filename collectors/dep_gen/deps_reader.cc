// One parser (ReadDeps below) walks the file once with the pull reader and
// hands each entry to a sink; the two public readers are two sinks. With
// `details` off the parser skips what the compact graph does not keep, so the
// trace converter pays nothing for the annotations.
#include "collectors/dep_gen/deps_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string_view>
#include <tuple>

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

}  // namespace

Result<DepsFile> ReadDepsFile(const std::filesystem::path& path) {
  JsonPullReader r;
  DFX_RETURN_IF_ERROR(r.Open(path));
  DepsFile file;
  DepsFileSink sink(&file);
  DFX_RETURN_IF_ERROR(ReadDeps(r, /*details=*/true, sink));
  return file;
}

Result<TaskGraph> ReadTaskGraph(const std::filesystem::path& path) {
  TaskGraph g;
  JsonPullReader r;
  DFX_RETURN_IF_ERROR(r.Open(path));
  // Upper bounds from the file size (an edge takes >= 24 bytes of text, a task
  // >= 16): reserved but untouched pages are not resident, and no reallocation
  // doubles the peak while reading.
  std::error_code size_ec;
  uint64_t file_size = std::filesystem::file_size(path, size_ec);
  if (!size_ec) {
    g.Reserve(static_cast<size_t>(file_size / 16 + 16), static_cast<size_t>(file_size / 24 + 16));
  }
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

void TaskGraph::AddTask(uint64_t id, const TaskInfo& info) {
  const uint32_t k = Intern(info);
  if (sealed_) {
    late_tasks_.emplace_back(id, k);
    return;
  }
  ids_.push_back(id);
  info_of_.push_back(k);
}

// The tasks before the first edge become the sorted id table edges index into.
void TaskGraph::Seal() {
  sealed_ = true;
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
  dense_ = ids_.empty() || ids_.back() - ids_.front() == ids_.size() - 1;
}

uint32_t TaskGraph::IndexOf(uint64_t id) const {
  if (dense_) {
    return !ids_.empty() && id >= ids_.front() && id - ids_.front() < ids_.size()
               ? static_cast<uint32_t>(id - ids_.front())
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
    dense_ = ids_.back() - ids_.front() == ids_.size() - 1;
  }
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
