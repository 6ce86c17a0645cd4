# One helper declares every module target so they all share the same standard,
# warnings and include rules (docs/design.md §3, §11.1, §11.10).
#
# Include rules: a module's headers are reachable only through its own
# include root, <build>/include_roots/<module>/<module> -> <src>/<module>. A
# target sees the roots of the modules it links (and, through PUBLIC links,
# of what their headers need) and nothing else, so an include of a module
# that is not linked is a compile error. scripts/check-includes.sh checks the
# stricter rule that every module a folder includes is listed in its
# CMakeLists.txt.

option(DFX_WERROR "Treat compiler warnings as errors (CI)" OFF)

add_library(dfx_warnings INTERFACE)
target_compile_options(dfx_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       -Wnon-virtual-dtor -Wno-missing-field-initializers)
if(DFX_WERROR)
  target_compile_options(dfx_warnings INTERFACE -Werror)
endif()

option(DFX_FUZZ "Build the fuzz targets (tests/fuzz) with libFuzzer; needs clang" OFF)

add_library(dfx_sanitizers INTERFACE)
if(DFX_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "DFX_FUZZ needs clang (libFuzzer): CXX=clang++ CC=clang, or scripts/fuzz.sh")
  endif()
  # Every library is instrumented for coverage; only the fuzz targets link
  # libFuzzer's main (tests/fuzz/CMakeLists.txt).
  target_compile_options(dfx_sanitizers INTERFACE -fsanitize=fuzzer-no-link,address,undefined
                         -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(dfx_sanitizers INTERFACE -fsanitize=address,undefined)
elseif(DFX_SANITIZE)
  # No vptr check: it probes memory with pipe(2), which fails once the process
  # is out of descriptors, and then reports every virtual call as a type
  # mismatch. tests/security exhausts the coordinator's descriptors on
  # purpose (half-open connections under `ulimit -n 256`).
  target_compile_options(dfx_sanitizers INTERFACE -fsanitize=address,undefined
                         -fno-sanitize=vptr -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(dfx_sanitizers INTERFACE -fsanitize=address,undefined)
endif()

# The include root that exposes only <folder> (created at configure time).
function(dfx_include_root folder out_var)
  set(root ${PROJECT_BINARY_DIR}/include_roots/${folder})
  if(NOT EXISTS ${root}/${folder})
    file(MAKE_DIRECTORY ${root})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder} ${root}/${folder} SYMBOLIC)
  endif()
  set(${out_var} ${root} PARENT_SCOPE)
endfunction()

# dfx_module(<folder> SOURCES ... [PUBLIC_DEPS ...] [DEPS ...])
#   -> target dfx_<folder>, alias dfx::<folder>.
# PUBLIC_DEPS: what the module's public headers include (their types cross
# the header); DEPS: everything else, linked privately.
function(dfx_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS;PUBLIC_DEPS" ${ARGN})
  add_library(dfx_${name} STATIC ${M_SOURCES})
  add_library(dfx::${name} ALIAS dfx_${name})
  dfx_include_root(${name} root)
  # Installed, the headers are <prefix>/include/dfx/<module>/ (cmake/dfx_install.cmake).
  target_include_directories(dfx_${name} PUBLIC $<BUILD_INTERFACE:${root}>
                                                $<INSTALL_INTERFACE:include/dfx>)
  target_link_libraries(dfx_${name} PUBLIC ${M_PUBLIC_DEPS} dfx_sanitizers
                        PRIVATE ${M_DEPS} dfx_warnings)
  target_compile_definitions(dfx_${name} PUBLIC SPDLOG_ACTIVE_LEVEL=SPDLOG_LEVEL_DEBUG
                             SPDLOG_FMT_EXTERNAL)
endfunction()

# dfx_executable(<name> SOURCES ... DEPS ...)
function(dfx_executable name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${M_SOURCES})
  target_link_libraries(${name} PRIVATE ${M_DEPS} dfx_warnings dfx_sanitizers)
endfunction()

# dfx_test(<name> SOURCES ... DEPS ... [LABELS ...] [TIMEOUT seconds]): a
# GoogleTest binary registered with CTest; TIMEOUT (per test) beats ctest's
# --timeout. Tests also see tests/ (the end-to-end helpers).
function(dfx_test name)
  cmake_parse_arguments(M "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${M_SOURCES})
  dfx_include_root(tests tests_root)
  target_include_directories(${name} PRIVATE ${tests_root})
  target_link_libraries(${name} PRIVATE ${M_DEPS} GTest::gtest GTest::gtest_main dfx_warnings
                        dfx_sanitizers)
  target_compile_definitions(${name} PRIVATE DFX_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                             DFX_BINARY_DIR="${PROJECT_BINARY_DIR}")
  set(timeout)
  if(M_TIMEOUT)
    set(timeout TIMEOUT ${M_TIMEOUT})
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${M_LABELS}" ${timeout})
endfunction()

# dfx_embed_resource(<target> <file> <function>): compiles the bytes of <file>
# (relative to the calling CMakeLists.txt) into <target> as
# `std::string_view <function>()`, generated at build time by
# cmake/embed_resource.cmake (no generated code is committed, docs/design.md §11.10).
# Declare the function in a header of the module.
function(dfx_embed_resource target file function)
  get_filename_component(name ${file} NAME)
  # A relative <file> is in the module's folder; an absolute one (a system
  # package's file) is taken as it is.
  get_filename_component(input ${file} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
  if(NOT EXISTS ${input})
    message(FATAL_ERROR "dfx_embed_resource: ${input} does not exist")
  endif()
  set(out ${CMAKE_CURRENT_BINARY_DIR}/resources/${name}.cc)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${input} -DOUTPUT=${out}
            -DFUNCTION=${function} -P ${PROJECT_SOURCE_DIR}/cmake/embed_resource.cmake
    DEPENDS ${input} ${PROJECT_SOURCE_DIR}/cmake/embed_resource.cmake
    COMMENT "Embedding ${file}"
    VERBATIM)
  target_sources(${target} PRIVATE ${out})
endfunction()
