#include "rank_agent/program_cache.h"

#include <algorithm>

namespace dfx::rank_agent {

ProgramCache::ProgramCache(size_t max_entries, uint64_t max_bytes)
    : max_entries_(max_entries), max_bytes_(max_bytes) {}

// A linear search: the cache holds a few dozen programs at most, and a hit
// moves its entry to the front.
std::shared_ptr<const device::Program> ProgramCache::Find(const ProgramKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it =
      std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == key; });
  if (it == entries_.end()) return nullptr;
  entries_.splice(entries_.begin(), entries_, it);
  return entries_.front().program;
}

void ProgramCache::Put(const ProgramKey& key, std::shared_ptr<const device::Program> program,
                       uint64_t json_bytes) {
  if (!program || max_entries_ == 0 || json_bytes > max_bytes_) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it =
      std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.key == key; });
  if (it != entries_.end()) {
    bytes_ -= it->bytes;
    entries_.erase(it);
  }
  entries_.push_front(Entry{key, std::move(program), json_bytes});
  bytes_ += json_bytes;
  while (entries_.size() > max_entries_ || bytes_ > max_bytes_) {
    bytes_ -= entries_.back().bytes;
    entries_.pop_back();
  }
}

void ProgramCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
  bytes_ = 0;
}

size_t ProgramCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace dfx::rank_agent
