# What `cmake --install` puts under the prefix (the layout is docs/install.md): the optimas
# executable, the kernel tracer where CUPTI was found, the JSON schemas of what --json prints, and
# a package config so that find_package(optimas) gives a CMake workflow optimas::optimas and
# optimas::trace. The engine library and its headers are not installed: they are no stable
# interface yet (issue #13 reshapes the loop and the options), and a user runs the tool, not
# links it. Everything the binary reads at run time besides the tracer is compiled in (src/).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(OPTIMAS_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/optimas CACHE STRING
    "Where find_package(optimas) files go, relative to the prefix")
set(OPTIMAS_INSTALL_SCHEMADIR ${CMAKE_INSTALL_DATADIR}/optimas/schemas)

# --version says the version the package config says (main.cpp's own default is only a fallback).
target_compile_definitions(optimas PRIVATE OPTIMAS_VERSION="${PROJECT_VERSION}")
# Libraries found outside the system folders (CMAKE_PREFIX_PATH, a Spack view) stay found.
set_target_properties(optimas PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS optimas EXPORT optimasTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(OPTIMAS_HAS_TRACER FALSE)
if(TARGET optimas_trace)
  set(OPTIMAS_HAS_TRACER TRUE)
  set_target_properties(optimas_trace PROPERTIES EXPORT_NAME trace)
  install(TARGETS optimas_trace EXPORT optimasTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

install(FILES ${PROJECT_SOURCE_DIR}/docs/diagnostics.schema.json ${PROJECT_SOURCE_DIR}/docs/reply.schema.json
        DESTINATION ${OPTIMAS_INSTALL_SCHEMADIR})

install(EXPORT optimasTargets NAMESPACE optimas:: DESTINATION ${OPTIMAS_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/optimasConfig.cmake.in
  ${PROJECT_BINARY_DIR}/optimasConfig.cmake
  INSTALL_DESTINATION ${OPTIMAS_INSTALL_CMAKEDIR}
  PATH_VARS OPTIMAS_INSTALL_SCHEMADIR)
# 0.x: a new minor version may change the command line, so only the same minor version matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/optimasConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/optimasConfig.cmake ${PROJECT_BINARY_DIR}/optimasConfigVersion.cmake
        DESTINATION ${OPTIMAS_INSTALL_CMAKEDIR})

# Where the installed optimas finds the installed tracer (profile::find_tracer): the library
# folder relative to the bin folder, which GNUInstallDirs makes lib, lib64 or lib/<multiarch>.
file(RELATIVE_PATH OPTIMAS_LIBDIR_FROM_BINDIR ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
set_property(SOURCE ${PROJECT_SOURCE_DIR}/src/profile/ncu_agent.cpp DIRECTORY ${PROJECT_SOURCE_DIR}/src
             APPEND PROPERTY COMPILE_DEFINITIONS OPTIMAS_LIBDIR_FROM_BINDIR="${OPTIMAS_LIBDIR_FROM_BINDIR}")
