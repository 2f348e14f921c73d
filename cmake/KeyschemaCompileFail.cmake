# KeyschemaCompileFail.cmake: run one compile-fail check (cmake -P; used by keyschema_add_compile_fail).
#
#   cmake -DKEYSCHEMA_BUILD_DIR=<build> -DKEYSCHEMA_TARGET=<target> -DKEYSCHEMA_SOURCE=<file.cpp>
#         [-DKEYSCHEMA_CONFIG=<config>] -P KeyschemaCompileFail.cmake
#
# Builds <target>, which compiles <file.cpp>. Succeeds (and prints
# "keyschema-compile-fail: expected diagnostic found") only when the build fails AND its output
# matches the regex on the file's first line, `// expect: <regex>`. A file that compiles, or that
# fails with another diagnostic (a typo, a missing include), fails the check and shows the output.

foreach(var KEYSCHEMA_BUILD_DIR KEYSCHEMA_TARGET KEYSCHEMA_SOURCE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "KeyschemaCompileFail.cmake: -D${var}=... is required")
  endif()
endforeach()

file(STRINGS "${KEYSCHEMA_SOURCE}" first_line LIMIT_COUNT 1)
if(NOT first_line MATCHES "^// expect: (.+)$")
  message(FATAL_ERROR "${KEYSCHEMA_SOURCE}: the first line must be '// expect: <regex>'")
endif()
set(expect "${CMAKE_MATCH_1}")

set(config_args "")
if(KEYSCHEMA_CONFIG)
  set(config_args --config "${KEYSCHEMA_CONFIG}")
endif()

# Plain ASCII diagnostics (no locale quotes) and no colour codes, so regexes are predictable.
set(ENV{LC_ALL} C)
set(ENV{GCC_COLORS} "")
execute_process(
  COMMAND "${CMAKE_COMMAND}" --build "${KEYSCHEMA_BUILD_DIR}" --target "${KEYSCHEMA_TARGET}" ${config_args}
  RESULT_VARIABLE result
  OUTPUT_VARIABLE output
  ERROR_VARIABLE output)

if(result EQUAL 0)
  message(FATAL_ERROR "keyschema-compile-fail: ${KEYSCHEMA_SOURCE} compiled, but it must not "
                      "(expected a diagnostic matching: ${expect})\n${output}")
endif()
if(NOT output MATCHES "${expect}")
  message(FATAL_ERROR "keyschema-compile-fail: ${KEYSCHEMA_SOURCE} failed to compile, but no "
                      "diagnostic matches the expected regex: ${expect}\n--- build output ---\n${output}")
endif()
message(STATUS "matched: ${CMAKE_MATCH_0}")
message(STATUS "keyschema-compile-fail: expected diagnostic found")
