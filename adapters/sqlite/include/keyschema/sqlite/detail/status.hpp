// keyschema/sqlite/detail/status.hpp: turns a failed SQLite call into a keyschema exception.
//
// Every SQLite failure surfaces as keyschema::backend_error (locked_error for a write lock held
// by another connection past the busy timeout, limit_error for SQLITE_TOOBIG) whose
// native_call() names the SQLite function (e.g. "sqlite3_step"), whose native_code() is SQLite's
// extended result code, and whose what() carries sqlite3_errmsg() and the code's name.
//
// Thread-safety: stateless functions; sqlite3_errmsg is read from the connection that failed,
// which the caller uses alone.
#pragma once

#include <keyschema/detail/backend/disk_full.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>

#include <sqlite3.h>

#include <cerrno>
#include <optional>
#include <string>

KEYSCHEMA_BEGIN_NAMESPACE
namespace sqlite_detail {

// "<context>: <sqlite3_errmsg> (<sqlite3_errstr of the extended code>, extended code N)".
inline std::string describe(sqlite3* db, int rc, const std::string& context) {
  std::string msg = context + ": ";
  msg += db != nullptr ? ::sqlite3_errmsg(db) : ::sqlite3_errstr(rc);
  msg += " (";
  msg += ::sqlite3_errstr(rc);
  msg += ", extended code " + std::to_string(rc) + ")";
  return msg;
}

// detail::disk_full for the directory of db's main file and err; nullopt when db or its file
// name is not known, or the disk is not the cause.
inline std::optional<std::string> disk_full_of(sqlite3* db, int err) {
  const char* file = db != nullptr ? ::sqlite3_db_filename(db, "main") : nullptr;
  const std::string path = file != nullptr ? file : "";
  const std::string::size_type slash = path.rfind('/');
  if (slash == std::string::npos) return std::nullopt;
  return detail::disk_full(slash == 0 ? "/" : path.substr(0, slash), err);
}

// "disk full (N bytes free on the file system of <dir>)" for SQLITE_FULL, or "disk full" when
// db or its file name is not known.
inline std::string disk_full_text(sqlite3* db) {
  const std::optional<std::string> full = disk_full_of(db, ENOSPC);
  return full ? *full : "disk full";
}

// Throws the exception for rc (an SQLite result other than SQLITE_OK/ROW/DONE) from native_call.
// SQLITE_BUSY/LOCKED: locked_error; SQLITE_TOOBIG: limit_error; SQLITE_FULL: backend_error that
// says "disk full (N bytes free on the file system of <dir>)", as the other adapters do (dir: the
// directory of db's main file), and so does an SQLITE_IOERR_* whose errno is ENOSPC or that leaves
// less than detail::disk_full_margin bytes free; SQLITE_CORRUPT / SQLITE_NOTADB: backend_error that says the file is damaged /
// not an SQLite database.
[[noreturn]] inline void throw_sqlite_error(sqlite3* db, int rc, const std::string& context, const char* native_call) {
  std::string msg = describe(db, rc, context);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      throw locked_error(msg + "; another connection (usually another process) holds the database's write lock "
                               "longer than sqlite_options::busy_timeout",
                         native_call, rc);
    case SQLITE_TOOBIG:
      throw limit_error(msg + " [" + native_call + "]; nothing was written");
    case SQLITE_FULL:
      throw backend_error(msg + "; " + disk_full_text(db) + ": free space, then retry", native_call, rc);
    case SQLITE_NOTADB:
      throw backend_error(msg + "; the file is not an SQLite database, or its header is damaged", native_call, rc);
    case SQLITE_CORRUPT:
      throw backend_error(msg + "; the database file is damaged: restore it from a backup (the sqlite3 shell's "
                                ".recover salvages what is readable)",
                          native_call, rc);
    case SQLITE_IOERR:
      // An I/O error on a full disk (growing the -shm file: SQLITE_IOERR_SHMSIZE) says so too.
      if (const std::optional<std::string> full =
              disk_full_of(db, db != nullptr && ::sqlite3_system_errno(db) == ENOSPC ? ENOSPC : EIO)) {
        throw backend_error(msg + "; " + *full + ": free space, then retry", native_call, rc);
      }
      throw backend_error(msg, native_call, rc);
    default:
      throw backend_error(msg, native_call, rc);
  }
}

}  // namespace sqlite_detail
KEYSCHEMA_END_NAMESPACE
