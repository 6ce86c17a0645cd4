#include "common/version.h"

namespace dfx {

#ifdef DFX_FAULT_HOOKS
// The second line of --version in a test build (-DDFX_FAULT_HOOKS=ON): tests
// that inject faults look for it and skip without it.
constexpr const char* kFaultHooksLine =
    "test build: fault-injection hooks (DFX_FAULT_*) compiled in; not for installing";
#endif

const char* Version() { return DFX_VERSION; }

std::string VersionLine(const std::string& program) {
  return program + " " + Version() + " (git " + GitRevision() + ")"
#ifdef DFX_FAULT_HOOKS
         + "\n" + kFaultHooksLine
#endif
      ;
}

}  // namespace dfx
