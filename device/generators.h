// Program generators for scale tests and examples (docs/design.md §6). Each one
// returns a valid Program (ValidateProgram passes) deterministically from its
// options. Thread-safe.
#pragma once

#include <cstdint>

#include "device/program.h"

namespace dfx::device {

// A layered random DAG: `tasks` submits in layers of `width`; each task
// reads one or two values of the previous two layers and writes a fresh
// value (OUTPUT). Names rotate over three layer slots, so a value's buffer is
// released three layers later and memory stays bounded at any task count.
// Every `matmul_every`-th task is an AIC matmul by a constant weight w, the
// rest AIV softmax (even slots) or add; values stay finite at any depth
// that matters for tests (softmax renormalises, w does not expand).
struct LayeredDagOptions {
  uint64_t tasks = 1000;
  int width = 16;
  uint64_t seed = 1;
  int rows = 8, cols = 8;  // every value is a [rows, cols] FLOAT32 tensor
  int matmul_every = 4;    // 0 = no matmuls
  std::string name = "layered_dag";
};
Program GenerateLayeredDag(const LayeredDagOptions& options);

// An attention-decode-shaped graph. Per layer (scope "layer"), per head
// (nested scope "head"): scores = q_h x k_h^T (AIC matmul), probs =
// softmax(scores) (AIV, SPMD `softmax_blocks`), o_h = probs x v_h (AIC
// matmul) written into a slice view of attn_out (OUTPUT_EXISTING); then
// normed = rmsnorm(attn_out, gamma) (AIV, SPMD `norm_blocks`) and x += normed
// (INOUT). q_h are views of x, so layer l+1 depends on layer l.
// `dump_tags` adds dump_tag statements on x and a per-submit dumps=[scores].
struct AttentionDecodeOptions {
  int layers = 2;
  int heads = 2;
  int batch = 4;  // query rows per head
  int seq = 32;   // kv length
  int head_dim = 16;
  int softmax_blocks = 2;
  int norm_blocks = 2;
  bool dump_tags = true;
  DType dtype = DType::kFloat32;
  std::string name = "attention_decode";
};
Program GenerateAttentionDecode(const AttentionDecodeOptions& options);

// The vector pipeline example: f = (a + b + 1) * (a + b + 2) built as five
// tasks with exactly 6 dependency edges (4 tensormap edges of the diamond, an
// INOUT in-place multiply that adds a tensormap + creator edge pair, and the
// final copy into the external output):
//   t0 c = add(a, b)         OUTPUT c
//   t1 d = add(c, 1.0)       OUTPUT d            t0->t1
//   t2 e = add(c, 2.0)       OUTPUT e            t0->t2
//   t3 d = mul(d, e)         INOUT d             t1->t3 (tensormap, creator), t2->t3
//   t4 f = copy(d)           OUTPUT_EXISTING f   t3->t4
Program GenerateVectorPipeline(int rows = 16, int cols = 16);

}  // namespace dfx::device
