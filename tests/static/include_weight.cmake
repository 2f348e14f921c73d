# tests/static/include_weight.cmake: what each of keyschema's headers brings into a translation
# unit that includes it alone (run with cmake -P by the tests static.include_weight and
# headers.standalone, tests/CMakeLists.txt).
#
# For every header under the listed roots it compiles a unit holding only `#include <header>`
# with -H (every file opened, one dot per nesting level) and checks:
#   - no header of the core (include/keyschema) brings <filesystem>, <thread>, <fstream> or
#     <condition_variable>, and no adapter header <thread> or <fstream> (an adapter's constructor
#     takes a std::filesystem::path, so <filesystem> is part of its interface), nor
#     <condition_variable> through keyschema's own headers (an engine's headers may: RocksDB's
#     do): what they need of them is done with POSIX calls (engine_probe.hpp,
#     detail/this_thread.hpp, lmdb/detail/timed_signal.hpp) or a C++20 atomic's wait and notify
#     (detail/store/wake_signal.hpp: <condition_variable> brings <stop_token>, <semaphore> and
#     std::thread's internals);
#   - the store, the memory backend, scans and every adapter header do not bring the broker
#     features (prepared.hpp, chunked.hpp, migrate.hpp and their detail headers), which a program
#     that only uses a store over one engine does not need to parse;
#   - with MODE=compile, each public header (not under a detail/ directory) compiles on its own
#     (-fsyntax-only: it includes what it uses). A detail header is only ever included through a
#     public one, each of which is compiled alone here, so a detail header that relies on what its
#     includer brought fails there as soon as that changes; compiling the 72 detail headers alone
#     too cost half of the test's 106 s of CPU. MODE=preprocess (the default) only preprocesses
#     every header, detail ones included, which is enough for the rules above.
# A failure names the header, the standard or keyschema header it brought, and the header that
# included that one.
#
# Variables: CXX (the compiler), ROOTS (directories holding keyschema/...; the first is the core's
# include directory), FLAGS (include directories and options), both lists separated by | or ;,
# WORK (a scratch directory), MODE (preprocess or compile).
cmake_minimum_required(VERSION 3.20)
string(REPLACE "|" ";" ROOTS "${ROOTS}")
string(REPLACE "|" ";" FLAGS "${FLAGS}")

if(NOT MODE)
  set(MODE preprocess)
endif()
if(MODE STREQUAL "compile")
  set(mode_flag -fsyntax-only)
else()
  set(mode_flag -E -o /dev/null)
endif()
list(GET ROOTS 0 core_root)

# Standard headers, by the path suffix -H prints (libstdc++ and libc++ alike).
set(no_core_std filesystem thread fstream condition_variable)
set(no_adapter_std thread fstream)
# Standard headers an adapter's own headers must not include (the engine's headers may).
set(no_adapter_own_std condition_variable)
# keyschema headers a store over one engine must not parse.
set(broker_features keyschema/prepared.hpp keyschema/chunked.hpp keyschema/migrate.hpp
    keyschema/detail/store/migration.hpp keyschema/detail/store/prepared_record.hpp)
set(store_path keyschema/store.hpp keyschema/memory_backend.hpp keyschema/scan.hpp keyschema/schema.hpp
    keyschema/backend.hpp keyschema/counters.hpp keyschema/indexes.hpp)

file(MAKE_DIRECTORY "${WORK}")
set(failures "")
set(checked 0)
foreach(root IN LISTS ROOTS)
  file(GLOB_RECURSE headers RELATIVE "${root}" "${root}/keyschema/*.hpp")
  list(SORT headers)
  foreach(h IN LISTS headers)
    if(MODE STREQUAL "compile" AND h MATCHES "/detail/")
      continue()
    endif()
    math(EXPR checked "${checked} + 1")
    string(MAKE_C_IDENTIFIER "${h}" stem)
    set(tu "${WORK}/${stem}.cpp")
    file(WRITE "${tu}" "#include <${h}>\n")
    execute_process(COMMAND "${CXX}" ${FLAGS} ${mode_flag} -H "${tu}"
                    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      string(APPEND failures "\n<${h}> does not compile on its own:\n${err}")
      continue()
    endif()
    # The rules that apply to this header.
    if(root STREQUAL core_root)
      set(forbidden_std ${no_core_std})
      set(forbidden_own_std "")
    else()
      set(forbidden_std ${no_adapter_std})
      set(forbidden_own_std ${no_adapter_own_std})
    endif()
    set(no_broker OFF)
    if(NOT root STREQUAL core_root OR h IN_LIST store_path)
      set(no_broker ON)
    endif()
    # Walk -H's lines, keeping the file open at each depth to name who included what.
    string(REPLACE ";" "\\;" err "${err}")
    string(REPLACE "\n" ";" lines "${err}")
    set(parents "")
    foreach(line IN LISTS lines)
      if(NOT line MATCHES "^(\\.+) (.+)$")
        continue()
      endif()
      string(LENGTH "${CMAKE_MATCH_1}" depth)
      set(file "${CMAKE_MATCH_2}")
      list(LENGTH parents n)
      while(n GREATER_EQUAL depth AND n GREATER 0)
        list(POP_BACK parents)
        list(LENGTH parents n)
      endwhile()
      set(by "<${h}>")
      if(n GREATER 0)
        list(GET parents -1 by)
      endif()
      foreach(s IN LISTS forbidden_std)
        if(file MATCHES "/${s}$")
          string(APPEND failures "\n<${h}> brings <${s}> (included by ${by})")
        endif()
      endforeach()
      # Included by the header itself or by another keyschema header, not by an engine's.
      if(n EQUAL 0 OR by MATCHES "/include/keyschema/")
        foreach(s IN LISTS forbidden_own_std)
          if(file MATCHES "/${s}$")
            string(APPEND failures "\n<${h}> brings <${s}> (included by ${by})")
          endif()
        endforeach()
      endif()
      if(no_broker)
        foreach(f IN LISTS broker_features)
          if(file MATCHES "/${f}$")
            string(APPEND failures "\n<${h}> brings the broker feature <${f}> (included by ${by})")
          endif()
        endforeach()
      endif()
      list(APPEND parents "${file}")
    endforeach()
  endforeach()
endforeach()

if(failures)
  message(FATAL_ERROR "include_weight (${MODE}): ${checked} headers checked; failures:${failures}")
endif()
message(STATUS "include_weight (${MODE}): ${checked} headers checked")
