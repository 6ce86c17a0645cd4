// The heap's top is on memory advised for huge pages after TuneHeap, and
// ReleaseFreeHeap gives freed memory back without losing that advice.
#include "common/heap.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/testing/huge_pages.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define DFX_HEAP_TEST_OTHER_ALLOCATOR 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DFX_HEAP_TEST_OTHER_ALLOCATOR 1
#endif

namespace dfx {
namespace {

// Why this test cannot judge the heap here, or "" when it can.
std::string CannotJudge() {
#ifdef DFX_HEAP_TEST_OTHER_ALLOCATOR
  return "a sanitizer's allocator replaces glibc's heap";
#else
  return HugePagesOff();
#endif
}

// Whether the heap's last byte is on memory advised for huge pages.
bool HeapTopAdvised() { return AdvisedForHugePages(reinterpret_cast<uintptr_t>(::sbrk(0)) - 1); }

uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

TEST(HeapTest, TuneHeapPutsTheHeapTopOnHugePages) {
  if (const std::string why = CannotJudge(); !why.empty()) GTEST_SKIP() << why;
  TuneHeap();
  EXPECT_TRUE(HeapTopAdvised());
  // The reserve past the top is address space: most of it is not resident.
  EXPECT_LT(ResidentBytes(), kHeapReserveBytes);
}

TEST(HeapTest, ReleaseFreeHeapGivesFreedMemoryBackAndKeepsTheAdvice) {
  if (const std::string why = CannotJudge(); !why.empty()) GTEST_SKIP() << why;
  TuneHeap();
  // ~160 MiB in small pieces, every byte written (a program being loaded).
  constexpr size_t kPiece = 4000, kPieces = 40000;
  std::vector<std::unique_ptr<char[]>> pieces;
  pieces.reserve(kPieces);
  for (size_t i = 0; i < kPieces; ++i) {
    pieces.emplace_back(new char[kPiece]);
    std::fill_n(pieces.back().get(), kPiece, static_cast<char>(i));
  }
  const uint64_t loaded = ResidentBytes();
  pieces.clear();
  pieces.shrink_to_fit();
  ReleaseFreeHeap();
  const uint64_t released = ResidentBytes();
  EXPECT_LT(released + 100 * (uint64_t{1} << 20), loaded)
      << "resident " << loaded << " bytes loaded, " << released << " after ReleaseFreeHeap";
  // The heap's top is advised again: the next load is on huge pages too.
  EXPECT_TRUE(HeapTopAdvised());
}

}  // namespace
}  // namespace dfx
