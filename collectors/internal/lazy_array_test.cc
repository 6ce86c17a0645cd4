// LazyArray maps record pages ahead of a writer in one step, and never
// outside its own storage.
#include "collectors/internal/lazy_array.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/testing/huge_pages.h"

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

// How many whole records `bytes` hold.
size_t RecordsIn(size_t bytes) { return bytes / sizeof(Row); }

// The index just past the huge page that holds record `record` (a huge-page
// fault there maps no further).
size_t HugePageEnd(const LazyArray<Row>& rows, size_t record) {
  const auto addr = reinterpret_cast<uintptr_t>(rows.data() + record);
  const uintptr_t huge = kHugePageBytes;
  const uintptr_t end = (addr / huge + 1) * huge;
  return (end - reinterpret_cast<uintptr_t>(rows.data())) / sizeof(Row);
}

TEST(LazyArrayTest, MapAheadMapsThePagesAfterTheWritersRecordBeforeItGetsThere) {
#ifndef MADV_POPULATE_WRITE
  GTEST_SKIP() << "this kernel's headers have no MADV_POPULATE_WRITE";
#else
  const size_t records = 64 * 1024 * 1024 / sizeof(Row);  // 64 MiB, untouched
  LazyArray<Row> rows(records);
  const size_t head = RecordsIn(LazyArray<Row>::kSmallHeadBytes);
  const size_t ahead = RecordsIn(256 * 1024);
  // Nothing is mapped before a record is written (a fresh mapping of its own).
  ASSERT_EQ(MappedPages(rows, 0, records), 0u);
  rows.MapAhead(0);
  // In the head, the look-ahead maps the pages after record 0 up to the
  // head's end and not one page past it: a run whose records fit there
  // (a one-task dispatch) never maps a 2 MiB page.
  EXPECT_EQ(MappedPages(rows, 0, head), Pages(rows, 0, head));
  EXPECT_EQ(MappedPages(rows, head, records), 0u);
  // A writer moving through the mapped part maps nothing more.
  for (size_t i = 0; i < head; ++i) rows.MapAhead(i);
  EXPECT_EQ(MappedPages(rows, head, records), 0u);
  // The background look-ahead stops at the head's end too.
  rows.PopulateAhead(0);
  EXPECT_EQ(MappedPages(rows, head, records), 0u);
  // Crossing into the rest (transparent huge pages when the kernel has them)
  // maps the next step, and nothing past the huge page where it ends.
  rows.MapAhead(head);
  EXPECT_EQ(MappedPages(rows, head, head + ahead), Pages(rows, head, head + ahead));
  EXPECT_EQ(MappedPages(rows, HugePageEnd(rows, head + ahead), records), 0u);
  // Then step by step as before: past the mark, the next step.
  const size_t far = records / 2;
  rows.MapAhead(far);
  EXPECT_EQ(MappedPages(rows, far, far + ahead), Pages(rows, far, far + ahead));
  EXPECT_EQ(MappedPages(rows, HugePageEnd(rows, far + ahead), records), 0u);
  // The last record maps up to the end of the storage and not past it (a
  // madvise past it would fail or touch another allocation).
  rows.MapAhead(records - 1);
  EXPECT_EQ(MappedPages(rows, records - 16, records), Pages(rows, records - 16, records));
  // Past the end: nothing (the caller drops such a record).
  rows.MapAhead(records);
#endif
}

// Storage no larger than the head is a plain allocation that maps 4 KiB
// pages as records land; a larger one asks for huge pages past its head
// (when this kernel has them at all).
TEST(LazyArrayTest, StoragePastTheHeadIsAdvisedForHugePages) {
  if (const std::string why = HugePagesOff(); !why.empty()) GTEST_SKIP() << why;
  const size_t records = 8 * 1024 * 1024 / sizeof(Row);
  LazyArray<Row> rows(records);
  const size_t head = RecordsIn(LazyArray<Row>::kSmallHeadBytes);
  // The storage past the head starts at a huge-page boundary.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(rows.data() + head) % kHugePageBytes, 0u);
  // The area that holds it is advised for huge pages (madvise split the
  // mapping, so the head is an area of its own).
  EXPECT_TRUE(AdvisedForHugePages(reinterpret_cast<uintptr_t>(rows.data() + head)))
      << "the storage past the head is not advised for huge pages";

  LazyArray<Row> small(RecordsIn(LazyArray<Row>::kSmallHeadBytes));
  small.MapAhead(0);
  EXPECT_EQ(MappedPages(small, 0, small.size()), Pages(small, 0, small.size()));
}

}  // namespace
}  // namespace dfx::collectors::internal
