# tests/static/umbrella_instantiations.cmake: what a translation unit that only includes
# <keyschema/keyschema.hpp> makes the compiler instantiate (run with cmake -P by the test
# static.umbrella_instantiations, tests/CMakeLists.txt; GCC only).
#
# keyschema's helpers that use the standard containers (the memory backend's members, the write
# overlay, record formats, error texts) are templates, so that a unit instantiates their code only
# when it calls them (docs/performance.md, "Compile time"). A non-template inline function that
# calls one of them, or a non-template class holding that code, instantiates it in every unit that
# includes the header. This compiles a unit holding only the umbrella header with
# -fkeep-inline-functions (every inline function the unit defines or instantiates is emitted) and
# fails when the object holds a function of std::map / std::set (std::_Rb_tree), std::shared_ptr or
# std::make_shared's control block: none of these is instantiated by the umbrella header alone
# unless some non-template code of keyschema's uses them. A failure lists those functions.
#
# Variables: CXX (g++), NM (nm), FLAGS (include directories and options, separated by | or ;),
# WORK (a scratch directory).
cmake_minimum_required(VERSION 3.20)
string(REPLACE "|" ";" FLAGS "${FLAGS}")
file(MAKE_DIRECTORY "${WORK}")
set(tu "${WORK}/umbrella.cpp")
set(obj "${WORK}/umbrella.o")
file(WRITE "${tu}" "#include <keyschema/keyschema.hpp>\n")
execute_process(COMMAND "${CXX}" ${FLAGS} -O0 -fkeep-inline-functions -c "${tu}" -o "${obj}"
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "umbrella_instantiations: <keyschema/keyschema.hpp> does not compile:\n${err}")
endif()
execute_process(COMMAND "${NM}" -C "${obj}" RESULT_VARIABLE rc OUTPUT_VARIABLE symbols ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "umbrella_instantiations: ${NM} failed:\n${err}")
endif()
string(REPLACE ";" "\\;" symbols "${symbols}")
string(REPLACE "\n" ";" symbols "${symbols}")
set(found "")
set(count 0)
foreach(line IN LISTS symbols)
  if(line MATCHES " [TW] (.*(std::_Rb_tree<|std::__shared_ptr<|std::_Sp_counted_ptr_inplace<).*)$")
    math(EXPR count "${count} + 1")
    if(count LESS_EQUAL 20)
      string(APPEND found "\n  ${CMAKE_MATCH_1}")
    endif()
  endif()
endforeach()
if(count GREATER 0)
  message(FATAL_ERROR "umbrella_instantiations: including <keyschema/keyschema.hpp> alone instantiates "
                      "${count} functions of std::map/std::set/std::shared_ptr (a non-template inline function or "
                      "class of keyschema's uses them: make it a template, see docs/performance.md); the first:${found}")
endif()
message(STATUS "umbrella_instantiations: no std::map/std::set/std::shared_ptr code instantiated")
