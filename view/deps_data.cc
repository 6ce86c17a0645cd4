#include "view/deps_data.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "common/json_stream.h"

namespace dfx::view {

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

void DepsData::Finalize() {
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  // In-place dedupe; the last entry wins for a duplicated task id.
  size_t w = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (w > 0 && tasks[w - 1].first == tasks[i].first)
      tasks[w - 1] = tasks[i];
    else
      tasks[w++] = tasks[i];
  }
  tasks.resize(w);
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  by_succ.resize(edges.size());
  for (size_t i = 0; i < edges.size(); ++i) by_succ[i] = static_cast<uint32_t>(i);
  std::sort(by_succ.begin(), by_succ.end(), [this](uint32_t a, uint32_t b) {
    return edges[a].second != edges[b].second ? edges[a].second < edges[b].second
                                              : edges[a].first < edges[b].first;
  });
}

const DepTask* DepsData::FindTask(uint64_t id) const {
  auto it = std::lower_bound(tasks.begin(), tasks.end(), id,
                             [](const auto& t, uint64_t v) { return t.first < v; });
  return it != tasks.end() && it->first == id ? &it->second : nullptr;
}

namespace {
std::span<const std::pair<uint64_t, uint64_t>> Range(
    const std::vector<std::pair<uint64_t, uint64_t>>& v, uint64_t id) {
  auto lo = std::lower_bound(v.begin(), v.end(), id,
                             [](const auto& e, uint64_t x) { return e.first < x; });
  auto hi = lo;
  while (hi != v.end() && hi->first == id) ++hi;
  return {v.data() + (lo - v.begin()), static_cast<size_t>(hi - lo)};
}
}  // namespace

std::span<const std::pair<uint64_t, uint64_t>> DepsData::Succs(uint64_t id) const {
  return Range(edges, id);
}
DepsData::PredRange DepsData::Preds(uint64_t id) const {
  auto lo = std::lower_bound(by_succ.begin(), by_succ.end(), id,
                             [this](uint32_t e, uint64_t x) { return edges[e].second < x; });
  auto hi = lo;
  while (hi != by_succ.end() && edges[*hi].second == id) ++hi;
  return PredRange(this, by_succ.data() + (lo - by_succ.begin()),
                   by_succ.data() + (hi - by_succ.begin()));
}

namespace {

bool ReadId(JsonPullReader& r, uint64_t* out) {
  if (r.Peek() == JsonPullReader::Kind::kString) {
    std::string s;
    if (!r.ReadString(&s)) return false;
    if (!ParseU64Text(s, out)) return r.Fail("expected a u64 task id string, got \"" + s + "\"");
    return true;
  }
  JsonNumber n;
  if (!r.ReadNumber(&n)) return false;
  *out = n.negative ? static_cast<uint64_t>(n.AsInt64()) : n.magnitude;
  return true;
}

}  // namespace

Result<DepsData> LoadDeps(const std::filesystem::path& path) {
  DepsData d;
  JsonPullReader r;
  DFX_RETURN_IF_ERROR(r.Open(path));
  // Upper bounds from the file size (an edge takes >= 24 bytes of text, a task
  // >= 16): reserved but untouched pages are not resident, and no reallocation
  // doubles the peak while reading.
  std::error_code size_ec;
  uint64_t file_size = std::filesystem::file_size(path, size_ec);
  if (!size_ec) {
    d.edges.reserve(static_cast<size_t>(file_size / 24 + 16));
    d.tasks.reserve(static_cast<size_t>(file_size / 16 + 16));
  }
  if (!r.BeginObject()) return r.status();
  std::string key, k2;
  JsonNumber n;
  while (r.NextKey(&key)) {
    if (key == "tasks") {
      if (!r.BeginArray()) return r.status();
      while (r.NextElement()) {
        uint64_t id = 0;
        bool have_id = false;
        DepTask t;
        if (!r.BeginObject()) return r.status();
        while (r.NextKey(&k2)) {
          if (k2 == "task_id") {
            if (!ReadId(r, &id)) return r.status();
            have_id = true;
          } else if (k2 == "kernel_ids") {
            if (!r.BeginArray()) return r.status();
            size_t i = 0;
            while (r.NextElement()) {
              if (!r.ReadNumber(&n)) return r.status();
              if (i < 3) t.kernel_ids[i] = static_cast<int>(n.AsInt64());
              ++i;
            }
          } else if (k2 == "block_num") {
            if (!r.ReadNumber(&n)) return r.status();
            t.block_num = static_cast<int>(n.AsInt64());
          } else if (k2 == "early_dispatch" && r.Peek() == JsonPullReader::Kind::kBool) {
            if (!r.ReadBool(&t.early_dispatch)) return r.status();
          } else {
            if (!r.Skip()) return r.status();
          }
        }
        if (!r.ok()) return r.status();
        if (!have_id) {
          r.Fail("tasks[] entry without task_id");
          return r.status();
        }
        d.tasks.emplace_back(id, t);
      }
    } else if (key == "edges") {
      if (!r.BeginArray()) return r.status();
      while (r.NextElement()) {
        uint64_t pred = 0, succ = 0;
        int have = 0;
        if (!r.BeginObject()) return r.status();
        while (r.NextKey(&k2)) {
          if (k2 == "pred") {
            if (!ReadId(r, &pred)) return r.status();
            have |= 1;
          } else if (k2 == "succ") {
            if (!ReadId(r, &succ)) return r.status();
            have |= 2;
          } else {
            if (!r.Skip()) return r.status();
          }
        }
        if (!r.ok()) return r.status();
        if (have != 3) {
          r.Fail("edges[] entry needs both pred and succ");
          return r.status();
        }
        d.edges.emplace_back(pred, succ);
      }
    } else {
      if (!r.Skip()) return r.status();
    }
  }
  if (!r.ok()) return r.status();
  d.Finalize();
  return d;
}

}  // namespace dfx::view
