// Fuzz target: a RunConfig in JSON (as a plan's per-program config and the
// run manifest carry it): ParseJson, then the codec, and back.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/json.h"
#include "config/run_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto json = dfx::ParseJson(text, "config.json");
  if (!json.ok()) return 0;
  auto parsed = dfx::config::RunConfigFromJson(*json, "config.json");
  if (parsed.ok()) (void)dfx::config::RunConfigToJson(parsed->config);
  return 0;
}
