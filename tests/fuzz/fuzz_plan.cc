// Fuzz target: an L3 plan file: ParseJson, then the plan loader. Program
// paths resolve against a directory that does not exist, so the loader
// never reads a real file. The same bytes also go to the other capture
// inputs a user or a local peer controls: a `dfx-coordinator capture`
// request (the control socket's parser) and a --capture-ranks list.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/json.h"
#include "coordinator/capture_policy.h"
#include "coordinator/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)dfx::coordinator::ParseIndexList("--capture-ranks", text);
  auto json = dfx::ParseJson(text, "plan.json");
  if (!json.ok()) return 0;
  (void)dfx::coordinator::IsPlan(*json);
  (void)dfx::coordinator::ParsePlan(*json, "/nonexistent/dfx-fuzz/plan.json");
  (void)dfx::coordinator::CaptureRequestFromJson(*json);
  return 0;
}
