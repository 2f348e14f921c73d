# KeyschemaLMDB.cmake: locate LMDB and define the imported target `LMDB::LMDB`.
#
# Used by keyschema's own build and by the installed keyschema-config.cmake, so both find LMDB the
# same way. include() it; afterwards `keyschema_lmdb_FOUND` is TRUE or FALSE and, when TRUE,
# `LMDB::LMDB` carries lmdb.h's include directory and the library.
#
# LMDB ships no CMake package, only lmdb.pc. pkg-config is used for hints when it is available;
# the header and library are then located with find_path/find_library so a machine without
# pkg-config, or with LMDB in a custom prefix listed in CMAKE_PREFIX_PATH, works too. The cache
# variables KEYSCHEMA_LMDB_INCLUDE_DIR and KEYSCHEMA_LMDB_LIBRARY override the search.
#
# Inputs (optional): keyschema_lmdb_QUIET - when TRUE, say nothing if LMDB is missing.

if(TARGET LMDB::LMDB)
  set(keyschema_lmdb_FOUND TRUE)
  return()
endif()

set(keyschema_lmdb_FOUND FALSE)

find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(_KEYSCHEMA_PC_LMDB QUIET lmdb)
endif()

find_path(KEYSCHEMA_LMDB_INCLUDE_DIR NAMES lmdb.h HINTS ${_KEYSCHEMA_PC_LMDB_INCLUDE_DIRS})
find_library(KEYSCHEMA_LMDB_LIBRARY NAMES lmdb liblmdb HINTS ${_KEYSCHEMA_PC_LMDB_LIBRARY_DIRS})
mark_as_advanced(KEYSCHEMA_LMDB_INCLUDE_DIR KEYSCHEMA_LMDB_LIBRARY)

if(NOT KEYSCHEMA_LMDB_INCLUDE_DIR OR NOT KEYSCHEMA_LMDB_LIBRARY)
  if(NOT keyschema_lmdb_QUIET)
    message(STATUS "keyschema: LMDB not found (Debian: apt-get install liblmdb-dev)")
  endif()
  return()
endif()

add_library(LMDB::LMDB UNKNOWN IMPORTED)
set_target_properties(LMDB::LMDB PROPERTIES
  IMPORTED_LOCATION "${KEYSCHEMA_LMDB_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${KEYSCHEMA_LMDB_INCLUDE_DIR}")
if(KEYSCHEMA_LMDB_LIBRARY MATCHES "\\${CMAKE_STATIC_LIBRARY_SUFFIX}$")
  # A static liblmdb does not record its own dependency on the threads library.
  find_package(Threads QUIET)
  if(TARGET Threads::Threads)
    set_property(TARGET LMDB::LMDB APPEND PROPERTY INTERFACE_LINK_LIBRARIES Threads::Threads)
  endif()
endif()

set(keyschema_lmdb_FOUND TRUE)
