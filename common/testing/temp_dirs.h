// Test scratch directories that do not outlive a passing test process.
// The helpers that hand out plain paths under the system temp dir (e2e
// TestDir, the common and agent tests' TempDir) get each directory from
// FreshTestDir, which removes it when the process exits after all its
// tests passed. A failed test's files stay for a look. Test code only.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

namespace dfx {

// `name` under the system temp dir, emptied and created now, and removed at
// exit if every test of the process passed.
inline std::filesystem::path FreshTestDir(const std::string& name) {
  struct Dirs {
    std::mutex mu;
    std::vector<std::filesystem::path> paths;
    // Made during a test, so destroyed before gtest's UnitTest (a static
    // made before any test runs): its results can still be read.
    ~Dirs() {
      if (!::testing::UnitTest::GetInstance()->Passed()) return;
      std::error_code ec;
      for (const auto& p : paths) std::filesystem::remove_all(p, ec);
    }
  };
  static Dirs dirs;
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::lock_guard<std::mutex> lock(dirs.mu);
  dirs.paths.push_back(dir);
  return dir;
}

}  // namespace dfx
