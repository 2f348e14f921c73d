# KeyschemaTesting.cmake: one-line registration of keyschema's tests (included by tests/CMakeLists.txt).
#
#   keyschema_add_unit_test(NAME <name> SOURCES <a.cpp>... [LIBS <lib>...] [LABELS <label>...]
#                           [TIMEOUT <seconds>])
#       A Catch2 executable linked with the shared main (tests/support/main.cpp, compiled once),
#       keyschema::keyschema and LIBS; registered as the CTest test <name> with label `unit` plus
#       LABELS. Use LABELS concurrency for tests that start threads: the TSan pass runs only that
#       label (tests that link keyschema::leveldb or keyschema::rocksdb are left out of it: LevelDB
#       and RocksDB are not instrumented). A test whose LIBS name a target that does not exist (a
#       disabled adapter keyschema::leveldb / keyschema::lmdb / keyschema::rocksdb, or
#       keyschema::dump_support when the tools are not built) is skipped with a status message.
#       Each test runs in its own scratch directory <build>/tests/work/<name>, which is also its
#       TMPDIR (std::filesystem::temp_directory_path()), with Catch2's --warn NoAssertions (a
#       test case that asserts nothing fails) and --order rand (the seed is printed). A test that
#       prints "KEYSCHEMA-SKIP: <why>" (a tool it needs is missing) is reported skipped, not passed:
#       keep such a test alone in its executable (or in a group below: each file is its own test).
#
#   keyschema_add_unit_test_group(NAME <target> SOURCES <a.cpp>... [LIBS <lib>...]
#                                 [FILE_LIBS <file stem> <lib>... [<file stem> <lib>...]]
#                                 [LABELS <label>...] [TIMEOUT <seconds>])
#       Test files built as ONE executable <target> and (with
#       KEYSCHEMA_UNIT_TEST_UNITY) compiled as one unity translation unit, but still one CTest test
#       per file, named after the file (unit/store_test.cpp: the test store_test), with the
#       arguments, scratch directory and properties keyschema_add_unit_test gives a test. Each test
#       runs only its own file's test cases: `<target> -# "[#<file>]~[.]"` (Catch2's -# tags every
#       test case with "#" and the name of the file that defines it; hidden cases stay hidden). The
#       target <file> builds <target>. The files share a translation unit, so each keeps its namespace-scope names in a
#       namespace named after it (or in distinct names): two files declaring one name do not
#       compile together. <target> links LIBS (every file needs them) and each file's FILE_LIBS
#       (what only that file needs); as keyschema_add_unit_test, a file is skipped with a status
#       message when one of its libraries is not enabled (the other files still build). Keep a
#       file out of a group when its LABELS differ (the TSan pass builds every target of label
#       concurrency). A third to a half less CPU than one object per file (tests/CMakeLists.txt
#       gives the figures): the files' shared instantiations (the store, the codecs, the adapter,
#       Catch2's) are compiled once, and one executable is linked instead of one per file.
#
#   keyschema_add_conformance_test(<backend> FACTORY <type> [LIBS <lib>...])
#       The conformance suite (tests/conformance/conformance.hpp) on one backend: every topic file
#       of KEYSCHEMA_CONFORMANCE_CASES (set in tests/CMakeLists.txt) compiled for that backend
#       with KEYSCHEMA_CONFORMANCE_FACTORY=<type> and KEYSCHEMA_CONFORMANCE_FACTORY_HEADER=
#       <conformance/<backend>_factory.hpp>, linked into one unit test conformance_<backend>
#       (labels unit, conformance). One object per topic, so a backend's cases build in parallel.
#
#   keyschema_add_durability_test(<engine> TRAITS <type> GROUP <target>)
#       The durability suite (tests/durability/durability.hpp) on one file engine: every topic
#       file of KEYSCHEMA_DURABILITY_CASES (set in tests/CMakeLists.txt) and the engine's own
#       durability/<engine>.cpp, compiled with KEYSCHEMA_DURABILITY_TRAITS=<type> and
#       KEYSCHEMA_DURABILITY_TRAITS_HEADER=<durability/<engine>_traits.hpp> into the engine's unit
#       test group <target> (keyschema_add_unit_test_group, registered before: its one unity
#       object, which instantiates the engine's adapter and store once for both). One CTest test
#       per topic, durability_<engine>.<topic> (power_loss, damaged_files, processes, disk_full;
#       labels unit, durability), running the cases tagged [<topic>], with the arguments, scratch
#       directory and properties keyschema_add_unit_test gives a test: a topic whose tool is
#       missing (KEYSCHEMA-SKIP) is reported skipped alone. The target durability_<engine> builds
#       <target>. Skipped (with a status message) when <target> does not exist (adapter disabled).
#
#   keyschema_add_static_test(<file.cpp> [LIBS <lib>...])
#       Compiles the file (static_assert tests) as part of the default build; the CTest test
#       static.<stem> passes when that compile succeeded (and shows the compiler's output if not).
#
#   keyschema_add_compile_fail(<file.cpp> [LIBS <lib>...])
#       The file's first line must be `// expect: <regex>`. Two CTest tests:
#         compile_fail.<stem>          the target compile_fail_<stem> compiles the file in the
#                                      build and records the outcome (keyschema-syntax-only.sh
#                                      --expect-fail); passes only when the compile FAILED and
#                                      its output matches <regex> (a failure for another reason
#                                      fails)
#         compile_fail.<stem>.control  the same file with -DKEYSCHEMA_COMPILE_FAIL_CONTROL must
#                                      compile warning-free (target compile_fail_<stem>_control)
#
#       Static and compile-fail targets (and the documentation blocks) run only the compiler's
#       front end (-fsyntax-only through keyschema_syntax_only(), no sanitizers): only the front
#       end matters. The static and compile-fail targets are part of the default build and of the
#       target keyschema_frontend, which the fixture test frontend.build brings up to date (one
#       build, compiles in parallel) before their tests read the results.
#
#   keyschema_add_package_tests()        package.find_package and package.add_subdirectory
#                                        (with KEYSCHEMA_FRONTEND_TESTS only: see below)
#   keyschema_check_registered(<dir>...) the test tests.registered fails while a *.cpp under
#                                        <dir> is not handed to one of the helpers
#
# Options (cache variables):
#   KEYSCHEMA_TEST_PCH (ON)        the unit and conformance tests reuse one precompiled header
#                                  (<catch2/catch.hpp>, <keyschema/keyschema.hpp>) per build tree,
#                                  target keyschema_test_pch, compiled with the tests' exact flags;
#                                  the compile-fail checks and their controls reuse
#                                  keyschema_compile_fail_pch, the documentation blocks
#                                  keyschema_doc_pch (keyschema_frontend_pch below)
#   KEYSCHEMA_TEST_OPTIMIZE ("")   (cmake/KeyschemaTestOptimize.cmake) an optimisation flag
#                                  (scripts/test: -Og in its Release pass) added after the build
#                                  type's to the unit/conformance tests and every other program
#                                  the suite runs;
#                                  NDEBUG stays as the build type defines it. The Catch2 main is
#                                  always compiled at -O0
#   KEYSCHEMA_CONFORMANCE_BATCH (4) topic files per conformance translation unit: above 1 the
#                                  topics are compiled in unity batches of that size (fewer,
#                                  larger objects: less CPU in all, less parallelism)
#   KEYSCHEMA_UNSANITIZED_TESTS ("") test programs (target names) built without the sanitizers of
#                                  KEYSCHEMA_SANITIZE, with a precompiled header of their own
#                                  (scripts/test --quick: conformance_lmdb, so that its sanitizer
#                                  pass covers the core, not LMDB's adapter a second time)
#   KEYSCHEMA_UNIT_TEST_UNITY (ON) a keyschema_add_unit_test_group is one unity translation unit
#                                  (OFF: one object per file, still one executable; compiles each
#                                  file on its own, e.g. to check that it includes what it uses)
#   KEYSCHEMA_FRONTEND_TESTS (ON)  register the static, compile-fail and documentation tests; they
#                                  exercise only the front end (-O0, no sanitizer), so scripts/test
#                                  runs them in its Release pass only (OFF in the sanitizer passes).
#                                  The package tests (keyschema_add_package_tests) follow it too:
#                                  they build a consumer without sanitizers
#
# A registered source file that does not exist is reported as a failing test of the same name
# (and a configure warning) rather than breaking the configuration.
# Label targets: for every label L, the custom target keyschema_label_<L> builds all tests
# carrying it (scripts/test builds keyschema_label_concurrency for the TSan pass).

include_guard(GLOBAL)

set(KEYSCHEMA_TEST_WORK_DIR "${PROJECT_BINARY_DIR}/tests/work")
set(_KEYSCHEMA_TESTING_DIR "${CMAKE_CURRENT_LIST_DIR}")

if(KEYSCHEMA_SANITIZE)
  set(KEYSCHEMA_TEST_TIMEOUT 900 CACHE STRING "Default CTest timeout (seconds) of one keyschema test")
else()
  set(KEYSCHEMA_TEST_TIMEOUT 300 CACHE STRING "Default CTest timeout (seconds) of one keyschema test")
endif()

find_package(Catch2 2.13 CONFIG REQUIRED)

option(KEYSCHEMA_TEST_PCH "Precompile Catch2 and <keyschema/keyschema.hpp> once for the unit and conformance tests" ON)
set(KEYSCHEMA_CONFORMANCE_BATCH 4 CACHE STRING
    "Conformance topic files compiled per translation unit (unity batches; 1: one object per topic)")
option(KEYSCHEMA_UNIT_TEST_UNITY
       "Compile each keyschema_add_unit_test_group() as one unity translation unit (OFF: one object per file)" ON)
option(KEYSCHEMA_FRONTEND_TESTS
       "Build and register the static, compile-fail and documentation tests (they exercise only the compiler's front end)" ON)

# Shared test support: Catch2 and the tests/ include root (<support/temp_dir.hpp>).
add_library(keyschema_test_support INTERFACE)
target_link_libraries(keyschema_test_support INTERFACE Catch2::Catch2 keyschema::keyschema)
target_include_directories(keyschema_test_support INTERFACE "${PROJECT_SOURCE_DIR}/tests")
# Catch2's fast-compile mode, in every test translation unit and the main (it must be the same in
# all): an assertion no longer wraps its expression in its own try/catch, so an exception thrown
# inside REQUIRE(...) fails the test case (with its message) instead of only that assertion.
# REQUIRE_THROWS* are unchanged. About 14 % less CPU per conformance object (21.9 s -> 18.7 s).
target_compile_definitions(keyschema_test_support INTERFACE CATCH_CONFIG_FAST_COMPILE)

# The Catch2 main is compiled once and linked into every test executable.
add_library(keyschema_test_main OBJECT "${PROJECT_SOURCE_DIR}/tests/support/main.cpp")
target_link_libraries(keyschema_test_main PUBLIC keyschema_test_support)
keyschema_warnings(keyschema_test_main)
# At -O0 in every configuration (after the build type's -O: the last one wins): it is Catch2's
# runner, the largest translation unit of the suite, and its speed does not matter, while
# optimising it cost about 30 s of CPU per build tree.
target_compile_options(keyschema_test_main PRIVATE -O0)
# Not instrumented: it is Catch2's runner, not keyschema code, and instrumenting it costs about a
# minute of compile time per sanitizer build. Sanitized test code links with it normally.

# keyschema_syntax_only(<target>...): the front-end test targets (static, compile-fail and
# documentation tests) run the compiler with -fsyntax-only through a launcher
# (cmake/keyschema-syntax-only.sh): every check they make (parsing, instantiation, static_assert,
# concepts, warnings) is the front end's, and generating no code saves about 60 % of their CPU.
function(keyschema_syntax_only)
  foreach(t IN LISTS ARGN)
    target_compile_options(${t} PRIVATE -O0)
    set_property(TARGET ${t} PROPERTY CXX_COMPILER_LAUNCHER
                 sh "${_KEYSCHEMA_TESTING_DIR}/keyschema-syntax-only.sh")
  endforeach()
endfunction()

# keyschema_frontend_pch(<name> HEADERS <header>... [LIBS <lib>...] [OPTIONS <option>...]):
# the precompiled header of front-end test targets (compile-fail tests and their controls,
# documentation blocks). Parsing <keyschema/keyschema.hpp> and the adapters is most of such a
# compile (a documentation block: 4.7 of 4.9 s; a compile-fail check: about 3 of its 3.2 s), and
# each of them would parse it again. The object library <name> compiles the headers once with
# the flags of keyschema_syntax_only() targets (-O0, the warnings, no sanitizer) but without its
# -fsyntax-only launcher (GCC writes no .gch under -fsyntax-only); consumers add
# `target_precompile_headers(<target> REUSE_FROM <name>)` and must link exactly LIBS and use
# exactly OPTIONS (a macro defined differently invalidates the header, which -Winvalid-pch and
# -Werror turn into a build error, never a silent full parse).
function(keyschema_frontend_pch name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "HEADERS;LIBS;OPTIONS")
  set(source "${PROJECT_BINARY_DIR}/tests/${name}.cpp")
  if(NOT EXISTS "${source}")
    file(WRITE "${source}" "// Generated: the precompiled header's own translation unit (empty).\n")
  endif()
  add_library(${name} OBJECT "${source}")
  target_link_libraries(${name} PRIVATE keyschema::keyschema ${arg_LIBS})
  keyschema_warnings(${name})
  target_compile_options(${name} PRIVATE -O0 ${arg_OPTIONS})
  target_precompile_headers(${name} PRIVATE ${arg_HEADERS})
endfunction()

if(KEYSCHEMA_FRONTEND_TESTS AND KEYSCHEMA_TEST_PCH)
  keyschema_frontend_pch(keyschema_compile_fail_pch HEADERS <keyschema/keyschema.hpp>)
endif()

set(KEYSCHEMA_UNSANITIZED_TESTS "" CACHE STRING
    "Test programs (target names, e.g. conformance_lmdb) built without KEYSCHEMA_SANITIZE's flags")

# Options of every unit/conformance test object: warnings, sanitizers (unless the target is one of
# KEYSCHEMA_UNSANITIZED_TESTS), KEYSCHEMA_TEST_OPTIMIZE. The precompiled headers below are only
# reused by targets whose flags are exactly these.
function(_keyschema_test_options target)
  keyschema_warnings(${target})
  if(NOT target IN_LIST KEYSCHEMA_UNSANITIZED_TESTS)
    keyschema_sanitize(${target})
  endif()
  keyschema_test_optimize(${target})
endfunction()


# One precompiled header per build tree for every unit and conformance test: Catch2 and the
# umbrella header, compiled with the same flags as the tests (sanitizers, -Werror, optimisation),
# so each test reuses it (REUSE_FROM) instead of parsing both again.
# KEYSCHEMA_UNSANITIZED_TESTS get their own, keyschema_test_pch_unsanitized, made on first use.
function(_keyschema_test_pch name)
  set(source "${PROJECT_BINARY_DIR}/tests/${name}.cpp")
  if(NOT EXISTS "${source}")
    file(WRITE "${source}" "// Generated: the precompiled header's own translation unit (empty).\n")
  endif()
  add_library(${name} OBJECT "${source}")
  target_link_libraries(${name} PRIVATE keyschema_test_support)
  _keyschema_test_options(${name})
  target_precompile_headers(${name} PRIVATE <catch2/catch.hpp> <keyschema/keyschema.hpp>)
endfunction()
if(KEYSCHEMA_TEST_PCH)
  _keyschema_test_pch(keyschema_test_pch)
endif()

keyschema_sanitizer_environment(_keyschema_sanitizer_env)
set(KEYSCHEMA_TEST_ENVIRONMENT "${_keyschema_sanitizer_env}" CACHE INTERNAL "")
unset(_keyschema_sanitizer_env)

# Exists even while no test carries the label, so scripts/test can always build it.
add_custom_target(keyschema_label_concurrency)

# Sources handed to the helpers, for the "every test file is registered" check.
set_property(GLOBAL PROPERTY KEYSCHEMA_REGISTERED_TEST_SOURCES "")

function(_keyschema_note_sources)
  foreach(src IN LISTS ARGN)
    get_filename_component(abs "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    set_property(GLOBAL APPEND PROPERTY KEYSCHEMA_REGISTERED_TEST_SOURCES "${abs}")
  endforeach()
endfunction()

# When a registered source file does not exist, warn and register <test_name> as a test that
# fails saying so (instead of breaking the configuration for everyone); sets <out> TRUE then.
function(_keyschema_missing_sources out test_name)
  set(missing "")
  foreach(src IN LISTS ARGN)
    get_filename_component(abs "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${abs}")
      list(APPEND missing "${src}")
    endif()
  endforeach()
  if(missing)
    message(WARNING "keyschema: ${test_name}: source file(s) not found: ${missing}")
    add_test(NAME ${test_name} COMMAND "${CMAKE_COMMAND}" -E echo "source file(s) not found: ${missing}")
    set_tests_properties(${test_name} PROPERTIES FAIL_REGULAR_EXPRESSION "not found" LABELS "meta")
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# Sets <out> to the first namespaced library (ns::name) in the list that is not a target: a
# disabled adapter (keyschema::leveldb, keyschema::lmdb) or disabled tools (keyschema::dump_support).
function(_keyschema_disabled_lib out)
  set(${out} "" PARENT_SCOPE)
  foreach(lib IN LISTS ARGN)
    if(lib MATCHES "::" AND NOT TARGET ${lib})
      set(${out} "${lib}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

function(_keyschema_label_targets target)
  foreach(label IN LISTS ARGN)
    if(NOT TARGET keyschema_label_${label})
      add_custom_target(keyschema_label_${label})
    endif()
    add_dependencies(keyschema_label_${label} ${target})
  endforeach()
endfunction()

# Builds <target> from CTest (fails when it does not compile). Serialised: one build tree, one make.
function(_keyschema_add_build_test test_name target)
  add_test(NAME ${test_name}
           COMMAND "${CMAKE_COMMAND}" --build "${PROJECT_BINARY_DIR}" --target ${target} --config $<CONFIG>)
  set_tests_properties(${test_name} PROPERTIES
    RESOURCE_LOCK keyschema_build_tree
    ENVIRONMENT "LC_ALL=C"
    TIMEOUT ${KEYSCHEMA_TEST_TIMEOUT})
endfunction()

# The front-end tests (static.*, compile_fail.* and their controls) compile in the build, not in
# CTest: their targets are part of the default build and of keyschema_frontend, and the tests read
# what the compiles left (KeyschemaCheckObject.cmake, KeyschemaCompileFail.cmake). The fixture test
# frontend.build brings keyschema_frontend up to date in one build first, so that `ctest` alone
# still checks the current sources, and the compiles run in parallel instead of one build-tool
# invocation per test under the build-tree lock (71 serialized invocations before).
function(_keyschema_frontend_fixture)
  if(TARGET keyschema_frontend)
    return()
  endif()
  add_custom_target(keyschema_frontend)
  set(keep_going "")
  if(CMAKE_GENERATOR MATCHES "Ninja")
    set(keep_going "-k;0")
  elseif(CMAKE_GENERATOR MATCHES "Makefiles")
    set(keep_going "-k")
  endif()
  add_test(NAME frontend.build
           COMMAND "${CMAKE_COMMAND}" "-DKEYSCHEMA_BUILD_DIR=${PROJECT_BINARY_DIR}" -DKEYSCHEMA_TARGETS=keyschema_frontend
                   "-DKEYSCHEMA_CONFIG=$<CONFIG>" "-DKEYSCHEMA_KEEP_GOING=${keep_going}"
                   -P "${_KEYSCHEMA_TESTING_DIR}/KeyschemaBuildFrontend.cmake")
  set_tests_properties(frontend.build PROPERTIES
    LABELS "static;compile_fail"
    FIXTURES_SETUP keyschema_frontend
    RESOURCE_LOCK keyschema_build_tree
    ENVIRONMENT "LC_ALL=C"
    TIMEOUT ${KEYSCHEMA_TEST_TIMEOUT})
endfunction()

# Registers <test_name>, which passes when <target> (one front-end source, <source>) compiled.
function(_keyschema_add_frontend_test test_name target source)
  _keyschema_frontend_fixture()
  add_dependencies(keyschema_frontend ${target})
  add_test(NAME ${test_name}
           COMMAND "${CMAKE_COMMAND}" "-DKEYSCHEMA_OBJECT=$<TARGET_OBJECTS:${target}>" "-DKEYSCHEMA_SOURCE=${source}"
                   -P "${_KEYSCHEMA_TESTING_DIR}/KeyschemaCheckObject.cmake")
  set_tests_properties(${test_name} PROPERTIES FIXTURES_REQUIRED keyschema_frontend TIMEOUT ${KEYSCHEMA_TEST_TIMEOUT})
endfunction()

function(keyschema_add_unit_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS")
  if(NOT arg_NAME OR NOT arg_SOURCES OR arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "keyschema_add_unit_test(NAME <name> SOURCES <file>... [LIBS ...] [LABELS ...]): "
                        "bad arguments '${ARGV}'")
  endif()
  _keyschema_note_sources(${arg_SOURCES})
  _keyschema_missing_sources(missing ${arg_NAME} ${arg_SOURCES})
  if(missing)
    return()
  endif()
  _keyschema_disabled_lib(disabled ${arg_LIBS})
  if(disabled)
    message(STATUS "keyschema: test ${arg_NAME} skipped (${disabled} is not enabled)")
    return()
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT ${KEYSCHEMA_TEST_TIMEOUT})
  endif()
  if(KEYSCHEMA_SANITIZE MATCHES "thread" AND ("keyschema::leveldb" IN_LIST arg_LIBS OR "keyschema::rocksdb" IN_LIST arg_LIBS)
     AND "concurrency" IN_LIST arg_LABELS)
    # Debian's libleveldb and librocksdb are not instrumented: TSan cannot see their internal
    # synchronisation (skip-list atomics, the group-commit hand-off) and reports races that do not
    # exist, and ignoring uninstrumented modules hides their mutexes instead. Such a test keeps
    # running in the other configurations; concurrency over the memory and LMDB backends is
    # TSan-checked.
    list(REMOVE_ITEM arg_LABELS concurrency)
    list(APPEND arg_LABELS concurrency_not_tsan)
    message(STATUS "keyschema: ${arg_NAME} is not in the TSan concurrency run (links uninstrumented LevelDB or RocksDB)")
  endif()

  _keyschema_unit_executable(${arg_NAME} "${arg_SOURCES}" "${arg_LIBS}")
  _keyschema_register_unit_test(${arg_NAME} ${arg_NAME} "" "${arg_LABELS}" ${arg_TIMEOUT})
  _keyschema_label_targets(${arg_NAME} unit ${arg_LABELS})
endfunction()

# A Catch2 executable <target> of <sources>, linked with the shared main and <libs>.
function(_keyschema_unit_executable target sources libs)
  add_executable(${target} ${sources})
  target_link_libraries(${target} PRIVATE keyschema_test_main keyschema_test_support ${libs})
  _keyschema_test_options(${target})
  if(KEYSCHEMA_TEST_PCH)
    set(pch keyschema_test_pch)
    if(target IN_LIST KEYSCHEMA_UNSANITIZED_TESTS AND KEYSCHEMA_SANITIZE)
      set(pch keyschema_test_pch_unsanitized)
      if(NOT TARGET ${pch})
        list(APPEND KEYSCHEMA_UNSANITIZED_TESTS ${pch})  # this scope only: the header unsanitized too
        _keyschema_test_pch(${pch})
      endif()
    endif()
    target_precompile_headers(${target} REUSE_FROM ${pch})
  endif()
endfunction()

# The CTest test <name>: the executable <target> with the Catch2 arguments <select> (a test spec;
# empty: every test case), in the scratch directory <build>/tests/work/<name> (also its TMPDIR).
function(_keyschema_register_unit_test name target select labels timeout)
  set(work "${KEYSCHEMA_TEST_WORK_DIR}/${name}")
  file(MAKE_DIRECTORY "${work}")
  add_test(NAME ${name}
           COMMAND ${target} ${select} --warn NoAssertions --order rand --rng-seed time
           WORKING_DIRECTORY "${work}")
  set_tests_properties(${name} PROPERTIES
    LABELS "unit;${labels}"
    SKIP_REGULAR_EXPRESSION "KEYSCHEMA-SKIP:"
    TIMEOUT ${timeout}
    ENVIRONMENT "TMPDIR=${work};${KEYSCHEMA_TEST_ENVIRONMENT}")
endfunction()

function(keyschema_add_unit_test_group)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;TIMEOUT" "SOURCES;LIBS;FILE_LIBS;LABELS")
  if(NOT arg_NAME OR NOT arg_SOURCES OR arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "keyschema_add_unit_test_group(NAME <target> SOURCES <file>... [LIBS ...] "
                        "[FILE_LIBS <file stem> <lib>...] [LABELS ...] [TIMEOUT <s>]): bad arguments '${ARGV}'")
  endif()
  _keyschema_note_sources(${arg_SOURCES})
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT ${KEYSCHEMA_TEST_TIMEOUT})
  endif()
  # FILE_LIBS: a file stem (no "::") followed by the libraries that file needs besides LIBS.
  set(file_libs_stems "")
  foreach(entry IN LISTS arg_FILE_LIBS)
    if(entry MATCHES "::")
      if(NOT file_libs_stems)
        message(FATAL_ERROR "keyschema_add_unit_test_group(${arg_NAME}): FILE_LIBS must start with a file stem")
      endif()
      list(APPEND file_libs_${stem} ${entry})
    else()
      set(stem ${entry})
      list(APPEND file_libs_stems ${stem})
    endif()
  endforeach()
  set(all_stems "")
  foreach(src IN LISTS arg_SOURCES)
    get_filename_component(stem "${src}" NAME_WE)
    list(APPEND all_stems ${stem})
  endforeach()
  foreach(stem IN LISTS file_libs_stems)
    if(NOT stem IN_LIST all_stems)
      message(FATAL_ERROR "keyschema_add_unit_test_group(${arg_NAME}): FILE_LIBS names ${stem}, not a file of SOURCES")
    endif()
  endforeach()
  set(sources "")
  set(stems "")
  set(libs ${arg_LIBS})
  foreach(src IN LISTS arg_SOURCES)
    get_filename_component(stem "${src}" NAME_WE)
    _keyschema_missing_sources(missing ${stem} ${src})
    if(missing)
      continue()
    endif()
    _keyschema_disabled_lib(disabled ${arg_LIBS} ${file_libs_${stem}})
    if(disabled)
      message(STATUS "keyschema: test ${stem} skipped (${disabled} is not enabled)")
      continue()
    endif()
    list(APPEND sources "${src}")
    list(APPEND stems ${stem})
    list(APPEND libs ${file_libs_${stem}})
  endforeach()
  if(NOT sources)
    return()
  endif()
  list(REMOVE_DUPLICATES libs)
  _keyschema_unit_executable(${arg_NAME} "${sources}" "${libs}")
  if(KEYSCHEMA_UNIT_TEST_UNITY)
    set_target_properties(${arg_NAME} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 0)
  endif()
  foreach(stem IN LISTS stems)
    # Catch2's -# tags every test case with "#<file name without extension>". ~[.]: a hidden test
    # case (e.g. a probe that a test runs in a child process by its own tag) stays hidden, as when
    # the file's executable runs without a test spec (a spec that names a tag selects hidden ones).
    _keyschema_register_unit_test(${stem} ${arg_NAME} "-#;[#${stem}]~[.]" "${arg_LABELS}" ${arg_TIMEOUT})
    # A tag that selects nothing exits 0 in Catch2 2.x (and --warn takes one value): fail on its message.
    set_tests_properties(${stem} PROPERTIES FAIL_REGULAR_EXPRESSION "No test cases matched")
    # `cmake --build --target <test name>` keeps working.
    add_custom_target(${stem})
    add_dependencies(${stem} ${arg_NAME})
  endforeach()
  _keyschema_label_targets(${arg_NAME} unit ${arg_LABELS})
endfunction()

function(keyschema_add_conformance_test backend)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "FACTORY" "LIBS")
  if(NOT arg_FACTORY OR arg_UNPARSED_ARGUMENTS OR NOT KEYSCHEMA_CONFORMANCE_CASES)
    message(FATAL_ERROR "keyschema_add_conformance_test(<backend> FACTORY <type> [LIBS ...]) after setting "
                        "KEYSCHEMA_CONFORMANCE_CASES: bad arguments '${ARGV}'")
  endif()
  set(name conformance_${backend})
  keyschema_add_unit_test(NAME ${name} SOURCES ${KEYSCHEMA_CONFORMANCE_CASES} LIBS ${arg_LIBS} LABELS conformance)
  if(TARGET ${name})
    if(KEYSCHEMA_CONFORMANCE_BATCH GREATER 1)
      set_target_properties(${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${KEYSCHEMA_CONFORMANCE_BATCH})
    endif()
    target_compile_definitions(${name} PRIVATE
      "KEYSCHEMA_CONFORMANCE_FACTORY=${arg_FACTORY}"
      "KEYSCHEMA_CONFORMANCE_FACTORY_HEADER=<conformance/${backend}_factory.hpp>")
  endif()
endfunction()

function(keyschema_add_durability_test engine)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "TRAITS;GROUP;TIMEOUT" "")
  if(NOT arg_TRAITS OR NOT arg_GROUP OR arg_UNPARSED_ARGUMENTS OR NOT KEYSCHEMA_DURABILITY_CASES)
    message(FATAL_ERROR "keyschema_add_durability_test(<engine> TRAITS <type> GROUP <target>) after setting "
                        "KEYSCHEMA_DURABILITY_CASES: bad arguments '${ARGV}'")
  endif()
  set(sources ${KEYSCHEMA_DURABILITY_CASES} durability/${engine}.cpp)
  _keyschema_note_sources(${sources})
  _keyschema_missing_sources(missing durability_${engine} ${sources})
  if(missing)
    return()
  endif()
  if(NOT TARGET ${arg_GROUP})
    message(STATUS "keyschema: durability_${engine} skipped (${arg_GROUP} is not built)")
    return()
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT ${KEYSCHEMA_TEST_TIMEOUT})
  endif()
  target_sources(${arg_GROUP} PRIVATE ${sources})
  target_compile_definitions(${arg_GROUP} PRIVATE
    "KEYSCHEMA_DURABILITY_TRAITS=${arg_TRAITS}"
    "KEYSCHEMA_DURABILITY_TRAITS_HEADER=<durability/${engine}_traits.hpp>")
  foreach(topic power_loss damaged_files processes disk_full)
    _keyschema_register_unit_test(durability_${engine}.${topic} ${arg_GROUP} "[${topic}]~[.]" "durability" ${arg_TIMEOUT})
    # A tag that selects nothing exits 0 in Catch2 2.x: fail on its message.
    set_tests_properties(durability_${engine}.${topic} PROPERTIES FAIL_REGULAR_EXPRESSION "No test cases matched")
  endforeach()
  add_custom_target(durability_${engine})
  add_dependencies(durability_${engine} ${arg_GROUP})
  _keyschema_label_targets(${arg_GROUP} durability)
endfunction()

function(keyschema_add_static_test file)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "LIBS")
  _keyschema_note_sources(${file})
  get_filename_component(stem "${file}" NAME_WE)
  if(NOT KEYSCHEMA_FRONTEND_TESTS)
    return()
  endif()
  _keyschema_missing_sources(missing static.${stem} ${file})
  if(missing)
    return()
  endif()
  _keyschema_disabled_lib(disabled ${arg_LIBS})
  if(disabled)
    message(STATUS "keyschema: static test ${stem} skipped (${disabled} is not enabled)")
    return()
  endif()
  set(target static_${stem})
  add_library(${target} OBJECT ${file})
  target_link_libraries(${target} PRIVATE keyschema::keyschema ${arg_LIBS})
  # Only the front end matters: no code generated, no sanitizer instrumentation.
  keyschema_syntax_only(${target})
  keyschema_warnings(${target})
  get_filename_component(abs "${file}" ABSOLUTE)
  _keyschema_add_frontend_test(static.${stem} ${target} "${abs}")
  set_tests_properties(static.${stem} PROPERTIES LABELS "static")
  _keyschema_label_targets(${target} static)
endfunction()

function(keyschema_add_compile_fail file)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "LIBS")
  _keyschema_note_sources(${file})
  get_filename_component(stem "${file}" NAME_WE)
  if(NOT KEYSCHEMA_FRONTEND_TESTS)
    return()
  endif()
  _keyschema_missing_sources(missing compile_fail.${stem} ${file})
  if(missing)
    return()
  endif()
  get_filename_component(abs "${file}" ABSOLUTE)
  file(STRINGS "${abs}" first_line LIMIT_COUNT 1)
  if(NOT first_line MATCHES "^// expect: (.+)$")
    set(why "${file}: the first line must be '// expect: <regex matching the expected diagnostic>'")
    message(WARNING "keyschema_add_compile_fail: ${why}")
    add_test(NAME compile_fail.${stem} COMMAND "${CMAKE_COMMAND}" -E echo "bad compile-fail test ${why}")
    set_tests_properties(compile_fail.${stem} PROPERTIES FAIL_REGULAR_EXPRESSION "bad compile-fail test"
                                                         LABELS "compile_fail")
    return()
  endif()
  _keyschema_disabled_lib(disabled ${arg_LIBS})
  if(disabled)
    message(STATUS "keyschema: compile-fail test ${stem} skipped (${disabled} is not enabled)")
    return()
  endif()

  set(target compile_fail_${stem})
  add_library(${target} OBJECT ${file})
  add_library(${target}_control OBJECT ${file})
  foreach(t ${target} ${target}_control)
    target_link_libraries(${t} PRIVATE keyschema::keyschema ${arg_LIBS})
    keyschema_syntax_only(${t})
    keyschema_warnings(${t})
    if(KEYSCHEMA_TEST_PCH AND NOT arg_LIBS)
      target_precompile_headers(${t} REUSE_FROM keyschema_compile_fail_pch)
    endif()
  endforeach()
  target_compile_definitions(${target}_control PRIVATE KEYSCHEMA_COMPILE_FAIL_CONTROL)
  # The check's compile records its outcome and always succeeds (keyschema-syntax-only.sh
  # --expect-fail), so it builds with everything else; the test below reads the record.
  set_property(TARGET ${target} PROPERTY CXX_COMPILER_LAUNCHER
               sh "${_KEYSCHEMA_TESTING_DIR}/keyschema-syntax-only.sh" --expect-fail)

  # The expected regex is re-read from the file at test time, so editing it needs no reconfigure.
  _keyschema_frontend_fixture()
  add_dependencies(keyschema_frontend ${target})
  add_test(NAME compile_fail.${stem}
           COMMAND "${CMAKE_COMMAND}"
                   "-DKEYSCHEMA_OBJECT=$<TARGET_OBJECTS:${target}>"
                   "-DKEYSCHEMA_SOURCE=${abs}"
                   -P "${_KEYSCHEMA_TESTING_DIR}/KeyschemaCompileFail.cmake")
  set_tests_properties(compile_fail.${stem} PROPERTIES
    LABELS "compile_fail"
    FIXTURES_REQUIRED keyschema_frontend
    # The script exits non-zero unless the compile failed with a matching diagnostic; it prints
    # this line only in that case.
    PASS_REGULAR_EXPRESSION "keyschema-compile-fail: expected diagnostic found"
    TIMEOUT ${KEYSCHEMA_TEST_TIMEOUT})
  _keyschema_add_frontend_test(compile_fail.${stem}.control ${target}_control "${abs}")
  set_tests_properties(compile_fail.${stem}.control PROPERTIES LABELS "compile_fail")
  _keyschema_label_targets(${target} compile_fail)
  _keyschema_label_targets(${target}_control compile_fail)
endfunction()

# keyschema_add_package_tests(): package.find_package (install to a scratch prefix, then build
# tests/package with find_package) and package.add_subdirectory (build tests/package with
# add_subdirectory of this source tree). Both use the adapters this build has enabled, and the
# comparison harness.
function(keyschema_add_package_tests)
  # The consumer is built without sanitizers: a sanitizer pass would only build it again.
  if(NOT KEYSCHEMA_FRONTEND_TESTS)
    return()
  endif()
  set(components "")
  foreach(component leveldb lmdb rocksdb sqlite etcd)
    if(TARGET keyschema::${component})
      list(APPEND components ${component})
    endif()
  endforeach()
  list(APPEND components comparison)  # the comparison harness needs no database: always there
  string(REPLACE ";" "," components "${components}")
  foreach(mode install subdirectory)
    if(mode STREQUAL "install")
      set(name package.find_package)
      if(NOT KEYSCHEMA_INSTALL)
        continue()
      endif()
    else()
      set(name package.add_subdirectory)
    endif()
    add_test(NAME ${name}
             COMMAND "${CMAKE_COMMAND}"
                     "-DMODE=${mode}"
                     "-DSOURCE_DIR=${PROJECT_SOURCE_DIR}"
                     "-DBUILD_DIR=${PROJECT_BINARY_DIR}"
                     "-DWORK_DIR=${KEYSCHEMA_TEST_WORK_DIR}/${name}"
                     "-DGENERATOR=${CMAKE_GENERATOR}"
                     "-DCXX_COMPILER=${CMAKE_CXX_COMPILER}"
                     "-DCONFIG=$<CONFIG>"
                     "-DCOMPONENTS=${components}"
                     -P "${_KEYSCHEMA_TESTING_DIR}/KeyschemaPackageTest.cmake")
    set_tests_properties(${name} PROPERTIES
      LABELS "package"
      PASS_REGULAR_EXPRESSION "keyschema-package-test: ${mode} ok"
      # 16 to 19 s each (a configure and a build): ctest -j starts them early instead of last.
      COST 100
      TIMEOUT ${KEYSCHEMA_TEST_TIMEOUT})
  endforeach()
endfunction()

# keyschema_check_registered(<dir>...): after all registrations, every *.cpp under the given test
# directories must have been handed to one of the helpers; otherwise the CTest test
# tests.registered fails and names the forgotten files.
function(keyschema_check_registered)
  set(found "")
  foreach(dir IN LISTS ARGN)
    file(GLOB files CONFIGURE_DEPENDS "${dir}/*.cpp")
    list(APPEND found ${files})
  endforeach()
  get_property(registered GLOBAL PROPERTY KEYSCHEMA_REGISTERED_TEST_SOURCES)
  set(missing "")
  foreach(f IN LISTS found)
    if(NOT f IN_LIST registered)
      file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${f}")
      list(APPEND missing "${rel}")
    endif()
  endforeach()
  if(missing)
    string(REPLACE ";" " " missing_text "${missing}")
    message(WARNING "keyschema: test sources not registered in tests/CMakeLists.txt: ${missing_text}")
    add_test(NAME tests.registered
             COMMAND "${CMAKE_COMMAND}" -E echo "not registered in tests/CMakeLists.txt: ${missing_text}")
    set_tests_properties(tests.registered PROPERTIES WILL_FAIL FALSE FAIL_REGULAR_EXPRESSION "not registered")
  else()
    add_test(NAME tests.registered COMMAND "${CMAKE_COMMAND}" -E echo "all test sources are registered")
    set_tests_properties(tests.registered PROPERTIES PASS_REGULAR_EXPRESSION "all test sources are registered")
  endif()
  set_tests_properties(tests.registered PROPERTIES LABELS "meta")
endfunction()
