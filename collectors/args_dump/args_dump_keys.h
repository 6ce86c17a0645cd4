// The keys of args_dump/args_dump.json (docs/formats.md §8), written once for
// its writer (ArgsDumpRecorder::Export), its reader (ReadArgsDumpManifest)
// and the dump viewer. Constants only.
#pragma once

#include "collectors/key_text.h"

namespace dfx::collectors::args_dump_keys {

// The top-level object: the run's summary, then kArgs.
inline constexpr KeyText kRunDir = "run_dir";
inline constexpr KeyText kBinFormat = "bin_format";
inline constexpr KeyText kBinFormatType = "type";  // kBinFormat's members
inline constexpr KeyText kBinFormatContiguous = "logical_contiguous";
inline constexpr KeyText kByteOrder = "byte_order";
inline constexpr KeyText kLittleEndian = "little_endian";
inline constexpr KeyText kDumpArgsLevel = "dump_args_level";
inline constexpr KeyText kTotalArgs = "total_args";
// The counts per stage are named as the stages (kStageBefore, kStageAfter).
inline constexpr KeyText kInputArgs = "input_args";
inline constexpr KeyText kOutputArgs = "output_args";
inline constexpr KeyText kInoutArgs = "inout_args";
inline constexpr KeyText kTruncatedArgs = "truncated_args";
inline constexpr KeyText kDroppedRecords = "dropped_records";
inline constexpr KeyText kDroppedOverwrite = "dropped_overwrite";
inline constexpr KeyText kBinFile = "bin_file";
inline constexpr KeyText kArgs = "args";
inline constexpr KeyText kLegacyArgs = "tensors";  // kArgs' older name; read, never written

// args[].
inline constexpr KeyText kTaskId = "task_id";
inline constexpr KeyText kFuncId = "func_id";
inline constexpr KeyText kArgIndex = "arg_index";
inline constexpr KeyText kRole = "role";
inline constexpr KeyText kStage = "stage";
inline constexpr KeyText kKind = "kind";
inline constexpr KeyText kDtype = "dtype";
inline constexpr KeyText kValue = "value";  // scalars only
inline constexpr KeyText kIsContiguous = "is_contiguous";
inline constexpr KeyText kShape = "shape";
inline constexpr KeyText kStrides = "strides";
inline constexpr KeyText kStartOffset = "start_offset";
inline constexpr KeyText kNumel = "numel";
inline constexpr KeyText kArgIndexAmbiguous = "arg_index_ambiguous";
inline constexpr KeyText kBinOffset = "bin_offset";
inline constexpr KeyText kBinSize = "bin_size";
inline constexpr KeyText kTruncated = "truncated";
inline constexpr KeyText kOverwritten = "overwritten";

// kRole's values (DumpRole).
inline constexpr KeyText kRoleInput = "input";
inline constexpr KeyText kRoleOutput = "output";
inline constexpr KeyText kRoleInout = "inout";
// kStage's values (DumpStage).
inline constexpr KeyText kStageBefore = "before_dispatch";
inline constexpr KeyText kStageAfter = "after_completion";
// kKind's values.
inline constexpr KeyText kKindScalar = "scalar";
inline constexpr KeyText kKindTensor = "tensor";
// kDtype's value when the dtype is not known.
inline constexpr KeyText kDtypeUnknown = "UNKNOWN";

}  // namespace dfx::collectors::args_dump_keys
