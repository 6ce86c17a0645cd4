// Dataflow verification of creator edges, for the *_dataflow edge modes
// (docs/formats.md §7.5): the structural reduction only proposes a creator
// (tensor-lifetime) edge as redundant; it is dropped only when the edges'
// annotations prove it. A creator edge creator → consumer is proven redundant
// when every creator annotation names an INOUT arg of the consumer and every
// byte of that INOUT region has direct tensormap dataflow into it (same arg
// slot, same buffer) from producers that write it (OUTPUT / INOUT args) and
// are themselves reached from the same creator. OUTPUT_EXISTING, any other arg
// type, missing geometry or more than kMaxIntervals intervals → not proven.
//
// Reads a DepsGraph, which must outlive it; caches reachability. One thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "view/deps_graph.h"

namespace dfx::view {

class DataflowVerifier {
 public:
  // Intervals a slice may take before it is "too complex" to prove.
  static constexpr size_t kMaxIntervals = 10000;

  explicit DataflowVerifier(const DepsGraph& g);
  // True when the annotations prove the creator edge creator → consumer redundant.
  bool Proves(uint64_t creator, uint64_t consumer);

 private:
  const collectors::DepsArg* ArgOf(const DepsNode& n, int idx) const;
  bool BufferOf(const std::optional<uint64_t>& tensor_id, uint64_t* addr, std::string* dtype) const;
  // The producer has a writing arg (OUTPUT / INOUT) on buffer `addr`.
  bool WritesBuffer(uint64_t producer, uint64_t addr) const;
  // Every node reachable from `from` (cached).
  const std::set<uint64_t>& Reach(uint64_t from);
  bool ProvesOne(uint64_t creator, uint64_t consumer, const DepsNode& cn,
                 const collectors::DepsEdge& ann);

  const DepsGraph& g_;
  std::map<uint64_t, std::vector<uint64_t>> succ_, preds_;
  std::map<uint64_t, std::set<uint64_t>> reach_;
};

}  // namespace dfx::view
