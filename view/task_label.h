// How the viewers name tasks and kernels (artifacts.md §4.6, §7.3): the task
// id's ring and local parts, the "t<local>" / "r<ring>t<local>" display, and
// the func_<id>_<letters> fallback for a kernel without a name. Pure
// functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace dfx::view {

// Task id = (ring << 32) | local; the tools read the ring from bits 32..39.
inline int RingOf(uint64_t task_id) { return static_cast<int>((task_id >> 32) & 0xFF); }
inline uint32_t LocalOf(uint64_t task_id) { return static_cast<uint32_t>(task_id); }

// "t<local>" for ring 0, else "r<ring>t<local>".
std::string FormatTaskDisplay(uint64_t task_id);

// Bijective base-26 letters of n: 0→"a", 25→"z", 26→"aa".
std::string FuncLetters(int n);

}  // namespace dfx::view
