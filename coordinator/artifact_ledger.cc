#include "coordinator/artifact_ledger.h"

#include <algorithm>
#include <utility>

namespace dfx::coordinator {

using collectors::ArtifactEntry;

size_t BeginEntry(std::vector<ArtifactEntry>& list, ArtifactEntry entry, bool replace_same_path) {
  if (replace_same_path) {
    auto same = std::find_if(list.begin(), list.end(),
                             [&](const ArtifactEntry& x) { return x.path == entry.path; });
    if (same != list.end()) {
      *same = std::move(entry);
      return static_cast<size_t>(same - list.begin());
    }
  }
  list.push_back(std::move(entry));
  return list.size() - 1;
}

void RefuseEntry(std::vector<ArtifactEntry>& list, ArtifactEntry entry) {
  if (list.size() < kMaxRefusedEntries) list.push_back(std::move(entry));
}

void SettleEntry(ArtifactEntry& entry, ArtifactSettlement settlement) {
  entry.status = settlement.state;
  entry.error = std::move(settlement.error);
  entry.checksum = settlement.checksum;
  if (settlement.wire_bytes) entry.wire_bytes = settlement.wire_bytes;
}

}  // namespace dfx::coordinator
