# The layering rule of docs/architecture.md, checked on every #include "..."
# of the library's sources and public headers. Run by ctest as
#   cmake -DSOURCE_DIR=<project root> -P layering_test.cmake
#
# Each file belongs to a layer: src/<layer>/... to <layer>, and each public
# header to the layer that implements it (the table below). A file may
# include its own layer and the layers its layer may use; a public header may
# include only public headers. An include that escapes its folder ("../") or
# names no known file fails too, so the rule cannot be bypassed by spelling.

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "layering_test.cmake: pass -DSOURCE_DIR=<project root>")
endif()

# Layers, lowest first, and what each may include besides itself.
set(layers base ir regex automata earley vocab kernels schema mask cli)
set(uses_base "")
set(uses_ir base)
set(uses_regex base ir)
set(uses_automata base ir regex)
set(uses_earley base ir automata)
set(uses_vocab base)
set(uses_kernels base)
set(uses_schema base ir regex)
set(uses_mask base ir regex automata earley vocab kernels)
set(uses_cli base ir regex automata earley vocab kernels schema mask)

# The layer of each public header: the one whose sources implement it.
set(public_status.h base)
set(public_mask_words.h base)
set(public_thread_pool.h base)
set(public_grammar.h ir)
set(public_gbnf.h ir)
set(public_recognizer_options.h automata)
set(public_recognizer.h earley)
set(public_vocabulary.h vocab)
set(public_bitmask.h kernels)
set(public_json_schema.h schema)
set(public_matcher.h mask)
set(public_lazy_matcher.h mask)

set(violations "")
set(checked 0)

# Appends to `violations` when `layer` may not include `target`.
function(check_edge file layer target include_text)
  if(target STREQUAL layer)
    return()
  endif()
  list(FIND uses_${layer} "${target}" found)
  if(found EQUAL -1)
    set(violations "${violations}\n  ${file}: ${include_text} (${layer} -> ${target})" PARENT_SCOPE)
  endif()
endfunction()

file(GLOB public_headers RELATIVE "${SOURCE_DIR}/include/grammask" "${SOURCE_DIR}/include/grammask/*.h")
foreach(header IN LISTS public_headers)
  if(NOT DEFINED public_${header})
    set(violations "${violations}\n  include/grammask/${header}: no layer (add it to layering_test.cmake)")
  endif()
endforeach()

file(GLOB_RECURSE files RELATIVE "${SOURCE_DIR}"
  "${SOURCE_DIR}/src/*.h" "${SOURCE_DIR}/src/*.cpp" "${SOURCE_DIR}/include/grammask/*.h")
foreach(file IN LISTS files)
  math(EXPR checked "${checked} + 1")
  if(file MATCHES "^include/grammask/([^/]+)$")
    set(public ON)
    set(layer "${public_${CMAKE_MATCH_1}}")
  elseif(file MATCHES "^src/([^/]+)/")
    set(public OFF)
    set(layer "${CMAKE_MATCH_1}")
    list(FIND layers "${layer}" known)
    if(known EQUAL -1)
      set(violations "${violations}\n  ${file}: src/${layer} is not a layer")
      continue()
    endif()
  else()
    set(violations "${violations}\n  ${file}: outside the layer folders")
    continue()
  endif()
  get_filename_component(dir "${SOURCE_DIR}/${file}" DIRECTORY)
  file(STRINGS "${SOURCE_DIR}/${file}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*$" "\\1" target_path "${line}")
    set(include_text "#include \"${target_path}\"")
    if(target_path MATCHES "\\.\\./")
      set(violations "${violations}\n  ${file}: ${include_text} (no ../ includes)")
    elseif(target_path MATCHES "^grammask/([^/]+)$")
      set(name "${CMAKE_MATCH_1}")
      if(NOT DEFINED public_${name})
        set(violations "${violations}\n  ${file}: ${include_text} (no such public header)")
      elseif(NOT layer STREQUAL "")
        check_edge("${file}" "${layer}" "${public_${name}}" "${include_text}")
      endif()
    elseif(public)
      set(violations "${violations}\n  ${file}: ${include_text} (a public header includes only public headers)")
    elseif(target_path MATCHES "^([^/]+)/[^/]+$" AND EXISTS "${SOURCE_DIR}/src/${target_path}")
      check_edge("${file}" "${layer}" "${CMAKE_MATCH_1}" "${include_text}")
    elseif(NOT target_path MATCHES "/" AND EXISTS "${dir}/${target_path}")
      # A header beside the including file: the same layer.
    else()
      set(violations "${violations}\n  ${file}: ${include_text} (not a file of src/<layer>/ or include/grammask/)")
    endif()
  endforeach()
endforeach()

if(checked EQUAL 0)
  message(FATAL_ERROR "layering_test.cmake: no sources found under ${SOURCE_DIR}")
endif()
if(NOT violations STREQUAL "")
  message(FATAL_ERROR "layering: includes against docs/architecture.md:${violations}")
endif()
message(STATUS "layering: ${checked} files follow docs/architecture.md")
