#include "common/file_util.h"

#include <gtest/gtest.h>

#include "common/json.h"

namespace dfx {
namespace {

namespace fs = std::filesystem;

fs::path TempDir() {
  fs::path dir = fs::temp_directory_path() /
                 ("dfx_common_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                  "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
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

TEST(ReadFile, MissingFileIsNotFound) {
  auto r = ReadFile("/nonexistent/dfx/file.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/dfx/file.json"), std::string::npos);
}

}  // namespace
}  // namespace dfx
