# KeyschemaDocTests.cmake: every ```cpp block of README.md and docs/**/*.md compiles (included by
# tests/CMakeLists.txt through keyschema_add_doc_tests()).
#
#   keyschema_add_doc_tests()
#       At configure time, tests/docs/extract_cpp_blocks.py turns each document's ```cpp blocks
#       into translation units under <build>/tests/docs (the convention for writing blocks, and
#       the `<!-- doc-test: skip (reason) -->` marker, are described at the top of that script).
#       Editing a document re-runs the extraction on the next build. Per document with blocks:
#         docs.<document>   (docs.README, docs.backends.lmdb, ...) prints how many blocks were
#                           compiled and which were skipped (with their reasons), then builds the
#                           EXCLUDE_FROM_ALL target doc_<slug>; fails when a block does not compile
#                           (the compiler's message points at the document's line).
#       Needs Python 3 and both adapters; without them the tests are not registered (a status
#       message says why).
#
# Run with -P (by the tests): cmake -DDOC_SUMMARY=<file> -DDOC_TARGET=<target> -DDOC_BUILD_DIR=<dir>
#                                   [-DDOC_CONFIG=<config>] -P KeyschemaDocTests.cmake
if(CMAKE_SCRIPT_MODE_FILE)
  file(READ "${DOC_SUMMARY}" summary)
  message("${summary}")
  set(config_args "")
  if(DOC_CONFIG)
    set(config_args --config "${DOC_CONFIG}")
  endif()
  set(ENV{LC_ALL} C)
  set(ENV{GCC_COLORS} "")
  # Two compilers at once: a document holds dozens of blocks, each its own translation unit.
  execute_process(COMMAND "${CMAKE_COMMAND}" --build "${DOC_BUILD_DIR}" --target "${DOC_TARGET}" --parallel 2 ${config_args}
                  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "keyschema-doc-test: a C++ block of the document does not compile "
                        "(see the file:line below; the convention is at the top of "
                        "tests/docs/extract_cpp_blocks.py)\n${output}")
  endif()
  message(STATUS "keyschema-doc-test: every compiled block builds")
  return()
endif()

include_guard(GLOBAL)
set(_KEYSCHEMA_DOC_TESTS_FILE "${CMAKE_CURRENT_LIST_FILE}")

function(keyschema_add_doc_tests)
  if(NOT KEYSCHEMA_FRONTEND_TESTS)
    message(STATUS "keyschema: documentation block tests not registered (KEYSCHEMA_FRONTEND_TESTS is OFF)")
    return()
  endif()
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(NOT Python3_Interpreter_FOUND)
    message(STATUS "keyschema: documentation block tests skipped (no Python 3 interpreter)")
    return()
  endif()
  if(NOT TARGET keyschema::leveldb OR NOT TARGET keyschema::lmdb)
    message(STATUS "keyschema: documentation block tests skipped (they need both adapters)")
    return()
  endif()
  set(script "${PROJECT_SOURCE_DIR}/tests/docs/extract_cpp_blocks.py")
  file(GLOB_RECURSE docs CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/docs/*.md")
  list(SORT docs)
  list(PREPEND docs "${PROJECT_SOURCE_DIR}/README.md")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${docs} "${script}")
  set(out "${PROJECT_BINARY_DIR}/tests/docs")
  execute_process(COMMAND "${Python3_EXECUTABLE}" "${script}" --out "${out}" --root "${PROJECT_SOURCE_DIR}" ${docs}
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(WARNING "keyschema: extracting the documentation's C++ blocks failed: ${err}")
    add_test(NAME docs.extract COMMAND "${CMAKE_COMMAND}" -E echo "extract_cpp_blocks.py failed: ${err}")
    set_tests_properties(docs.extract PROPERTIES FAIL_REGULAR_EXPRESSION "failed" LABELS "docs")
    return()
  endif()
  # Every block is compiled with the same libraries and options, and they share one precompiled
  # header holding what each block's generated prologue includes (keyschema_frontend_pch in
  # KeyschemaTesting.cmake): a block then costs its own code, not a fresh parse of the library
  # and three adapters (4.7 s of a 4.9 s block).
  set(doc_libs keyschema::leveldb keyschema::lmdb)
  set(doc_headers <keyschema/keyschema.hpp> <keyschema/leveldb.hpp> <keyschema/lmdb.hpp>)
  foreach(adapter sqlite rocksdb etcd)
    if(TARGET keyschema::${adapter})
      list(APPEND doc_libs keyschema::${adapter})
    endif()
  endforeach()
  if(TARGET keyschema::rocksdb)
    list(APPEND doc_headers <keyschema/rocksdb.hpp>)
  endif()
  list(APPEND doc_headers <chrono> <cstddef> <cstdint> <cstdio> <iostream> <optional> <string>
                          <string_view> <tuple> <utility> <vector>)
  set(doc_options -Wno-unused -Wno-unused-parameter)
  if(KEYSCHEMA_TEST_PCH)
    keyschema_frontend_pch(keyschema_doc_pch HEADERS ${doc_headers} LIBS ${doc_libs} OPTIONS ${doc_options})
    set_target_properties(keyschema_doc_pch PROPERTIES EXCLUDE_FROM_ALL ON)
  endif()
  foreach(doc IN LISTS docs)
    file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${doc}")
    string(REGEX REPLACE "[^A-Za-z0-9]" "_" slug "${rel}")
    string(REGEX REPLACE "^docs/" "" name "${rel}")
    string(REGEX REPLACE "\\.md$" "" name "${name}")
    string(REPLACE "/" "." name "${name}")
    file(STRINGS "${out}/${slug}.sources" sources)
    if(NOT sources)
      continue()
    endif()
    set(target doc_${slug})
    add_library(${target} OBJECT EXCLUDE_FROM_ALL ${sources})
    target_link_libraries(${target} PRIVATE keyschema::keyschema ${doc_libs})
    keyschema_warnings(${target})
    # Only the front end matters (keyschema_syntax_only); fragments may declare what they do not use.
    keyschema_syntax_only(${target})
    target_compile_options(${target} PRIVATE ${doc_options})
    if(KEYSCHEMA_TEST_PCH)
      target_precompile_headers(${target} REUSE_FROM keyschema_doc_pch)
    endif()
    add_test(NAME docs.${name}
             COMMAND "${CMAKE_COMMAND}" "-DDOC_SUMMARY=${out}/${slug}.summary" -DDOC_TARGET=${target}
                     "-DDOC_BUILD_DIR=${PROJECT_BINARY_DIR}" -DDOC_CONFIG=$<CONFIG>
                     -P "${_KEYSCHEMA_DOC_TESTS_FILE}")
    set_tests_properties(docs.${name} PROPERTIES
      LABELS "docs"
      RESOURCE_LOCK keyschema_build_tree
      # The build-tree lock serialises the front-end tests: starting the longest of them (a
      # document compiles all its blocks) first keeps that chain from ending the run alone.
      COST 50
      TIMEOUT ${KEYSCHEMA_TEST_TIMEOUT})
  endforeach()
endfunction()
