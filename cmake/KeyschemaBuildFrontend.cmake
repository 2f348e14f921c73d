# KeyschemaBuildFrontend.cmake: the CTest fixture test frontend.build (cmake -P; see
# keyschema_add_frontend_fixture in KeyschemaTesting.cmake).
#
#   cmake -DKEYSCHEMA_BUILD_DIR=<build> -DKEYSCHEMA_TARGETS=<t1;t2> [-DKEYSCHEMA_CONFIG=<config>]
#         [-DKEYSCHEMA_KEEP_GOING=<native build tool flag>] -P KeyschemaBuildFrontend.cmake
#
# Brings every static test, compile-fail check and control up to date in ONE build (the build tool
# runs the compiles in parallel; the tests then only read what the compiles left, see
# KeyschemaCheckObject.cmake and KeyschemaCompileFail.cmake). A compile that fails does not fail
# this test: the build keeps going past it, and the test of that file reports it with the
# compiler's output. Fails only when the build tool itself cannot run.

foreach(var KEYSCHEMA_BUILD_DIR KEYSCHEMA_TARGETS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "KeyschemaBuildFrontend.cmake: -D${var}=... is required")
  endif()
endforeach()
set(args --build "${KEYSCHEMA_BUILD_DIR}" --target ${KEYSCHEMA_TARGETS})
if(KEYSCHEMA_CONFIG)
  list(APPEND args --config "${KEYSCHEMA_CONFIG}")
endif()
if(KEYSCHEMA_KEEP_GOING)
  list(APPEND args -- ${KEYSCHEMA_KEEP_GOING})
endif()
set(ENV{LC_ALL} C)
execute_process(COMMAND "${CMAKE_COMMAND}" ${args} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
message("${output}")
if(NOT result EQUAL 0)
  if(output MATCHES "(FAILED:|Error [0-9]+|error:)")
    message(STATUS "keyschema-front-end: some front-end targets failed to compile; their tests say which")
  else()
    message(FATAL_ERROR "keyschema-front-end: the build tool failed (exit ${result})")
  endif()
endif()
