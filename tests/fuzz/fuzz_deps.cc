// Fuzz target: deps.json as ReadTaskGraph reads it. dep_gen's compact form
// goes through the fast scan (collectors/dep_gen/deps_reader.cc), anything
// else through the generic reader, and the two must agree: an input the
// fast scan read is read again after a leading space (which only the
// generic reader accepts), and that must give the same graph (not an error).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "collectors/dep_gen/deps_reader.h"
#include "collectors/testing/graph_dump.h"

namespace {

namespace fs = std::filesystem;

// What a graph holds: the tasks among ids 0..255 and the edges' ends
// (fuzzed ids are mostly small).
dfx::collectors::testing::GraphDump Dump(const dfx::collectors::TaskGraph& g) {
  std::vector<uint64_t> ids;
  for (uint64_t id = 0; id < 256; ++id) ids.push_back(id);
  for (const auto& [pred, succ] : g.Edges()) {
    ids.push_back(pred);
    ids.push_back(succ);
  }
  return dfx::collectors::testing::DumpGraph(g, ids);
}

const fs::path& Dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("fuzz_deps_" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::atexit([] { fs::remove_all(Dir()); });
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const fs::path as_given = Dir() / "deps.json", spaced = Dir() / "spaced_deps.json";
  // Plain writes: an atomic, synced write would be most of each run.
  for (const auto& [path, bytes] : {std::pair{as_given, text}, std::pair{spaced, " " + text}}) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
    if (!out.flush()) std::abort();
  }
  bool fast = false, generic_fast = true;
  auto a = dfx::collectors::ReadTaskGraph(as_given, &fast);
  if (!fast) return 0;  // the generic reader read it: nothing to compare
  auto b = dfx::collectors::ReadTaskGraph(spaced, &generic_fast);
  if (generic_fast) std::abort();  // a leading space is never the fast scan's
  if (a.ok() != b.ok()) {
    std::fprintf(stderr, "fast scan %d: one reading ok, the other not: %s / %s\n", fast,
                 a.ok() ? "ok" : a.status().ToString().c_str(),
                 b.ok() ? "ok" : b.status().ToString().c_str());
    std::abort();
  }
  if (a.ok() && Dump(*a) != Dump(*b)) {
    std::fprintf(stderr, "fast scan %d: the two readings differ\n", fast);
    std::abort();
  }
  return 0;
}
