# KeyschemaCheckObject.cmake: the check of one static test or compile-fail control (cmake -P;
# used by keyschema_add_static_test and keyschema_add_compile_fail).
#
#   cmake -DKEYSCHEMA_OBJECT=<object> -DKEYSCHEMA_SOURCE=<file.cpp> -P KeyschemaCheckObject.cmake
#
# The compile runs in the build (through cmake/keyschema-syntax-only.sh, which removes the object
# first and writes it only when the compile succeeded, keeping the compiler's output in
# <object>.log); CTest's fixture test frontend.build brings it up to date first. Passes when the
# object exists; otherwise fails with the compiler's output.

foreach(var KEYSCHEMA_OBJECT KEYSCHEMA_SOURCE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "KeyschemaCheckObject.cmake: -D${var}=... is required")
  endif()
endforeach()
if(EXISTS "${KEYSCHEMA_OBJECT}")
  message(STATUS "keyschema-front-end: ${KEYSCHEMA_SOURCE} compiled")
  return()
endif()
set(output "(no compiler output: the build did not reach it; see the output of the test frontend.build)")
if(EXISTS "${KEYSCHEMA_OBJECT}.log")
  file(READ "${KEYSCHEMA_OBJECT}.log" output)
endif()
message(FATAL_ERROR "keyschema-front-end: ${KEYSCHEMA_SOURCE} does not compile\n${output}")
