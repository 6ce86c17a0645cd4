#include "common/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "common/file_util.h"
#include "common/testing/temp_dirs.h"

namespace dfx {
namespace {

namespace fs = std::filesystem;

fs::path TempDir() {
  return FreshTestDir("dfx_input_file_test_" + std::to_string(::getpid()) + "_" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
}

}  // namespace
}  // namespace dfx

namespace dfx {
namespace {

// Inputs are regular files of bounded size, read once (docs/design.md §11.13).
TEST(ReadInputFile, ReadsARegularFileWithinTheLimit) {
  fs::path dir = TempDir();
  ASSERT_TRUE(WriteFileAtomic(dir / "p.json", "{\"a\": 1}").ok());
  auto got = ReadInputFile(dir / "p.json", 64);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got, "{\"a\": 1}");
  auto small = ReadInputFile(dir / "p.json", 4);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("at most 4 bytes"), std::string::npos)
      << small.status().message();
  auto missing = ReadInputFile(dir / "nope.json", 64);
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
}

TEST(ReadInputFile, RefusesSpecialFilesByWhatTheyAreAtOnce) {
  fs::path dir = TempDir();
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  // A FIFO without a writer: refused, not waited on.
  auto fifo = ReadInputFile(dir / "fifo", 1 << 20);
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.status().message().find("is a FIFO (named pipe); give a regular file"),
            std::string::npos)
      << fifo.status().message();
  auto directory = ReadInputFile(dir, 1 << 20);
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.status().message().find("is a directory; give a regular file"),
            std::string::npos)
      << directory.status().message();
  auto zero = ReadInputFile("/dev/zero", 1 << 20);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("/dev/zero is a character device"), std::string::npos)
      << zero.status().message();
}

TEST(ReadInputFile, ReadsAnOpenPipeOnceUnderTheLimit) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string text = "{\"program\": true}";
  ASSERT_EQ(::write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fds[1]);
  const fs::path via = "/proc/self/fd/" + std::to_string(fds[0]);
  auto got = ReadInputFile(via, 1 << 20);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got, text);
  ::close(fds[0]);

  // A pipe that never ends is cut at the limit.
  ASSERT_EQ(::pipe(fds), 0);
  const std::string chunk(4096, 'x');
  ASSERT_EQ(::write(fds[1], chunk.data(), chunk.size()), 4096);
  ::close(fds[1]);
  auto big = ReadInputFile("/proc/self/fd/" + std::to_string(fds[0]), 1000);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("more than 1000 bytes"), std::string::npos)
      << big.status().message();
  ::close(fds[0]);
}

}  // namespace
}  // namespace dfx
