# Script mode (cmake -P), run on every build by the dfx_version_info target in
# common/CMakeLists.txt: writes OUTPUT, a C++ source defining
# dfx::GitRevision() as the checkout's `git describe` (or "unknown" outside a
# git checkout, e.g. a source tarball). The file is replaced only when the
# revision changed, so an unchanged checkout recompiles nothing.
if(NOT SOURCE_DIR OR NOT OUTPUT)
  message(FATAL_ERROR "version_info.cmake needs -DSOURCE_DIR=... -DOUTPUT=...")
endif()
set(revision "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(
    COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} describe --always --dirty --abbrev=12
    OUTPUT_VARIABLE described
    RESULT_VARIABLE rc
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0 AND described)
    set(revision "${described}")
  endif()
endif()
set(text "// Generated at build time by cmake/version_info.cmake.
#include \"common/version.h\"

namespace dfx {
const char* GitRevision() { return \"${revision}\"; }
}  // namespace dfx
")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
  if(old STREQUAL text)
    return()
  endif()
endif()
file(WRITE "${OUTPUT}" "${text}")
