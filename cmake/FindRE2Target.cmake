# Debian's libre2-dev ships re2.pc but no CMake config: prefer a config package
# when there is one, fall back to pkg-config. Defines the INTERFACE target
# grammask_re2, and GRAMMASK_RE2_PROVIDER ("config" or "pkg-config") so that the
# installed package (cmake/grammaskConfig.cmake.in) finds RE2 the same way.
if(NOT TARGET grammask_re2)
  find_package(re2 CONFIG QUIET)
  add_library(grammask_re2 INTERFACE)
  if(TARGET re2::re2)
    target_link_libraries(grammask_re2 INTERFACE re2::re2)
    set(GRAMMASK_RE2_PROVIDER "config")
  else()
    find_package(PkgConfig REQUIRED)
    pkg_check_modules(GRAMMASK_RE2 REQUIRED IMPORTED_TARGET re2)
    target_link_libraries(grammask_re2 INTERFACE PkgConfig::GRAMMASK_RE2)
    set(GRAMMASK_RE2_PROVIDER "pkg-config")
  endif()
endif()
