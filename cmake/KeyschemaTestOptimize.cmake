# KeyschemaTestOptimize.cmake: the optimisation flag of the programs a test build runs (included by
# the top-level CMakeLists.txt).
#
#   KEYSCHEMA_TEST_OPTIMIZE ("")   an optimisation flag (scripts/test: -Og in its Release pass),
#                                  added after the build type's own -O (the last -O wins; NDEBUG
#                                  stays as the build type sets it)
#   keyschema_test_optimize(<target>)
#       Adds KEYSCHEMA_TEST_OPTIMIZE to the target when the tests are built
#       (KEYSCHEMA_BUILD_TESTS). Used by the unit and conformance tests, the crash harness, the
#       fuzz replays, the examples and the tools: every program the suite runs. A build for
#       measuring (scripts/demo, bench/) leaves the flag empty and keeps the build type's -O.
include_guard(GLOBAL)

set(KEYSCHEMA_TEST_OPTIMIZE "" CACHE STRING
    "Optimisation flag of the programs the tests run, after the build type's (e.g. -Og); empty: the build type's own")

function(keyschema_test_optimize target)
  if(KEYSCHEMA_BUILD_TESTS AND KEYSCHEMA_TEST_OPTIMIZE)
    target_compile_options(${target} PRIVATE ${KEYSCHEMA_TEST_OPTIMIZE})
  endif()
endfunction()
