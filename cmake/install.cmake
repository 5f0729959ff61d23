# SPDX-License-Identifier: MIT
# Installation and packaging: included by the top CMakeLists.txt after the
# targets nodalloc (shared), nodalloc_static (static, libnodalloc.a) and,
# when tools/ has sources, nodactl are defined.
#
#   cmake --install BUILD --prefix P   (make install; make uninstall undoes it)
#
# installs, under P (directories from GNUInstallDirs; LIBDIR is lib, or
# lib/x86_64-linux-gnu on Debian when the prefix is /usr):
#   LIBDIR/libnodalloc.so.0.1, .so.0, .so   LIBDIR/libnodalloc.a
#   include/nodalloc.h                       bin/nodactl
#   share/man/man1/nodactl.1                 LIBDIR/pkgconfig/nodalloc.pc
#   LIBDIR/cmake/nodalloc/nodallocConfig.cmake, ...ConfigVersion.cmake,
#     nodallocTargets*.cmake  (imported targets nodalloc::nodalloc and
#     nodalloc::static; cmake/nodallocConfig.cmake.in)
#
# nodactl preloads the libnodalloc.so it finds next to itself or in ../lib,
# ../lib/x86_64-linux-gnu or ../lib64: BINDIR must stay a sibling of
# LIBDIR, which every GNUInstallDirs layout keeps (a warning otherwise).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ND_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/nodalloc)

# The plain archive is exported as nodalloc::static_archive; the config
# file builds nodalloc::static on it, linked whole (the malloc override
# and the constructor are in members a program names no symbol of).
set_target_properties(nodalloc PROPERTIES EXPORT_NAME nodalloc)
set_target_properties(nodalloc_static PROPERTIES EXPORT_NAME static_archive)

# The targets already carry $<INSTALL_INTERFACE:include>; a different
# INCLUDEDIR needs its own entry.
set(_nd_includes)
if(NOT CMAKE_INSTALL_INCLUDEDIR STREQUAL "include")
  set(_nd_includes INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
install(TARGETS nodalloc nodalloc_static EXPORT nodallocTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ${_nd_includes})
install(FILES ${PROJECT_SOURCE_DIR}/include/nodalloc.h ${PROJECT_SOURCE_DIR}/include/nodalloc.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT nodallocTargets NAMESPACE nodalloc:: DESTINATION ${ND_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/nodallocConfig.cmake.in
  ${PROJECT_BINARY_DIR}/pkg/nodallocConfig.cmake
  INSTALL_DESTINATION ${ND_CMAKE_DIR})
# 0.x: a new minor version may break the API, so only 0.1.* matches 0.1.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/pkg/nodallocConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/pkg/nodallocConfig.cmake
  ${PROJECT_BINARY_DIR}/pkg/nodallocConfigVersion.cmake DESTINATION ${ND_CMAKE_DIR})

# nodalloc.pc names absolute paths (what pkg-config users expect), and the
# prefix is only known at install time (cmake --install --prefix P), so the
# file is configured then, from the install script.
install(CODE "
  set(ND_PC_VERSION \"${PROJECT_VERSION}\")
  set(ND_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(ND_PC_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(ND_PC_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  foreach(d ND_PC_LIBDIR ND_PC_INCLUDEDIR)
    if(NOT IS_ABSOLUTE \"\${\${d}}\")
      set(\${d} \"\\\${prefix}/\${\${d}}\")
    endif()
  endforeach()
  configure_file(\"${PROJECT_SOURCE_DIR}/cmake/nodalloc.pc.in\"
    \"${PROJECT_BINARY_DIR}/pkg/nodalloc.pc\" @ONLY)
")
install(FILES ${PROJECT_BINARY_DIR}/pkg/nodalloc.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

if(TARGET nodactl)
  install(TARGETS nodactl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  if(NOT CMAKE_INSTALL_BINDIR STREQUAL "bin"
      OR NOT CMAKE_INSTALL_LIBDIR MATCHES "^(lib|lib64|lib/x86_64-linux-gnu)$")
    message(WARNING "nodalloc: BINDIR '${CMAKE_INSTALL_BINDIR}' and LIBDIR "
      "'${CMAKE_INSTALL_LIBDIR}': the installed nodactl will not find libnodalloc.so "
      "by itself (it looks in ../lib, ../lib/x86_64-linux-gnu, ../lib64); set NODALLOC_LIBRARY")
  endif()
endif()
if(EXISTS ${PROJECT_SOURCE_DIR}/docs/nodactl.1)
  install(FILES ${PROJECT_SOURCE_DIR}/docs/nodactl.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()

# make uninstall: removes what the last install put down (its manifest).
configure_file(${PROJECT_SOURCE_DIR}/cmake/uninstall.cmake.in ${PROJECT_BINARY_DIR}/pkg/uninstall.cmake @ONLY)
if(TARGET uninstall)
  set(_nd_uninstall nodalloc_uninstall) # the enclosing project has its own
else()
  set(_nd_uninstall uninstall)
endif()
add_custom_target(${_nd_uninstall} COMMAND ${CMAKE_COMMAND} -P ${PROJECT_BINARY_DIR}/pkg/uninstall.cmake)

# The test: installs this build tree into a temporary prefix and builds
# programs against it through pkg-config and find_package.
if(NODALLOC_BUILD_TESTS)
  add_test(NAME unit.pkg_install
    COMMAND bash ${PROJECT_SOURCE_DIR}/tests/unit/pkg_install.sh
      ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR} ${PROJECT_VERSION} ${CMAKE_C_COMPILER} ${CMAKE_COMMAND})
  set_tests_properties(unit.pkg_install PROPERTIES TIMEOUT 300 LABELS unit)
endif()
