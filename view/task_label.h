// How the viewers name tasks and kernels (docs/formats.md §4.6, §7.3): the task
// id's ring and local parts, the "t<local>" / "r<ring>t<local>" display, the
// kernel a task row ran (from deps.json) and its name, with the
// func_<id>_<letters> fallback for a kernel without one. Pure functions;
// thread-safe.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>

#include "collectors/dep_gen/deps_reader.h"
#include "collectors/name_map.h"
#include "collectors/swimlane/swimlane_reader.h"

namespace dfx::view {

// Task id = (ring << 32) | local; the tools read the ring from bits 32..39.
inline int RingOf(uint64_t task_id) { return static_cast<int>((task_id >> 32) & 0xFF); }
inline uint32_t LocalOf(uint64_t task_id) { return static_cast<uint32_t>(task_id); }

// "t<local>" for ring 0, else "r<ring>t<local>".
std::string FormatTaskDisplay(uint64_t task_id);
// The same written at `p` (room for kTaskDisplayChars); returns its end.
inline constexpr size_t kTaskDisplayChars = 16;
inline char* TaskDisplayTo(char* p, uint64_t task_id) {
  if (const int ring = RingOf(task_id); ring != 0) {
    *p++ = 'r';
    p = std::to_chars(p, p + 3, ring).ptr;
  }
  *p++ = 't';
  return std::to_chars(p, p + 10, LocalOf(task_id)).ptr;
}

// Bijective base-26 letters of n: 0→"a", 25→"z", 26→"aa".
std::string FuncLetters(int n);

// The func_id a task row ran (§4.6): deps.json's kernel id for the row's core
// type, or -1 without deps.json, without the task in it, or for an inactive slot.
int RowFuncId(const collectors::SwimlaneRecords& records, const collectors::TaskGraph* deps,
              const collectors::TaskRow& row);

// The name map's name of `func_id` (>= 0), else "func_<id>_<letters>".
std::string KernelName(const collectors::NameMap& names, int func_id);

}  // namespace dfx::view
