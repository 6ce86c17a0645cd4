// The process heap (glibc malloc) of the long-running binaries: the agent
// and the coordinator call TuneHeap() first thing in main().
//
// On the virtual machines this project runs on, the first touch of a page
// costs the hypervisor's fault per page mapped: ~11 us per 4 KiB page, ~135
// us per 2 MiB transparent huge page (zeroing included), 40 times less per
// byte. Loading a 100,000-task program allocates ~185 MB in small pieces
// (47,000 page faults): with the heap on huge pages (~1,000 faults),
// `dfx-rank-agent exec` of that program takes 0.71-1.16 s (median 0.75 s)
// instead of 1.18-1.26 s (bench/README.md, "The heap and the record arrays
// on huge pages").
#pragma once

#include <cstddef>

namespace dfx {

// A transparent huge page: x86-64's (and arm64's with 4 KiB pages) PMD size.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Bytes of address space the heap keeps reserved past its top (glibc's
// M_TOP_PAD): what TuneHeap advises for huge pages. Address space only:
// memory is used as the heap grows into it.
inline constexpr size_t kHeapReserveBytes = size_t{256} << 20;

// Sets glibc malloc's thresholds (buffers up to 32 MiB come from the heap,
// which is trimmed past 64 MiB of free top), reserves kHeapReserveBytes of
// address space past the heap's top and advises it for transparent huge
// pages (MADV_HUGEPAGE). Best effort: another allocator (a sanitizer's), a
// heap that cannot grow, or huge pages off leave the heap as it was.
void TuneHeap();

// Gives the heap's free memory back to the kernel (malloc_trim), then
// reserves and advises the space past its top again as TuneHeap does (the
// trim shrinks the heap, and with it the advised range). For a long-running
// agent when a session ends. Thread-safe.
void ReleaseFreeHeap();

}  // namespace dfx
