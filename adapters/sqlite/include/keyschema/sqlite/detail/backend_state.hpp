// keyschema/sqlite/detail/backend_state.hpp: sqlite_detail::backend_state, the state of one open
// sqlite_backend: its writer connection, reader pool and thread readers, its limits, its placements (one table
// each) and the routes to them, and the write path that write() and sqlite_write_transaction
// share (limit checks, the batch's statements routed to their tables, the guards' check, syncing
// the write-ahead log).
//
// Thread-safety: the members marked "under write_mu" and the writer connection are used only
// with write_mu held; the reader pool and acquire_reader are thread-safe; the rest (the placements included) is set
// at open and by sqlite_backend::place(), before the backend is shared, and then read-only.
#pragma once

#include <keyschema/backend.hpp>
#include <keyschema/detail/backend/open_registry.hpp>
#include <keyschema/detail/backend/placement.hpp>
#include <keyschema/detail/config.hpp>
#include <keyschema/error.hpp>
#include <keyschema/sqlite/detail/connection.hpp>
#include <keyschema/sqlite/detail/status.hpp>
#include <keyschema/sqlite/detail/thread_reader.hpp>
#include <keyschema/write_batch.hpp>

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace sqlite_detail {

// Heap-allocated so that snapshots, cursors and write transactions (which point into it)
// survive a move of the backend. The thread readers' connections are closed first, then the
// reader pool's, then the writer connection; the registration last.
struct backend_state {
  std::string path;
  std::string file;
  detail::open_registration registration;
  std::size_t max_entry = 0;
  std::mutex write_mu;
  bool sync_full = true;   // the writer's PRAGMA synchronous (FULL or NORMAL); under write_mu
  bool unsynced = false;   // a commit since the last sync of the -wal file; under write_mu
  std::string guard_where;  // the context of guards_hold's errors, made on first use; under write_mu
  std::string guard_value;  // guards_hold's buffer, kept between writes; under write_mu
  // The conditions of the last guarded commit and the data version it left (remember_guards);
  // guards_same: guards_hold found the conditions it was given equal to them. Under write_mu.
  struct remembered_guard {
    std::string key;
    std::string value;
    bool exists = true;
  };
  std::vector<remembered_guard> guards;
  unsigned guards_version = 0;
  bool guards_known = false;
  bool guards_same = false;
  // The placements (keyschema::placed): router names them (index 0: the default placement, the
  // kv table); tables[i] is the quoted name of placement i's table ("kv", "\"kv_<name>\"").
  detail::placement_router router;
  table_names tables{"kv"};
  // The common fast case: no placement exists or is routed to.
  bool single() const noexcept { return tables.size() == 1; }
  std::unique_ptr<sqlite_detail::connection> writer;
  std::optional<sqlite_detail::reader_pool> readers;
  // The connections threads keep for their reads (thread_reader.hpp), and this backend's
  // generation there (0 until registered in reader_cache::live() by the constructor).
  reader_registry thread_readers;
  std::uint64_t generation = 0;

  // Registers thread_readers (at most cap readers) once readers is set. Errors: std::bad_alloc.
  void register_thread_readers(std::size_t cap) {
    thread_readers.cap = cap;
    const std::uint64_t gen = detail::next_reader_generation();
    reader_cache::live().add(gen, &thread_readers);
    generation = gen;
  }

  // A reader connection for one get() or cursor: the calling thread's own (opened, or taken
  // from the pool's idle ones, on its first read) when it has one that none of its cursors
  // holds, else a pooled one. The calling thread's get()s take no shared lock once it has its
  // reader. Errors: backend_error "sqlite3_open_v2"/"sqlite3_exec" (a new connection); std::bad_alloc.
  reader_pool::lease acquire_reader() {
    if (thread_reader* r = this_thread_reader(generation, thread_readers);
        r != nullptr && !r->busy.load(std::memory_order_acquire)) [[likely]] {
      if (!r->conn) r->conn = readers->take();
      r->busy.store(true, std::memory_order_relaxed);  // only this thread sets it (it owns r)
      return reader_pool::lease(r);
    }
    return readers->acquire();
  }

  // Reads key into value from the table of its placement on c (and, for a keyspace being moved
  // by ks::migrate, from the table it moves from). REQUIRES: with a route being moved, c is in a
  // transaction (a snapshot's, the writer's, or one begun by the caller), so both tables are read
  // in one state. Errors: as connection::lookup.
  template <class Where>
  bool lookup(connection& c, std::string_view key, std::string& value, const Where& where) const {
    if (single()) [[likely]] return c.lookup(0, key, value, where);
    const detail::placement_router::target t = router.route(key);
    if (c.lookup(t.to, key, value, where)) return true;
    return t.also != detail::placement_router::none && c.lookup(t.also, key, value, where);
  }
  // Whether lookup(key) reads two tables (a keyspace being moved).
  bool moving(std::string_view key) const noexcept {
    return !single() && router.route(key).also != detail::placement_router::none;
  }

  std::string where_write(const write_batch& batch) const {
    return "keyschema::sqlite_backend: writing " + std::to_string(batch.size()) + " operations to " + path +
           " failed, nothing was applied";
  }

  void check_limits(const write_batch& batch) const {
    for (const write_batch::op o : batch) {
      if (o.key.size() > max_entry || o.value.size() > max_entry - o.key.size()) {
        throw limit_error("keyschema::sqlite_backend: an operation of " + std::to_string(o.key.size()) +
                          " key bytes and " + std::to_string(o.value.size()) + " value bytes exceeds the limit of " +
                          std::to_string(max_entry) +
                          " bytes per entry (sqlite_options::max_entry_bytes); nothing was written");
      }
    }
  }

  // REQUIRES: write_mu held, no transaction open on the writer.
  void set_sync(bool full) {
    if (full == sync_full) return;
    writer->exec(full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL",
                 "keyschema::sqlite_backend: setting the durability of " + path);
    sync_full = full;
  }

  void begin_immediate() {
    writer->run(sqlite_detail::connection::begin_immediate_stmt,
                "keyschema::sqlite_backend: taking the write lock of " + path);
  }

  // Whether every condition of g holds, read inside the open write transaction: one point
  // SELECT per condition, or none when g is empty, or when g are the conditions of this
  // backend's last guarded commit and the database has not changed since (the pager's data
  // version, SQLITE_FCNTL_DATA_VERSION, which every commit of any connection or process
  // changes). Errors: as connection::lookup.
  bool guards_hold(write_guards g) {
    guards_same = false;
    if (g.empty()) return true;
    guards_same = guards.size() == g.size();
    for (std::size_t i = 0; i < g.size() && guards_same; ++i) {
      guards_same = guards[i].exists == g[i].exists && guards[i].key == g[i].key && guards[i].value == g[i].value;
    }
    if (guards_same && guards_known && data_version() == guards_version) return true;
    if (guard_where.empty()) guard_where = "keyschema::sqlite_backend: reading a guarded key of " + path;
    for (const write_guard& c : g) {
      const bool found = lookup(*writer, c.key, guard_value, guard_where);
      if (found != c.exists || (found && guard_value != c.value)) return false;
    }
    return true;
  }

  // After a commit of batch whose conditions g held (checked by guards_hold just before):
  // remembers them with the data version the commit left, or forgets them when batch wrote one
  // of their keys.
  void remember_guards(write_guards g, const write_batch& batch) {
    if (g.empty()) return;  // an unguarded commit changes the data version anyway
    for (const write_batch::op o : batch) {
      for (const write_guard& c : g) {
        if (o.key == c.key) {
          guards_known = false;
          return;
        }
      }
    }
    if (!guards_same) {
      guards.resize(g.size());
      for (std::size_t i = 0; i < g.size(); ++i) guards[i] = {std::string(g[i].key), std::string(g[i].value), g[i].exists};
    }
    guards_version = data_version();
    guards_known = guards_version != 0;
  }

  // The data version of the writer's database file (0 when SQLite cannot say).
  unsigned data_version() const noexcept {
    unsigned v = 0;
    if (::sqlite3_file_control(writer->db(), "main", SQLITE_FCNTL_DATA_VERSION, &v) != SQLITE_OK) return 0;
    return v;
  }

  // The batch's operations inside the open write transaction: a put in the table of the key's
  // placement, an erase there and, for a keyspace being moved, in the table it moves from.
  void apply(const write_batch& batch) {
    const std::string where = where_write(batch);
    sqlite_detail::connection& w = *writer;
    if (single()) [[likely]] {
      sqlite3_stmt* put = w.table_stmt(connection::put_stmt, 0, where);
      sqlite3_stmt* del = w.table_stmt(connection::erase_stmt, 0, where);
      for (const write_batch::op o : batch) run_op(o.kind == write_batch::op_kind::put ? put : del, o, where);
      return;
    }
    for (const write_batch::op o : batch) {
      const detail::placement_router::target t = router.route(o.key);
      if (o.kind == write_batch::op_kind::put) {
        run_op(w.table_stmt(connection::put_stmt, t.to, where), o, where);
      } else {
        run_op(w.table_stmt(connection::erase_stmt, t.to, where), o, where);
        if (t.also != detail::placement_router::none) run_op(w.table_stmt(connection::erase_stmt, t.also, where), o, where);
      }
    }
  }

  // Runs the put or erase statement st for o.
  void run_op(sqlite3_stmt* st, const write_batch::op& o, const std::string& where) {
    sqlite_detail::stmt_reset guard{st};
    int rc = ::sqlite3_bind_blob(st, 1, sqlite_detail::blob_data(o.key), static_cast<int>(o.key.size()), SQLITE_STATIC);
    if (rc == SQLITE_OK && o.kind == write_batch::op_kind::put) {
      rc = ::sqlite3_bind_blob(st, 2, sqlite_detail::blob_data(o.value), static_cast<int>(o.value.size()),
                               SQLITE_STATIC);
    }
    if (rc != SQLITE_OK) sqlite_detail::throw_sqlite_error(writer->db(), rc, where, "sqlite3_bind_blob");
    rc = ::sqlite3_step(st);
    if (rc != SQLITE_DONE) sqlite_detail::throw_sqlite_error(writer->db(), rc, where, "sqlite3_step");
  }

  // Makes earlier commits made with synchronous = NORMAL durable: fsyncs the -wal file through
  // SQLite's own file object (SQLITE_FCNTL_JOURNAL_POINTER). REQUIRES: write_mu held.
  void sync_log() {
    if (!unsynced) return;
    sqlite3_file* f = nullptr;
    int rc = ::sqlite3_file_control(writer->db(), "main", SQLITE_FCNTL_JOURNAL_POINTER, &f);
    if (rc == SQLITE_OK && f != nullptr && f->pMethods != nullptr) rc = f->pMethods->xSync(f, SQLITE_SYNC_FULL);
    if (rc != SQLITE_OK) {
      sqlite_detail::throw_sqlite_error(nullptr, rc, "keyschema::sqlite_backend: syncing the write-ahead log of " + path,
                                        "sqlite3_file_control");
    }
    unsynced = false;
  }

  ~backend_state() {
    reader_cache::live().remove(generation);  // no thread gives a reader back afterwards
    thread_readers.close();
    readers.reset();
    writer.reset();
  }
};

}  // namespace sqlite_detail
KEYSCHEMA_END_NAMESPACE
