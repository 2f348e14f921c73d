# KeyschemaSanitizers.cmake: the KEYSCHEMA_SANITIZE cache variable and keyschema_sanitize(<target>...)
#
# KEYSCHEMA_SANITIZE is a comma-separated list handed to -fsanitize=, for example
# "address,undefined" or "thread" (empty: no sanitizer). keyschema_sanitize() applies it to
# keyschema's own executables and object libraries, for compiling and linking, together with
# -fno-omit-frame-pointer (readable stacks) and, when "undefined" is in the list,
# -fno-sanitize-recover=all so the first report ends the process with a failure status.
# The INTERFACE libraries never carry sanitizer flags.

include_guard(GLOBAL)

set(KEYSCHEMA_SANITIZE "" CACHE STRING
    "Sanitizers for keyschema's own tests/examples/tools, e.g. address,undefined or thread (empty: none)")

if(KEYSCHEMA_SANITIZE)
  if(MSVC)
    message(FATAL_ERROR "keyschema: KEYSCHEMA_SANITIZE supports GCC and Clang only")
  endif()
  string(REPLACE "," ";" _keyschema_sanitizers "${KEYSCHEMA_SANITIZE}")
  if("thread" IN_LIST _keyschema_sanitizers AND
     ("address" IN_LIST _keyschema_sanitizers OR "leak" IN_LIST _keyschema_sanitizers))
    message(FATAL_ERROR "keyschema: KEYSCHEMA_SANITIZE='${KEYSCHEMA_SANITIZE}': thread cannot be "
                        "combined with address or leak; configure a separate build directory")
  endif()
  set(KEYSCHEMA_SANITIZE_FLAGS "-fsanitize=${KEYSCHEMA_SANITIZE}" -fno-omit-frame-pointer)
  if("undefined" IN_LIST _keyschema_sanitizers)
    list(APPEND KEYSCHEMA_SANITIZE_FLAGS -fno-sanitize-recover=all)
  endif()
  unset(_keyschema_sanitizers)
  message(STATUS "keyschema: sanitizers: ${KEYSCHEMA_SANITIZE_FLAGS}")
else()
  set(KEYSCHEMA_SANITIZE_FLAGS "")
endif()

function(keyschema_sanitize)
  if(NOT KEYSCHEMA_SANITIZE_FLAGS)
    return()
  endif()
  foreach(target IN LISTS ARGN)
    if(NOT TARGET ${target})
      message(FATAL_ERROR "keyschema_sanitize: '${target}' is not a target")
    endif()
    target_compile_options(${target} PRIVATE ${KEYSCHEMA_SANITIZE_FLAGS})
    get_target_property(_type ${target} TYPE)
    if(_type STREQUAL "EXECUTABLE" OR _type STREQUAL "SHARED_LIBRARY" OR _type STREQUAL "MODULE_LIBRARY")
      target_link_options(${target} PRIVATE ${KEYSCHEMA_SANITIZE_FLAGS})
    endif()
  endforeach()
endfunction()

# keyschema_sanitizer_environment(<out-var>): environment entries (NAME=value list) for running
# sanitized test programs from CTest: fail on the first report, print stacks, use the suppression
# files in tests/support when they exist.
function(keyschema_sanitizer_environment out)
  set(env "")
  if(KEYSCHEMA_SANITIZE)
    set(support "${PROJECT_SOURCE_DIR}/tests/support")
    list(APPEND env "ASAN_OPTIONS=abort_on_error=0:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1")
    list(APPEND env "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
    set(tsan "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1")
    if(EXISTS "${support}/tsan.supp")
      string(APPEND tsan ":suppressions=${support}/tsan.supp")
    endif()
    list(APPEND env "${tsan}")
    if(EXISTS "${support}/lsan.supp")
      list(APPEND env "LSAN_OPTIONS=suppressions=${support}/lsan.supp")
    endif()
  endif()
  set(${out} "${env}" PARENT_SCOPE)
endfunction()
