# KeyschemaLevelDB.cmake: locate LevelDB and make `leveldb::leveldb` usable.
#
# Used by keyschema's own build and by the installed keyschema-config.cmake, so both find LevelDB
# the same way. include() it; afterwards `keyschema_leveldb_FOUND` is TRUE or FALSE and, when TRUE,
# the imported target `leveldb::leveldb` links.
#
# LevelDB's own CMake package (leveldbConfig.cmake, shipped by Debian's libleveldb-dev and by
# LevelDB's upstream install) has two gaps this file closes:
#   * its link interface names `Threads::Threads` but it never calls find_package(Threads);
#   * its link interface names a bare `snappy`, which needs the snappy development symlink
#     (libsnappy.so) even though the shared libleveldb.so already records its own dependency on
#     libsnappy.so.1. When leveldb::leveldb is a shared library and no snappy library is found, an
#     empty `snappy` interface target stands in for it.
#
# Inputs (optional): keyschema_leveldb_QUIET - when TRUE, say nothing if LevelDB is missing.

if(TARGET leveldb::leveldb)
  set(keyschema_leveldb_FOUND TRUE)
  return()
endif()

set(keyschema_leveldb_FOUND FALSE)

find_package(Threads QUIET)
if(NOT TARGET Threads::Threads)
  if(NOT keyschema_leveldb_QUIET)
    message(STATUS "keyschema: LevelDB needs a threads library and none was found")
  endif()
  return()
endif()

find_package(leveldb CONFIG QUIET)
if(NOT TARGET leveldb::leveldb)
  if(NOT keyschema_leveldb_QUIET)
    message(STATUS "keyschema: LevelDB not found (Debian: apt-get install libleveldb-dev)")
  endif()
  return()
endif()

if(NOT TARGET snappy)
  get_target_property(_keyschema_leveldb_type leveldb::leveldb TYPE)
  get_target_property(_keyschema_leveldb_deps leveldb::leveldb INTERFACE_LINK_LIBRARIES)
  if(_keyschema_leveldb_deps AND "snappy" IN_LIST _keyschema_leveldb_deps)
    find_library(KEYSCHEMA_SNAPPY_LIBRARY NAMES snappy)
    mark_as_advanced(KEYSCHEMA_SNAPPY_LIBRARY)
    if(NOT KEYSCHEMA_SNAPPY_LIBRARY AND _keyschema_leveldb_type STREQUAL "SHARED_LIBRARY")
      # The shared libleveldb carries its own DT_NEEDED entry for libsnappy.so.1.
      add_library(snappy INTERFACE IMPORTED)
    endif()
  endif()
  unset(_keyschema_leveldb_type)
  unset(_keyschema_leveldb_deps)
endif()

set(keyschema_leveldb_FOUND TRUE)
