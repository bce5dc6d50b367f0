# Debian's libre2-dev ships re2.pc but no CMake config: prefer a config package
# when there is one, fall back to pkg-config. Defines the target grammask_re2.
if(NOT TARGET grammask_re2)
  find_package(re2 CONFIG QUIET)
  add_library(grammask_re2 INTERFACE)
  if(TARGET re2::re2)
    target_link_libraries(grammask_re2 INTERFACE re2::re2)
  else()
    find_package(PkgConfig REQUIRED)
    pkg_check_modules(GRAMMASK_RE2 REQUIRED IMPORTED_TARGET re2)
    target_link_libraries(grammask_re2 INTERFACE PkgConfig::GRAMMASK_RE2)
  endif()
endif()
