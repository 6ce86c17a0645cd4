# Fault-injection hooks exist in test builds only (README "Installing";
# docs/design.md §3).
#
# The hooks are the code that reads the DFX_FAULT_* variables (the agent's
# graph-pass failure, forgotten programs, a wrong bulk-path token, a rank
# killed before HELLO; the coordinator's slow disk and its SIGKILL of itself
# after N artifact chunks) and the self-kills they trigger. Each sits under
# `#ifdef DFX_FAULT_HOOKS` in a source file that names a DFX_FAULT_ variable.
# Every such file (found here, at configure time, so a new hook is covered
# by the same rule) is compiled with DFX_FAULT_HOOKS=1 only when the option
# is ON; otherwise the hook is not in the binary at all: no DFX_FAULT_*
# string, no code path that kills its own process on request.
#
# CI (scripts/test.sh) turns it ON: the failure tests need the hooks, and
# tests that inject faults skip, saying so, in a build without them.
#
# A tree with hooks is never installed by accident: its install (and so its
# .deb, which CPack makes by installing) stops before the first file with
# what to do instead. DFX_INSTALL_FAULT_HOOKS=1 in the environment installs
# it anyway; only the install tests of the CI tree do that.
option(DFX_FAULT_HOOKS "Compile in the test-only DFX_FAULT_* fault-injection hooks (never install)"
       OFF)

if(DFX_FAULT_HOOKS)
  # Declared before any other install rule (CMP0082: rules run in the order
  # they are declared), so a refused install writes nothing.
  install(CODE "
if(NOT \"\$ENV{DFX_INSTALL_FAULT_HOOKS}\" STREQUAL \"1\")
  message(FATAL_ERROR \"refusing to install the build tree ${PROJECT_BINARY_DIR}: it was \"
    \"configured with -DDFX_FAULT_HOOKS=ON, so its programs obey the test-only DFX_FAULT_* \"
    \"variables (one makes dfx-coordinator SIGKILL itself mid-transfer). Install from a tree \"
    \"configured without it (the default), e.g. cmake -S ${PROJECT_SOURCE_DIR} -B build-rel \"
    \"-DCMAKE_BUILD_TYPE=Release && cmake --build build-rel && cmake --install build-rel; \"
    \"to install this test build anyway (the install tests do), set DFX_INSTALL_FAULT_HOOKS=1.\")
endif()")
endif()

# The non-test sources of the modules that name a DFX_FAULT_ variable.
function(dfx_fault_hook_sources out_var)
  set(found)
  foreach(module common config protocol collectors device rank_agent coordinator view)
    file(GLOB sources ${PROJECT_SOURCE_DIR}/${module}/*.cc)
    foreach(source ${sources})
      if(source MATCHES "_test\\.cc$")
        continue()
      endif()
      file(STRINGS ${source} hits REGEX "DFX_FAULT_")
      if(hits)
        list(APPEND found ${source})
      endif()
    endforeach()
  endforeach()
  set(${out_var} ${found} PARENT_SCOPE)
endfunction()

# Called once every module exists (top-level CMakeLists.txt).
function(dfx_wire_fault_hooks)
  dfx_fault_hook_sources(sources)
  if(DFX_FAULT_HOOKS)
    foreach(source ${sources})
      file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${source})
      string(REGEX REPLACE "/.*" "" module ${rel})
      set_property(SOURCE ${source} TARGET_DIRECTORY dfx_${module} APPEND PROPERTY
                   COMPILE_DEFINITIONS DFX_FAULT_HOOKS=1)
    endforeach()
    # The same sources compiled as a release build compiles them (no
    # DFX_FAULT_HOOKS), checked by tests/service/fault_hooks_check.sh: a
    # cheap stand-in for building and installing a second, hook-free tree.
    add_library(dfx_fault_free_objects OBJECT ${sources})
    target_link_libraries(dfx_fault_free_objects PRIVATE dfx::coordinator dfx::rank_agent
                          CLI11::CLI11 dfx_warnings dfx_sanitizers)
    target_compile_definitions(dfx_fault_free_objects PRIVATE DFX_VERSION="${PROJECT_VERSION}")
  endif()
endfunction()
