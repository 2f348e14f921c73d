# KeyschemaWarnings.cmake: keyschema_warnings(<target>...)
#
# Adds the project's warning flags to keyschema's own targets (tests, examples, benchmarks, tools)
# as PRIVATE options. They are never attached to the keyschema INTERFACE libraries, so a program
# that consumes keyschema keeps its own warning policy.
#
# GCC/Clang: -Wall -Wextra -Wpedantic, plus -Werror while KEYSCHEMA_WERROR is ON (the default when
# keyschema is the top-level project). MSVC: /W4 (/WX with KEYSCHEMA_WERROR) and /permissive-.

include_guard(GLOBAL)

function(keyschema_warnings)
  foreach(target IN LISTS ARGN)
    if(NOT TARGET ${target})
      message(FATAL_ERROR "keyschema_warnings: '${target}' is not a target")
    endif()
    if(MSVC)
      target_compile_options(${target} PRIVATE /W4 /permissive- $<$<BOOL:${KEYSCHEMA_WERROR}>:/WX>)
    else()
      target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic
                                               $<$<BOOL:${KEYSCHEMA_WERROR}>:-Werror>)
    endif()
  endforeach()
endfunction()
