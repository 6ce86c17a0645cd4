// Helpers shared by the Runtime DFX end-to-end tests (tests/dfx): run the
// real dfx-coordinator / dfx-view, read the artifacts back. Header-only.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "tests/l3/e2e_util.h"

namespace dfx::e2e {

inline fs::path Data(const std::string& name) { return Source("tests/dfx/testdata/" + name); }

// `dfx-coordinator run <file> --work-dir <work> <flags...>`.
inline CommandResult Coordinator(const fs::path& file, const fs::path& work,
                                 const std::vector<std::string>& flags,
                                 const std::vector<std::string>& env = {}, int timeout_s = 240) {
  std::vector<std::string> argv = {Bin("dfx-coordinator"), "run", file.string(), "--work-dir",
                                   work.string()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return RunCommand(argv, work.parent_path() / "logs", timeout_s, env);
}

// The merged_swimlane_<YYYYmmdd_HHMMSS>.json files directly inside `dir`.
inline std::vector<fs::path> MergedTraces(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    // merged_swimlane_ + 8 digits + _ + 6 digits + .json
    if (n.rfind("merged_swimlane_", 0) == 0 && n.size() == 16 + 15 + 5 &&
        n.substr(n.size() - 5) == ".json" && n[16 + 8] == '_') {
      out.push_back(e.path());
    }
  }
  return out;
}

// The values of the resident tensor `name` in the L2 device state file.
inline std::vector<double> ResidentValues(const fs::path& work, const std::string& name) {
  Json j = LoadJson(work / "device_state/chip0.json");
  std::vector<double> v;
  if (!j.is_object() || !j["tensors"].contains(name)) return v;
  for (const auto& x : j["tensors"][name]["values"]) v.push_back(x.get<double>());
  return v;
}

// The FLOAT32 payload of the first args-dump entry matching (arg_index, stage).
inline std::vector<float> DumpedFloats(const fs::path& dump_dir, int arg_index,
                                       const std::string& stage) {
  Json m = LoadJson(dump_dir / "args_dump.json");
  std::vector<float> v;
  if (!m.is_object()) return v;
  const std::string bin = Slurp(dump_dir / "args.bin");
  for (const auto& a : m["args"]) {
    if (a["arg_index"] != arg_index || a["stage"] != stage || a["kind"] != "tensor") continue;
    const size_t off = a["bin_offset"].get<size_t>(), size = a["bin_size"].get<size_t>();
    if (off + size > bin.size()) return v;
    v.resize(size / sizeof(float));
    std::memcpy(v.data(), bin.data() + off, v.size() * sizeof(float));
    return v;
  }
  return v;
}

inline size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + 1))
    ++n;
  return n;
}

}  // namespace dfx::e2e
