#include "device/memory_budget.h"

#include <gtest/gtest.h>

#include <string>

#include "device/program_loader.h"

namespace dfx::device {
namespace {

// `n` FLOAT32 tensors of [16384, 16384]: 1 GiB each.
std::string BigProgram(int n) {
  std::string tensors;
  for (int i = 0; i < n; ++i) {
    tensors += (i ? ", " : "") + std::string("{\"name\": \"t") + std::to_string(i) +
               "\", \"shape\": [16384, 16384], \"dtype\": \"FLOAT32\"}";
  }
  return R"({"name": "big", "kernels": [{"func_id": 0, "name": "k", "core_type": "aiv", "op": "copy"}],
             "tensors": [)" +
         tensors + R"(], "orchestration": []})";
}

TEST(MemoryBudget, CountsTensorsHeapsAndTheDumpArena) {
  auto p = ParseProgramText(BigProgram(2), "big.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  config::RunConfig c;
  MemoryNeed need = ProgramMemory(*p, c, 0);
  EXPECT_EQ(need.tensor_bytes, 2ull << 30);
  EXPECT_GT(need.heap_bytes, 0u);
  EXPECT_EQ(need.dump_arena_bytes, 0u) << "no args dump, no arena";
  ASSERT_EQ(need.largest.size(), 2u);
  EXPECT_EQ(need.largest[0], "t0 [16384,16384] FLOAT32 1.0 GiB");
  c.enable_dump_args = 1;
  EXPECT_EQ(ProgramMemory(*p, c, 0).dump_arena_bytes, 128ull << 20);
  EXPECT_EQ(ProgramMemory(*p, c, 4096).dump_arena_bytes, 4096u);
}

TEST(MemoryBudget, ThirtyGiBIsRefusedByTheHostNamingTotalLimitAndLargest) {
  auto p = ParseProgramText(BigProgram(30), "big.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  config::RunConfig c;
  EXPECT_TRUE(CheckMemoryBudget(*p, c, 0, std::nullopt).ok()) << "fits the a2a3's 64 GiB";
  Status s = CheckMemoryBudget(*p, c, 0, uint64_t{16} << 30);
  ASSERT_FALSE(s.ok());
  const std::string& m = s.message();
  EXPECT_NE(m.find("big.json: needs 30.2 GiB of host memory"), std::string::npos) << m;
  EXPECT_NE(m.find("16.0 GiB available"), std::string::npos) << m;
  EXPECT_NE(m.find("largest tensors: t0 [16384,16384] FLOAT32 1.0 GiB"), std::string::npos) << m;
}

TEST(MemoryBudget, MoreThanTheChipHoldsIsRefusedByTheChipModel) {
  auto p = ParseProgramText(BigProgram(70), "big.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  Status s = CheckMemoryBudget(*p, config::RunConfig{}, 0, std::nullopt);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("more than the a2a3 chip model's 64.0 GiB"), std::string::npos)
      << s.message();
  EXPECT_TRUE(HostMemoryAvailable().has_value()) << "/proc/meminfo has MemAvailable";
}

}  // namespace
}  // namespace dfx::device
