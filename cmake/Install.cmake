# Install and package rules, included by the top-level CMakeLists.txt when
# GRAMMASK_INSTALL is ON (the default when grammask is the top-level project):
#   - the library and its public headers (include/grammask/*.h);
#   - the grammask tool (target grammask_tool), when it is built;
#   - a CMake package: find_package(grammask CONFIG) gives grammask::grammask;
#   - a pkg-config file, grammask.pc;
#   - the llama.cpp sampler's sources (integrations/llama.cpp), which a
#     program compiles against its own llama.h.
include(CMakePackageConfigHelpers)

set(GRAMMASK_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/grammask"
    CACHE STRING "Where to install the grammask CMake package files")
set(GRAMMASK_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
    CACHE STRING "Where to install grammask.pc")
set(GRAMMASK_INSTALL_LLAMA_CPP_DIR "${CMAKE_INSTALL_DATADIR}/grammask/llama.cpp"
    CACHE STRING "Where to install the llama.cpp sampler's sources")
mark_as_advanced(GRAMMASK_INSTALL_CMAKEDIR GRAMMASK_INSTALL_PKGCONFIGDIR
                 GRAMMASK_INSTALL_LLAMA_CPP_DIR)

# A static libgrammask carries its private link dependencies to the consumer
# (RE2; nlohmann_json is header-only and build-time only). Export the
# grammask_re2 target with it; the package config recreates what it links to.
get_target_property(_grammask_type grammask TYPE)
if(_grammask_type STREQUAL "STATIC_LIBRARY")
  set(GRAMMASK_STATIC ON)
  set(_grammask_exported grammask grammask_re2)
else()
  set(GRAMMASK_STATIC OFF)
  set(_grammask_exported grammask)
endif()

install(TARGETS ${_grammask_exported}
  EXPORT grammaskTargets
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}"
  INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/grammask"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
  FILES_MATCHING PATTERN "*.h")

install(FILES
  "${PROJECT_SOURCE_DIR}/integrations/llama.cpp/grammask_llama.h"
  "${PROJECT_SOURCE_DIR}/integrations/llama.cpp/grammask_llama.cpp"
  DESTINATION "${GRAMMASK_INSTALL_LLAMA_CPP_DIR}")

# The tool is built from src/cli/ (GRAMMASK_BUILD_TOOLS); installed as
# bin/grammask and exported as grammask::grammask_tool.
if(TARGET grammask_tool)
  install(TARGETS grammask_tool
    EXPORT grammaskTargets
    RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
endif()

# --- CMake package ------------------------------------------------------------
install(EXPORT grammaskTargets
  NAMESPACE grammask::
  DESTINATION "${GRAMMASK_INSTALL_CMAKEDIR}")
configure_package_config_file(
  "${CMAKE_CURRENT_LIST_DIR}/grammaskConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/grammaskConfig.cmake"
  INSTALL_DESTINATION "${GRAMMASK_INSTALL_CMAKEDIR}"
  PATH_VARS GRAMMASK_INSTALL_LLAMA_CPP_DIR)
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/grammaskConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMajorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/grammaskConfig.cmake"
  "${PROJECT_BINARY_DIR}/grammaskConfigVersion.cmake"
  DESTINATION "${GRAMMASK_INSTALL_CMAKEDIR}")

# --- pkg-config -----------------------------------------------------------------
# Paths relative to the .pc file's own directory, so that the file stays right
# when the prefix is chosen at install time (cmake --install --prefix DIR).
if(IS_ABSOLUTE "${GRAMMASK_INSTALL_PKGCONFIGDIR}")
  set(GRAMMASK_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _grammask_pc_up "/prefix/${GRAMMASK_INSTALL_PKGCONFIGDIR}" "/prefix")
  string(REGEX REPLACE "/$" "" _grammask_pc_up "${_grammask_pc_up}")
  set(GRAMMASK_PC_PREFIX "\${pcfiledir}/${_grammask_pc_up}")
endif()
foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_dir}}")
    set(GRAMMASK_PC_${_dir} "${CMAKE_INSTALL_${_dir}}")
  else()
    set(GRAMMASK_PC_${_dir} "\${prefix}/${CMAKE_INSTALL_${_dir}}")
  endif()
endforeach()
# A static library cannot be linked without RE2, and most users do not pass
# --static to pkg-config: make re2 a plain requirement then.
if(GRAMMASK_STATIC)
  set(GRAMMASK_PC_REQUIRES "Requires: re2")
else()
  set(GRAMMASK_PC_REQUIRES "Requires.private: re2")
endif()
configure_file("${CMAKE_CURRENT_LIST_DIR}/grammask.pc.in" "${PROJECT_BINARY_DIR}/grammask.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/grammask.pc" DESTINATION "${GRAMMASK_INSTALL_PKGCONFIGDIR}")
