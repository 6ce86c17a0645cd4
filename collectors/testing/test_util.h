// Helpers shared by the collectors' tests: a fresh temporary directory, JSON
// key-order checks and dep_gen tensor views.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "collectors/recorders.h"
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

// A file under tests/view/fixtures/ (artifacts a real run wrote), shared by
// the readers' tests here and the viewers' tests.
inline std::filesystem::path ViewFixture(const std::string& rel) {
  return std::filesystem::path(DFX_SOURCE_DIR) / "tests/view/fixtures" / rel;
}

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

// A dep_gen tensor view with this geometry (elements).
inline TensorView MakeTensorView(uint64_t id, std::vector<uint32_t> shape,
                                 std::vector<uint32_t> strides, uint64_t offset = 0,
                                 const char* dtype = "BFLOAT16") {
  TensorView v;
  v.tensor_id = id;
  std::strncpy(v.dtype, dtype, sizeof(v.dtype) - 1);
  v.ndims = static_cast<uint8_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    v.shape[i] = shape[i];
    v.strides[i] = strides[i];
  }
  v.start_offset = offset;
  return v;
}

}  // namespace dfx::collectors::testing
