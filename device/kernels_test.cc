#include "device/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace dfx::device {
namespace {

struct Host {
  std::vector<uint8_t> bytes;
  KernelTensor t;
  Host(std::vector<uint32_t> shape, DType dtype, const std::vector<float>& values = {}) {
    uint64_t n = 1;
    for (uint32_t d : shape) n *= d;
    bytes.assign(n * DTypeSize(dtype), 0);
    t.data = bytes.data();
    t.dtype = dtype;
    t.numel = n;
    t.shape = std::move(shape);
    for (size_t i = 0; i < values.size(); ++i) StoreElement(bytes.data(), dtype, i, values[i]);
  }
  float at(uint64_t i) const { return LoadElement(bytes.data(), t.dtype, i); }
};

std::vector<float> Random(size_t n, int seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

Kernel K(KernelOp op, CoreType core = CoreType::kAiv) {
  Kernel k;
  k.op = op;
  k.core_type = core;
  k.name = KernelOpName(op);
  return k;
}

// Runs every block of `call` (block_num blocks).
void RunAll(KernelCall call, int blocks) {
  call.block_num = blocks;
  for (int b = 0; b < blocks; ++b) {
    call.block_idx = b;
    ASSERT_TRUE(RunKernelBlock(call, false).ok());
  }
}

TEST(KernelsTest, MatmulMatchesReferenceForEveryBlockSplit) {
  const uint32_t m = 5, k = 7, n = 3;
  auto av = Random(m * k, 1), bv = Random(k * n, 2);
  for (int blocks : {1, 2, 5, 8}) {
    Host a({m, k}, DType::kFloat32, av), b({k, n}, DType::kFloat32, bv), c({m, n}, DType::kFloat32);
    Kernel kern = K(KernelOp::kMatmul, CoreType::kAic);
    RunAll({&kern, {a.t, b.t}, {c.t}, nullptr, 0, 1}, blocks);
    for (uint32_t i = 0; i < m; ++i)
      for (uint32_t j = 0; j < n; ++j) {
        double ref = 0;
        for (uint32_t p = 0; p < k; ++p) ref += av[i * k + p] * bv[p * n + j];
        EXPECT_NEAR(c.at(i * n + j), ref, 1e-5) << "blocks=" << blocks;
      }
  }
}

TEST(KernelsTest, SoftmaxRowsSumToOneAndMatchReference) {
  auto xv = Random(4 * 6, 3);
  Host x({4, 6}, DType::kFloat32, xv), y({4, 6}, DType::kFloat32);
  Kernel kern = K(KernelOp::kSoftmax);
  RunAll({&kern, {x.t}, {y.t}, nullptr, 0, 1}, 3);
  for (int r = 0; r < 4; ++r) {
    double mx = -1e9, sum = 0;
    for (int c = 0; c < 6; ++c) mx = std::max<double>(mx, xv[r * 6 + c]);
    for (int c = 0; c < 6; ++c) sum += std::exp(xv[r * 6 + c] - mx);
    double total = 0;
    for (int c = 0; c < 6; ++c) {
      EXPECT_NEAR(y.at(r * 6 + c), std::exp(xv[r * 6 + c] - mx) / sum, 1e-6);
      total += y.at(r * 6 + c);
    }
    EXPECT_NEAR(total, 1.0, 1e-6);
  }
}

TEST(KernelsTest, RmsnormWithGammaMatchesReference) {
  auto xv = Random(3 * 8, 4), gv = Random(8, 5);
  Host x({3, 8}, DType::kFloat32, xv), g({8}, DType::kFloat32, gv), y({3, 8}, DType::kFloat32);
  Kernel kern = K(KernelOp::kRmsnorm);
  kern.eps = 1e-5;
  RunAll({&kern, {x.t, g.t}, {y.t}, nullptr, 0, 1}, 2);
  for (int r = 0; r < 3; ++r) {
    double ss = 0;
    for (int c = 0; c < 8; ++c) ss += xv[r * 8 + c] * xv[r * 8 + c];
    double inv = 1 / std::sqrt(ss / 8 + 1e-5);
    for (int c = 0; c < 8; ++c) EXPECT_NEAR(y.at(r * 8 + c), xv[r * 8 + c] * inv * gv[c], 1e-5);
  }
}

TEST(KernelsTest, ElementwiseReduceAndCopyInHalfPrecision) {
  std::vector<float> av = {1, 2, 3, 4, 5, 6}, bv = {0.5f, 0.25f, 2, 2, -1, 0};
  Host a({2, 3}, DType::kFloat16, av), b({2, 3}, DType::kBFloat16, bv), s({2, 3}, DType::kFloat16),
      p({2, 3}, DType::kFloat32), r({2}, DType::kFloat32), cp({6}, DType::kBFloat16);
  Kernel add = K(KernelOp::kAdd), mul = K(KernelOp::kMul), red = K(KernelOp::kReduceSum),
         copy = K(KernelOp::kCopy);
  RunAll({&add, {a.t, b.t}, {s.t}, nullptr, 0, 1}, 2);
  std::vector<Scalar> three = {{DType::kFloat32, 3.0}};
  RunAll({&mul, {a.t}, {p.t}, &three, 0, 1}, 1);
  RunAll({&red, {a.t}, {r.t}, nullptr, 0, 1}, 2);
  RunAll({&copy, {a.t}, {cp.t}, nullptr, 0, 1}, 1);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(s.at(i), av[i] + bv[i]);
    EXPECT_EQ(p.at(i), av[i] * 3);
    EXPECT_EQ(cp.at(i), av[i]);
  }
  EXPECT_EQ(r.at(0), 6);
  EXPECT_EQ(r.at(1), 15);
}

TEST(KernelsTest, FailKernelReturnsItsMessage) {
  Kernel k = K(KernelOp::kFail);
  k.message = "injected";
  Status s = RunKernelBlock({&k, {}, {}, nullptr, 0, 1}, false);
  EXPECT_EQ(s.message(), "injected");
}

TEST(KernelsTest, WrongArgumentCountsAreErrorsNotCrashes) {
  Kernel mm = K(KernelOp::kMatmul, CoreType::kAic);
  Host a({2, 2}, DType::kFloat32);
  Status s = RunKernelBlock({&mm, {a.t}, {}, nullptr, 0, 1}, false);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("got 1 input(s) and 0 output(s)"), std::string::npos) << s.message();
  EXPECT_GT(EstimateWork({&mm, {a.t}, {}, nullptr, 0, 1}, GetChipModel(config::BackendType::kA2A3))
                .total_cycles,
            0u);
}

TEST(KernelsTest, CostModelIsDeterministicAndScalesWithWork) {
  const ChipModel& m = GetChipModel(config::BackendType::kA2A3);
  Host a({64, 64}, DType::kFloat32), b({64, 64}, DType::kFloat32), c({64, 64}, DType::kFloat32);
  Host a2({128, 64}, DType::kFloat32), c2({128, 64}, DType::kFloat32);
  Kernel mm = K(KernelOp::kMatmul, CoreType::kAic);
  auto w1 = EstimateWork({&mm, {a.t, b.t}, {c.t}, nullptr, 0, 1}, m);
  auto w1b = EstimateWork({&mm, {a.t, b.t}, {c.t}, nullptr, 0, 1}, m);
  auto w2 = EstimateWork({&mm, {a2.t, b.t}, {c2.t}, nullptr, 0, 1}, m);
  EXPECT_EQ(w1.total_cycles, w1b.total_cycles);
  EXPECT_EQ(w1.cube_fp_ops, 64u * 64 * 64);
  EXPECT_GT(w2.total_cycles, w1.total_cycles);
  EXPECT_EQ(w1.bytes_written_gm, 64u * 64 * 4);
  Kernel busy = K(KernelOp::kBusy);
  busy.duration_us = 10;
  EXPECT_EQ(EstimateWork({&busy, {}, {}, nullptr, 0, 1}, m).total_cycles, 500u);  // 10 us at 50 MHz
  EXPECT_EQ(EstimateWork({&busy, {}, {}, nullptr, 0, 1}, GetChipModel(config::BackendType::kA5))
                .total_cycles,
            10000u);
}

}  // namespace
}  // namespace dfx::device
