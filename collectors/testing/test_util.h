// Helpers shared by the collectors' tests: a fresh temporary directory and
// JSON key-order checks.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "common/json.h"

namespace dfx::collectors::testing {

// A unique directory under the system temp dir, removed on destruction.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ =
        std::filesystem::temp_directory_path() / ("dfx_collectors_" + std::to_string(::getpid()) +
                                                  "_" + std::string(info ? info->name() : "x"));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::vector<std::string> Keys(const Json& j) {
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  return keys;
}

inline Json ReadJson(const std::filesystem::path& p) {
  auto r = ReadJsonFile(p);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : Json();
}

inline std::string Slurp(const std::filesystem::path& p) {
  auto r = ReadFile(p);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::string();
}

}  // namespace dfx::collectors::testing
