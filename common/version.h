// The version every dfx binary prints for --version: the project version
// (CMake's project(VERSION), compiled in as DFX_VERSION) and the git revision
// the binary was built from (`git describe` at build time; "unknown" outside
// a git checkout). Pure functions; any thread.
#pragma once

#include <string>

namespace dfx {

// "0.1.0".
const char* Version();
// "c42dd81a2b3c" or "c42dd81a2b3c-dirty"; "unknown" when not built from git.
const char* GitRevision();
// "<program> <version> (git <revision>)", the first line of --version, in
// the form help2man reads.
std::string VersionLine(const std::string& program);

}  // namespace dfx
