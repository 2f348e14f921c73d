// keyschema/sqlite.hpp: keyschema::sqlite_backend, the SQLite storage adapter.
//
// sqlite_backend meets the byte-level contract of <keyschema/backend.hpp> on one SQLite database:
// the directory `path` holding keyschema.sqlite3 (and SQLite's keyschema.sqlite3-wal and -shm
// beside it while it is open). Entries live in one table (one more per placement, see below)
//
//   CREATE TABLE kv (k BLOB PRIMARY KEY NOT NULL, v BLOB NOT NULL) STRICT, WITHOUT ROWID
//
// a b-tree keyed by k. SQLite compares BLOBs with memcmp, the shorter first on a common prefix:
// keyschema's unsigned byte order, so cursors are range scans of that b-tree.
//
//   keyschema::sqlite_backend db("/var/lib/broker/store");
//   keyschema::write_batch b;
//   b.put("k", "v");
//   db.write(b, {.sync = true});
//
// Mapping onto SQLite (WAL journal mode: readers never block the writer nor wait for it):
//   - write()        one BEGIN IMMEDIATE ... COMMIT transaction per batch on the backend's one
//                    writer connection (INSERT OR REPLACE / DELETE, prepared once).
//   - snapshot()     a read transaction (BEGIN and a first read) on a reader connection taken
//                    from a pool, shared by every copy and ended when the last one goes.
//   - cursor()       one SELECT ... ORDER BY k [DESC] over the snapshot's connection, or over the
//                    calling thread's reader connection (below), held until the cursor ends (a
//                    single statement reads one consistent state); one per placement table the
//                    range reaches, merged, in one read transaction.
//   - get()          a prepared point SELECT on the snapshot's connection, or on the calling
//                    thread's reader connection: each thread keeps one reader connection per
//                    backend (sqlite_options::thread_readers of them; more threads, or a thread
//                    whose cursor holds its own, use pooled connections), as native SQLite code
//                    keeps a connection per thread; see "Thread-safety" below.
//   - begin_write()  BEGIN IMMEDIATE on the writer connection, held until commit() or destruction:
//                    SQLite's write lock serializes it against writers of every process, so
//                    keyschema::store's transactions are serializable across processes.
//   - write(b, o, guards), commit(b, o, guards)  backend_with_write_guards: a point SELECT of
//                    each guarded key inside the BEGIN IMMEDIATE transaction, before the batch
//                    (none when the conditions are those of the last guarded commit and the
//                    file's data version, SQLITE_FCNTL_DATA_VERSION, has not changed since).
// Durability: a commit is durable by default (PRAGMA synchronous = FULL: the -wal file is
// fsync'ed before COMMIT returns). write_options{.sync = false} runs that one commit with
// synchronous = NORMAL: it is not synced (a later synced commit or checkpoint syncs it). A crash
// of the process loses nothing either way; a power loss or OS crash may lose the unsynced commits
// at the end of the log, all of them after the first one lost, and never corrupts the database.
// See docs/backends/sqlite.md.
//
// Other processes may open the same database at the same time (SQLite's locks); within one
// process a database is open in at most one sqlite_backend (a second one raises locked_error).
//
// Placement (keyschema::placed, backend_with_placements in <keyschema/backend.hpp>): each
// placement is a table of its own, "kv_<placement>", of kv's shape; the default placement (every
// unplaced keyspace and the store's own records) stays in kv, so a database written without
// placements opens unchanged. place() creates the missing tables; a key goes to the table of the
// longest placed prefix it starts with. write() and begin_write() stay one SQLite transaction over
// every table, a snapshot is one read transaction over all of them, and a cursor whose range
// reaches several placements merges one SELECT per table in key order, both directions. An
// object named kv_... that is not a placement table (another name or shape) makes the constructor
// refuse the file (schema_error). See docs/backends/sqlite.md.
//
// Thread-safety: get, snapshot, cursor and limits may be called concurrently from any number of
// threads, also while other threads are inside write(); write() and begin_write() are serialized
// by a mutex. A write_transaction_type belongs to the thread that began it. Copies of one
// snapshot may be used from different threads at the same time (a mutex of the snapshot
// serializes their SQLite calls). A single cursor or snapshot object needs external
// synchronization. Construction, moves and destruction need exclusive access.
// Reader connections (every one opened SQLITE_OPEN_NOMUTEX and used by one thread at a time):
//   - a thread's own (get() and cursors without a snapshot): claimed on the thread's first read
//     of this backend and kept, with its statements and page cache, so its get()s take no lock
//     that other readers take; a cursor holds it until destroyed (on any thread), and the
//     thread's reads meanwhile use a pooled connection (they must not read inside the cursor's
//     statement). When the thread exits the connection stays open for the next thread to claim;
//     all are closed by the backend's destructor, also while threads that used them still live
//     (keyschema/sqlite/detail/thread_reader.hpp). At most sqlite_options::thread_readers exist.
//   - pooled ones (snapshots, and reads beyond those): sqlite_options::idle_readers are kept.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/backend/placement.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/engine_probe.hpp>
#include <keyschema/error.hpp>
#include <keyschema/sqlite/cursor.hpp>
#include <keyschema/sqlite/detail/backend_state.hpp>
#include <keyschema/sqlite/detail/connection.hpp>
#include <keyschema/sqlite/detail/open_check.hpp>
#include <keyschema/detail/backend/open_registry.hpp>
#include <keyschema/sqlite/detail/status.hpp>
#include <keyschema/sqlite/options.hpp>
#include <keyschema/sqlite/snapshot.hpp>
#include <keyschema/sqlite/write_transaction.hpp>
#include <keyschema/write_batch.hpp>

#include <sqlite3.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE

class sqlite_backend {
  using state = sqlite_detail::backend_state;

 public:
  using snapshot_type = sqlite_snapshot;
  using cursor_type = detail::placement_cursor<sqlite_cursor>;  // <keyschema/sqlite/cursor.hpp>, merged over placements

  // SQLite's write lock held across reads and one commit (keyschema/sqlite/write_transaction.hpp).
  using write_transaction_type = sqlite_write_transaction;

  // Opens (and with options.create_if_missing creates) the database in directory `path`.
  // Errors (nothing was created or changed in a refused file in each case):
  //   wrong_engine_error, native_call "keyschema::probe_engines": `path` holds another engine's
  //     database (LevelDB, LMDB, RocksDB). Remedy: open it with that engine's adapter.
  //   backend_error "std::filesystem::create_directories": the directory cannot be created
  //     (a path component is a file, no permission, read-only file system).
  //   backend_error "statvfs" EROFS (30): `path` is on a read-only file system ("Read-only file
  //     system"). Remedy: a writable location (SQLite writes its write-ahead log even to read).
  //   backend_error "std::filesystem::status": `path` is a file, not a directory (sqlite_backend
  //     takes the directory holding keyschema.sqlite3).
  //   schema_error: the directory holds another SQLite database but no keyschema.sqlite3, or
  //     keyschema.sqlite3 is an SQLite database without keyschema's kv table (what() lists the
  //     tables and indexes found, or the kv table's CREATE statement). Remedy: another path.
  //   schema_error: keyschema.sqlite3 holds an object named kv_... (any letter case) that is not a
  //     placement table: not a table, its suffix no placement name ([a-z0-9_-], 1 to 64
  //     characters), or a shape other than kv's (what() names it and its CREATE statement).
  //     Remedy: rename that object (kv_ names are keyschema's) or open another path.
  //   locked_error "sqlite3_open_v2": the database is open in another sqlite_backend of this
  //     process. Remedy: share that backend (it is thread-safe) or destroy it first.
  //   locked_error "sqlite3_step"/"sqlite3_exec": another process holds a lock needed to set the
  //     database up (WAL mode, creating the table) for longer than busy_timeout.
  //   backend_error "sqlite3_open_v2" SQLITE_CANTOPEN (14): no keyschema.sqlite3 and
  //     create_if_missing is false, or it cannot be opened (permissions).
  //   backend_error "sqlite3_step"/"sqlite3_prepare_v3" SQLITE_NOTADB (26): keyschema.sqlite3 is
  //     not an SQLite database; SQLITE_CORRUPT (11): it is damaged (found by reading its schema,
  //     or by PRAGMA quick_check, see sqlite_options::quick_check_max_bytes). Remedy: restore the file
  //     from a backup; the sqlite3 shell's .recover salvages what is readable.
  //   backend_error "sqlite3_step" SQLITE_IOERR_* / SQLITE_FULL: the file cannot be read or
  //     written.
  //   std::bad_alloc.
  explicit sqlite_backend(const std::filesystem::path& path, const sqlite_options& options = {})
      : s_(std::make_unique<state>()) {
    namespace fs = std::filesystem;
    s_->path = path.string();
    std::string where = "keyschema::sqlite_backend: opening " + s_->path;
    require_engine(path, storage_engine::sqlite, "keyschema::sqlite_backend");
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) {
      throw backend_error(where + ": it is a file; sqlite_backend opens the directory that holds " +
                              sqlite_file_name,
                          "std::filesystem::status", ENOTDIR);
    }
    if (options.create_if_missing) {
      fs::create_directories(path, ec);
      if (ec) {
        throw backend_error(where + ": cannot create the database directory: " + ec.message(),
                            "std::filesystem::create_directories", ec.value());
      }
    }
    // On a read-only file system SQLite only says "unable to open database file" (a database in
    // WAL mode writes its -shm and -wal files even to be read): say what it is, as the other
    // adapters do, before anything is opened.
    if (struct ::statvfs vfs{}; ::statvfs(s_->path.c_str(), &vfs) == 0 && (vfs.f_flag & ST_RDONLY) != 0) {
      throw backend_error(where + ": Read-only file system; sqlite_backend opens its database read-write (SQLite's "
                                  "write-ahead log is written even to read). Open it where it can be written",
                          "statvfs", EROFS);
    }
    const fs::path file = path / sqlite_file_name;
    s_->file = file.string();
    if (!fs::exists(file, ec)) {
      for (const engine_evidence& e : probe_engines(path)) {
        if (e.engine == storage_engine::sqlite) {
          throw schema_error(where + ": the directory holds the SQLite database " + e.file + " but no " +
                             sqlite_file_name + "; it is another program's database. Nothing was created; open "
                             "another path");
        }
      }
    }
    const fs::path canonical = fs::weakly_canonical(path, ec);
    auto token = detail::open_registration::acquire(ec ? s_->path : canonical.string());
    if (!token) {
      throw locked_error(where + ": it is already open in another keyschema::sqlite_backend of this process; share "
                                 "that backend (it is thread-safe) or destroy it first",
                         "sqlite3_open_v2", SQLITE_BUSY);
    }
    s_->registration = std::move(*token);
    where = "keyschema::sqlite_backend: opening " + s_->file;

    const int flags = SQLITE_OPEN_READWRITE | (options.create_if_missing ? SQLITE_OPEN_CREATE : 0);
    s_->writer = std::make_unique<sqlite_detail::connection>(s_->file, flags, options.busy_timeout, options.cache_bytes,
                                                             where, &s_->tables);
    sqlite_detail::connection& w = *s_->writer;
    const bool empty = sqlite_detail::check_file_shape(w, s_->file, where);
    if (!empty) {
      // The placements' tables the database holds: a raw backend's full-range cursors read them.
      for (const std::string& name : sqlite_detail::placement_tables(w, s_->file, where)) {
        s_->router.add(name);
        s_->tables.push_back(sqlite_detail::quoted_placement_table(name));
      }
      const auto bytes = fs::file_size(file, ec);
      if (!ec && bytes <= options.quick_check_max_bytes) sqlite_detail::quick_check(w, s_->file, where);
    }
    const auto mode = sqlite_detail::query_rows(w, "PRAGMA journal_mode = WAL", where);
    if (mode.empty() || mode[0].empty() || mode[0][0] != "wal") {
      throw backend_error(where + ": SQLite did not switch " + s_->file + " to WAL journal mode (it reports '" +
                              (mode.empty() || mode[0].empty() ? std::string("?") : mode[0][0]) +
                              "'); another connection may hold it in exclusive locking mode",
                          "sqlite3_step", SQLITE_BUSY);
    }
    w.exec("PRAGMA synchronous = FULL", where);
    if (empty) {
      w.run(sqlite_detail::connection::begin_immediate_stmt, where);
      try {
        w.exec(std::string(sqlite_detail::create_kv_sql), where);
        w.run(sqlite_detail::connection::commit_stmt, where);
      } catch (...) {
        w.rollback_quietly();
        throw;
      }
    }
    const auto length = static_cast<std::size_t>(::sqlite3_limit(w.db(), SQLITE_LIMIT_LENGTH, -1));
    s_->max_entry = std::min(options.max_entry_bytes, length > 64 ? length - 64 : length);
    s_->readers.emplace(s_->file, options.busy_timeout, options.cache_bytes, options.idle_readers,
                        "keyschema::sqlite_backend: reading " + s_->path, &s_->tables);
    s_->register_thread_readers(options.thread_readers);
  }

  // Moving transfers the open database; snapshots and cursors taken before the move stay valid.
  // A moved-from backend may only be destroyed or assigned to.
  sqlite_backend(sqlite_backend&&) noexcept = default;
  sqlite_backend& operator=(sqlite_backend&&) noexcept = default;
  sqlite_backend(const sqlite_backend&) = delete;
  sqlite_backend& operator=(const sqlite_backend&) = delete;

  // Closes every connection. The last connection to the database (in any process) checkpoints
  // the write-ahead log into keyschema.sqlite3 and deletes the -wal and -shm files.
  // REQUIRES: every snapshot, cursor and write transaction of this backend has been destroyed.
  ~sqlite_backend() = default;

  // Reads key in *snap (the latest committed state when snap is nullptr) into value, on the
  // snapshot's connection or the calling thread's reader connection (see the file comment).
  // Returns false when the key does not exist.
  // Errors (what() names the path): backend_error "sqlite3_step" (SQLITE_CORRUPT: a damaged
  //   page; SQLITE_IOERR_*); backend_error "sqlite3_prepare_v3" (the kv table was dropped by
  //   another program); backend_error "sqlite3_open_v2" when a new reader connection cannot be
  //   opened.
  // REQUIRES: snap, when not null, comes from this backend.
  bool get(std::string_view key, std::string& value, const snapshot_type* snap) const {
    const sqlite_detail::lazy_where where{"keyschema::sqlite_backend: get from ", &s_->path};
    if (snap != nullptr) {
      std::lock_guard lk(snap->v_->mu);
      return s_->lookup(*snap->v_->conn, key, value, where);
    }
    auto conn = s_->acquire_reader();
    // A key of a keyspace being moved (ks::migrate) is looked up in two tables: in one read
    // transaction, ended (rolled back) when the lease ends.
    if (s_->moving(key)) begin_read(*conn, std::string(where));
    return s_->lookup(*conn, key, value, where);
  }

  // Applies batch atomically (one SQLite transaction): a reader sees all of it or none, and
  // after a crash either all or none of it is recovered. Later operations on the same key win.
  // With opts.sync (the default) the -wal file is fsync'ed before write() returns, which also
  // makes every earlier commit durable; with {.sync = false} it is not (see the file comment).
  // An empty batch with opts.sync only syncs earlier unsynced commits; without, it does nothing.
  // Waits for write transactions of this and other processes (at most busy_timeout for another
  // process's).
  // Errors (nothing of batch was applied in each case):
  //   limit_error: an operation's key plus value is larger than limits().max_entry_bytes.
  //   locked_error "sqlite3_step": another process held the write lock longer than
  //     sqlite_options::busy_timeout. Remedy: retry; find the process holding it.
  //   backend_error "sqlite3_step": SQLITE_FULL (the disk is full: what() says so),
  //     SQLITE_IOERR_* (a failed write or fsync), SQLITE_CORRUPT (a damaged page reached while
  //     updating the b-tree). Remedy: fix the disk and retry; a damaged file, see the constructor.
  //   std::bad_alloc.
  void write(const write_batch& batch, const write_options& opts) { static_cast<void>(write(batch, opts, {})); }

  // As write(batch, opts), but first checks every condition of guards (a key holds given bytes,
  // or is absent; backend_with_write_guards) with a SELECT inside the BEGIN IMMEDIATE
  // transaction, under SQLite's write lock. Returns false, writing nothing, when one does not
  // hold; true when batch was committed. An empty batch checks nothing (and returns true).
  // Errors: as write(batch, opts).
  bool write(const write_batch& batch, const write_options& opts, write_guards guards) {
    if (batch.empty() && !opts.sync) return true;
    s_->check_limits(batch);
    std::lock_guard lk(s_->write_mu);
    if (batch.empty()) {
      s_->sync_log();
      return true;
    }
    s_->set_sync(opts.sync);
    s_->begin_immediate();
    try {
      if (!s_->guards_hold(guards)) {
        s_->writer->rollback_quietly();
        return false;
      }
      s_->apply(batch);
      s_->writer->run(sqlite_detail::connection::commit_stmt, s_->where_write(batch));
    } catch (...) {
      s_->writer->rollback_quietly();
      throw;
    }
    s_->remember_guards(guards, batch);
    if (opts.sync) s_->unsynced = false;
    else s_->unsynced = true;
    return true;
  }

  // Begins a write transaction (see write_transaction_type): waits for this backend's other
  // writers, then for SQLite's write lock (at most busy_timeout for another process's).
  // Errors: locked_error "sqlite3_step" (the lock was not granted in time);
  //   backend_error "sqlite3_step"/"sqlite3_exec" (SQLITE_IOERR_*, SQLITE_CORRUPT).
  write_transaction_type begin_write() { return begin_write(write_options{.sync = true}); }
  // As begin_write(), for a transaction whose commit will be made with opts: it commits at the
  // synchronous level they ask for ({.sync = false}: NORMAL, the log not synced; see
  // write_transaction_type). Errors: as begin_write().
  write_transaction_type begin_write(const write_options& opts) {
    std::unique_lock wl(s_->write_mu);
    return write_transaction_type(s_.get(), std::move(wl), opts.sync);
  }

  // A view of the latest committed state. Copies share it; it ends when the last copy (and the
  // last cursor over it) is destroyed. Keep it short-lived: while it is open SQLite cannot
  // checkpoint past it and the -wal file grows.
  // Errors: backend_error "sqlite3_open_v2"/"sqlite3_step". REQUIRES: every copy is destroyed
  // before the backend.
  snapshot_type snapshot() const {
    const std::string where = "keyschema::sqlite_backend: taking a snapshot of " + s_->path;
    auto conn = s_->readers->acquire();
    begin_read(*conn, where);
    return snapshot_type(std::make_shared<sqlite_detail::view_state>(std::move(conn), true, &s_->path));
  }

  // A cursor over the keys k with range.lower <= k < range.upper (no upper bound when
  // range.upper is empty), ascending, or descending when range.reverse. Reads *snap (keeping a
  // copy of it alive), or the state its own statement sees from its first step (on a pooled
  // connection it holds until destroyed: the calling thread's reader connection when no other
  // cursor holds it, else a pooled one) when snap is nullptr. The bounds are copied.
  // With placements (keyschema::placed): one SELECT per placement table the range reaches, all
  // in one read transaction (the snapshot's, or one begun now on the pooled connection), merged
  // in key order; a range within one placement (a store's scan of a keyspace) reads one table.
  // Errors: as sqlite_cursor::next() (the first row is read here); backend_error
  // "sqlite3_open_v2"/"sqlite3_prepare_v3"; std::bad_alloc.
  // REQUIRES: the cursor is destroyed before the backend; snap, when not null, comes from it.
  cursor_type cursor(const key_range& range, const snapshot_type* snap) const {
    if (s_->single()) [[likely]] {
      std::shared_ptr<sqlite_detail::view_state> v =
          snap != nullptr ? snap->v_
                          : std::make_shared<sqlite_detail::view_state>(s_->acquire_reader(), false, &s_->path);
      sqlite_detail::connection& c = *v->conn;
      return cursor_type(sqlite_cursor(c, std::move(v), range, &s_->path));
    }
    const std::vector<std::size_t> on = s_->router.reached(range);
    std::shared_ptr<sqlite_detail::view_state> v;
    if (snap != nullptr) {
      v = snap->v_;
    } else {
      auto conn = s_->acquire_reader();
      // Several tables: their SELECTs read one state only inside one read transaction.
      if (on.size() > 1) begin_read(*conn, "keyschema::sqlite_backend: reading " + s_->path + " through a cursor");
      v = std::make_shared<sqlite_detail::view_state>(std::move(conn), on.size() > 1, &s_->path);
    }
    sqlite_detail::connection& c = *v->conn;
    return sqlite_cursor::merged(c, v, range, &s_->path, on);
  }

  // Routes the keys of placed keyspaces (backend_with_placements, <keyschema/backend.hpp>): each
  // placement is a table of its own, "kv_<placement>" (quoted as an identifier), of kv's shape;
  // the default placement stays kv. Missing tables are created here, in one BEGIN IMMEDIATE
  // transaction on the writer connection. Afterwards a write() or a write transaction stays one
  // SQLite transaction over every table, a snapshot one read transaction, and a cursor reaching
  // several placements merges one SELECT per table (see docs/backends/sqlite.md).
  // REQUIRES: nothing else uses the backend meanwhile (keyschema::store calls it from its
  // constructor, ks::migrate before it begins).
  // Errors (nothing was created and the routes are unchanged in every case):
  //   usage_error - a route names a placement that is not 1 to 64 characters of [a-z0-9_-]
  //     (what() names it). keyschema::placed checks its names at compile time; this catches
  //     routes made by hand. Remedy: rename the placement.
  //   locked_error "sqlite3_step" - another process held SQLite's write lock longer than
  //     sqlite_options::busy_timeout. Remedy: retry; find the process holding it.
  //   backend_error "sqlite3_exec"/"sqlite3_step" - creating a table or committing failed
  //     (SQLITE_FULL: the disk is full, what() says so; SQLITE_IOERR_*; SQLITE_CORRUPT).
  //     what() names the placement and its table.
  //   std::bad_alloc.
  void place(std::span<const placement_route> routes) {
    const std::vector<std::string> missing = detail::missing_placements(s_->router, routes);
    for (const std::string& name : missing) {
      if (!sqlite_detail::valid_placement_name(name)) {
        throw usage_error("keyschema::sqlite_backend::place: '" + name + "' is no placement name (1 to 64 " +
                          "characters of [a-z0-9_-]); nothing was created in " + s_->path);
      }
    }
    if (!missing.empty()) {
      s_->tables.reserve(s_->tables.size() + missing.size());  // nothing below throws after the commit
      std::lock_guard wl(s_->write_mu);
      sqlite_detail::connection& w = *s_->writer;
      s_->begin_immediate();
      try {
        for (const std::string& name : missing) {
          w.exec(sqlite_detail::create_placement_sql(name),
                 "keyschema::sqlite_backend::place: cannot create the table " + sqlite_detail::placement_table(name) +
                     " of placement '" + name + "' in " + s_->file);
        }
        w.run(sqlite_detail::connection::commit_stmt,
              "keyschema::sqlite_backend::place: cannot create the placement tables in " + s_->file);
      } catch (...) {
        w.rollback_quietly();
        throw;
      }
      for (const std::string& name : missing) {
        s_->router.add(name);
        s_->tables.push_back(sqlite_detail::quoted_placement_table(name));
      }
    }
    s_->router.set_routes(routes);
  }

  // What write() accepts: key plus value of one operation up to max_entry_bytes (SQLite's
  // SQLITE_LIMIT_LENGTH, the largest row, less 64 bytes for the record header, or the lower
  // sqlite_options::max_entry_bytes); so are max_key_bytes and max_value_bytes. Batches have no
  // limit of their own (the -wal file holds a large transaction).
  backend_limits limits() const noexcept {
    backend_limits l;
    l.max_key_bytes = s_->max_entry;
    l.max_value_bytes = s_->max_entry;
    l.max_entry_bytes = s_->max_entry;
    return l;
  }

  // The writer connection, for SQLite features keyschema does not wrap. Owned by this backend.
  // REQUIRES: used only while no write() or write transaction of this backend runs (it is the
  // connection they use); writes made through it bypass the typed layer's checks.
  sqlite3* native() noexcept { return s_->writer->db(); }

  // The placements this backend knows (those whose tables the database held when it was opened,
  // and those place() created), in the order of their tables; "" is the default placement (kv).
  const std::vector<std::string>& placements() const noexcept { return s_->router.names(); }

  // The directory this backend opened, as given to the constructor.
  const std::string& path() const noexcept { return s_->path; }

  // The database file: <path>/keyschema.sqlite3.
  const std::string& file() const noexcept { return s_->file; }

 private:
  // Begins a read transaction on c (BEGIN and a first read, which fixes the state a WAL reader
  // sees; the pool rolls it back when c returns). Errors: backend_error "sqlite3_step".
  static void begin_read(sqlite_detail::connection& c, const std::string& where) {
    c.run(sqlite_detail::connection::begin_stmt, where);
    sqlite3_stmt* st = c.cached(sqlite_detail::connection::touch_stmt, where);
    const int rc = ::sqlite3_step(st);
    ::sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) sqlite_detail::throw_sqlite_error(c.db(), rc, where, "sqlite3_step");
  }

  std::unique_ptr<state> s_;
};

static_assert(backend<sqlite_backend>,
              "keyschema::sqlite_backend: does not meet the backend contract; see keyschema/backend.hpp");
static_assert(backend_with_write_transaction<sqlite_backend>,
              "keyschema::sqlite_backend: does not meet backend_with_write_transaction; see keyschema/backend.hpp");
static_assert(backend_with_placements<sqlite_backend>,
              "keyschema::sqlite_backend: does not model backend_with_placements; see keyschema/backend.hpp");
static_assert(backend_with_write_guards<sqlite_backend>,
              "keyschema::sqlite_backend: other processes can open its database, so it must guard writes "
              "(backend_with_write_guards); see keyschema/backend.hpp");

KEYSCHEMA_END_NAMESPACE
