# The library never aborts, exits or prints: none of its object files may
# reference a function that does (the tool in src/cli/ may print; the
# library reports everything through Status). Run by ctest as
#   cmake -DNM=<nm> -DOBJECTS=<a.o|b.o|...> -P library_symbols_test.cmake
# OBJECTS are the library's object files joined with '|'.

cmake_minimum_required(VERSION 3.16)

if(NOT NM OR NOT OBJECTS)
  message(FATAL_ERROR "usage: cmake -DNM=<nm> -DOBJECTS=<a.o|b.o|...> -P ${CMAKE_CURRENT_LIST_FILE}")
endif()
string(REPLACE "|" ";" objects "${OBJECTS}")

# Undefined symbols that mean aborting, exiting or printing. Names are exact
# (mangled for C++), so __cxa_atexit, __cxa_guard_abort, snprintf and the
# sanitizers' __ubsan_handle_*_abort do not match.
set(forbidden
  # ending the process
  abort exit _exit _Exit quick_exit
  # the assert() macro
  __assert_fail __assert_perror_fail __assert
  # std::terminate, std::abort's C++ spellings
  _ZSt9terminatev
  # printing through stdio (the _chk forms are what _FORTIFY_SOURCE makes of them)
  printf fprintf vprintf vfprintf dprintf vdprintf puts fputs putchar fputc putc fwrite
  perror psignal psiginfo
  __printf_chk __fprintf_chk __vprintf_chk __vfprintf_chk __dprintf_chk __vdprintf_chk
  stdout stderr
  # printing through iostreams: std::cout, cerr, clog and their wide forms
  _ZSt4cout _ZSt4cerr _ZSt4clog _ZSt5wcout _ZSt5wcerr _ZSt5wclog
)

# Where a forbidden symbol is unavoidable, the object file that may use it
# and why. std::thread's destructor is inline and calls std::terminate() if
# the thread is still joinable; ThreadPool joins every worker before its
# threads are destroyed, so that call is never reached.
set(allowed "thread_pool.cpp.o:_ZSt9terminatev")
# Clang implements "an exception leaving a noexcept function terminates"
# with a helper, __clang_call_terminate, that calls std::terminate(); every
# object with a noexcept function that calls anything not noexcept has it.
# GCC does the same in the unwinder without naming std::terminate, so the
# GCC build checks std::terminate strictly and a clang build skips it where
# that helper is defined. (Whether an exception can actually reach such a
# landing pad is what clang-tidy's bugprone-exception-escape checks in
# .ci/sanitizers.)
set(clang_terminate_helper "__clang_call_terminate")

set(failures "")
set(checked 0)
foreach(object IN LISTS objects)
  if(NOT EXISTS "${object}")
    message(FATAL_ERROR "no such object file: ${object}")
  endif()
  execute_process(
    COMMAND "${NM}" "${object}"
    OUTPUT_VARIABLE symbols
    ERROR_VARIABLE nm_error
    RESULT_VARIABLE nm_result)
  if(NOT nm_result EQUAL 0)
    message(FATAL_ERROR "${NM} ${object} failed: ${nm_error}")
  endif()
  get_filename_component(object_name "${object}" NAME)
  string(REPLACE "\n" ";" lines "${symbols}")
  set(undefined "")
  set(has_clang_terminate_helper OFF)
  foreach(line IN LISTS lines)
    # "                 U name" or "0000000000000000 W name"; a name may
    # carry a version suffix (name@GLIBC_2.2.5).
    if(line MATCHES "^[0-9a-fA-F]* *([A-Za-z]) ([^ \t@]+)")
      if(CMAKE_MATCH_1 STREQUAL "U" OR CMAKE_MATCH_1 STREQUAL "w")
        list(APPEND undefined "${CMAKE_MATCH_2}")
      elseif(CMAKE_MATCH_2 STREQUAL clang_terminate_helper)
        set(has_clang_terminate_helper ON)
      endif()
    endif()
  endforeach()
  foreach(symbol IN LISTS undefined)
    if(NOT symbol IN_LIST forbidden OR "${object_name}:${symbol}" IN_LIST allowed)
      continue()
    endif()
    if(symbol STREQUAL "_ZSt9terminatev" AND has_clang_terminate_helper)
      continue()
    endif()
    string(APPEND failures "  ${object_name} references ${symbol}\n")
  endforeach()
  math(EXPR checked "${checked} + 1")
endforeach()

if(checked EQUAL 0)
  message(FATAL_ERROR "no object files given")
endif()
if(failures)
  message(FATAL_ERROR "the library may abort, exit or print:\n${failures}"
                      "Report errors through Status instead (see SECURITY.md).")
endif()
message(STATUS "${checked} object files: no abort, exit, assert or printing")
