# Installation, the exported CMake package, pkg-config and the .deb.
# `cmake --install build --prefix P` gives a working tree:
#   P/bin/                dfx-coordinator, dfx-rank-agent, dfx-view, dfx-gen-program
#                         (side by side: the coordinator finds its agent and viewer beside it)
#   P/include/dfx/        the public headers of common/, config/, collectors/
#   P/lib/                libdfx_{common,config,collectors}.a, cmake/dfx/, pkgconfig/dfx.pc
#   P/lib/python3/dist-packages/dfx   the Python package (and its pytest plugin)
#   P/share/dfx/          examples/ and schemas/
#   P/share/doc/dfx/, P/share/man/man1/, P/share/bash-completion/completions/
#
# The library a runtime embeds is dfx::collectors (find_package(dfx)); it
# brings dfx::config and dfx::common, the modules its headers include.
include(CMakePackageConfigHelpers)
set(DFX_CMAKE_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/dfx")

install(TARGETS dfx-coordinator dfx-rank-agent dfx-view dfx-gen-program
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The exported libraries: static and position independent (CMakeLists.txt),
# so a runtime can link them into its own shared library. dfx::warnings and
# dfx::sanitizers are the libraries' link-only interface targets (the
# sanitizer build's flags must reach whoever links it).
set(exported dfx_common dfx_config dfx_collectors)
foreach(t ${exported} dfx_warnings dfx_sanitizers)
  string(REPLACE "dfx_" "" name ${t})
  set_target_properties(${t} PROPERTIES EXPORT_NAME ${name})
endforeach()
install(TARGETS ${exported} dfx_warnings dfx_sanitizers
        EXPORT dfxTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(module common config collectors)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${module}/
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/dfx/${module}
          FILES_MATCHING PATTERN "*.h"
          PATTERN "testing" EXCLUDE)
endforeach()
install(EXPORT dfxTargets NAMESPACE dfx:: DESTINATION ${DFX_CMAKE_INSTALL_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/package/dfxConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/package/dfxConfig.cmake
                              INSTALL_DESTINATION ${DFX_CMAKE_INSTALL_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/dfxConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/dfxConfig.cmake
              ${PROJECT_BINARY_DIR}/package/dfxConfigVersion.cmake
        DESTINATION ${DFX_CMAKE_INSTALL_DIR})

# pkg-config: the same libraries and flags for builds without CMake.
set(DFX_PC_SANITIZE "")
if(DFX_SANITIZE)
  set(DFX_PC_SANITIZE "-fsanitize=address,undefined")
endif()
# Relocatable: the prefix is found from where the .pc file lies, so an
# install into any --prefix (or the .deb's /usr) is right.
file(RELATIVE_PATH DFX_PC_PREFIX_FROM_PCFILEDIR /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
configure_file(${PROJECT_SOURCE_DIR}/cmake/package/dfx.pc.in ${PROJECT_BINARY_DIR}/package/dfx.pc
               @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/dfx.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# Data and documentation.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/dfx/examples
        PATTERN "consumer" EXCLUDE)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/schemas/ DESTINATION ${CMAKE_INSTALL_DATADIR}/dfx/schemas)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/consumer
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

# The .deb (cpack -G DEB in the build directory).
set(CPACK_PACKAGE_NAME dfx)
set(CPACK_PACKAGE_VENDOR "dfx")
set(CPACK_PACKAGE_CONTACT "dfx maintainers <dfx@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Distributed Runtime DFX collection (swimlane, dep_gen, args dump, PMU, scope stats)")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The headers need these to compile; the Python package needs python3.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3, libspdlog-dev, libfmt-dev, nlohmann-json3-dev, libxxhash-dev, zlib1g-dev")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openmpi-bin, graphviz")
include(CPack)
