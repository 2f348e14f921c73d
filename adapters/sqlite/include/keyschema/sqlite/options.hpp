// keyschema/sqlite/options.hpp: how keyschema::sqlite_backend opens and tunes an SQLite database.
//
// sqlite_options is a plain aggregate handed to the sqlite_backend constructor (see
// docs/backends/sqlite.md for what each field maps onto). The options are read once, when the
// database is opened; changing them afterwards has no effect on an open backend.
//
// Thread-safety: a plain value type.
#pragma once

#include <keyschema/detail/config.hpp>

#include <chrono>
#include <cstddef>

KEYSCHEMA_BEGIN_NAMESPACE

// The file sqlite_backend keeps in its database directory (with SQLite's -wal and -shm beside it).
inline constexpr const char* sqlite_file_name = "keyschema.sqlite3";

struct sqlite_options {
  // Create the directory (and missing parents) and an empty database when `path` holds none.
  // false: opening a directory without keyschema.sqlite3 fails (backend_error "sqlite3_open_v2").
  bool create_if_missing = true;

  // How long a write (or begin_write()) waits for another process's write transaction before it
  // fails with locked_error (sqlite3_busy_timeout). Readers never wait for writers (WAL mode).
  std::chrono::milliseconds busy_timeout{5000};

  // PRAGMA quick_check when a database file of at most this many bytes is opened: a database
  // whose b-tree pages are damaged (a truncated file, overwritten pages, broken page links) is
  // refused with backend_error (SQLITE_CORRUPT) at open instead of failing later in a read. It
  // reads every page once: about 0.8 s for a 105 MiB file on the reference machine (see
  // docs/backends/sqlite.md), so larger files are not checked by default; a read that reaches a
  // damaged page still throws. 0: never check; SIZE_MAX: always. SQLite keeps no checksums of
  // its pages: bytes changed inside a value stay undetected either way.
  std::size_t quick_check_max_bytes = std::size_t{64} << 20;

  // SQLite's page cache per connection (PRAGMA cache_size), in bytes. Each pooled reader
  // connection and the writer connection has its own.
  std::size_t cache_bytes = std::size_t{8} << 20;

  // Pooled reader connections kept open for reuse (snapshots, and the get()s and cursors that
  // have no thread reader, see thread_readers); more are opened while more readers run at once
  // and closed when they end beyond this number.
  std::size_t idle_readers = 4;

  // Threads that keep a reader connection of their own (with its page cache) for get() and
  // cursors without a snapshot: a thread claims one on its first read and keeps it until it
  // exits; then the connection stays open for the next thread. Threads beyond this number (and
  // a thread's reads while one of its cursors holds its connection) use the pooled connections.
  // Each such connection is closed when the backend is destroyed. 0: every read uses the pool.
  std::size_t thread_readers = 64;

  // The largest key plus value of one write_batch operation this backend accepts; larger ones
  // make write() throw limit_error. Values above what SQLite stores in one row
  // (sqlite3_limit(SQLITE_LIMIT_LENGTH), 10^9 bytes in Debian's build, less a small record
  // header allowance) are lowered to it.
  std::size_t max_entry_bytes = static_cast<std::size_t>(-1);
};

KEYSCHEMA_END_NAMESPACE
