// The args dump reader (docs/formats.md §8.2–§8.3), beside its writer
// (ArgsDumpRecorder::Export): the manifest `args_dump.json` as typed entries
// (also the legacy top-level `tensors` list), and the payload bytes of an
// entry from `args.bin`. Decoding and printing the values is the viewer's.
//
// ArgsDumpBin is move-only, one thread at a time; ReadArgsDumpManifest is
// thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace dfx::collectors {

// One manifest entry; a key absent from the file reads as the default here.
struct ArgsDumpEntry {
  std::string task_id;  // as written, "0x%016x"
  std::string role;     // input | output | inout
  std::string stage;    // before_dispatch | after_completion
  std::string kind;     // tensor | scalar
  std::optional<std::string> dtype;
  int64_t arg_index = -1;
  bool is_contiguous = false;
  std::optional<std::vector<int64_t>> shape, strides;  // elements
  int64_t start_offset = 0;
  bool truncated = false;
  bool overwritten = false;
  // A scalar's value as written: numbers and null as JSON text, booleans as
  // true/false, strings ("$Inf") unquoted; "null" when absent.
  std::string value_text;
  int64_t bin_offset = 0;
  int64_t bin_size = 0;
};

struct ArgsDumpManifest {
  std::vector<ArgsDumpEntry> args;      // in file order
  std::optional<std::string> bin_file;  // "args.bin", or null when nothing was written
};

// Reads `manifest_path` (<dump dir>/args_dump.json). Errors name the file and
// the JSON path of what was wrong: a field of another type (a string for a
// number, a number out of range) is refused, never thrown or cast.
Result<ArgsDumpManifest> ReadArgsDumpManifest(const std::filesystem::path& manifest_path);

// The payload file of a dump, opened once for many reads.
class ArgsDumpBin {
 public:
  // Opens <dump_dir>/<manifest.bin_file> when the manifest names one; is_open()
  // says whether that worked.
  void Open(const std::filesystem::path& dump_dir, const ArgsDumpManifest& manifest);
  bool is_open() const { return in_.is_open(); }
  // The `entry.bin_size` bytes at `entry.bin_offset`. A file shorter than
  // that (a truncated args.bin) or a negative offset or size is an error
  // naming the file, the offset and what was expected; nothing is allocated
  // beyond what the file holds. Requires is_open().
  Result<std::vector<unsigned char>> Read(const ArgsDumpEntry& entry);

 private:
  std::ifstream in_;
  std::filesystem::path path_;
  uint64_t size_ = 0;  // the file's size when opened
};

}  // namespace dfx::collectors
