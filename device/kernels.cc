#include "device/kernels.h"

#include <algorithm>
#include <cmath>

#include "common/clock.h"

namespace dfx::device {

namespace {

uint64_t LastDim(const KernelTensor& t) { return t.shape.empty() ? 1 : t.shape.back(); }
uint64_t Rows(const KernelTensor& t) { return t.numel / std::max<uint64_t>(1, LastDim(t)); }

// Vector ops per element of each op (for the cost model).
double VecOpsPerElem(KernelOp op) {
  switch (op) {
    case KernelOp::kAdd:
    case KernelOp::kMul:
    case KernelOp::kReduceSum:
      return 1;
    case KernelOp::kSoftmax:
    case KernelOp::kRmsnorm:
      return 4;
    default:
      return 0;
  }
}

}  // namespace

namespace {
// Programs from the loader or a generator always pass; this keeps a
// hand-built Program with the wrong argument count from crashing the chip.
Status CheckArity(const KernelCall& call) {
  const Kernel& k = *call.kernel;
  size_t need_ins = 0;
  switch (k.op) {
    case KernelOp::kBusy:
    case KernelOp::kFail:
      return Status::Ok();
    case KernelOp::kMatmul:
      need_ins = 2;
      break;
    default:
      need_ins = 1;
  }
  bool shapes_ok = call.ins.size() >= need_ins && call.outs.size() == 1;
  if (shapes_ok && k.op == KernelOp::kMatmul)
    shapes_ok = call.ins[0].shape.size() == 2 && call.ins[1].shape.size() == 2;
  if (!shapes_ok)
    return InvalidArgument(std::string("kernel \"") + k.name + "\" (op " + KernelOpName(k.op) +
                           ") got " + std::to_string(call.ins.size()) + " input(s) and " +
                           std::to_string(call.outs.size()) +
                           " output(s); load the program through LoadProgram / ValidateProgram");
  return Status::Ok();
}
}  // namespace

collectors::PmuWork EstimateWork(const KernelCall& call, const ChipModel& model) {
  collectors::PmuWork w;
  const Kernel& k = *call.kernel;
  constexpr uint64_t kLaunch = 64;  // fixed per-block setup cycles
  if (k.op == KernelOp::kBusy) {
    w.total_cycles = std::max<uint64_t>(
        1, static_cast<uint64_t>(k.duration_us * static_cast<double>(model.clock_freq_hz) / 1e6));
    w.scalar_cycles = w.total_cycles;
    w.instructions = w.total_cycles / 4 + 1;
    return w;
  }
  if (k.op == KernelOp::kFail || !CheckArity(call).ok()) {
    w.total_cycles = kLaunch;
    w.scalar_cycles = kLaunch;
    w.instructions = 16;
    return w;
  }
  const KernelTensor& out = call.outs[0];
  uint64_t rb, re;
  if (k.op == KernelOp::kMatmul) {
    const KernelTensor& a = call.ins[0];
    const KernelTensor& b = call.ins[1];
    uint64_t m = a.shape[0], kk = a.shape[1], n = b.shape[1];
    BlockRows(m, call.block_idx, call.block_num, &rb, &re);
    uint64_t mb = re - rb;
    uint64_t macs = mb * kk * n;
    uint64_t es = DTypeSize(a.dtype);
    w.cube_fp_ops = macs;
    w.bytes_read_gm = (mb * kk + kk * n) * es;
    w.bytes_written_gm = mb * n * DTypeSize(out.dtype);
    w.bytes_read_l1 = w.bytes_read_gm;
    w.bytes_written_l1 = w.bytes_read_gm;
    w.bytes_read_l0 = 2 * macs * es / std::max<uint64_t>(1, n);
    w.bytes_written_l0c = mb * n * 4;
    w.cube_cycles =
        static_cast<uint64_t>(static_cast<double>(macs) / model.cube_flops_per_cycle) + 1;
    w.mte2_cycles =
        static_cast<uint64_t>(static_cast<double>(w.bytes_read_gm) / model.gm_bytes_per_cycle) + 1;
    w.mte1_cycles = static_cast<uint64_t>(static_cast<double>(w.bytes_read_l1) /
                                          (2 * model.gm_bytes_per_cycle)) +
                    1;
    w.mte3_cycles =
        static_cast<uint64_t>(static_cast<double>(w.bytes_written_gm) / model.gm_bytes_per_cycle) +
        1;
    w.scalar_cycles = 32;
    w.total_cycles =
        kLaunch + std::max(w.cube_cycles, w.mte2_cycles + w.mte1_cycles) + w.mte3_cycles;
  } else {
    uint64_t rows = Rows(out);
    BlockRows(rows, call.block_idx, call.block_num, &rb, &re);
    uint64_t elems_out = (re - rb) * LastDim(out);
    uint64_t elems_in = 0;
    for (const KernelTensor& in : call.ins) {
      uint64_t r = Rows(in);
      uint64_t ib, ie;
      BlockRows(r, call.block_idx, call.block_num, &ib, &ie);
      // A gamma vector (rmsnorm) is read whole by every block.
      elems_in +=
          (in.numel == LastDim(in) && r == 1 && rows > 1) ? in.numel : (ie - ib) * LastDim(in);
      w.bytes_read_gm +=
          ((in.numel == LastDim(in) && r == 1 && rows > 1) ? in.numel : (ie - ib) * LastDim(in)) *
          DTypeSize(in.dtype);
    }
    w.bytes_written_gm = elems_out * DTypeSize(out.dtype);
    w.bytes_read_ub = w.bytes_read_gm + w.bytes_written_gm;
    w.bytes_written_ub = w.bytes_read_gm + w.bytes_written_gm;
    uint64_t vec_ops = static_cast<uint64_t>(static_cast<double>(std::max(elems_in, elems_out)) *
                                             VecOpsPerElem(k.op));
    bool half = out.dtype == DType::kFloat16 || out.dtype == DType::kBFloat16;
    bool integer = !half && out.dtype != DType::kFloat32;
    if (integer) {
      w.vec_int_ops = vec_ops;
    } else if (half) {
      w.vec_fp16_ops = vec_ops;
    } else {
      w.vec_fp32_ops = vec_ops;
    }
    if (k.op == KernelOp::kSoftmax || k.op == KernelOp::kRmsnorm) w.vec_misc_ops = elems_out;
    w.vec_cycles =
        static_cast<uint64_t>(static_cast<double>(vec_ops) / model.vec_elems_per_cycle) + 1;
    w.mte2_cycles =
        static_cast<uint64_t>(static_cast<double>(w.bytes_read_gm) / model.gm_bytes_per_cycle) + 1;
    w.mte3_cycles =
        static_cast<uint64_t>(static_cast<double>(w.bytes_written_gm) / model.gm_bytes_per_cycle) +
        1;
    w.scalar_cycles = 16 + (re - rb);
    w.total_cycles = kLaunch + w.mte2_cycles + w.vec_cycles + w.mte3_cycles;
  }
  w.instructions = w.total_cycles / 4 + 8;
  return w;
}

Status RunKernelBlock(const KernelCall& call, bool spin_busy) {
  const Kernel& k = *call.kernel;
  DFX_RETURN_IF_ERROR(CheckArity(call));
  switch (k.op) {
    case KernelOp::kFail:
      return Internal(k.message);
    case KernelOp::kBusy: {
      if (spin_busy && k.duration_us > 0) {
        const Clock& clock = MonotonicClock::Instance();
        uint64_t until = clock.NowNs() + static_cast<uint64_t>(k.duration_us * 1000.0);
        while (clock.NowNs() < until) {
        }
      }
      return Status::Ok();
    }
    default:
      break;
  }
  const KernelTensor& out = call.outs[0];
  uint64_t rb, re;
  if (k.op == KernelOp::kMatmul) {
    const KernelTensor& a = call.ins[0];
    const KernelTensor& b = call.ins[1];
    uint64_t kk = a.shape[1], n = b.shape[1];
    BlockRows(a.shape[0], call.block_idx, call.block_num, &rb, &re);
    std::vector<float> row(n);
    for (uint64_t i = rb; i < re; ++i) {
      std::fill(row.begin(), row.end(), 0.0f);
      for (uint64_t p = 0; p < kk; ++p) {
        float av = LoadElement(a.data, a.dtype, i * kk + p);
        for (uint64_t j = 0; j < n; ++j) row[j] += av * LoadElement(b.data, b.dtype, p * n + j);
      }
      for (uint64_t j = 0; j < n; ++j) StoreElement(out.data, out.dtype, i * n + j, row[j]);
    }
    return Status::Ok();
  }
  const KernelTensor& x = call.ins[0];
  uint64_t cols = LastDim(x);
  BlockRows(Rows(x), call.block_idx, call.block_num, &rb, &re);
  switch (k.op) {
    case KernelOp::kAdd:
    case KernelOp::kMul: {
      bool add = k.op == KernelOp::kAdd;
      float scalar = call.scalars && !call.scalars->empty()
                         ? static_cast<float>((*call.scalars)[0].value)
                         : 0.0f;
      for (uint64_t e = rb * cols; e < re * cols; ++e) {
        float a = LoadElement(x.data, x.dtype, e);
        float b =
            call.ins.size() > 1 ? LoadElement(call.ins[1].data, call.ins[1].dtype, e) : scalar;
        StoreElement(out.data, out.dtype, e, add ? a + b : a * b);
      }
      break;
    }
    case KernelOp::kCopy: {
      // Equal element counts; rows of the output partition the copy.
      uint64_t ob, oe;
      BlockRows(Rows(out), call.block_idx, call.block_num, &ob, &oe);
      uint64_t oc = LastDim(out);
      for (uint64_t e = ob * oc; e < oe * oc; ++e)
        StoreElement(out.data, out.dtype, e, LoadElement(x.data, x.dtype, e));
      break;
    }
    case KernelOp::kSoftmax: {
      std::vector<float> v(cols);
      for (uint64_t r = rb; r < re; ++r) {
        float mx = -INFINITY;
        for (uint64_t c = 0; c < cols; ++c) {
          v[c] = LoadElement(x.data, x.dtype, r * cols + c);
          mx = std::max(mx, v[c]);
        }
        double sum = 0;
        for (uint64_t c = 0; c < cols; ++c) {
          v[c] = std::exp(v[c] - mx);
          sum += v[c];
        }
        for (uint64_t c = 0; c < cols; ++c)
          StoreElement(out.data, out.dtype, r * cols + c, static_cast<float>(v[c] / sum));
      }
      break;
    }
    case KernelOp::kRmsnorm: {
      const KernelTensor* gamma = call.ins.size() > 1 ? &call.ins[1] : nullptr;
      for (uint64_t r = rb; r < re; ++r) {
        double ss = 0;
        for (uint64_t c = 0; c < cols; ++c) {
          double v = LoadElement(x.data, x.dtype, r * cols + c);
          ss += v * v;
        }
        double inv = 1.0 / std::sqrt(ss / static_cast<double>(cols) + k.eps);
        for (uint64_t c = 0; c < cols; ++c) {
          double v = LoadElement(x.data, x.dtype, r * cols + c) * inv;
          if (gamma) v *= LoadElement(gamma->data, gamma->dtype, c);
          StoreElement(out.data, out.dtype, r * cols + c, static_cast<float>(v));
        }
      }
      break;
    }
    case KernelOp::kReduceSum: {
      for (uint64_t r = rb; r < re; ++r) {
        double s = 0;
        for (uint64_t c = 0; c < cols; ++c) s += LoadElement(x.data, x.dtype, r * cols + c);
        StoreElement(out.data, out.dtype, r, static_cast<float>(s));
      }
      break;
    }
    default:
      break;
  }
  return Status::Ok();
}

}  // namespace dfx::device
