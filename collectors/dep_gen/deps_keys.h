// The keys of deps.json (docs/formats.md §6.2), written once for its writer
// (DepGenRecorder::Export), its readers (deps_reader.h: the generic parser
// and the fast scan, which matches the writer's exact form) and every
// viewer. Constants only.
#pragma once

#include "collectors/key_text.h"

namespace dfx::collectors::deps_keys {

// The top-level object: three arrays.
inline constexpr KeyText kTasks = "tasks";
inline constexpr KeyText kTensors = "tensors";
inline constexpr KeyText kEdges = "edges";

// tasks[].
inline constexpr KeyText kTaskId = "task_id";
inline constexpr KeyText kScope = "scope";
inline constexpr KeyText kScopeManual = "manual";  // kScope's values
inline constexpr KeyText kScopeAuto = "auto";
inline constexpr KeyText kEarlyDispatch = "early_dispatch";
inline constexpr KeyText kKernelIds = "kernel_ids";
inline constexpr KeyText kBlockNum = "block_num";
inline constexpr KeyText kArgs = "args";

// tasks[].args[].
inline constexpr KeyText kIdx = "idx";
inline constexpr KeyText kType = "type";
inline constexpr KeyText kTensorId = "tensor_id";  // also tensors[] and edges[]
inline constexpr KeyText kDtype = "dtype";         // also tensors[]
// A tensor slice: these three keys, bare in an arg, after kConsumer or
// kProducer in an edge ("consumer_shape").
inline constexpr KeyText kShape = "shape";
inline constexpr KeyText kStartOffset = "start_offset";
inline constexpr KeyText kStrides = "strides";
// kType's values (ArgType).
inline constexpr KeyText kArgInput = "INPUT";
inline constexpr KeyText kArgOutput = "OUTPUT";
inline constexpr KeyText kArgInout = "INOUT";
inline constexpr KeyText kArgOutputExisting = "OUTPUT_EXISTING";
inline constexpr KeyText kArgUnknown = "UNKNOWN";

// tensors[].
inline constexpr KeyText kBufferAddr = "buffer_addr";
inline constexpr KeyText kVersion = "version";
inline constexpr KeyText kBufferNumel = "buffer_numel";

// edges[].
inline constexpr KeyText kPred = "pred";
inline constexpr KeyText kSucc = "succ";
inline constexpr KeyText kArg = "arg";
inline constexpr KeyText kSource = "source";
inline constexpr KeyText kFlags = "flags";
inline constexpr KeyText kOverlap = "overlap";
// Prefixes: the consumer's kDtype and slice keys ("consumer_dtype",
// "consumer_shape", ...), the producer's slice keys.
inline constexpr KeyText kConsumer = "consumer_";
inline constexpr KeyText kProducer = "producer_";
// kSource's values (EdgeSource).
inline constexpr KeyText kSourceExplicit = "explicit";
inline constexpr KeyText kSourceCreator = "creator";
inline constexpr KeyText kSourceTensormap = "tensormap";
// kFlags' values.
inline constexpr KeyText kFlagWait = "wait";
inline constexpr KeyText kFlagRetain = "retain";
// kOverlap's values (Overlap).
inline constexpr KeyText kOverlapCovered = "covered";
inline constexpr KeyText kOverlapOther = "other";
inline constexpr KeyText kOverlapNone = "no_overlap";

}  // namespace dfx::collectors::deps_keys
