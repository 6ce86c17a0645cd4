// Whether the binaries under test obey the DFX_FAULT_* variables: only a
// build configured with -DDFX_FAULT_HOOKS=ON has them (cmake/fault_hooks.cmake;
// scripts/test.sh turns it on). Its --version says so on a second line. A
// test that injects a fault starts with DFX_SKIP_WITHOUT_FAULT_HOOKS(), so
// the ctest of a hook-free build passes honestly, each such test reported
// as skipped with the reason.
#pragma once

#include <gtest/gtest.h>
#include <string>

#include "tests/l3/e2e_util.h"

namespace dfx::e2e {

inline bool FaultHooksCompiledIn() {
  static const bool compiled_in = [] {
    const fs::path dir = TestDir("fault_hooks_probe");
    auto r = RunCommand({Bin("dfx-coordinator"), "--version"}, dir, 60);
    fs::remove_all(dir);
    return r.exit_code == 0 && r.out.find("fault-injection hooks") != std::string::npos;
  }();
  return compiled_in;
}

}  // namespace dfx::e2e

#define DFX_SKIP_WITHOUT_FAULT_HOOKS()                                                    \
  do {                                                                                    \
    if (!::dfx::e2e::FaultHooksCompiledIn())                                              \
      GTEST_SKIP() << "this build has no fault-injection hooks (configure with "          \
                      "-DDFX_FAULT_HOOKS=ON, as scripts/test.sh does, to run this test)"; \
  } while (false)
