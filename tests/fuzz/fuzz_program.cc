// Fuzz target: a program file (the L2 front door, and the programJson of
// every Dispatch a serve agent receives): ParseJson, then the loader.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/json.h"
#include "device/program_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto json = dfx::ParseJson(text, "fuzz.json");
  if (!json.ok()) return 0;
  (void)dfx::DescribeJson(*json);
  auto program = dfx::device::ParseProgram(*json, "fuzz.json");
  if (program.ok()) (void)dfx::device::ProgramToJson(*program);
  return 0;
}
