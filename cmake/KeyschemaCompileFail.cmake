# KeyschemaCompileFail.cmake: the check of one compile-fail test (cmake -P; used by
# keyschema_add_compile_fail).
#
#   cmake -DKEYSCHEMA_OBJECT=<object> -DKEYSCHEMA_SOURCE=<file.cpp> -P KeyschemaCompileFail.cmake
#
# The compile itself runs in the build (the target compile_fail_<stem>, through
# `cmake/keyschema-syntax-only.sh --expect-fail`, which records the compiler's output in
# <object>.log and its exit status in <object>.rc); CTest's fixture test frontend.build brings it up to date first.
# Succeeds (and prints "keyschema-compile-fail: expected diagnostic found") only when the compile
# FAILED and its output matches the regex on the file's first line, `// expect: <regex>`. A file
# that compiles, or that fails with another diagnostic (a typo, a missing include), fails the check
# and shows the output.

foreach(var KEYSCHEMA_OBJECT KEYSCHEMA_SOURCE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "KeyschemaCompileFail.cmake: -D${var}=... is required")
  endif()
endforeach()

file(STRINGS "${KEYSCHEMA_SOURCE}" first_line LIMIT_COUNT 1)
if(NOT first_line MATCHES "^// expect: (.+)$")
  message(FATAL_ERROR "${KEYSCHEMA_SOURCE}: the first line must be '// expect: <regex>'")
endif()
set(expect "${CMAKE_MATCH_1}")

if(NOT EXISTS "${KEYSCHEMA_OBJECT}.rc" OR NOT EXISTS "${KEYSCHEMA_OBJECT}.log")
  message(FATAL_ERROR "keyschema-compile-fail: ${KEYSCHEMA_SOURCE} was not compiled (no ${KEYSCHEMA_OBJECT}.rc): "
                      "build the tree first (the test frontend.build does), see its output")
endif()
file(READ "${KEYSCHEMA_OBJECT}.rc" result)
string(STRIP "${result}" result)
file(READ "${KEYSCHEMA_OBJECT}.log" output)

if(result EQUAL 0)
  message(FATAL_ERROR "keyschema-compile-fail: ${KEYSCHEMA_SOURCE} compiled, but it must not "
                      "(expected a diagnostic matching: ${expect})\n${output}")
endif()
if(NOT output MATCHES "${expect}")
  message(FATAL_ERROR "keyschema-compile-fail: ${KEYSCHEMA_SOURCE} failed to compile, but no "
                      "diagnostic matches the expected regex: ${expect}\n--- compiler output ---\n${output}")
endif()
message(STATUS "matched: ${CMAKE_MATCH_0}")
message(STATUS "keyschema-compile-fail: expected diagnostic found")
