// The programs a rank agent keeps between dispatches (a program is sent
// once and dispatched by its hash afterwards). After the first dispatch
// of a program, the coordinator sends its Dispatch without the JSON text
// (protocol::Dispatch::program_hash); the agent runs the parsed program it
// kept here, or answers DispatchStatus::kProgramUnknown and gets the text
// again. A program is kept only once it parsed.
//
// Keyed by (hash, program name, program file): the name and file are part of
// what the parser made of the text (error origins, scope sites). Bounded by
// entries and by the JSON bytes of the programs kept; the least recently
// used program goes first. Entries are shared: a dispatch that holds one
// keeps it alive even after it is evicted.
//
// Threads: any (one mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "device/program.h"

namespace dfx::rank_agent {

struct ProgramKey {
  uint64_t hash = 0;  // protocol::ProgramHash of the JSON text
  std::string name;   // Dispatch::program_name
  std::string file;   // Dispatch::program_file
  bool operator==(const ProgramKey& o) const {
    return std::tie(hash, name, file) == std::tie(o.hash, o.name, o.file);
  }
};

class ProgramCache {
 public:
  static constexpr size_t kDefaultMaxEntries = 64;
  static constexpr uint64_t kDefaultMaxBytes = 256ull << 20;

  explicit ProgramCache(size_t max_entries = kDefaultMaxEntries,
                        uint64_t max_bytes = kDefaultMaxBytes);

  // The program kept under `key`, or null.
  std::shared_ptr<const device::Program> Find(const ProgramKey& key);
  // Keeps `program`, parsed from `json_bytes` bytes of JSON, evicting the
  // least recently used ones past the bounds. A program larger than the
  // byte bound alone is not kept.
  void Put(const ProgramKey& key, std::shared_ptr<const device::Program> program,
           uint64_t json_bytes);
  void Clear();
  size_t size() const;

 private:
  struct Entry {
    ProgramKey key;
    std::shared_ptr<const device::Program> program;
    uint64_t bytes = 0;
  };
  const size_t max_entries_;
  const uint64_t max_bytes_;
  mutable std::mutex mu_;
  std::list<Entry> entries_;  // most recently used first
  uint64_t bytes_ = 0;
};

}  // namespace dfx::rank_agent
