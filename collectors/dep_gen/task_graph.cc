#include "collectors/dep_gen/task_graph.h"

#include <algorithm>
#include <tuple>

namespace dfx::collectors {

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
  SortEdges();
  by_succ_.resize(edges_.size());
  for (size_t i = 0; i < edges_.size(); ++i) by_succ_[i] = static_cast<uint32_t>(i);
  std::sort(by_succ_.begin(), by_succ_.end(), [this](uint32_t a, uint32_t b) {
    return edges_[a].second != edges_[b].second ? edges_[a].second < edges_[b].second
                                                : edges_[a].first < edges_[b].first;
  });
}

void TaskGraph::SortEdges() {
  file_position_ = {};
  if (std::is_sorted(edges_.begin(), edges_.end())) {
    edges_.erase(std::unique(edges_.begin(), edges_.end()), edges_.end());
    return;
  }
  // Sorted through a permutation, stable so that a repeated edge keeps its
  // first position.
  std::vector<uint32_t> order(edges_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
  std::stable_sort(order.begin(), order.end(),
                   [this](uint32_t a, uint32_t b) { return edges_[a] < edges_[b]; });
  std::vector<std::pair<uint32_t, uint32_t>> sorted;
  sorted.reserve(edges_.size());
  file_position_.reserve(edges_.size());
  for (uint32_t i : order) {
    if (!sorted.empty() && sorted.back() == edges_[i]) continue;
    sorted.push_back(edges_[i]);
    file_position_.push_back(i);
  }
  edges_ = std::move(sorted);
}

void TaskGraph::InFileOrder(size_t b, size_t e, const uint32_t* perm, bool succs,
                            std::vector<uint64_t>* out) const {
  thread_local std::vector<std::pair<uint32_t, uint32_t>> picked;  // (position, peer index)
  picked.clear();
  for (size_t k = b; k < e; ++k) {
    const uint32_t edge = perm == nullptr ? static_cast<uint32_t>(k) : perm[k];
    const uint32_t position = file_position_.empty() ? edge : file_position_[edge];
    picked.emplace_back(position, succs ? edges_[edge].second : edges_[edge].first);
  }
  std::sort(picked.begin(), picked.end());
  out->clear();
  for (const auto& [position, peer] : picked) out->push_back(IdAt(peer));
}

void TaskGraph::SuccsInFileOrder(uint64_t id, std::vector<uint64_t>* out) const {
  const uint32_t i = IndexOf(id);
  out->clear();
  if (i == kNoInfo) return;
  auto lo = std::lower_bound(edges_.begin(), edges_.end(), i,
                             [](const auto& e, uint32_t x) { return e.first < x; });
  auto hi = lo;
  while (hi != edges_.end() && hi->first == i) ++hi;
  InFileOrder(static_cast<size_t>(lo - edges_.begin()), static_cast<size_t>(hi - edges_.begin()),
              nullptr, /*succs=*/true, out);
}

void TaskGraph::PredsInFileOrder(uint64_t id, std::vector<uint64_t>* out) const {
  const EdgeRange preds = Preds(id);
  out->clear();
  if (preds.size() == 0) return;
  const uint32_t i = IndexOf(id);
  auto lo = std::lower_bound(by_succ_.begin(), by_succ_.end(), i,
                             [this](uint32_t e, uint32_t x) { return edges_[e].second < x; });
  const size_t b = static_cast<size_t>(lo - by_succ_.begin());
  InFileOrder(b, b + preds.size(), by_succ_.data(), /*succs=*/false, out);
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
