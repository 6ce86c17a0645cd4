# One helper declares every module target so they all share the same standard,
# warnings and include root (style.md §1, §10).

add_library(dfx_warnings INTERFACE)
target_compile_options(dfx_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       -Wnon-virtual-dtor -Wno-missing-field-initializers)

add_library(dfx_sanitizers INTERFACE)
if(DFX_SANITIZE)
  target_compile_options(dfx_sanitizers INTERFACE -fsanitize=address,undefined
                         -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(dfx_sanitizers INTERFACE -fsanitize=address,undefined)
endif()

# dfx_module(<folder> SOURCES ... DEPS ...) -> target dfx_<folder>, alias dfx::<folder>
function(dfx_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS" ${ARGN})
  add_library(dfx_${name} STATIC ${M_SOURCES})
  add_library(dfx::${name} ALIAS dfx_${name})
  target_include_directories(dfx_${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(dfx_${name} PUBLIC ${M_DEPS} dfx_sanitizers PRIVATE dfx_warnings)
  target_compile_definitions(dfx_${name} PUBLIC SPDLOG_ACTIVE_LEVEL=SPDLOG_LEVEL_DEBUG
                             SPDLOG_FMT_EXTERNAL)
endfunction()

# dfx_executable(<name> SOURCES ... DEPS ...)
function(dfx_executable name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${M_SOURCES})
  target_link_libraries(${name} PRIVATE ${M_DEPS} dfx_warnings dfx_sanitizers)
endfunction()

# dfx_test(<name> SOURCES ... DEPS ...): a GoogleTest binary registered with CTest.
function(dfx_test name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${M_SOURCES})
  target_link_libraries(${name} PRIVATE ${M_DEPS} GTest::gtest GTest::gtest_main dfx_warnings
                        dfx_sanitizers)
  target_compile_definitions(${name} PRIVATE DFX_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                             DFX_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${M_LABELS}")
endfunction()

# dfx_embed_resource(<target> <file> <function>): compiles the bytes of <file>
# (relative to the calling CMakeLists.txt) into <target> as
# `std::string_view <function>()`, generated at build time by
# cmake/embed_resource.cmake (no generated code is committed, style.md §10).
# Declare the function in a header of the module.
function(dfx_embed_resource target file function)
  get_filename_component(name ${file} NAME)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/resources/${name}.cc)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${CMAKE_CURRENT_SOURCE_DIR}/${file} -DOUTPUT=${out}
            -DFUNCTION=${function} -P ${PROJECT_SOURCE_DIR}/cmake/embed_resource.cmake
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${file} ${PROJECT_SOURCE_DIR}/cmake/embed_resource.cmake
    COMMENT "Embedding ${file}"
    VERBATIM)
  target_sources(${target} PRIVATE ${out})
endfunction()
