#include "view/dataflow_verifier.h"

#include <algorithm>
#include <utility>

namespace dfx::view {

using collectors::DepsArg;
using collectors::DepsEdge;
using collectors::DepsSlice;
using collectors::DepsTensor;

namespace {

// Bits per element of a deps.json dtype name; 0 when unknown.
int DtypeBits(const std::string& d) {
  static const std::map<std::string, int> kBits = {
      {"FLOAT32", 32}, {"FLOAT16", 16},  {"INT32", 32},    {"INT16", 16},  {"INT8", 8},
      {"UINT8", 8},    {"BFLOAT16", 16}, {"INT64", 64},    {"UINT64", 64}, {"UINT16", 16},
      {"UINT32", 32},  {"BOOL", 8},      {"FP8E4M3FN", 8}, {"FP8E8M0", 8}, {"FP4E2M1", 4}};
  auto it = kBits.find(d);
  return it == kBits.end() ? 0 : it->second;
}

// Region of one slice as bit intervals [begin, end), appended to `out`.
// Contiguous inner dimensions are merged into runs; returns false when the
// geometry is missing or malformed, or when the slice needs more intervals
// than `*budget` (which it decrements) — "too complex".
bool SliceIntervals(uint64_t buffer_addr, int bits, const DepsSlice& slice, size_t* budget,
                    std::vector<std::pair<uint64_t, uint64_t>>* out) {
  if (bits <= 0 || !slice.shape || !slice.strides || slice.shape->size() != slice.strides->size() ||
      !slice.start_offset) {
    return false;
  }
  const uint64_t off = *slice.start_offset;
  std::vector<uint64_t> dims, st;
  for (size_t i = 0; i < slice.shape->size(); ++i) {
    uint64_t d = (*slice.shape)[i], t = (*slice.strides)[i];
    if (d == 0) return true;  // empty slice
    dims.push_back(d);
    st.push_back(t);
  }
  // Innermost contiguous run (elements), absorbing outer dims that continue it.
  uint64_t run = 1;
  while (!dims.empty() && st.back() == run) {
    run *= dims.back();
    dims.pop_back();
    st.pop_back();
  }
  uint64_t count = 1;
  for (uint64_t d : dims) {
    if (d > *budget || count > *budget / d) return false;
    count *= d;
  }
  if (count > *budget) return false;
  *budget -= static_cast<size_t>(count);
  const uint64_t base_bits = buffer_addr * 8;
  std::vector<uint64_t> idx(dims.size(), 0);
  for (uint64_t k = 0; k < count; ++k) {
    uint64_t e = off;
    for (size_t i = 0; i < dims.size(); ++i) e += idx[i] * st[i];
    uint64_t b = base_bits + e * static_cast<uint64_t>(bits);
    out->emplace_back(b, b + run * static_cast<uint64_t>(bits));
    for (size_t i = dims.size(); i-- > 0;) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
  return true;
}

void NormalizeIntervals(std::vector<std::pair<uint64_t, uint64_t>>* v) {
  std::sort(v->begin(), v->end());
  size_t w = 0;
  for (const auto& iv : *v) {
    if (w > 0 && iv.first <= (*v)[w - 1].second) {
      (*v)[w - 1].second = std::max((*v)[w - 1].second, iv.second);
    } else {
      (*v)[w++] = iv;
    }
  }
  v->resize(w);
}

// True when every interval of `need` lies inside the union `cover` (both normalized).
bool Covers(const std::vector<std::pair<uint64_t, uint64_t>>& cover,
            const std::vector<std::pair<uint64_t, uint64_t>>& need) {
  size_t j = 0;
  for (const auto& [b, e] : need) {
    while (j < cover.size() && cover[j].second <= b) ++j;
    if (j == cover.size() || cover[j].first > b || cover[j].second < e) return false;
  }
  return true;
}

}  // namespace

DataflowVerifier::DataflowVerifier(const DepsGraph& g) : g_(g) {
  for (const auto& [p, c] : g.edges) {
    succ_[p].push_back(c);
    preds_[c].push_back(p);
  }
}

bool DataflowVerifier::Proves(uint64_t creator, uint64_t consumer) {
  const auto& anns = g_.annotations.at({creator, consumer});
  const DepsNode& cn = g_.nodes.at(consumer);
  if (cn.task == nullptr || !cn.task->args) return false;
  bool any = false;
  for (const DepsEdge* a : anns) {
    if (a->source != "creator") continue;
    any = true;
    if (!ProvesOne(creator, consumer, cn, *a)) return false;
  }
  return any;
}

const DepsArg* DataflowVerifier::ArgOf(const DepsNode& n, int idx) const {
  for (const DepsArg& a : *n.task->args) {
    if (a.idx.value_or(-2) == idx) return &a;
  }
  return nullptr;
}

bool DataflowVerifier::BufferOf(const std::optional<uint64_t>& tensor_id, uint64_t* addr,
                                std::string* dtype) const {
  if (!tensor_id) return false;
  auto it = g_.tensor_info.find(*tensor_id);
  if (it == g_.tensor_info.end()) return false;
  const DepsTensor& t = *it->second;
  if (dtype != nullptr) *dtype = t.dtype.value_or("");
  if (!t.buffer_addr) return false;
  *addr = *t.buffer_addr;
  return true;
}

bool DataflowVerifier::WritesBuffer(uint64_t producer, uint64_t addr) const {
  const DepsNode& pn = g_.nodes.at(producer);
  if (pn.task == nullptr || !pn.task->args) return false;
  for (const DepsArg& a : *pn.task->args) {
    if (a.type != "OUTPUT" && a.type != "INOUT") continue;
    bool inferred = false;
    uint64_t b = 0;
    if (BufferOf(ArgTensorId(g_, producer, a, &inferred), &b, nullptr) && b == addr) return true;
  }
  return false;
}

const std::set<uint64_t>& DataflowVerifier::Reach(uint64_t from) {
  auto it = reach_.find(from);
  if (it != reach_.end()) return it->second;
  std::set<uint64_t>& seen = reach_[from];
  std::vector<uint64_t> stack = {from};
  while (!stack.empty()) {
    uint64_t u = stack.back();
    stack.pop_back();
    auto s = succ_.find(u);
    if (s == succ_.end()) continue;
    for (uint64_t v : s->second) {
      if (seen.insert(v).second) stack.push_back(v);
    }
  }
  return seen;
}

bool DataflowVerifier::ProvesOne(uint64_t creator, uint64_t consumer, const DepsNode& cn,
                                 const DepsEdge& ann) {
  int slot = ann.arg;
  const DepsArg* arg = ArgOf(cn, slot);
  if (arg == nullptr || arg->type != "INOUT") return false;
  uint64_t addr = 0;
  std::string tensor_dtype;
  if (!BufferOf(ann.tensor_id, &addr, &tensor_dtype)) return false;
  std::string cdtype = ann.consumer_dtype.value_or(tensor_dtype);
  size_t budget = kMaxIntervals;
  std::vector<std::pair<uint64_t, uint64_t>> need, cover;
  if (!SliceIntervals(addr, DtypeBits(cdtype), ann.consumer, &budget, &need)) return false;
  NormalizeIntervals(&need);
  if (need.empty()) return false;
  const std::set<uint64_t>& from_creator = Reach(creator);
  for (uint64_t p : preds_[consumer]) {
    if (p == creator || !from_creator.count(p)) continue;
    for (const DepsEdge* pa : g_.annotations.at({p, consumer})) {
      if (pa->source != "tensormap" || pa->arg != slot) continue;
      uint64_t paddr = 0;
      if (!BufferOf(pa->tensor_id, &paddr, nullptr) || paddr != addr) continue;
      if (!WritesBuffer(p, addr)) continue;
      if (!SliceIntervals(addr, DtypeBits(cdtype), pa->producer, &budget, &cover)) {
        return false;  // too complex (or malformed): keep the edge
      }
    }
  }
  NormalizeIntervals(&cover);
  return Covers(cover, need);
}

}  // namespace dfx::view
