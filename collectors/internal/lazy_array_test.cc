// LazyArray maps record pages ahead of a writer in one step, and never
// outside its own storage.
#include "collectors/internal/lazy_array.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

namespace dfx::collectors::internal {
namespace {

struct Row {
  uint64_t a, b, c, d;  // 32 bytes: 128 per 4 KiB page
};

const uintptr_t kPage = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));

// The pages that hold records [from, to).
size_t Pages(const LazyArray<Row>& rows, size_t from, size_t to) {
  const auto begin = reinterpret_cast<uintptr_t>(rows.data() + from) & ~(kPage - 1);
  const auto end = reinterpret_cast<uintptr_t>(rows.data() + to);
  return (end - begin + kPage - 1) / kPage;
}

// How many of those pages the kernel has mapped.
size_t MappedPages(const LazyArray<Row>& rows, size_t from, size_t to) {
  const auto begin = reinterpret_cast<uintptr_t>(rows.data() + from) & ~(kPage - 1);
  std::vector<unsigned char> in_core(Pages(rows, from, to));
  EXPECT_EQ(::mincore(reinterpret_cast<void*>(begin), in_core.size() * kPage, in_core.data()), 0);
  size_t n = 0;
  for (unsigned char c : in_core) n += c & 1;
  return n;
}

TEST(LazyArrayTest, MapAheadMapsThePagesAfterTheWritersRecordBeforeItGetsThere) {
#ifndef MADV_POPULATE_WRITE
  GTEST_SKIP() << "this kernel's headers have no MADV_POPULATE_WRITE";
#else
  const size_t records = 64 * 1024 * 1024 / sizeof(Row);  // 64 MiB, untouched
  LazyArray<Row> rows(records);
  const size_t ahead = 256 * 1024 / sizeof(Row);
  // Nothing is mapped before a record is written (operator new of 64 MiB is
  // a fresh mapping; only the allocator's header shares the first page).
  ASSERT_EQ(MappedPages(rows, ahead, records), 0u);
  rows.MapAhead(0);
  // The 256 KiB after record 0 are mapped without being written...
  EXPECT_EQ(MappedPages(rows, 0, ahead), Pages(rows, 0, ahead));
  // ...and nothing far beyond them.
  EXPECT_EQ(MappedPages(rows, 2 * ahead, records), 0u);
  // A writer moving through the mapped part maps nothing more.
  for (size_t i = 0; i <= ahead; ++i) rows.MapAhead(i);
  EXPECT_EQ(MappedPages(rows, 2 * ahead, records), 0u);
  // Crossing the mark (record 0's end plus 256 KiB) maps the next step.
  rows.MapAhead(ahead + 1);
  EXPECT_EQ(MappedPages(rows, ahead + 1, 2 * ahead + 1), Pages(rows, ahead + 1, 2 * ahead + 1));
  EXPECT_EQ(MappedPages(rows, 3 * ahead, records), 0u);
  // The last record maps up to the end of the storage and not past it (a
  // madvise past it would fail or touch another allocation).
  rows.MapAhead(records - 1);
  EXPECT_EQ(MappedPages(rows, records - 16, records), Pages(rows, records - 16, records));
  // Past the end: nothing (the caller drops such a record).
  rows.MapAhead(records);
#endif
}

}  // namespace
}  // namespace dfx::collectors::internal
