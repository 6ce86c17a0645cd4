#include "common/heap.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

namespace dfx {
namespace {

// Grows the heap by kHeapReserveBytes (M_TOP_PAD: every growth reserves that
// much past what it needs) and advises the new range for huge pages.
void AdviseHeapGrowth() {
  void* probe = std::malloc(1 << 20);  // under M_MMAP_THRESHOLD: from the heap
  if (probe == nullptr) return;
  const auto at = reinterpret_cast<uintptr_t>(probe);
  std::free(probe);
  const auto top = reinterpret_cast<uintptr_t>(::sbrk(0));
  // Only a probe from the brk heap, just below its top: not a sanitizer's
  // allocator, nor glibc's mmap fallback after a refused brk.
  if (top <= at || top - at > kHeapReserveBytes + (uintptr_t{8} << 20)) return;
  const uintptr_t huge = kHugePageBytes;
  const uintptr_t begin = (at + huge - 1) & ~(huge - 1);
#ifdef MADV_HUGEPAGE
  if (top > begin) (void)::madvise(reinterpret_cast<void*>(begin), top - begin, MADV_HUGEPAGE);
#endif
}

}  // namespace

void TuneHeap() {
  // Artifact chunks are 1 MiB buffers allocated and freed per chunk; keep
  // them in the heap instead of mmap/munmap + page faults for every one.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  mallopt(M_TOP_PAD, static_cast<int>(kHeapReserveBytes));
  AdviseHeapGrowth();
}

void ReleaseFreeHeap() {
  malloc_trim(0);
  AdviseHeapGrowth();
}

}  // namespace dfx
