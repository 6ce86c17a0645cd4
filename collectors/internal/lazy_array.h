// Fixed-capacity record storage whose memory costs nothing until a record is
// written. The recorders size their buffers for the worst case a program can
// produce (an args dump at level 1 reserves a slot for every tensor argument
// twice, a level-3 swimlane four scheduler phases per task and thread), and
// std::vector::resize value-initialises all of it: at 100,000 tasks the
// all-five run zeroed ~190 MB on the dispatching thread before the run
// started, page fault by page fault, for records mostly never written. Here
// the storage comes from operator new without initialisation, so the kernel
// maps a page only when the first record lands in it.
//
// Storage over kSmallHeadBytes is its own mapping, with everything past its
// first kSmallHeadBytes (its head) on transparent huge pages: on the virtual
// machines this project runs on, the first touch of a page costs the
// hypervisor's fault per page mapped, ~11 us per 4 KiB and ~135 us per
// 2 MiB (zeroing included), 40 times less per byte (64 MiB: 95 ms in 4 KiB
// pages populated ahead, 4 ms in huge pages). The head keeps 4 KiB pages
// and the look-aheads below stop at its end while the records fit in it, so
// a short run (a one-task dispatch) never maps a 2 MiB page it would barely
// use. Best effort: with huge pages off, or none free, the kernel maps
// 4 KiB pages as before. (Huge pages were once tried for the whole array
// and judged slower; that was without the head, with every writer taking
// its own 2 MiB faults.)
//
// Only slots that were written may be read (every recorder reads [0, count)).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

#include "common/heap.h"  // kHugePageBytes

namespace dfx::collectors::internal {

template <typename T>
class LazyArray {
  // Records are plain structs copied in whole: raw storage holds objects of
  // such (implicit-lifetime) types once they are assigned.
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "LazyArray holds plain records");
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);

 public:
  // The head: storage up to this size is a plain allocation, and larger
  // storage keeps 4 KiB pages for this many bytes from its start.
  static constexpr size_t kSmallHeadBytes = 256 * 1024;

  LazyArray() = default;
  explicit LazyArray(size_t capacity) { Reset(capacity); }
  ~LazyArray() { Release(); }
  LazyArray(const LazyArray&) = delete;
  LazyArray& operator=(const LazyArray&) = delete;

  // Drops the contents and makes room for `capacity` records, uninitialised.
  void Reset(size_t capacity) {
    Release();
    if (capacity == 0) return;
    const size_t bytes = capacity * sizeof(T);
    if (bytes <= kSmallHeadBytes) {
      data_ = static_cast<T*>(::operator new(bytes));
    } else {
      // Placed so that the storage past the head starts at a huge-page
      // boundary; the slack around it is never touched.
      mapping_bytes_ = bytes + kHugePageBytes;
      void* raw = ::mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (raw == MAP_FAILED) {
        mapping_bytes_ = 0;
        throw std::bad_alloc();
      }
      mapping_ = raw;
      const auto base = reinterpret_cast<uintptr_t>(raw);
      const uintptr_t huge = (base + kSmallHeadBytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
      data_ = reinterpret_cast<T*>(huge - kSmallHeadBytes);
#ifdef MADV_HUGEPAGE
      (void)::madvise(reinterpret_cast<void*>(huge), bytes - kSmallHeadBytes, MADV_HUGEPAGE);
#endif
    }
    size_ = capacity;
  }
  size_t size() const { return size_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

  // Has the kernel map (zero-filled, writable) the pages of records
  // [from, to) now, without writing a byte of them: safe while other
  // threads record into the array, which then take no page fault there.
  // Then reads one byte of each page: on a virtual machine that shadows the
  // guest's page tables, the first access from user space to a page costs
  // the hypervisor's own fault (~10 us a page here, after the guest's
  // madvise took ~1.3 us), and a read takes it for the later writes too.
  // The read is a relaxed atomic load, so a record being written there at
  // the same moment is neither disturbed nor a data race for this thread.
  // Best effort: a kernel without MADV_POPULATE_WRITE (Linux < 5.14) leaves
  // the pages to fault as usual, and then nothing is read (a read would map
  // the shared zero page, and the first write would fault once more).
  void Populate(size_t from, size_t to) const {
    to = std::min(to, size_);
    if (from >= to) return;
    if (!PopulateBytes(from * sizeof(T), to * sizeof(T))) return;
    const auto* bytes = reinterpret_cast<const unsigned char*>(data_);
    for (size_t b = from * sizeof(T); b < to * sizeof(T); b += kTouchStride) {
      (void)__atomic_load_n(bytes + b, __ATOMIC_RELAXED);
    }
  }
  // Record `i` is about to be written. When it lies past what this has
  // mapped so far, the next kMapAheadBytes from there are mapped in one
  // madvise: a page fault per 4 KiB costs the writer more than its share of
  // one system call (on this project's virtual machines, 64 MiB took 400-520
  // ms by faults and 200-220 ms in 256 KiB madvise steps). One compare when
  // the record is already mapped. Safe from several writers: the one that
  // moves the mark maps, and a writer ahead of that madvise faults the page
  // as it would have anyway. Records are written in order (a cursor), so the
  // mark only moves forward.
  void MapAhead(size_t i) {
    const size_t end = (i + 1) * sizeof(T);
    size_t mark = mapped_.load(std::memory_order_relaxed);
    if (end <= mark) [[likely]]
      return;
    const size_t next = std::min(AheadLimit(end), end + kMapAheadBytes);
    if (end > next) return;  // past the end: the caller drops the record
    if (!mapped_.compare_exchange_strong(mark, next, std::memory_order_relaxed)) return;
    PopulateBytes(mark, next);
  }
  // For the one background thread that maps ahead of writers whose record
  // count the program does not fix: Populates the records within
  // kPrefaultAheadBytes after `cursor` that it has not yet (its own mark; the
  // writers' MapAhead is separate, so a writer that outruns this maps for
  // itself).
  void PopulateAhead(size_t cursor) const {
    const size_t limit = AheadLimit((cursor + 1) * sizeof(T)) / sizeof(T);
    const size_t to = std::min({size_, cursor + kPrefaultAheadRecords, limit});
    if (to <= populated_ahead_) return;
    Populate(std::max(populated_ahead_, cursor), to);
    populated_ahead_ = to;
  }
  // The `slice`-th of `slices` equal parts of records [0, count): Populate in
  // steps, so several arrays filled side by side are mapped side by side.
  void PopulateSlice(size_t count, int slice, int slices) const {
    const auto part = [&](int i) {
      return count * static_cast<size_t>(i) / static_cast<size_t>(slices);
    };
    Populate(part(slice), part(slice + 1));
  }

 private:
  static constexpr size_t kMapAheadBytes = 256 * 1024;
  static constexpr size_t kPrefaultAheadBytes = 1 << 20;
  static constexpr size_t kPrefaultAheadRecords =
      std::max<size_t>(kPrefaultAheadBytes / sizeof(T), 1);
  static constexpr size_t kTouchStride = 4096;  // the smallest page size

  // How far a look-ahead for a record ending at byte `end` may map: while
  // the records fit in the head, to its end; then to the storage's end.
  size_t AheadLimit(size_t end) const {
    const size_t total = size_ * sizeof(T);
    return mapping_ != nullptr && end <= kSmallHeadBytes ? kSmallHeadBytes : total;
  }

  // Bytes [from, to) of the storage, widened to whole pages. False when the
  // kernel did not map them.
  bool PopulateBytes(size_t from, size_t to) const {
#ifdef MADV_POPULATE_WRITE
    static const uintptr_t kPage = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto base = reinterpret_cast<uintptr_t>(data_);
    const uintptr_t begin = (base + from) & ~(kPage - 1);
    return ::madvise(reinterpret_cast<void*>(begin), base + to - begin, MADV_POPULATE_WRITE) == 0;
#else
    (void)from;
    (void)to;
    return false;
#endif
  }
  void Release() {
    if (mapping_ != nullptr) {
      ::munmap(mapping_, mapping_bytes_);
    } else {
      ::operator delete(data_);
    }
    mapping_ = nullptr;
    mapping_bytes_ = 0;
    data_ = nullptr;
    size_ = 0;
    mapped_.store(0, std::memory_order_relaxed);
    populated_ahead_ = 0;
  }

  T* data_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // storage over kSmallHeadBytes: its own mapping
  size_t mapping_bytes_ = 0;
  std::atomic<size_t> mapped_{0};       // MapAhead's mark, in bytes from data_
  mutable size_t populated_ahead_ = 0;  // PopulateAhead's mark, in records
};

}  // namespace dfx::collectors::internal
