// Whether memory is advised for transparent huge pages, for tests of code
// that asks for them (common/heap.h, collectors' LazyArray). Test code only.
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

namespace dfx {

// Why a test cannot expect huge-page advice on this kernel, or "" when it
// can: transparent huge pages set to `never` (or no such switch at all).
inline std::string HugePagesOff() {
  std::ifstream enabled("/sys/kernel/mm/transparent_hugepage/enabled");
  const std::string mode((std::istreambuf_iterator<char>(enabled)),
                         std::istreambuf_iterator<char>());
  if (mode.empty() || mode.find("[never]") != std::string::npos) {
    return "transparent huge pages are off on this kernel";
  }
  return "";
}

// Whether the memory area that holds `addr` is advised for huge pages
// (VmFlags "hg" in /proc/self/smaps); false when no area holds it.
inline bool AdvisedForHugePages(uintptr_t addr) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_area = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2) {  // an area's first line
      in_area = lo <= addr && addr < hi;
    } else if (in_area && line.rfind("VmFlags:", 0) == 0) {
      return line.find(" hg") != std::string::npos;
    }
  }
  return false;
}

}  // namespace dfx
