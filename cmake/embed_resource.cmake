# Script mode (cmake -P), run at build time by dfx_embed_resource() in
# dfx_module.cmake: writes OUTPUT, a C++ source that defines
#   std::string_view <FUNCTION>()   (FUNCTION may be namespace-qualified)
# returning the bytes of INPUT, exactly. The bytes are written as an array of
# numbers, so any content (quotes, backslashes, ")"-sequences) embeds safely.
if(NOT INPUT OR NOT OUTPUT OR NOT FUNCTION)
  message(FATAL_ERROR "embed_resource.cmake needs -DINPUT=... -DOUTPUT=... -DFUNCTION=...")
endif()
file(READ "${INPUT}" hex HEX)
string(REPEAT "[0-9a-f]" 32 sixteen_bytes)
string(REGEX REPLACE "(${sixteen_bytes})" "\\1\n" hex "${hex}")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
if(FUNCTION MATCHES "^(.*)::([^:]+)$")
  set(ns "${CMAKE_MATCH_1}")
  set(name "${CMAKE_MATCH_2}")
else()
  set(ns "")
  set(name "${FUNCTION}")
endif()
get_filename_component(input_name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp" "// Generated at build time from ${input_name} by cmake/embed_resource.cmake.
#include <string_view>

namespace ${ns} {
namespace {
constexpr unsigned char kBytes[] = {
${bytes}0x00};
}  // namespace

std::string_view ${name}() {
  return std::string_view(reinterpret_cast<const char*>(kBytes), sizeof(kBytes) - 1);
}

}  // namespace ${ns}
")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
