#include "device/generators.h"

#include <string>

#include "device/program_loader.h"

namespace dfx::device {

namespace {

uint64_t SplitMix(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int AddTensor(Program* p, const std::string& name, std::vector<uint32_t> shape, DType dtype,
              TensorInit init = {}) {
  TensorDecl t;
  t.name = name;
  t.shape = std::move(shape);
  t.dtype = dtype;
  t.init = std::move(init);
  p->tensors.push_back(std::move(t));
  return static_cast<int>(p->tensors.size() - 1);
}

int AddView(Program* p, const std::string& name, int parent, std::vector<uint32_t> shape,
            uint64_t offset) {
  TensorDecl t;
  t.name = name;
  t.view_of = parent;
  t.shape = std::move(shape);
  t.dtype = p->tensors[parent].dtype;
  t.offset = offset;
  p->tensors.push_back(std::move(t));
  return static_cast<int>(p->tensors.size() - 1);
}

int AddKernel(Program* p, int func_id, const std::string& name, CoreType core, KernelOp op) {
  Kernel k;
  k.func_id = func_id;
  k.name = name;
  k.core_type = core;
  k.op = op;
  p->kernels.push_back(std::move(k));
  return static_cast<int>(p->kernels.size() - 1);
}

Statement MakeSubmit(Program* p, int kernel, std::vector<SubmitArg> args, int block_num = 1) {
  Statement st;
  st.kind = Statement::Kind::kSubmit;
  st.submit.kernel = kernel;
  st.submit.args = std::move(args);
  st.submit.block_num = block_num;
  ++p->submit_count;
  return st;
}

Statement MakeScope(const std::string& site, std::vector<Statement> body) {
  Statement st;
  st.kind = Statement::Kind::kScope;
  st.site = site;
  st.body = std::move(body);
  return st;
}

Statement MakeTag(int tensor) {
  Statement st;
  st.kind = Statement::Kind::kDumpTag;
  st.tag_tensor = tensor;
  return st;
}

TensorInit Random(uint64_t seed) {
  TensorInit i;
  i.kind = InitKind::kRandom;
  i.seed = seed;
  return i;
}

}  // namespace

Program GenerateLayeredDag(const LayeredDagOptions& o) {
  Program p;
  p.name = o.name;
  p.origin = "<generated layered_dag>";
  int add = AddKernel(&p, 0, "add", CoreType::kAiv, KernelOp::kAdd);
  int softmax = AddKernel(&p, 1, "softmax", CoreType::kAiv, KernelOp::kSoftmax);
  int mm = AddKernel(&p, 2, "matmul", CoreType::kAic, KernelOp::kMatmul);
  int copy = AddKernel(&p, 3, "copy", CoreType::kAiv, KernelOp::kCopy);
  std::vector<uint32_t> shape{static_cast<uint32_t>(o.rows), static_cast<uint32_t>(o.cols)};
  int width = std::max(1, o.width);
  std::vector<int> inputs;
  for (int j = 0; j < width; ++j)
    inputs.push_back(
        AddTensor(&p, "in" + std::to_string(j), shape, DType::kFloat32, Random(o.seed + j)));
  // A non-expanding weight: every column sums to < 1, so values stay bounded.
  TensorInit ramp;
  ramp.kind = InitKind::kRange;
  ramp.range_start = 0;
  ramp.range_step = 1.0 / (static_cast<double>(o.cols) * o.cols * o.cols);
  int w = AddTensor(&p, "w", {static_cast<uint32_t>(o.cols), static_cast<uint32_t>(o.cols)},
                    DType::kFloat32, ramp);
  // slot[s][j]: the name layer L writes when L % 3 == s.
  std::vector<std::vector<int>> slot(3);
  for (int s = 0; s < 3; ++s)
    for (int j = 0; j < width; ++j)
      slot[s].push_back(
          AddTensor(&p, "v" + std::to_string(s) + "_" + std::to_string(j), shape, DType::kFloat32));
  int out = AddTensor(&p, "out", shape, DType::kFloat32);
  uint64_t rng = o.seed;
  for (uint64_t i = 0; i < o.tasks; ++i) {
    uint64_t layer = i / static_cast<uint64_t>(width);
    int j = static_cast<int>(i % static_cast<uint64_t>(width));
    auto source = [&](uint64_t r) -> int {
      int pick = static_cast<int>(r % static_cast<uint64_t>(width));
      if (layer == 0) return inputs[pick];
      uint64_t back = (layer >= 2 && (r >> 20) % 4 == 0) ? 2 : 1;  // sometimes two layers back
      return slot[(layer - back) % 3][pick];
    };
    int a = source(SplitMix(&rng));
    int b = source(SplitMix(&rng));
    int dst = slot[layer % 3][j];
    bool last = i + 1 == o.tasks;
    if (last) dst = out;
    ArgType out_type = last ? ArgType::kOutputExisting : ArgType::kOutput;
    Statement st;
    // Op mix: matmul by w (AIC) every matmul_every-th task, softmax (AIV,
    // renormalises) on even slots, add (AIV) otherwise; the last task copies
    // into the external output.
    if (last) {
      st = MakeSubmit(&p, copy, {{a, ArgType::kInput}, {dst, out_type}});
    } else if (o.matmul_every > 0 && i % static_cast<uint64_t>(o.matmul_every) ==
                                         static_cast<uint64_t>(o.matmul_every - 1)) {
      st = MakeSubmit(&p, mm, {{a, ArgType::kInput}, {w, ArgType::kInput}, {dst, out_type}});
    } else if (j % 2 == 0) {
      st = MakeSubmit(&p, softmax, {{a, ArgType::kInput}, {dst, out_type}});
    } else {
      st = MakeSubmit(&p, add, {{a, ArgType::kInput}, {b, ArgType::kInput}, {dst, out_type}});
    }
    p.orchestration.push_back(std::move(st));
  }
  AssignJsonPaths(&p);
  return p;
}

Program GenerateAttentionDecode(const AttentionDecodeOptions& o) {
  Program p;
  p.name = o.name;
  p.origin = "<generated attention_decode>";
  int qk = AddKernel(&p, 0, "qk_matmul", CoreType::kAic, KernelOp::kMatmul);
  int sm = AddKernel(&p, 1, "softmax", CoreType::kAiv, KernelOp::kSoftmax);
  int pv = AddKernel(&p, 2, "pv_matmul", CoreType::kAic, KernelOp::kMatmul);
  int norm = AddKernel(&p, 3, "rmsnorm", CoreType::kAiv, KernelOp::kRmsnorm);
  int add = AddKernel(&p, 4, "residual_add", CoreType::kAiv, KernelOp::kAdd);
  uint32_t B = static_cast<uint32_t>(o.batch), S = static_cast<uint32_t>(o.seq),
           D = static_cast<uint32_t>(o.head_dim), H = static_cast<uint32_t>(o.heads);
  int x = AddTensor(&p, "x", {H * B, D}, o.dtype, Random(1));
  int attn = AddTensor(&p, "attn_out", {H * B, D}, o.dtype);
  TensorInit ones;
  ones.kind = InitKind::kOnes;
  int gamma = AddTensor(&p, "gamma", {D}, o.dtype, ones);
  std::vector<int> q, kt, v, o_h;
  for (uint32_t h = 0; h < H; ++h) {
    std::string hs = std::to_string(h);
    kt.push_back(AddTensor(&p, "k_cache_t" + hs, {D, S}, o.dtype, Random(100 + h)));
    v.push_back(AddTensor(&p, "v_cache" + hs, {S, D}, o.dtype, Random(200 + h)));
    q.push_back(AddView(&p, "q" + hs, x, {B, D}, static_cast<uint64_t>(h) * B * D));
    o_h.push_back(AddView(&p, "attn_out" + hs, attn, {B, D}, static_cast<uint64_t>(h) * B * D));
  }
  int scores = AddTensor(&p, "scores", {B, S}, o.dtype);
  int probs = AddTensor(&p, "probs", {B, S}, o.dtype);
  int normed = AddTensor(&p, "normed", {H * B, D}, o.dtype);
  for (int l = 0; l < o.layers; ++l) {
    std::vector<Statement> layer;
    if (o.dump_tags) layer.push_back(MakeTag(x));
    for (uint32_t h = 0; h < H; ++h) {
      std::vector<Statement> head;
      head.push_back(MakeSubmit(
          &p, qk, {{q[h], ArgType::kInput}, {kt[h], ArgType::kInput}, {scores, ArgType::kOutput}}));
      Statement s = MakeSubmit(&p, sm, {{scores, ArgType::kInput}, {probs, ArgType::kOutput}},
                               o.softmax_blocks);
      if (o.dump_tags) s.submit.dumps = {0};
      head.push_back(std::move(s));
      head.push_back(MakeSubmit(
          &p, pv,
          {{probs, ArgType::kInput}, {v[h], ArgType::kInput}, {o_h[h], ArgType::kOutputExisting}}));
      layer.push_back(MakeScope("head", std::move(head)));
    }
    if (o.dump_tags) layer.push_back(MakeTag(attn));
    layer.push_back(MakeSubmit(
        &p, norm, {{attn, ArgType::kInput}, {gamma, ArgType::kInput}, {normed, ArgType::kOutput}},
        o.norm_blocks));
    layer.push_back(MakeSubmit(&p, add, {{normed, ArgType::kInput}, {x, ArgType::kInout}}));
    p.orchestration.push_back(MakeScope("layer", std::move(layer)));
  }
  AssignJsonPaths(&p);
  return p;
}

Program GenerateVectorPipeline(int rows, int cols) {
  Program p;
  p.name = "vector_pipeline";
  p.origin = "<generated vector_pipeline>";
  int add = AddKernel(&p, 0, "vector_add", CoreType::kAiv, KernelOp::kAdd);
  int mul = AddKernel(&p, 1, "vector_mul", CoreType::kAiv, KernelOp::kMul);
  int copy = AddKernel(&p, 2, "vector_copy", CoreType::kAiv, KernelOp::kCopy);
  std::vector<uint32_t> shape{static_cast<uint32_t>(rows), static_cast<uint32_t>(cols)};
  TensorInit two, three;
  two.kind = InitKind::kRange;
  two.range_start = 2;
  two.range_step = 0;
  three = two;
  three.range_start = 3;
  int a = AddTensor(&p, "a", shape, DType::kFloat32, two);
  int b = AddTensor(&p, "b", shape, DType::kFloat32, three);
  int f = AddTensor(&p, "f", shape, DType::kFloat32);
  int c = AddTensor(&p, "c", shape, DType::kFloat32);
  int d = AddTensor(&p, "d", shape, DType::kFloat32);
  int e = AddTensor(&p, "e", shape, DType::kFloat32);
  p.orchestration.push_back(
      MakeSubmit(&p, add, {{a, ArgType::kInput}, {b, ArgType::kInput}, {c, ArgType::kOutput}}));
  Statement s1 = MakeSubmit(&p, add, {{c, ArgType::kInput}, {d, ArgType::kOutput}});
  s1.submit.scalars = {{DType::kFloat32, 1.0}};
  p.orchestration.push_back(std::move(s1));
  Statement s2 = MakeSubmit(&p, add, {{c, ArgType::kInput}, {e, ArgType::kOutput}});
  s2.submit.scalars = {{DType::kFloat32, 2.0}};
  p.orchestration.push_back(std::move(s2));
  p.orchestration.push_back(MakeSubmit(&p, mul, {{d, ArgType::kInout}, {e, ArgType::kInput}}));
  p.orchestration.push_back(
      MakeSubmit(&p, copy, {{d, ArgType::kInput}, {f, ArgType::kOutputExisting}}));
  AssignJsonPaths(&p);
  return p;
}

}  // namespace dfx::device
