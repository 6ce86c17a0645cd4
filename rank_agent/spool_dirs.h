// The agent's spool directories as the chips and the sender share them: a
// chip empties and fills one dispatch dir at a time (Claim .. Release), and
// the sender removes directories that its acknowledged files left empty
// (PruneEmpty), never one a chip is writing into.
//
// Threads: any (one mutex).
#pragma once

#include <filesystem>
#include <functional>
#include <mutex>
#include <set>

#include "common/status.h"

namespace dfx::rank_agent {

class SpoolDirs {
 public:
  // Empties `dir` (the k numbering restarts every run: a stale directory of
  // an earlier pass must not leak into this one) and keeps it from
  // PruneEmpty until Release; `then` runs under the same lock, so the
  // directory cannot vanish between its creation and its first file.
  Status Claim(const std::filesystem::path& dir, const std::function<Status()>& then);
  void Release(const std::filesystem::path& dir);

  // Removes `dir` and then its parents up to (not including) `stop` while
  // they are empty, stopping at a claimed directory.
  void PruneEmpty(std::filesystem::path dir, const std::filesystem::path& stop);

 private:
  std::mutex mu_;
  std::set<std::filesystem::path> claimed_;
};

}  // namespace dfx::rank_agent
