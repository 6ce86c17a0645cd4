// Fuzz target: an L3 plan file: ParseJson, then the plan loader. Program
// paths resolve against a directory that does not exist, so the loader
// never reads a real file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/json.h"
#include "coordinator/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto json = dfx::ParseJson(text, "plan.json");
  if (!json.ok()) return 0;
  (void)dfx::coordinator::IsPlan(*json);
  (void)dfx::coordinator::ParsePlan(*json, "/nonexistent/dfx-fuzz/plan.json");
  return 0;
}
