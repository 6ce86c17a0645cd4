// Test scratch directories that do not outlive a passing test process.
// Helpers that hand out plain paths under the system temp dir (e2e
// TestDir, the common and agent tests' TempDir) and directories shared by
// a file's tests (one run made for all of them) register each directory
// here; it is removed when the process exits after all its tests passed.
// A failed test's files stay for a look. Test code only.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <system_error>
#include <vector>

namespace dfx {

inline void RemoveTestDirAtExit(const std::filesystem::path& dir) {
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
  std::lock_guard<std::mutex> lock(dirs.mu);
  dirs.paths.push_back(dir);
}

}  // namespace dfx
