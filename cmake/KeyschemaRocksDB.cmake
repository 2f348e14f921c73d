# KeyschemaRocksDB.cmake: locate RocksDB and define the imported target `RocksDB::RocksDB`.
#
# Used by keyschema's own build and by the installed keyschema-config.cmake, so both find RocksDB
# the same way. include() it; afterwards `keyschema_rocksdb_FOUND` is TRUE or FALSE and, when TRUE,
# `RocksDB::RocksDB` carries rocksdb/db.h's include directory and the shared library.
#
# RocksDB's own CMake package (RocksDBConfig.cmake, shipped by Debian's librocksdb-dev) describes
# the static library with every compression library and gflags as dependencies, which a consumer
# would all have to find. The shared librocksdb.so records its own dependencies, so the header and
# the library are located with find_path/find_library instead (a custom prefix listed in
# CMAKE_PREFIX_PATH works too). The cache variables KEYSCHEMA_ROCKSDB_INCLUDE_DIR and
# KEYSCHEMA_ROCKSDB_LIBRARY override the search.
#
# Inputs (optional): keyschema_rocksdb_QUIET - when TRUE, say nothing if RocksDB is missing.

if(TARGET RocksDB::RocksDB)
  set(keyschema_rocksdb_FOUND TRUE)
  return()
endif()

set(keyschema_rocksdb_FOUND FALSE)

find_path(KEYSCHEMA_ROCKSDB_INCLUDE_DIR NAMES rocksdb/db.h)
find_library(KEYSCHEMA_ROCKSDB_LIBRARY NAMES rocksdb librocksdb)
mark_as_advanced(KEYSCHEMA_ROCKSDB_INCLUDE_DIR KEYSCHEMA_ROCKSDB_LIBRARY)

if(NOT KEYSCHEMA_ROCKSDB_INCLUDE_DIR OR NOT KEYSCHEMA_ROCKSDB_LIBRARY)
  if(NOT keyschema_rocksdb_QUIET)
    message(STATUS "keyschema: RocksDB not found (Debian: apt-get install librocksdb-dev)")
  endif()
  return()
endif()

find_package(Threads QUIET)
add_library(RocksDB::RocksDB UNKNOWN IMPORTED)
set_target_properties(RocksDB::RocksDB PROPERTIES
  IMPORTED_LOCATION "${KEYSCHEMA_ROCKSDB_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${KEYSCHEMA_ROCKSDB_INCLUDE_DIR}")
if(TARGET Threads::Threads)
  set_property(TARGET RocksDB::RocksDB APPEND PROPERTY INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()

set(keyschema_rocksdb_FOUND TRUE)
