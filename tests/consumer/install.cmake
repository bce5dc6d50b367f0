# cmake -DBUILD_DIR=... -DPREFIX=... [-DCONFIG=...] [-DEXPECT=file;file...] -P install.cmake
# Installs the grammask build in BUILD_DIR into PREFIX, emptied first, and
# checks that the files EXPECT lists (relative to PREFIX) are there.
foreach(_var BUILD_DIR PREFIX)
  if(NOT ${_var})
    message(FATAL_ERROR "${_var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${PREFIX}")
set(_config)
if(CONFIG)
  set(_config --config "${CONFIG}")
endif()
execute_process(
  COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}" ${_config}
  RESULT_VARIABLE _result)
if(NOT _result EQUAL 0)
  message(FATAL_ERROR "cmake --install failed: ${_result}")
endif()
foreach(_file IN LISTS EXPECT)
  if(NOT EXISTS "${PREFIX}/${_file}")
    message(FATAL_ERROR "not installed: ${_file}")
  endif()
endforeach()
