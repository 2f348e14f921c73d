# KeyschemaWarnings.cmake: keyschema_warnings(<target>...)
#
# Adds the project's warning flags to keyschema's own targets (tests, examples, benchmarks, tools)
# as PRIVATE options. They are never attached to the keyschema INTERFACE libraries, so a program
# that consumes keyschema keeps its own warning policy.
#
# GCC/Clang: -Wall -Wextra -Wpedantic, plus -Werror while KEYSCHEMA_WERROR is ON (the default when
# keyschema is the top-level project). MSVC: /W4 (/WX with KEYSCHEMA_WERROR) and /permissive-.
#
# GCC's flow-based warnings that fire inside libstdc++ and range-v3 once the optimiser inlines
# them are switched off, because the code that triggers them is correct and cannot be changed:
#   -Wmaybe-uninitialized  (GCC) std::function inside std::regex, shared_ptr inside range-v3's
#                          variant, at -O1 and above (e.g. GCC bugs 105562, 107919); reads of
#                          uninitialised memory are still caught by -Wuninitialized and the
#                          sanitizer runs
#   -Wrestrict             (GCC < 13) `"literal" + std::string&&` at -O2/-O3 (GCC bug 105651)

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
      if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
        target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized)
        if(CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
          target_compile_options(${target} PRIVATE -Wno-restrict)
        endif()
      endif()
    endif()
  endforeach()
endfunction()
