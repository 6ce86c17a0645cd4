// Fuzz target: a program file (the L2 front door, and the programJson of
// every Dispatch a serve agent receives): ParseJson, then the loader; and
// the loader's text reader (ParseProgramFast), which must either decline or
// give exactly the program the JSON document gives. Aborts when it takes a
// text the document refuses, or reads a different program.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "device/program_loader.h"

namespace {

bool SamePaths(const std::vector<dfx::device::Statement>& a,
               const std::vector<dfx::device::Statement>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].json_path != b[i].json_path || !SamePaths(a[i].body, b[i].body)) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::optional<dfx::device::Program> fast = dfx::device::ParseProgramFast(text, "fuzz.json");
  auto json = dfx::ParseJson(text, "fuzz.json");
  if (!json.ok()) {
    if (fast) std::abort();  // the text reader took what is not JSON
    return 0;
  }
  (void)dfx::DescribeJson(*json);
  auto program = dfx::device::ParseProgram(*json, "fuzz.json");
  if (program.ok()) {
    const std::string form = dfx::device::ProgramToJson(*program).dump();
    if (fast && (dfx::device::ProgramToJson(*fast).dump() != form ||
                 fast->submit_count != program->submit_count ||
                 !SamePaths(fast->orchestration, program->orchestration))) {
      std::abort();  // read differently
    }
  } else if (fast) {
    std::abort();  // the text reader took a program the loader refuses
  }
  return 0;
}
