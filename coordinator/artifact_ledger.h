// Where the entries of artifact streams live (the run manifest's
// ArtifactEntry), and the only changes the ArtifactReceiver makes to them:
// a stream begins, is refused, or settles (verified or failed). The owner
// keeps the entries and the receiver asks it: the DispatchScheduler keeps
// one list per dispatch record, a gather the list it recovers (ListLedger).
//
// Threads: the event loop's only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/run_manifest.h"

namespace dfx::coordinator {

// How a stream ended, for its entry.
struct ArtifactSettlement {
  collectors::ArtifactState state = collectors::ArtifactState::kFailed;
  std::string error;
  std::optional<uint64_t> checksum;    // the verified checksum; unset when it failed
  std::optional<uint64_t> wire_bytes;  // payload bytes it took on the wire
};

// A list records at most this many refused streams: bounded, whatever a
// peer sends.
inline constexpr size_t kMaxRefusedEntries = 100000;

// The list operations every ledger shares. BeginEntry returns the entry's
// index; with `replace_same_path` the entry replaces one of the same path
// (a second pass rewrites the same file: one entry per path in a dispatch).
size_t BeginEntry(std::vector<collectors::ArtifactEntry>& list, collectors::ArtifactEntry entry,
                  bool replace_same_path);
void RefuseEntry(std::vector<collectors::ArtifactEntry>& list, collectors::ArtifactEntry entry);
void SettleEntry(collectors::ArtifactEntry& entry, ArtifactSettlement settlement);

// `dispatch` set: the entries of that dispatch record; unset: the list a
// gather recovers. Indices stay valid for the ledger's lifetime.
class ArtifactLedger {
 public:
  virtual ~ArtifactLedger() = default;
  virtual size_t BeginArtifact(const std::optional<size_t>& dispatch,
                               collectors::ArtifactEntry entry) = 0;
  virtual void RefuseArtifact(const std::optional<size_t>& dispatch,
                              collectors::ArtifactEntry entry) = 0;
  virtual void SettleArtifact(const std::optional<size_t>& dispatch, size_t index,
                              ArtifactSettlement settlement) = 0;
  virtual const collectors::ArtifactEntry& Artifact(const std::optional<size_t>& dispatch,
                                                    size_t index) const = 0;
};

// A ledger of one list, whatever the dispatch: a gather's, a test's.
class ListLedger final : public ArtifactLedger {
 public:
  size_t BeginArtifact(const std::optional<size_t>&, collectors::ArtifactEntry entry) override {
    return BeginEntry(entries_, std::move(entry), false);
  }
  void RefuseArtifact(const std::optional<size_t>&, collectors::ArtifactEntry entry) override {
    RefuseEntry(entries_, std::move(entry));
  }
  void SettleArtifact(const std::optional<size_t>&, size_t index,
                      ArtifactSettlement settlement) override {
    SettleEntry(entries_[index], std::move(settlement));
  }
  const collectors::ArtifactEntry& Artifact(const std::optional<size_t>&,
                                            size_t index) const override {
    return entries_[index];
  }
  const std::vector<collectors::ArtifactEntry>& entries() const { return entries_; }

 private:
  std::vector<collectors::ArtifactEntry> entries_;
};

}  // namespace dfx::coordinator
