#include "common/version.h"

namespace dfx {

const char* Version() { return DFX_VERSION; }

std::string VersionLine(const std::string& program) {
  return program + " " + Version() + " (git " + GitRevision() + ")";
}

}  // namespace dfx
