#include "common/file_util.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#include "common/json.h"
#include "common/testing/page_cache.h"
#include "common/testing/temp_dirs.h"

namespace dfx {
namespace {

namespace fs = std::filesystem;

fs::path TempDir() {
  return FreshTestDir("dfx_common_test_" +
                      std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

TEST(AtomicFileWriter, UncommittedWriterLeavesNoFileUnderFinalName) {
  fs::path dir = TempDir();
  {
    AtomicFileWriter w;
    ASSERT_TRUE(w.Open(dir / "a" / "out.json").ok());
    ASSERT_TRUE(w.Write("partial").ok());
    EXPECT_FALSE(fs::exists(dir / "a" / "out.json"));
  }
  EXPECT_FALSE(fs::exists(dir / "a" / "out.json"));
  EXPECT_TRUE(fs::is_empty(dir / "a"));
}

TEST(AtomicFileWriter, CommitRenamesIntoPlace) {
  fs::path dir = TempDir();
  ASSERT_TRUE(WriteFileAtomic(dir / "x.txt", "hello").ok());
  auto text = ReadFile(dir / "x.txt");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "hello");
}

// A trace written with drop-behind keeps only its last few MiB in the page
// cache once they are on disk, and every byte in the file.
TEST(AtomicFileWriter, DropBehindLeavesWhatIsOnDiskOutOfThePageCache) {
  fs::path dir = TempDir();
  const fs::path path = dir / "trace.bin";
  if (InMemoryFileSystem(dir)) GTEST_SKIP() << dir << " is in memory: no pages to drop";
  constexpr size_t kMiB = 1 << 20;
  constexpr size_t kHalf = 2 * AtomicFileWriter::kDropBehindLag;  // 16 MiB
  std::string expected;
  AtomicFileWriter w;
  ASSERT_TRUE(w.Open(path).ok());
  w.SetDropBehind(true, /*max_stall_ms=*/60'000);  // a loaded machine's stall is not the device's
  auto write_mib = [&](char fill) {
    const std::string piece(kMiB, fill);
    expected += piece;
    return w.Write(piece);
  };
  for (size_t i = 0; i < kHalf / kMiB; ++i) ASSERT_TRUE(write_mib(static_cast<char>('a' + i)).ok());
  // Everything so far on disk (clean pages): the writes below drop it, however
  // slowly this disk wrote back what the writer asked it to.
  {
    const int fd = ::open(w.temp_path().c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::fdatasync(fd), 0);
    ::close(fd);
  }
  // The last lag has not been advised yet: cached, unless this file system
  // keeps no page cache at all.
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t lag_pages = AtomicFileWriter::kDropBehindLag / page;
  if (ResidentPages(w.temp_path(), kHalf - AtomicFileWriter::kDropBehindLag,
                    AtomicFileWriter::kDropBehindLag) < lag_pages / 2) {
    GTEST_SKIP() << "this file system keeps no page cache for " << path << " to drop";
  }
  for (size_t i = 0; i < kHalf / kMiB; ++i) ASSERT_TRUE(write_mib(static_cast<char>('A' + i)).ok());
  ASSERT_TRUE(w.Commit().ok());
  const size_t first_half_pages = kHalf / page;
  EXPECT_LT(ResidentPages(path, 0, kHalf), first_half_pages / 8) << "of " << first_half_pages;
  auto got = ReadFile(path);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->size(), expected.size());
  EXPECT_TRUE(*got == expected);
}

// A trace's direct writes: whole aligned blocks straight from the caller's
// bytes where they sit at the file's alignment in memory, the rest through
// the staging block. Every byte lands in order, and the page cache holds
// next to nothing of the file.
TEST(AtomicFileWriter, DirectWritesLandEveryByteAlignedOrNotPastThePageCache) {
  fs::path dir = TempDir();
  const fs::path path = dir / "trace.bin";
  AtomicFileWriter w;
  ASSERT_TRUE(w.Open(path).ok());
  w.SetDropBehind(true, /*max_stall_ms=*/60'000);  // a loaded machine's stall is not the device's
  w.SetDirect(/*min_bytes_per_sec=*/0);            // nor is its rate
  if (!w.direct()) GTEST_SKIP() << dir << ": no direct I/O on this file system";
  const size_t align = w.align();
  ASSERT_GE(align, 512u);
  // Whole file system blocks: ext4 serializes a direct write that starts
  // inside a 4 KiB block, at a fifth of the device's speed.
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(align % static_cast<size_t>(st.st_blksize), 0u) << "st_blksize " << st.st_blksize;
  constexpr size_t kMaxPiece = 600 << 10;
  void* mem = nullptr;
  ASSERT_EQ(::posix_memalign(&mem, align, kMaxPiece + align), 0);
  std::unique_ptr<char, decltype(&std::free)> pool(static_cast<char*>(mem), &std::free);
  std::mt19937 rng(7);
  std::string expected;
  for (int i = 0; i < 120; ++i) {
    const size_t n = i % 5 == 0 ? rng() % 700 : rng() % kMaxPiece;
    // Every other piece sits where its file offset and its memory agree
    // (straight from it), the others anywhere (through the staging block).
    const size_t at = i % 2 == 0 ? expected.size() % align : rng() % align;
    char* p = pool.get() + at;
    for (size_t k = 0; k < n; ++k) p[k] = static_cast<char>('a' + rng() % 26);
    expected.append(p, n);
    ASSERT_TRUE(w.Write({p, n}).ok());
    ASSERT_EQ(w.bytes_written(), expected.size());
  }
  EXPECT_TRUE(w.direct()) << "direct writes stay on";
  ASSERT_TRUE(w.Commit().ok());
  const size_t pages = expected.size() / static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  if (!InMemoryFileSystem(dir)) {
    EXPECT_LT(ResidentPages(path), pages / 8) << "of " << pages;
  }
  auto got = ReadFile(path);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->size(), expected.size());
  EXPECT_TRUE(*got == expected);
}

// A direct write slower than the stall bound ends direct writes: the rest
// goes through the page cache, and the file is the same.
TEST(AtomicFileWriter, ADirectWriteSlowerThanTheStallBoundLeavesTheRestToThePageCache) {
  fs::path dir = TempDir();
  const fs::path path = dir / "trace.bin";
  AtomicFileWriter w;
  ASSERT_TRUE(w.Open(path).ok());
  w.SetDropBehind(true, /*max_stall_ms=*/0);  // every write is too slow
  w.SetDirect();
  if (!w.direct()) GTEST_SKIP() << dir << ": no direct I/O on this file system";
  std::string expected;
  for (char fill : {'a', 'b', 'c'}) {
    const std::string piece((1 << 20) + 123, fill);
    ASSERT_TRUE(w.Write(piece).ok());
    expected += piece;
    EXPECT_FALSE(w.direct()) << "direct writes end after the first slow one";
  }
  ASSERT_TRUE(w.Commit().ok());
  auto got = ReadFile(path);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == expected);
}

// So does a device slower than the page cache: a window of direct writes
// taken at under the least rate asked for (here more than any disk does).
TEST(AtomicFileWriter, ADeviceSlowerThanTheLeastRateLeavesTheRestToThePageCache) {
  fs::path dir = TempDir();
  const fs::path path = dir / "trace.bin";
  AtomicFileWriter w;
  ASSERT_TRUE(w.Open(path).ok());
  w.SetDropBehind(true, /*max_stall_ms=*/60'000);
  w.SetDirect(/*min_bytes_per_sec=*/uint64_t{1} << 50);
  if (!w.direct()) GTEST_SKIP() << dir << ": no direct I/O on this file system";
  std::string expected;
  const std::string piece(1 << 20, 'x');
  for (uint64_t i = 0; i < AtomicFileWriter::kDirectWindow / piece.size() + 2; ++i) {
    ASSERT_TRUE(w.Write(piece).ok());
    expected += piece;
  }
  EXPECT_FALSE(w.direct()) << "a window at under the least rate ends direct writes";
  ASSERT_TRUE(w.Commit().ok());
  auto got = ReadFile(path);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(*got == expected);
}

// Without it (every other file: a spool is read back soon), the pages stay.
TEST(AtomicFileWriter, WithoutDropBehindTheWrittenPagesStayCached) {
  fs::path dir = TempDir();
  const fs::path path = dir / "spool.bin";
  AtomicFileWriter w;
  ASSERT_TRUE(w.Open(path).ok());
  const std::string piece(1 << 20, 'x');
  for (int i = 0; i < 24; ++i) ASSERT_TRUE(w.Write(piece).ok());
  ASSERT_TRUE(w.Commit().ok());
  {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::fdatasync(fd), 0);
    ::close(fd);
  }
  const size_t pages = (24u << 20) / static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_GT(ResidentPages(path), pages / 2) << "of " << pages;
}

TEST(Checksum64, FileChecksumMatchesStreamedChecksum) {
  fs::path dir = TempDir();
  std::string data(3 << 20, 'x');
  ASSERT_TRUE(WriteFileAtomic(dir / "big.bin", data).ok());
  Checksum64 sum;
  sum.Update(data.data(), 1000);
  sum.Update(data.data() + 1000, data.size() - 1000);
  auto file_sum = ChecksumFile(dir / "big.bin");
  ASSERT_TRUE(file_sum.ok());
  EXPECT_EQ(*file_sum, sum.Digest());
}

TEST(Json, SyntaxErrorNamesFileAndLine) {
  auto r = ParseJson("{\n\"a\": }", "prog.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("prog.json"), std::string::npos);
  EXPECT_NE(r.status().message().find("line 2"), std::string::npos);
}

TEST(AtomicFileWriter, AFailedRenameKeepsItsRealError) {
  fs::path dir = TempDir();
  // The final name is a non-empty directory: rename(2) fails (EISDIR).
  fs::create_directories(dir / "out.json" / "inside");
  Status s = WriteFileAtomic(dir / "out.json", "{}");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rename"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("Success"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("directory"), std::string::npos) << s.message();
  EXPECT_FALSE(fs::exists(TemporaryPathFor(dir / "out.json"))) << "the temporary file is removed";
}

TEST(AtomicFileWriter, ALinkUnderTheTemporaryNameIsNeverFollowed) {
  fs::path dir = TempDir();
  ASSERT_TRUE(WriteFileAtomic(dir / "victim.txt", "precious").ok());
  fs::create_symlink(dir / "victim.txt", TemporaryPathFor(dir / "out.txt"));
  Status s = WriteFileAtomic(dir / "out.txt", "attacker data");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("symbolic link"), std::string::npos) << s.message();
  EXPECT_EQ(*ReadFile(dir / "victim.txt"), "precious");
}

TEST(AtomicFileWriter, ASecretGetsExactlyItsMode) {
  fs::path dir = TempDir();
  // Even over a stale temporary file that others could read.
  ASSERT_TRUE(WriteFileAtomic(TemporaryPathFor(dir / "k.key"), "old").ok());
  ::chmod(TemporaryPathFor(dir / "k.key").c_str(), 0644);
  ASSERT_TRUE(WriteFileAtomic(dir / "k.key", "secret", 0600).ok());
  struct stat st {};
  ASSERT_EQ(::stat((dir / "k.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(MakeDirsNoLinks, CreatesRealDirectoriesAndRefusesLinks) {
  fs::path dir = TempDir();
  ASSERT_TRUE(MakeDirsNoLinks(dir / "out", "rank0/d1").ok());
  EXPECT_TRUE(fs::is_directory(dir / "out/rank0/d1"));
  fs::create_directories(dir / "elsewhere");
  fs::create_directory_symlink(dir / "elsewhere", dir / "out/rank1");
  Status s = MakeDirsNoLinks(dir / "out", "rank1/d0");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find((dir / "out/rank1").string() + " is a symbolic link"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(fs::is_empty(dir / "elsewhere")) << "nothing is created through the link";
  EXPECT_FALSE(CheckNoLinks(dir / "out", "rank1/d0/deps.json").ok());
  EXPECT_TRUE(CheckNoLinks(dir / "out", "rank0/d1/deps.json").ok());
}

TEST(DirectoryLock, ASecondHolderIsRefusedWithTheFirstOnesPid) {
  fs::path dir = TempDir();
  auto first = DirectoryLock::Acquire(dir, "work dir");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->held()) << first->warning();
  // flock(2) locks belong to an open file description: a second Acquire,
  // even in this process, is another holder.
  auto second = DirectoryLock::Acquire(dir, "work dir");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("is in use by pid " + std::to_string(::getpid())),
            std::string::npos)
      << second.status().message();
  EXPECT_NE(second.status().message().find("common_test"), std::string::npos)
      << "the holder's command line";
  EXPECT_TRUE(fs::is_empty(dir)) << "no lock file lands in the directory";
  *first = DirectoryLock();  // released
  EXPECT_TRUE(DirectoryLock::Acquire(dir, "work dir").ok());
}

TEST(ReadFile, MissingFileIsNotFound) {
  auto r = ReadFile("/nonexistent/dfx/file.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/dfx/file.json"), std::string::npos);
}

}  // namespace
}  // namespace dfx
