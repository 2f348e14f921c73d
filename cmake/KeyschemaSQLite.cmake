# KeyschemaSQLite.cmake: locate SQLite and define the imported target `SQLite::SQLite3`.
#
# Used by keyschema's own build and by the installed keyschema-config.cmake, so both find SQLite
# the same way: CMake's own FindSQLite3 module (sqlite3.h and libsqlite3; set SQLite3_INCLUDE_DIR
# and SQLite3_LIBRARY to override). include() it; afterwards `keyschema_sqlite_FOUND` is TRUE or
# FALSE. keyschema::sqlite needs SQLite 3.37 or later (STRICT tables).
#
# Inputs (optional): keyschema_sqlite_QUIET - when TRUE, say nothing if SQLite is missing.

if(TARGET SQLite::SQLite3)
  set(keyschema_sqlite_FOUND TRUE)
  return()
endif()

set(keyschema_sqlite_FOUND FALSE)
find_package(SQLite3 QUIET)
if(NOT SQLite3_FOUND OR NOT TARGET SQLite::SQLite3)
  if(NOT keyschema_sqlite_QUIET)
    message(STATUS "keyschema: SQLite not found (Debian: apt-get install libsqlite3-dev)")
  endif()
  return()
endif()
if(SQLite3_VERSION VERSION_LESS 3.37)
  if(NOT keyschema_sqlite_QUIET)
    message(STATUS "keyschema: SQLite ${SQLite3_VERSION} is older than 3.37 (STRICT tables); keyschema::sqlite disabled")
  endif()
  return()
endif()
set(keyschema_sqlite_FOUND TRUE)
