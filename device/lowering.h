// Lowering: turns a Program's statement tree into the flat task stream the
// emulator's orchestrator walks. Everything that does not depend on timing is
// decided here, deterministically:
//  * task ids: (ring_id << 32) | local_id, ring = min(scope depth, 3), local
//    ids monotonic per ring;
//  * buffers: declared tensors are external buffers; every OUTPUT arg
//    allocates a fresh buffer from its task's ring heap (bump allocation with
//    wrap-around, exactly as the run-time HeapRing places it: placement never
//    depends on when space is reclaimed, only on the allocation order);
//  * dependency edges, the way the reference tensormap infers them:
//      - INPUT / INOUT look up the last writer(s) of overlapping elements
//        (newest first, stopping at the first entry that covers the consumer
//        range): source "tensormap", overlap "covered" when the consumer's
//        range lies inside the producer's, "other" when partial;
//      - OUTPUT / INOUT / OUTPUT_EXISTING become the new producer of their
//        range (entries fully covered by a newer write are superseded);
//      - INOUT / OUTPUT_EXISTING writing into a heap buffer another task
//        allocated (by an OUTPUT) get a "creator" edge to that task (the
//        buffer-lifetime edge, flags wait+retain);
//      - explicit `deps` give "explicit" edges (arg -1);
//      - no write-after-read edges: the reference tensormap records
//        producers only, so a writer never waits for earlier readers
//        (docs/formats.md §6: sources are explicit | creator | tensormap);
//      - in a manual scope only explicit deps are used;
//  * dump marks with value identity: a value is (buffer, version, tensor
//    name); dump_tag marks the current value of a name, and every later
//    submit passing exactly that value dumps that arg; an OUTPUT rebinding
//    or an INOUT/OUTPUT_EXISTING write makes a new value; a view is a
//    different value than its parent; `dumps` marks one submit only;
//  * buffer lifetime: a task that allocated heap buffers is held until every
//    name bound to them is rebound, or the scope it was submitted in ends
//    (a "release" event), and until every consumer submitted before that
//    completed. Using a buffer after its scope ended is an error.
//
// Pure function of (program, ring capacities); thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectors/recorders.h"
#include "common/status.h"
#include "device/chip_model.h"
#include "device/program.h"
#include "device/shape.h"

namespace dfx::device {

struct Buffer {
  uint64_t addr = 0;   // device address: external region or ring heap base + offset
  uint64_t bytes = 0;  // allocation size (64-byte aligned)
  uint64_t numel = 0;
  DType dtype = DType::kFloat32;
  bool external = true;  // a declared tensor's buffer (not in a heap ring)
  int decl = -1;         // the base tensor it was created for
  int ring = -1;         // heap ring (heap buffers)
  uint64_t heap_offset = 0;
  int creator = -1;  // task index that allocated it (heap buffers)
};

// One tensor argument of a task, fully resolved.
struct LoweredArg {
  int decl = 0;  // tensor declaration (base or view) named in the program
  ArgType type = ArgType::kInput;
  int buffer = 0;          // index into LoweredProgram::buffers
  int32_t version = 0;     // version read (INPUT/INOUT) or written (OUTPUT*)
  uint64_t tensor_id = 0;  // FNV-1a 64 of (buffer addr, version)
  uint64_t offset = 0;     // elements into the buffer
  uint64_t numel = 0;
  Shape shape;
  bool dump = false;  // marked for partial / hybrid dump
};

struct LoweredEdge {
  int pred = 0;  // task index
  int arg = -1;  // consumer arg slot; -1 for explicit
  collectors::EdgeSource source = collectors::EdgeSource::kTensormap;
  collectors::Overlap overlap = collectors::Overlap::kCovered;
  // tensormap: the producer's written range
  uint64_t producer_offset = 0;
  Shape producer_shape;
};

struct LoweredTask {
  uint64_t task_id = 0;
  int ring = 0;
  int depth = 0;
  int submit_ordinal = 0;
  const Statement* statement = nullptr;  // points into the Program
  int kernel = 0;
  int block_num = 1;
  bool manual = false;
  bool any_dump = false;  // some arg is marked for dump (args.dump)
  std::vector<LoweredArg> args;
  std::vector<LoweredEdge> edges;
  std::vector<int> preds;        // unique predecessor task indices (scheduling)
  std::vector<int> ref_targets;  // preds whose heap lifetime this task holds
  int hold_refs = 1;             // completion + release + consumers holding it
  bool has_heap = false;
  uint64_t heap_bytes = 0;  // incl. wrap padding
  int tensormap_inserts = 0;
  std::vector<int> new_tensors;  // indices into tensors first referenced here
};

// Orchestrator events, in program order.
struct LoweredEvent {
  enum class Kind : uint8_t { kScopeBegin, kScopeEnd, kSubmit, kRelease };
  Kind kind;
  int index = 0;  // task index (kSubmit/kRelease) or scope index
};

struct LoweredScope {
  // What scope stats record: "<file base name>:<line>" of the scope
  // statement when the program came from a file, else its name; at most 31
  // characters (the record's field).
  std::string site;
  int depth = 0;
  bool manual = false;
  std::string name;  // the statement's scope name, for messages
};

struct LoweredProgram {
  const Program* program = nullptr;
  RingCapacities rings;
  std::vector<Buffer> buffers;
  std::vector<LoweredTask> tasks;
  std::vector<LoweredScope> scopes;
  std::vector<LoweredEvent> events;
  std::vector<collectors::DepGenTensorRecord> tensors;  // each (buffer, version) once
  uint64_t edge_count = 0;
  uint64_t core_executions = 0;  // sum of block_num
  uint64_t tensor_args = 0;      // tensor + scalar args
  // Advice that does not stop the run: each dump_tag whose value no later
  // dispatch consumes (file, JSON path, the tensor, the fix).
  std::vector<std::string> warnings;
};

uint64_t TensorId(uint64_t buffer_addr, int32_t version);

// Errors name the program file and the JSON path of the offending statement.
Result<LoweredProgram> Lower(const Program& program, const RingCapacities& rings);

// The heap bytes `lp` holds (its vectors' capacities and strings), within a
// few per cent: what keeping it costs.
uint64_t LoweredBytes(const LoweredProgram& lp);

}  // namespace dfx::device
