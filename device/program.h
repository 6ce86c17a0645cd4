// The program model: what a chip runs (docs/design.md §6). A Program is the parsed,
// validated form of a program JSON file: kernels, tensors (plus views over
// them) and the orchestration, an ordered statement tree. Every name is
// resolved to an index by the loader, so the emulator never looks names up.
//
// Plain value types; copy freely. Build one with LoadProgram / ParseProgram
// (device/program_loader.h) or a generator (device/generators.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/enum_text.h"
#include "device/dtype.h"

namespace dfx::device {

enum class CoreType : uint8_t { kAic, kAiv };
inline constexpr auto kCoreTypeText =
    MakeEnumTable<CoreType>({{CoreType::kAic, "aic"}, {CoreType::kAiv, "aiv"}});
const char* CoreTypeName(CoreType t);  // "aic" | "aiv"

enum class KernelOp : uint8_t {
  kAdd,
  kMul,
  kMatmul,
  kSoftmax,
  kRmsnorm,
  kCopy,
  kReduceSum,
  kBusy,  // spins for params.duration_us; touches no data
  kFail,  // always fails (failure tests); params.message is the error
};
// The op names programs use, in the order error messages list them.
inline constexpr auto kKernelOpText = MakeEnumTable<KernelOp>({
    {KernelOp::kAdd, "add"},
    {KernelOp::kMul, "mul"},
    {KernelOp::kMatmul, "matmul"},
    {KernelOp::kSoftmax, "softmax"},
    {KernelOp::kRmsnorm, "rmsnorm"},
    {KernelOp::kCopy, "copy"},
    {KernelOp::kReduceSum, "reduce_sum"},
    {KernelOp::kBusy, "busy"},
    {KernelOp::kFail, "fail"},
});
const char* KernelOpName(KernelOp op);

struct Kernel {
  int func_id = 0;
  std::string name;
  CoreType core_type = CoreType::kAiv;
  KernelOp op = KernelOp::kAdd;
  double duration_us = 0;  // busy: how long one block spins
  double eps = 1e-6;       // rmsnorm epsilon
  std::string message;     // fail: the error text
};

enum class InitKind : uint8_t { kZeros, kOnes, kRange, kRandom, kValues };

struct TensorInit {
  InitKind kind = InitKind::kZeros;
  double range_start = 0, range_step = 1;
  uint64_t seed = 0;
  std::vector<double> values;  // kValues: exactly numel entries
};

// A named tensor. A base tensor owns an external buffer allocated before the
// run; a view (view_of >= 0) shares its parent's current buffer: `shape`
// elements, row-major, starting `offset` elements into it. A view is a
// different value than its parent (value identity, see dump_tag).
struct TensorDecl {
  std::string name;
  std::vector<uint32_t> shape;
  DType dtype = DType::kFloat32;
  TensorInit init;
  int view_of = -1;     // index of the parent base tensor, or -1
  uint64_t offset = 0;  // view only, in elements
  // Base tensor only: its buffer lives in the chip's device memory for the
  // session (a DeviceTensor), so an in-place update (INOUT /
  // OUTPUT_EXISTING) is visible to the next dispatch on that chip, and
  // mutable arguments are not restored between the graph and timing passes.
  // `init` applies only when the chip holds no value of that name yet.
  bool resident = false;
  uint64_t Numel() const;
};

enum class ArgType : uint8_t { kInput, kOutput, kInout, kOutputExisting };
inline constexpr auto kArgTypeText =
    MakeEnumTable<ArgType>({{ArgType::kInput, "INPUT"},
                            {ArgType::kOutput, "OUTPUT"},
                            {ArgType::kInout, "INOUT"},
                            {ArgType::kOutputExisting, "OUTPUT_EXISTING"}});
const char* ArgTypeName(ArgType t);  // "INPUT", "OUTPUT", "INOUT", "OUTPUT_EXISTING"

struct SubmitArg {
  int tensor = 0;  // index into Program::tensors
  ArgType type = ArgType::kInput;
};

struct Scalar {
  DType dtype = DType::kFloat32;
  double value = 0;
};

struct Statement;

// One task submission.
struct Submit {
  int kernel = 0;  // index into Program::kernels
  std::vector<SubmitArg> args;
  std::vector<Scalar> scalars;
  int block_num = 1;       // SPMD: blocks spread over cores of the kernel's type
  std::vector<int> dumps;  // arg indices marked for this submit only
  std::string label;       // "id": target of later explicit deps
  std::vector<int> deps;   // statement-order indices of earlier labelled submits
};

struct Statement {
  enum class Kind : uint8_t { kSubmit, kDumpTag, kScope };
  Kind kind = Kind::kSubmit;
  Submit submit;                // kSubmit
  int tag_tensor = -1;          // kDumpTag
  std::string site;             // kScope: "site-name"
  int line = 0;                 // kScope: line of the statement in the program file (0 = unknown)
  bool manual = false;          // kScope: only explicit deps inside
  std::vector<Statement> body;  // kScope
  std::string json_path;        // where it came from, for run-time errors
};

struct Program {
  std::string name;
  std::string origin;  // file it was loaded from (or "<generated>")
  std::vector<Kernel> kernels;
  std::vector<TensorDecl> tensors;
  std::vector<Statement> orchestration;  // the implicit root scope's body
  // Number of submit statements (the explicit-dep index space).
  int submit_count = 0;
  // The program file's base name and the line of its "orchestration" key,
  // when the program came from a file (AttachSourceLines): scope stats sites
  // are then "<file>:<line>" like the reference's PTO2_SCOPE call sites.
  std::string source_file;
  int orchestration_line = 0;
};

}  // namespace dfx::device
